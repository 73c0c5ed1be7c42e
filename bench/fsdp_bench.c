/*
 * fsdp_bench.c - the examples/mlp model trained with FSDP, prefetch on
 * (option prefetch = 1) against prefetch off (0), and with prefetch on the
 * flight recorder on (the default) against off (flight_entries = 0), in
 * the same run, in interleaved rounds so that machine noise hits all
 * alike; medians over the measured steps. The recorder's overhead is the
 * median over the rounds of each round's on/off step-time ratio, with
 * half the interquartile range. Each round builds its recorder-on and
 * recorder-off setups anew, in alternating order: one context's memory
 * placement alone moved its compute time by 2-3% for the whole run, more
 * than the recorder costs, and fresh setups per round spread that over
 * the pairs. Launched by bench/run fsdp at W = 1, 2, 4.
 *
 *   fsdp_bench [--json] [--header] [--steps N (8)] [--rounds N (30)]
 *
 * Per step: step_s (slowest rank), compute_s (time in callbacks),
 * exposed_comm_s (time the step blocked waiting for a collective) and
 * optim_s (optimizer), the last three averaged over ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "examples/mlp/mlp_model.h"
#include "stats.h"

/* the fixed configuration (printed) */
#define LAYERS 8
#define WIDTH  256
#define BATCH  32

static int CHUNK = 16;       /* rows between strata_call_progress calls; 0 = none */
static int PTHREAD = 1;      /* progress thread */

typedef struct {
    strata_context_t *ctx;
    strata_model_t   *model;
    mlp_t             mlp;
    int               step;
    double           *t[4];    /* step, compute, exposed, optim per measured step */
    int               n;
} setup_t;

static void unmake(setup_t *s)
{
    strata_model_destroy(s->model);
    strata_finalize(s->ctx);
    s->model = NULL;
    s->ctx = NULL;
}

/* The context and model of a setup (its measurements stay as they are). */
static int make(setup_t *s, int prefetch, int recorder)
{
    strata_config_t *cfg = NULL;
    strata_model_opts_t o;
    if (STRATA_OK != strata_config_create(&cfg)) return -1;
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set_int(cfg, "prefetch", prefetch, NULL, 0);
    /* one blocking allreduce per collective would sync the ranks */
    strata_config_set_int(cfg, "comm_check", 0, NULL, 0);
    if (!recorder) strata_config_set_int(cfg, "flight_entries", 0, NULL, 0);
    memset(&s->mlp, 0, sizeof s->mlp);
    s->mlp.chunk_rows = CHUNK;
    strata_model_opts_default(&o);
    o.optimizer = STRATA_OPTIM_ADAMW;
    o.progress_thread = PTHREAD;
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &s->ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st ||
        STRATA_OK != strata_model_create(s->ctx, &o, &s->model) ||
        STRATA_OK != mlp_build(s->model, &s->mlp, LAYERS, WIDTH) ||
        STRATA_OK != strata_model_commit(s->model)) {
        fprintf(stderr, "fsdp_bench: set-up failed: %s\n", strata_last_error(s->ctx));
        return -1;
    }
    return 0;
}

