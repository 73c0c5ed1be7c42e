/*
 * fsdp_equiv.c - FSDP training on W ranks with S-way sharding against a
 * single-process run of the same model on the same global batch (the
 * examples/mlp model). Run on N ranks by t/fsdp-np*.t.
 *
 *   fsdp_equiv [--shard S] [--layers L] [--width D] [--batch B] [--steps K]
 *              [--no-progress-thread] [--chunk ROWS] [--quick]
 *
 * --chunk: the callbacks call strata_call_progress every ROWS rows (1);
 * 0: never, so the progress thread alone advances the collectives during
 * them (a callback that calls it stands the thread down).
 *
 * Checks, for SGD with momentum and for AdamW with gradient clipping, with
 * 1 and 2 micro-batches (gradient accumulation):
 *  - the initial parameters are bitwise those of the single process;
 *  - after K steps every parameter is within 1e-5 (relative to the largest
 *    element of its tensor) of the single-process run whose one batch holds
 *    all M x W micro-batches;
 *  - a second run with the same seed is bitwise identical, and so are runs
 *    with prefetch off, with reshard-after-forward off and with the
 *    optimizer state in pinned host;
 *  - bf16 compute with bf16 reduction trains close to the f32 result.
 * --quick (the 128-rank case) keeps only SGD/AdamW at M = 2 and the bitwise rerun.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "examples/mlp/mlp_model.h"

#define TOL 1e-5

static int W, R, S = 0, L = 3, D = 9, B = 2, K = 3, progress = 1, quick = 0, chunk = 1;

typedef struct {
    strata_optim_kind_t optim;
    float clip;
    int accum;
    int prefetch;        /* -1: from the config */
    int reshard;
    int bf16;
    int host;            /* optimizer state in the pinned-host tier */
} run_t;

/* Train on ctx (all its ranks) and return every parameter, concatenated in
 * unit/param order, on every rank. init_p (may be NULL) receives the
 * parameters before training. data_ranks/batch set the data split. */
static float *train(strata_context_t *ctx, const run_t *r, int batch, int accum, int data_rank,
                    int data_ranks, float **init_p, size_t *n_p)
{
    strata_model_opts_t o;
    strata_model_t *model = NULL;
    mlp_t mlp = { .chunk_rows = chunk };
    float *all = NULL, *init = NULL;
    strata_model_opts_default(&o);
    o.optimizer = r->optim;
    o.lr = STRATA_OPTIM_SGD == r->optim ? 0.05f : 0.01f;
    o.weight_decay = 0.01f;
    o.clip_norm = r->clip;
    o.progress_thread = progress;
    o.reshard_after_forward = r->reshard;
    if (r->bf16) o.compute_dtype = o.reduce_dtype = STRATA_BF16;
    o.optim_on_host = r->host;
    o.seed = 42;
    strata_status_t st = strata_model_create(ctx, &o, &model);
    if (STRATA_OK == st) st = mlp_build(model, &mlp, L, D);
    if (STRATA_OK == st) st = strata_model_commit(model);
    size_t n = (size_t)L * (D * D + D), off;
    all = malloc(n * sizeof *all);
    init = malloc(n * sizeof *init);
    for (int pass = 0; pass < 2 && STRATA_OK == st; pass++) {
        if (1 == pass) {
            mlp_train_t a = { .batch = batch, .accum = accum, .steps = K, .data_seed = 7,
                              .data_rank = data_rank, .data_ranks = data_ranks };
            st = mlp_train(model, &mlp, &a, NULL);
        }
        off = 0;
        for (int u = 0; u < L && STRATA_OK == st; u++) {
            strata_unit_t *unit = strata_model_unit(model, u);
            for (int p = 0; p < strata_unit_param_count(unit) && STRATA_OK == st; p++) {
                size_t numel;
                strata_unit_param_info(unit, p, NULL, &numel, NULL, NULL);
                st = strata_unit_read_param(unit, p, (pass ? all : init) + off, numel);
                off += numel;
            }
        }
    }
    if (STRATA_OK != st) {
        diag("rank %d: %s: %s", R, strata_strerror(st), strata_last_error(ctx));
        free(all);
        all = NULL;
    }
    strata_model_destroy(model);
    if (init_p) *init_p = init; else free(init);
    *n_p = n;
    return all;
}

