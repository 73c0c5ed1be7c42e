/*
 * admit_sweep.c - admission swept in one process: for two shapes of the
 * examples/mlp model (saves under three names), every policy at device
 * budgets from well below to above what keep uses. Run on N ranks by
 * t/admit-np*.t.
 *
 * Checks, per shape:
 *  - the admission's parts add up to what the policy needs, and an
 *    explicit offload or recompute policy never needs more than keep;
 *  - at every budget of the sweep, each policy is either refused before
 *    its first step (STRATA_ERR_TIER_FULL, no step taken, the message
 *    naming exactly the budget it needs) when the budget is below that
 *    need, or trains its steps bitwise like keep with every step's device
 *    peak within the budget: never a failure inside a step.
 *  - the peak measured at the budget a policy needs is diag'ed beside it
 *    (how conservative the admission is).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "examples/mlp/mlp_model.h"

#define NPOL 6
#define NB 7
#define STEPS 2

static int W, R;

static const char *const pols[NPOL] = { "*=keep", "*=host", "*=storage", "*=recompute",
                                        "pre_a=host,pre_b=recompute,pre_c=storage", "auto" };

typedef struct { int layers, width, batch; } shape_t;

typedef struct {
    strata_status_t st;
    char msg[1024];
    int steps_done;
    size_t max_peak;
    size_t need[NPOL], any;
    strata_admission_t adm;   /* of keep, at the reference run's budget */
    float *params;
} result_t;

static void read_params(strata_model_t *model, const shape_t *s, result_t *res)
{
    size_t n = (size_t)s->layers * (s->width * s->width + s->width), off = 0;
    res->params = malloc(n * sizeof(float));
    for (int u = 0; u < s->layers && res->params; u++) {
        strata_unit_t *unit = strata_model_unit(model, u);
        for (int p = 0; p < strata_unit_param_count(unit); p++) {
            size_t numel;
            strata_unit_param_info(unit, p, NULL, &numel, NULL, NULL);
            if (STRATA_OK != strata_unit_read_param(unit, p, res->params + off, numel)) {
                free(res->params);
                res->params = NULL;
                return;
            }
            off += numel;
        }
    }
}

/* STEPS steps of policy at budget (0: the default); ref: also the needs. */
static void run(const shape_t *s, const char *policy, size_t budget, int ref, result_t *res)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    strata_model_t *model = NULL;
    strata_model_opts_t o;
    mlp_t mlp = { .save_names = 3 };
    memset(res, 0, sizeof *res);
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    strata_config_read_env(cfg, NULL, 0);
    if (budget) strata_config_set_size(cfg, "device_mem", budget, NULL, 0);
    if (STRATA_OK != strata_config_set(cfg, "act_policy", policy, NULL, 0))
        bail_out("act_policy '%s' refused", policy);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init failed");
    strata_model_opts_default(&o);
    o.lr = 0.01f;
    o.seed = 42;
    st = strata_model_create(ctx, &o, &model);
    if (STRATA_OK == st) st = mlp_build(model, &mlp, s->layers, s->width);
    if (STRATA_OK == st) st = strata_model_commit(model);
    for (int k = 0; k < STEPS && STRATA_OK == st; k++) {
        mlp_train_t a = { .batch = s->batch, .accum = 1, .steps = 1, .data_seed = 7,
                          .data_rank = R, .data_ranks = W, .first_step = k };
        st = mlp_train(model, &mlp, &a, NULL);
        strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
        if (model && STRATA_OK == strata_model_stats(model, &ms)) {
            res->steps_done = ms.steps;
            if (STRATA_OK == st && ms.peak_device_bytes > res->max_peak)
                res->max_peak = ms.peak_device_bytes;
        }
    }
    res->st = st;
    if (STRATA_OK != st) snprintf(res->msg, sizeof res->msg, "%s", strata_last_error(ctx));
    if (STRATA_OK == st) read_params(model, s, res);
    if (STRATA_OK == st && ref) {
        for (int p = 0; p < NPOL; p++)
            if (STRATA_OK != strata_model_plan_need(model, pols[p], &res->need[p], &res->any))
                res->need[p] = 0;
        res->adm.size = sizeof res->adm;
        if (STRATA_OK != strata_model_admission(model, &res->adm)) res->adm.need = 0;
    }
    strata_model_destroy(model);
    strata_finalize(ctx);
}