/* Run k steps; record them when measure. */
static int run(setup_t *s, int k, int measure, int W, int R)
{
    mlp_train_t a = { .batch = BATCH, .accum = 1, .steps = 1, .data_rank = R, .data_ranks = W };
    for (int i = 0; i < k; i++) {
        a.data_seed = 1000 + (uint64_t)s->step++;
        MPI_Barrier(MPI_COMM_WORLD);
        strata_status_t st = mlp_train(s->model, &s->mlp, &a, NULL);
        if (STRATA_OK != st) {
            fprintf(stderr, "fsdp_bench: %s\n", strata_last_error(s->ctx));
            return -1;
        }
        if (!measure) continue;
        strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
        strata_model_stats(s->model, &ms);
        double v[4] = { ms.step_s, ms.compute_s, ms.exposed_comm_s, ms.optim_s }, r[4];
        MPI_Allreduce(v, r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(v + 1, r + 1, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        s->t[0][s->n] = r[0];
        for (int j = 1; j < 4; j++) s->t[j][s->n] = r[j] / W;
        s->n++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int json = 0, header = 0, steps = 8, rounds = 30, W, R, provided;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--header")) header = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) CHUNK = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-progress-thread")) PTHREAD = 0;
        else { fprintf(stderr, "usage: fsdp_bench [--json] [--header] [--steps N] [--rounds N]\n"); return 2; }
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    /* prefetch off, prefetch on, prefetch on without the recorder */
    enum { NSET = 3 };
    static const int pre[NSET] = { 0, 1, 1 }, rec[NSET] = { 1, 1, 0 };
    setup_t s[NSET];
    memset(s, 0, sizeof s);
    int cap = steps * rounds;
    for (int p = 0; p < NSET; p++) {
        for (int i = 0; i < 4; i++) s[p].t[i] = calloc((size_t)cap, sizeof(double));
        if (make(&s[p], pre[p], rec[p])) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (0 == R && header) {
        /* with --json, stdout carries only JSON objects (one per line) */
        fprintf(json ? stderr : stdout,
               "# fsdp bench: MLP %d layers x %d (one unit per layer, %.1f MiB of f32 params), "
               "batch %d per rank, AdamW, f32, S = W, comm_check off, progress thread %s, "
               "strata_call_progress every %d rows (0 = never); %d rounds x %d steps per setting, "
               "interleaved, medians\n", LAYERS, WIDTH,
               LAYERS * (WIDTH * WIDTH + WIDTH) * 4.0 / 1048576, BATCH, PTHREAD ? "on" : "off", CHUNK, rounds, steps);
        if (!json)
            printf("%6s %9s %9s %10s %10s %15s %10s\n", "ranks", "prefetch", "recorder", "step_ms",
                   "compute_ms", "exposed_comm_ms", "optim_ms");
    }
    /* warm-up of all */
    for (int p = 0; p < NSET; p++)
        if (run(&s[p], 2, 0, W, R)) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2 && r > 0; k++) {     /* the recorder pair, anew */
            int p = (r + k) % 2 ? 1 : 2;
            unmake(&s[p]);
            if (make(&s[p], pre[p], rec[p]) || run(&s[p], 1, 0, W, R))
                MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int p = 0; p < NSET; p++)
            if (run(&s[(r + p) % NSET], steps, 1, W, R)) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* recorder on/off: per round, the ratio of the two settings' median steps
     * (before the medians below sort the step times) */
    double *ratio = calloc((size_t)rounds, sizeof *ratio);
    for (int r = 0; r < rounds && ratio; r++)
        ratio[r] = median(s[1].t[0] + r * steps, steps) / median(s[2].t[0] + r * steps, steps);
    for (int p = 0; p < NSET; p++) {
        double m[4];
        for (int j = 0; j < 4; j++) m[j] = median(s[p].t[j], s[p].n);
        if (0 != R) continue;
        if (json)
            printf("{\"ranks\":%d,\"prefetch\":%s,\"recorder\":%s,\"step_s\":%.6f,\"compute_s\":%.6f,"
                   "\"exposed_comm_s\":%.6f,\"optim_s\":%.6f}\n", W, pre[p] ? "true" : "false",
                   rec[p] ? "true" : "false", m[0], m[1], m[2], m[3]);
        else
            printf("%6d %9s %9s %10.2f %10.2f %15.2f %10.2f\n", W, pre[p] ? "on" : "off",
                   rec[p] ? "on" : "off", m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, m[3] * 1e3);
    }
    if (0 == R && ratio) {
        qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
        double med = median(ratio, rounds);
        double hiqr = 0.5 * (ratio[(3 * rounds) / 4] - ratio[rounds / 4]);
        if (json)
            printf("{\"ranks\":%d,\"compare\":\"recorder on/off\",\"pairs\":%d,\"step_ratio\":%.4f,"
                   "\"half_iqr\":%.4f}\n", W, rounds, med, hiqr);
        else
            printf("%6d recorder on/off step-time ratio %.4f +- %.4f (median of %d interleaved "
                   "pairs, half IQR)\n", W, med, hiqr, rounds);
    }
    free(ratio);
    fflush(stdout);
    for (int p = 0; p < NSET; p++) {
        unmake(&s[p]);
        for (int j = 0; j < 4; j++) free(s[p].t[j]);
    }
    MPI_Finalize();
    return 0;
}