/* Largest |a-b| over each tensor, relative to the tensor's largest |b|. */
static double rel_err(const float *a, const float *b)
{
    double worst = 0;
    size_t off = 0;
    for (int u = 0; u < L; u++) {
        size_t sizes[2] = { (size_t)D * D, (size_t)D };
        for (int p = 0; p < 2; p++) {
            double dmax = 0, bmax = 1e-30;
            for (size_t i = off; i < off + sizes[p]; i++) {
                dmax = fmax(dmax, fabs((double)a[i] - b[i]));
                bmax = fmax(bmax, fabs((double)b[i]));
            }
            worst = fmax(worst, dmax / bmax);
            off += sizes[p];
        }
    }
    return worst;
}

/* Each case trained on W ranks against one process on the same global
 * batch (rank 0 trains that one in self); returns the last case's
 * parameters, for the bitwise reruns. */
static float *test_cases(strata_context_t *ctx, strata_context_t *self, const run_t *cases, int ncases)
{
    float *first = NULL;
    size_t n;
    for (int i = 0; i < ncases; i++) {
        const run_t *r = &cases[i];
        const char *name = STRATA_OPTIM_SGD == r->optim ? "sgd+momentum" : "adamw+clip";
        float *init, *got = train(ctx, r, B, r->accum, R, W, &init, &n);
        float *ref = NULL, *ref_init = NULL;
        double err = 1e30;
        int init_same = 0;
        if (0 == R) {
            /* one process, one batch of all M x W micro-batches */
            ref = train(self, r, B * W * r->accum, 1, 0, 1, &ref_init, &n);
            if (got && ref) {
                err = rel_err(got, ref);
                init_same = !memcmp(init, ref_init, n * sizeof *init);
            }
        } else {
            err = got ? 0 : 1e30;
            init_same = got != NULL;
        }
        ok(init_same, "%s, %d micro-batches: initial parameters bitwise equal to 1 process",
           name, r->accum);
        ok(err <= TOL, "%s, %d micro-batches: parameters after %d steps within %g of 1 process "
           "with a %dx batch (max rel err %.3g)", name, r->accum, K, TOL, W * r->accum, err);
        if (i == ncases - 1) { first = got; got = NULL; }
        free(got);
        free(init);
        free(ref);
        free(ref_init);
    }
    return first;
}

/* The last case again, and with prefetch, resharding or the optimizer
 * state's tier changed: bitwise the same; bf16: close (not with --quick). */
