/*
 * act_equiv.c - activation policies and schedules in the FSDP step, on the
 * examples/mlp model whose layers save under three names (pre_a, pre_b,
 * pre_c). Run on N ranks by t/act-np*.t.
 *
 *   act_equiv [--layers L] [--width D] [--batch B] [--steps K] [--trace PREFIX]
 *
 * Checks:
 *  - a traced keep run (which records the step program) trains bitwise like
 *    the plain keep run (nothing recorded);
 *  - from the program, the device budget each policy needs: offloading or
 *    recomputing needs less than keeping, and at a budget where every
 *    offload/recompute policy fits, keep fails before its first step
 *    (no optimizer step taken) with a message naming the smallest budget;
 *  - at that budget, host, storage, recompute, auto and a mix, each with
 *    the lhs and the naive schedule, give bitwise the parameters of the
 *    keep run after K steps, with every step's device peak within budget;
 *  - auto below the smallest budget fails before the first step naming it,
 *    and exactly that budget then trains bitwise like keep;
 *  - a name the model does not save is an error listing the saved names;
 *  - a step whose saves differ from the recording (another batch size on
 *    step 3) fails with STRATA_ERR_MISMATCH naming the unit and the save,
 *    on every rank, without a hang; after strata_model_replan it trains;
 *  - the trace of a host-lhs run reads back (as strata trace reads it) with
 *    K steps and transfer time in them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "examples/mlp/mlp_model.h"
#include "tools/trace.h"

static int W, R, L = 6, D = 16, B = 64, K = 3;
static const char *trace_prefix = NULL;

typedef struct {
    const char *policy;
    const char *schedule;
    size_t budget;           /* 0: the default */
    const char *trace;       /* the option trace, or NULL */
    int steps;
    int deviate;             /* step 3 uses another batch size */
    int accum;               /* micro-batches per step; 0 = 1 */
} run_t;

typedef struct {
    strata_status_t st;
    char msg[1024];
    int steps_done;
    size_t max_peak;         /* largest per-step device peak */
    size_t need[5], any;     /* strata_model_plan_need: keep host storage recompute mix */
    double transfer_s, exposed_s, overlap;
    float *params;
    strata_status_t replan_st;
    strata_status_t api_bad_st;
    char api_bad_msg[512];
} result_t;

static const char *const need_pol[5] = { "*=keep", "*=host", "*=storage", "*=recompute",
                                         "pre_a=host,pre_b=recompute,pre_c=storage" };