static size_t number_after(const char *msg, const char *key)
{
    const char *p = strstr(msg, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static int same(const float *a, const float *b, const shape_t *s)
{
    return a && b &&
           0 == memcmp(a, b, (size_t)s->layers * (s->width * s->width + s->width) * sizeof(float));
}

static void sweep(const shape_t *s)
{
    result_t ref;
    run(s, "*=keep", 0, 1, &ref);
    ok(STRATA_OK == ref.st && ref.params, "shape %dx%d: keep trains %d steps, peak %zu (%s)",
       s->layers, s->width, STEPS, ref.max_peak, ref.msg);
    const strata_admission_t *a = &ref.adm;
    size_t keep = ref.need[0], any = ref.any;
    ok(a->need == keep && a->need == a->held + a->between + a->flow + a->workspace + a->reserve +
       a->scheduled, "the admission's parts add up to what keep needs (%zu)", keep);
    int le = 1;
    for (int p = 1; p < NPOL - 1; p++) le &= ref.need[p] > 0 && ref.need[p] <= keep;
    ok(le && any > 0 && any <= keep, "no offload or recompute policy needs more than keep "
       "(keep %zu, host %zu, storage %zu, recompute %zu, mix %zu, any %zu)", keep, ref.need[1],
       ref.need[2], ref.need[3], ref.need[4], any);

    /* from well below the smallest plan to above what keep uses */
    const size_t budgets[NB] = { any / 2, any - 1, any, (any + keep) / 2, keep - 1, keep,
                                 ref.max_peak + ref.max_peak / 4 > keep
                                     ? ref.max_peak + ref.max_peak / 4 : keep + 4096 };
    for (int p = 0; p < NPOL; p++) {
        size_t need = NPOL - 1 == p ? any : ref.need[p];
        int bad = 0;
        char why[1200] = "";
        for (int b = 0; b < NB; b++) {
            result_t r;
            run(s, pols[p], budgets[b], 0, &r);
            /* the tier rounds a budget down to its alignment */
            size_t eff = budgets[b] / 256 * 256;
            int pass;
            if (eff < need)
                pass = STRATA_ERR_TIER_FULL == r.st && 0 == r.steps_done &&
                       (budgets[b] < a->held || number_after(r.msg, "device_mem=") == need);
            else
                pass = STRATA_OK == r.st && same(ref.params, r.params, s) &&
                       r.max_peak <= eff;
            if (!pass && !bad) {
                bad = 1;
                snprintf(why, sizeof why, " FIRST WRONG at %zu: %s, %d steps, peak %zu: %s",
                         budgets[b], strata_strerror(r.st), r.steps_done, r.max_peak, r.msg);
            }
            if (eff == need && 0 == R)
                diag("%s at the %zu it needs: peak %zu (%.1f%% of the need)", pols[p], need,
                     r.max_peak, 100.0 * r.max_peak / need);
            free(r.params);
        }
        ok(!bad, "%s: refused below %zu, trains bitwise keep within budget from it%s", pols[p],
           need, why);
    }
    free(ref.params);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    tap_use_comm(MPI_COMM_WORLD);
    const shape_t shapes[2] = { { 4, 16, 32 }, { 5, 24, 8 } };
    plan(2 * (3 + NPOL));
    for (int i = 0; i < 2; i++) sweep(&shapes[i]);
    done_testing();
    MPI_Finalize();
    return 0;
}