static void test_reruns(strata_context_t *ctx, strata_config_t *cfg, const run_t *last, const float *first)
{
    size_t n;
    float *again = train(ctx, last, B, last->accum, R, W, NULL, &n);
    ok(first && again && !memcmp(first, again, n * sizeof *first),
       "a second run with the same seed is bitwise identical");
    if (quick) {
        free(again);
        return;
    }
    strata_config_t *c0 = NULL;
    strata_context_t *ctx0 = NULL;
    long long prefetch = -1;
    strata_config_get_int(cfg, "prefetch", &prefetch);
    float *nopf = NULL, *norsh = NULL, *bf = NULL;
    if (STRATA_OK == strata_config_dup(cfg, &c0) &&
        STRATA_OK == strata_config_set_int(c0, "prefetch", 0, NULL, 0) &&
        STRATA_OK == strata_init(MPI_COMM_WORLD, c0, &ctx0))
        nopf = train(ctx0, last, B, last->accum, R, W, NULL, &n);
    strata_config_destroy(c0);
    strata_finalize(ctx0);
    ok(first && nopf && !memcmp(first, nopf, n * sizeof *first),
       "prefetch 0 gives bitwise the same parameters as prefetch %lld", prefetch);
    run_t nr = *last;
    nr.reshard = 0;
    norsh = train(ctx, &nr, B, nr.accum, R, W, NULL, &n);
    ok(first && norsh && !memcmp(first, norsh, n * sizeof *first),
       "reshard-after-forward off gives bitwise the same parameters");
    run_t hst = *last;
    hst.host = 1;
    float *onhost = train(ctx, &hst, B, hst.accum, R, W, NULL, &n);
    ok(first && onhost && !memcmp(first, onhost, n * sizeof *first),
       "optimizer state in pinned host gives bitwise the same parameters");
    free(onhost);
    run_t b16 = *last;
    b16.bf16 = 1;
    bf = train(ctx, &b16, B, b16.accum, R, W, NULL, &n);
    double e = first && bf ? rel_err(bf, first) : 1e30;
    ok(e < 0.05, "bf16 compute and reduction stay close to f32 (max rel err %.3g < 0.05)", e);
    free(nopf);
    free(norsh);
    free(bf);
    free(again);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "shard", 1, NULL, 'S' }, { "layers", 1, NULL, 'l' }, { "width", 1, NULL, 'w' },
        { "batch", 1, NULL, 'b' }, { "steps", 1, NULL, 'k' },
        { "no-progress-thread", 0, NULL, 'n' }, { "quick", 0, NULL, 'q' }, { "chunk", 1, NULL, 'c' },
        { NULL, 0, NULL, 0 }
    };
    int c;
    while (-1 != (c = getopt_long(argc, argv, "", lo, NULL))) {
        switch (c) {
        case 'S': S = atoi(optarg); break;
        case 'l': L = atoi(optarg); break;
        case 'w': D = atoi(optarg); break;
        case 'b': B = atoi(optarg); break;
        case 'k': K = atoi(optarg); break;
        case 'n': progress = 0; break;
        case 'c': chunk = atoi(optarg); break;
        case 'q': quick = 1; break;
        default: return 2;
        }
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    tap_use_comm(MPI_COMM_WORLD);

    static const run_t cases_full[] = {
        { STRATA_OPTIM_SGD,   0.0f, 1, -1, 1, 0, 0 },
        { STRATA_OPTIM_SGD,   0.0f, 2, -1, 1, 0, 0 },
        { STRATA_OPTIM_ADAMW, 0.5f, 1, -1, 1, 0, 0 },
        { STRATA_OPTIM_ADAMW, 0.5f, 2, -1, 1, 0, 0 },
    };
    static const run_t cases_quick[] = {
        { STRATA_OPTIM_SGD,   0.0f, 2, -1, 1, 0, 0 },
        { STRATA_OPTIM_ADAMW, 0.5f, 2, -1, 1, 0, 0 },
    };
    const run_t *cases = quick ? cases_quick : cases_full;
    int ncases = quick ? 2 : 4;
    plan(2 * ncases + (quick ? 1 : 5));

    strata_config_t *cfg = NULL, *scfg = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set_int(cfg, "shard_size", S, NULL, 0);
    strata_context_t *ctx = NULL, *self = NULL;
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    if (STRATA_OK != strata_config_dup(cfg, &scfg)) bail_out("strata_config_dup failed");
    strata_config_set_int(scfg, "shard_size", 0, NULL, 0);
    if (0 == R && STRATA_OK != strata_init(MPI_COMM_SELF, scfg, &self))
        bail_out("strata_init on MPI_COMM_SELF failed");
    strata_config_destroy(scfg);
    diag("W %d, S %d, %d layers x %d, batch %d per rank, %d steps", W, S ? S : W, L, D, B, K);

    float *first = test_cases(ctx, self, cases, ncases);
    test_reruns(ctx, cfg, &cases[ncases - 1], first);
    free(first);
    strata_finalize(self);
    strata_finalize(ctx);
    strata_config_destroy(cfg);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