static void run(const run_t *r, result_t *res)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    strata_model_t *model = NULL;
    strata_model_opts_t o;
    mlp_t mlp = { .save_names = 3 };
    memset(res, 0, sizeof *res);
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    strata_config_read_env(cfg, NULL, 0);
    if (r->budget) strata_config_set_size(cfg, "device_mem", r->budget, NULL, 0);
    int api = !strncmp(r->policy, "api:", 4);   /* set through strata_model_set_act_policy */
    if (!api && STRATA_OK != strata_config_set(cfg, "act_policy", r->policy, NULL, 0))
        bail_out("act_policy '%s' refused", r->policy);
    if (STRATA_OK != strata_config_set(cfg, "schedule", r->schedule ? r->schedule : "lhs", NULL, 0))
        bail_out("schedule '%s' refused", r->schedule);
    if (r->trace && STRATA_OK != strata_config_set(cfg, "trace", r->trace, NULL, 0))
        bail_out("trace '%s' refused", r->trace);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) {
        res->st = st;
        snprintf(res->msg, sizeof res->msg, "strata_init failed");
        return;
    }
    strata_model_opts_default(&o);
    o.lr = 0.01f;
    o.seed = 42;
    st = strata_model_create(ctx, &o, &model);
    if (STRATA_OK == st) st = mlp_build(model, &mlp, L, D);
    if (STRATA_OK == st) st = strata_model_commit(model);
    if (STRATA_OK == st && api) st = strata_model_set_act_policy(model, r->policy + 4);
    for (int s = 0; s < r->steps && STRATA_OK == st; s++) {
        mlp_train_t a = { .batch = r->deviate && 2 == s ? B + 1 : B,
                          .accum = r->accum ? r->accum : 1, .steps = 1,
                          .data_seed = 7, .data_rank = R, .data_ranks = W, .first_step = s };
        st = mlp_train(model, &mlp, &a, NULL);
        if (STRATA_OK != st) break;
        strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
        strata_model_stats(model, &ms);
        res->steps_done = ms.steps;
        if (ms.peak_device_bytes > res->max_peak) res->max_peak = ms.peak_device_bytes;
        res->transfer_s += ms.transfer_s;
        res->exposed_s += ms.exposed_transfer_s;
        res->overlap = ms.overlap_frac;
    }
    if (STRATA_OK != st) {
        res->st = st;
        snprintf(res->msg, sizeof res->msg, "%s", strata_last_error(ctx));
        strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
        if (model && STRATA_OK == strata_model_stats(model, &ms)) res->steps_done = ms.steps;
        if (r->deviate && model) {
            /* record again and train the changed step */
            res->replan_st = strata_model_replan(model);
            mlp_train_t a = { .batch = B + 1, .accum = 1, .steps = 1, .data_seed = 7,
                              .data_rank = R, .data_ranks = W, .first_step = 2 };
            if (STRATA_OK == res->replan_st) res->replan_st = mlp_train(model, &mlp, &a, NULL);
        }
    } else {
        if (api) {
            /* with a program recorded, an unknown name fails at once */
            res->api_bad_st = strata_model_set_act_policy(model, "nope=host");
            snprintf(res->api_bad_msg, sizeof res->api_bad_msg, "%s", strata_last_error(ctx));
        }
        for (int p = 0; p < 5; p++)
            if (STRATA_OK != strata_model_plan_need(model, need_pol[p], &res->need[p], &res->any))
                res->need[p] = 0;
        size_t n = (size_t)L * (D * D + D), off = 0;
        res->params = malloc(n * sizeof(float));
        for (int u = 0; u < L && STRATA_OK == st; u++) {
            strata_unit_t *unit = strata_model_unit(model, u);
            for (int p = 0; p < strata_unit_param_count(unit) && STRATA_OK == st; p++) {
                size_t numel;
                strata_unit_param_info(unit, p, NULL, &numel, NULL, NULL);
                st = strata_unit_read_param(unit, p, res->params + off, numel);
                off += numel;
            }
        }
        res->st = st;
    }
    strata_model_destroy(model);
    strata_finalize(ctx);
}

static int same(const float *a, const float *b)
{
    return a && b && 0 == memcmp(a, b, (size_t)L * (D * D + D) * sizeof(float));
}

/* The number after "device_mem=" in a message, 0 if none. */
/* The number right after key in msg; 0 when key is absent. */
static size_t number_after(const char *msg, const char *key)
{
    const char *p = strstr(msg, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* The refusal names this policy's budget first ("it needs X
 * (device_mem=N)"), then the smallest any policy fits. */
static size_t policy_budget(const char *msg) { return number_after(msg, "device_mem="); }
static size_t named_budget(const char *msg)
{
    const char *p = strstr(msg, "any policy needs");
    return p ? number_after(p, "device_mem=") : 0;
}

/* What the reference runs establish, for the tests after them. */
typedef struct {
    result_t ref, traced;   /* keep, plain and with the program recorded */
    size_t budget, any;     /* where every policy fits; the smallest plan */
    char tpath[512];        /* the keep run's trace prefix */
} ctx_t;

/* reference: keep, nothing recorded */
static void test_reference(ctx_t *x)
{
    run(&(run_t){ "*=keep", "lhs", 0, NULL, K, 0, 0 }, &x->ref);
    ok(STRATA_OK == x->ref.st && x->ref.params, "keep trains %d steps (%s)", K, x->ref.msg);
    run(&(run_t){ "*=keep", "lhs", 0, x->tpath, K, 0, 0 }, &x->traced);
    ok(STRATA_OK == x->traced.st && same(x->ref.params, x->traced.params),
       "a traced keep run (program recorded) is bitwise the plain keep run (%s)", x->traced.msg);

    /* what each policy needs, from the recorded program */
    size_t keep = x->traced.need[0];
    x->any = x->traced.any;
    x->budget = 0;
    for (int p = 1; p < 5; p++) if (x->traced.need[p] > x->budget) x->budget = x->traced.need[p];
    if (x->any > x->budget) x->budget = x->any;
    if (0 == R)
        diag("device need: keep %zu, host %zu, storage %zu, recompute %zu, mix %zu, any %zu",
             keep, x->traced.need[1], x->traced.need[2], x->traced.need[3], x->traced.need[4], x->any);
    ok(keep > 0 && x->any > 0 && x->any < keep, "the smallest plan needs less device memory than keep");
    ok(x->budget > 0 && x->budget < x->ref.max_peak, "a budget (%zu) where every offload/recompute policy "
       "fits, below what keep uses (%zu)", x->budget, x->ref.max_peak);
}

/* keep at that budget: plain keep (nothing recorded) runs out of device
 * memory in its first step; keep with a program fails before it */
static void test_keep_at_budget(const ctx_t *x)
{
    result_t kf;
    run(&(run_t){ "*=keep", "lhs", x->budget, NULL, K, 0, 0 }, &kf);
    ok(STRATA_ERR_TIER_FULL == kf.st && 0 == kf.steps_done, "keep at %zu bytes: %s, no step "
       "taken", x->budget, strata_strerror(kf.st));
    run(&(run_t){ "*=keep", "lhs", x->budget, x->tpath, K, 0, 0 }, &kf);
    ok(STRATA_ERR_TIER_FULL == kf.st && 0 == kf.steps_done, "traced keep at %zu bytes fails "
       "before its first step", x->budget);
    ok(named_budget(kf.msg) == x->any, "the message names the smallest budget %zu", x->any);
    ok(policy_budget(kf.msg) == x->traced.need[0], "and what keep needs, %zu", x->traced.need[0]);
    if (0 == R) diag("%s", kf.msg);
}

/* every policy and schedule at the budget: bitwise keep, peak within budget */
static void test_policies_at_budget(const ctx_t *x)
{
    static const char *const pols[] = { "*=host", "*=storage", "*=recompute", "auto",
                                        "pre_a=host,pre_b=recompute,pre_c=storage" };
    static const char *const modes[] = { "lhs", "naive" };
    for (int p = 0; p < 5; p++)
        for (int mo = 0; mo < 2; mo++) {
            result_t r;
            run(&(run_t){ pols[p], modes[mo], x->budget, NULL, K, 0, 0 }, &r);
            ok(STRATA_OK == r.st && same(x->ref.params, r.params) && r.max_peak <= x->budget,
               "%s %s at %zu bytes: bitwise keep after %d steps, device peak %zu (%s)", pols[p],
               modes[mo], x->budget, K, r.max_peak, r.msg);
            if (1 == mo || 3 == p) { free(r.params); continue; }
            ok(r.transfer_s >= 0 && r.overlap >= 0 && r.overlap <= 1 && r.exposed_s <= r.transfer_s + 1e-9,
               "%s %s: transfer %.6f s, exposed %.6f s, overlap %.3f", pols[p], modes[mo],
               r.transfer_s, r.exposed_s, r.overlap);
            free(r.params);
        }
}

/* auto below the smallest budget, then at it */
static void test_auto_at_smallest(const ctx_t *x)
{
    result_t af, aok;
    run(&(run_t){ "auto", "lhs", x->any - 4096, NULL, K, 0, 0 }, &af);
    ok(STRATA_ERR_TIER_FULL == af.st && 0 == af.steps_done,
       "auto at %zu bytes fails before the first step", x->any - 4096);
    ok(named_budget(af.msg) == x->any, "naming the smallest budget %zu", x->any);
    if (0 == R) diag("%s", af.msg);
    run(&(run_t){ "auto", "lhs", x->any, NULL, K, 0, 0 }, &aok);
    ok(STRATA_OK == aok.st && same(x->ref.params, aok.params) && aok.max_peak <= x->any,
       "auto at exactly that budget trains bitwise like keep, peak %zu (%s)", aok.max_peak, aok.msg);
    /* the classic checkpoint at every unit's input, those inputs off the device */
    run(&(run_t){ "unit_input=host,*=recompute", "naive", x->any, NULL, K, 0, 0 }, &aok);
    ok(STRATA_OK == aok.st && same(x->ref.params, aok.params) && aok.max_peak <= x->any,
       "so does unit_input=host,*=recompute, naive, peak %zu (%s)", aok.max_peak, aok.msg);
    free(aok.params);
}

/* two micro-batches per step: the schedule runs per micro-batch (host
 * lhs at the budget its refusal names: with room lhs moves nothing) */
static void test_micro_batches(const ctx_t *x)
{
    result_t k2, h2, r2;
    run(&(run_t){ "*=keep", "lhs", 0, NULL, K, 0, 2 }, &k2);
    run(&(run_t){ "*=host", "lhs", x->budget, NULL, K, 0, 2 }, &h2);   /* refused, naming its need */
    size_t need2 = policy_budget(h2.msg);
    free(h2.params);
    run(&(run_t){ "*=host", "lhs", need2, NULL, K, 0, 2 }, &h2);
    run(&(run_t){ "pre_a=recompute,pre_b=storage,*=host", "naive", 0, NULL, K, 0, 2 }, &r2);
    ok(need2 > 0 && STRATA_OK == h2.st && same(k2.params, h2.params) && h2.transfer_s > 0,
       "2 micro-batches: host lhs at %zu bytes is bitwise keep (%s)", need2, h2.msg);
    ok(STRATA_OK == r2.st && same(k2.params, r2.params), "and a mix, naive (%s)", r2.msg);
    free(k2.params); free(h2.params); free(r2.params);
}

/* the policy through the API */
static void test_api_policy(const ctx_t *x)
{
    result_t ap;
    run(&(run_t){ "api:pre_a=host,pre_b=storage,*=recompute", "lhs", x->budget, NULL, K, 0, 0 }, &ap);
    ok(STRATA_OK == ap.st && same(x->ref.params, ap.params) && ap.max_peak <= x->budget,
       "strata_model_set_act_policy: bitwise keep within budget (%s)", ap.msg);
    ok(STRATA_OK != ap.api_bad_st && strstr(ap.api_bad_msg, "nope") &&
       strstr(ap.api_bad_msg, "pre_c"), "an unknown name fails at once: %s", ap.api_bad_msg);
    free(ap.params);
}

/* unknown names */
static void test_unknown_names(void)
{
    result_t un;
    run(&(run_t){ "qkv=host,*=keep", "lhs", 0, NULL, 1, 0, 0 }, &un);
    ok(STRATA_OK != un.st && 0 == un.steps_done, "an unknown name fails the first step");
    ok(strstr(un.msg, "qkv") && strstr(un.msg, "pre_a") && strstr(un.msg, "pre_b") &&
       strstr(un.msg, "pre_c"), "naming it and the saved names: %s", un.msg);
    result_t bad;
    run(&(run_t){ "pre_a=elsewhere", "lhs", 0, NULL, 1, 0, 0 }, &bad);
    ok(STRATA_OK != bad.st, "a bad action is an error: %s", bad.msg);
}

/* deviation on step 3 */
static void test_deviation(void)
{
    result_t dv;
    run(&(run_t){ "*=host", "lhs", 0, NULL, K > 3 ? K : 3, 1, 0 }, &dv);
    is_int(dv.st, STRATA_ERR_MISMATCH, "another save size on step 3 fails with MISMATCH");
    is_int(dv.steps_done, 2, "after two good steps");
    ok(strstr(dv.msg, "fc0") && strstr(dv.msg, "pre_a") && strstr(dv.msg, "replan"),
       "naming the unit and the save: %s", dv.msg);
    is_int(dv.replan_st, STRATA_OK, "after strata_model_replan the changed step trains");
    result_t dn;
    run(&(run_t){ "*=recompute", "naive", 0, NULL, 3, 1, 0 }, &dn);
    is_int(dn.st, STRATA_ERR_MISMATCH, "so with recompute and naive");
    is_int(dn.replan_st, STRATA_OK, "and replan");
}

/* a traced host-lhs run with the link model: the file reads back */
static void test_trace_reads_back(const ctx_t *x)
{
    char hp[512], file[600];
    snprintf(hp, sizeof hp, "%s-host", trace_prefix ? trace_prefix : "act_equiv_trace");
    result_t th;
    run(&(run_t){ "*=host", "lhs", x->budget, hp, K, 0, 0 }, &th);
    ok(STRATA_OK == th.st && same(x->ref.params, th.params), "traced host lhs run (%s)", th.msg);
    free(th.params);
    snprintf(file, sizeof file, "%s.%d.json", hp, R);
    sched_trace_events_t evs = { 0 };
    char err[256] = "";
    sched_trace_step_t *steps = NULL;
    int nsteps = 0;
    strata_status_t st = sched_trace_read(file, &evs, err, sizeof err);
    if (STRATA_OK == st) st = sched_trace_analyze(&evs, &steps, &nsteps, err, sizeof err);
    ok(STRATA_OK == st, "the trace %s reads back (%s)", file, err);
    is_int(nsteps, K, "with one step per training step");
    int d2h = 0, h2d = 0, comp = 0;
    for (int i = 0; i < evs.nevents; i++) {
        if ('X' != evs.ev[i].ph) continue;
        if (SCHED_D2H == evs.ev[i].engine) d2h++;
        if (SCHED_H2D == evs.ev[i].engine) h2d++;
        if (SCHED_COMPUTE == evs.ev[i].engine) comp++;
    }
    ok(d2h > 0 && d2h == h2d && comp >= 2 * K * L, "ops on the d2h, h2d and compute tracks "
       "(%d, %d, %d)", d2h, h2d, comp);
    double tr = 0;
    for (int s = 0; s < nsteps; s++) tr += steps[s].transfer_s;
    ok(nsteps > 0 && tr > 0, "with transfer time in its steps (%.6f s)", tr);
    free(steps);
    sched_trace_events_free(&evs);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "layers", 1, NULL, 'l' }, { "width", 1, NULL, 'w' }, { "batch", 1, NULL, 'b' },
        { "steps", 1, NULL, 'k' }, { "trace", 1, NULL, 't' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while (-1 != (c = getopt_long(argc, argv, "", lo, NULL))) {
        if ('l' == c) L = atoi(optarg);
        else if ('w' == c) D = atoi(optarg);
        else if ('b' == c) B = atoi(optarg);
        else if ('k' == c) K = atoi(optarg);
        else if ('t' == c) trace_prefix = optarg;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    tap_use_comm(MPI_COMM_WORLD);
    plan(44);

    ctx_t x = { 0 };
    snprintf(x.tpath, sizeof x.tpath, "%s-keep", trace_prefix ? trace_prefix : "act_equiv_trace");
    test_reference(&x);
    test_keep_at_budget(&x);
    test_policies_at_budget(&x);
    test_auto_at_smallest(&x);
    test_micro_batches(&x);
    test_api_policy(&x);
    test_unknown_names();
    test_deviation();
    test_trace_reads_back(&x);
    free(x.ref.params);
    free(x.traced.params);
    done_testing();
    MPI_Finalize();
    return 0;
}
