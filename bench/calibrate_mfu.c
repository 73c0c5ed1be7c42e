/*
 * calibrate_mfu.c - a CPU hardware file's compute.mfu measured rather than
 * taken as 1: one transformer block of the example GPT run forward and
 * backward through the GPT's CPU kernels (examples/gpt, what train_gpt
 * runs) at the model file's width and heads and the planned micro-batch
 * and sequence, on the rank's threads, every rank at once.
 *
 *   mpirun -np N bench/calibrate_mfu --hw FILE --model M --micro B --seq S [--threads T]
 *
 * FILE is what `strata calibrate` wrote on the same ranks; its
 * compute.dense_flops and hbm.bandwidth stay, compute.mfu and
 * compute.mfu_from (what was timed) are written into it. The planner
 * charges a block its matrix FLOPs at dense_flops x mfu plus its
 * elementwise bytes at the hbm bandwidth (docs/planner.md, Costs); mfu is
 * what makes that sum the measured time:
 *
 *     mfu = (1 + b) F / dense_flops / (t - (1 + b) M / hbm_bw)
 *
 * with F, M and b the planner's own forward FLOPs, forward bytes and
 * backward factor of the block (plan_units), t the measured seconds of a
 * forward and a backward. A GPU file takes mfu from published training
 * runs; this is the CPU kernels' own: the products on warm operands split
 * over the team, with their bias, and the layernorms, attention and GELU
 * at what they cost beside the bytes they move. It lives in bench/, not in
 * `strata calibrate`, because the tools may not depend on an example's
 * kernels (docs/architecture.md).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <mpi.h>

#include "strata.h"
#include "base/base.h"
#include "bench/stats.h"
#include "examples/gpt/gpt.h"
#include "plan/plan.h"

/* Blocks the loop cycles through: each call's weights and activations
 * were last touched a few blocks ago, as in a step, not a call ago. */
#define NBLK 4
#define WINDOWS 7
#define WINDOW_S 0.1

typedef struct {
    float *params[GPT_MAX_PARAMS], *dparams[GPT_MAX_PARAMS];
    gpt_saves saves;
    float *x_in, *x_out, *dx_out, *dx_in;
} block_bufs_t;

typedef struct {
    gpt_config cfg;
    int B, T, np;
    block_bufs_t b[NBLK];
    gpt_workspace ws;
    long calls;
} block_job_t;

static float *fill(size_t n, float v)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; p && i < n; i++) p[i] = v * (float)((i * 2654435761u) % 1000) / 1000.0f;
    return p;
}

static int block_alloc(block_job_t *j)
{
    gpt_param_info pi[GPT_MAX_PARAMS];
    size_t sz[GPT_MAX_SAVES], n = (size_t)j->B * (size_t)j->T * (size_t)j->cfg.dim;
    j->np = gpt_unit_params(&j->cfg, 1, pi);
    gpt_block_save_sizes(&j->cfg, j->B, j->T, sz);
    int ok = j->np > 0;
    for (int k = 0; ok && k < NBLK; k++) {
        block_bufs_t *b = &j->b[k];
        for (int i = 0; i < j->np; i++) {
            ok = ok && (b->params[i] = malloc(pi[i].numel * sizeof(float))) && (b->dparams[i] = fill(pi[i].numel, 0));
            if (ok) gpt_param_init(&pi[i], 1, 1, i, 0, pi[i].numel, b->params[i]);
        }
        for (int s = 0; s < GPT_MAX_SAVES; s++) ok = ok && (b->saves.p[s] = fill(sz[s], 0));
        ok = ok && (b->x_in = fill(n, 1)) && (b->x_out = fill(n, 0)) && (b->dx_out = fill(n, 1e-3f)) &&
             (b->dx_in = fill(n, 0));
    }
    j->ws.n = gpt_unit_workspace_floats(&j->cfg, 1, j->B, j->T);
    return ok && (j->ws.buf = fill(j->ws.n, 0));
}

static void block_free(block_job_t *j)
{
    for (int k = 0; k < NBLK; k++) {
        block_bufs_t *b = &j->b[k];
        for (int i = 0; i < GPT_MAX_PARAMS; i++) { free(b->params[i]); free(b->dparams[i]); }
        for (int s = 0; s < GPT_MAX_SAVES; s++) free(b->saves.p[s]);
        free(b->x_in); free(b->x_out); free(b->dx_out); free(b->dx_in);
    }
    free(j->ws.buf);
}

/* one block's forward and backward, the next block's buffers each call;
 * the seconds of each added to fb[0] and fb[1] */
static void block_op(block_job_t *j, double fb[2])
{
    block_bufs_t *b = &j->b[j->calls++ % NBLK];
    double t0 = base_now();
    gpt_block_forward(&j->cfg, j->B, j->T, (const float *const *)b->params, b->x_in, b->x_out, &b->saves, &j->ws);
    double t1 = base_now();
    gpt_block_backward(&j->cfg, j->B, j->T, (const float *const *)b->params, &b->saves, b->dx_out, b->dx_in,
                       b->dparams, &j->ws);
    fb[0] += t1 - t0;
    fb[1] += base_now() - t1;
}

/* median seconds of one block's forward (fb[0]) and of its backward
 * (fb[1]) over windows that every rank starts at once (where ranks share
 * cores, a window spans many scheduler slices, so each rank times its
 * share); a rank that could not allocate still takes part in the barriers */
static void block_seconds(block_job_t *j, int ok, double fb[2])
{
    double t[2][WINDOWS], warm[2] = { 0, 0 };
    if (ok) block_op(j, warm);   /* first touch */
    for (int w = 0; w < WINDOWS; w++) {
        double s[2] = { 0, 0 };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = base_now();
        long n = 0;
        do {
            if (ok) block_op(j, s);
            n++;
        } while (base_now() - t0 < WINDOW_S);
        t[0][w] = s[0] / (double)n;
        t[1][w] = s[1] / (double)n;
    }
    fb[0] = median(t[0], WINDOWS);
    fb[1] = median(t[1], WINDOWS);
}

typedef struct { const char *hw, *model; int micro, seq, threads; } mopts_t;

static int parse(int argc, char **argv, mopts_t *o)
{
    *o = (mopts_t){ NULL, NULL, 0, 0, 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!v) { fprintf(stderr, "calibrate_mfu: %s needs a value (or is unknown)\n", a); return -1; }
        i++;
        int *num = !strcmp(a, "--micro") ? &o->micro : !strcmp(a, "--seq") ? &o->seq :
                   !strcmp(a, "--threads") ? &o->threads : NULL;
        if (num) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < 1 || x > 1 << 20) {
                fprintf(stderr, "calibrate_mfu: %s: expected a positive integer, got '%s'\n", a, v);
                return -1;
            }
            *num = (int)x;
        } else if (!strcmp(a, "--hw")) o->hw = v;
        else if (!strcmp(a, "--model")) o->model = v;
        else { fprintf(stderr, "calibrate_mfu: unknown option '%s'\n", a); return -1; }
    }
    const char *miss = !o->hw ? "--hw" : !o->model ? "--model" : !o->micro ? "--micro" : !o->seq ? "--seq" : NULL;
    if (miss) { fprintf(stderr, "calibrate_mfu: %s is required (see --help)\n", miss); return -1; }
    return 0;
}

/* The model (gpt family, --micro x --seq a shape its kernels take) and the
 * block's planner figures: F and M for a forward and a backward. 0, or -1
 * with err. */
static int model_of(const mopts_t *o, gpt_config *cfg, double *F, double *M, char *name, char *err, size_t len)
{
    plan_model_t m;
    char why[256];
    if (STRATA_OK != plan_model_load(o->model, &m, err, len)) return -1;
    if (PLAN_GPT != m.family) {
        snprintf(err, len, "--model %s: only the example GPT's family (gpt) has CPU kernels to time", o->model);
        return -1;
    }
    *cfg = (gpt_config){ (int)m.layers, (int)m.hidden, (int)m.heads, (int)m.max_seq };
    if (STRATA_OK != gpt_shape_validate(cfg, o->micro, o->seq, why, sizeof why)) {
        snprintf(err, len, "--model %s at --micro %d --seq %d: %s", o->model, o->micro, o->seq, why);
        return -1;
    }
    plan_shape_t sh = { .fsdp = 1, .replicas = 1, .ep = 1, .micro = o->micro, .seq = o->seq, .accum = 1 };
    plan_unit_t *u = NULL;
    int nu = 0;
    if (STRATA_OK != plan_units(&m, &sh, &u, &nu, err, len)) return -1;
    int found = 0;
    for (int i = 0; i < nu && !found; i++)
        if (!strcmp(u[i].name, "block0")) {
            *F = (1 + u[i].bwd_factor) * u[i].fwd_flops;
            *M = (1 + u[i].bwd_factor) * u[i].fwd_mem_bytes;
            found = 1;
        }
    free(u);
    snprintf(name, 64, "%s", m.name);
    if (!found) snprintf(err, len, "--model %s: the planner has no block0 unit for it", o->model);
    return found ? 0 : -1;
}

/* compute.dense_flops and hbm.bandwidth of the file: 0, or -1 with err */
static int hw_rates(json_t *hw, const char *path, double *dense, double *bw, char *err, size_t len)
{
    *dense = json_number_value(json_object_get(json_object_get(hw, "compute"), "dense_flops"));
    *bw = json_number_value(json_object_get(json_object_get(hw, "hbm"), "bandwidth"));
    if (*dense > 0 && *bw > 0) return 0;
    snprintf(err, len, "--hw %s: no positive compute.dense_flops and hbm.bandwidth (write it with "
             "`strata calibrate` first)", path);
    return -1;
}

/* FILE with compute.mfu and compute.mfu_from set, through a temporary
 * file renamed over it (a failed write leaves FILE as it was) */
static int hw_write(json_t *hw, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = json_dump_file(hw, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (0 == rc) rc = rename(tmp, path);
    if (rc) { remove(tmp); fprintf(stderr, "calibrate_mfu: cannot write %s\n", path); }
    return rc;
}

int main(int argc, char **argv)
{
    gpt_threads_reexec(argv);   /* libgomp's spin as train_gpt runs it (examples/gpt/threads.c) */
    mopts_t o;
    int rc = parse(argc, argv, &o);
    if (rc) {
        fprintf(rc > 0 ? stdout : stderr, "usage: mpirun -np N calibrate_mfu --hw FILE --model M --micro B --seq S "
                "[--threads T]\nWrites compute.mfu into FILE (from `strata calibrate` on the same ranks): one "
                "block of M (a gpt\nfamily model file or shipped name) forward and backward through the GPT's CPU "
                "kernels at\nB x S rows on T threads a rank (default $OMP_NUM_THREADS or 1), against FILE's\n"
                "dense_flops and hbm bandwidth (docs/planner.md).\n");
        return rc > 0 ? 0 : 2;
    }
    /* every rank checks alike, before MPI and before anything is timed */
    char err[512], name[64];
    block_job_t j;
    memset(&j, 0, sizeof j);
    double F = 0, M = 0, dense = 0, bw = 0;
    json_error_t je;
    json_t *hw = json_load_file(o.hw, 0, &je);
    if (!hw) snprintf(err, sizeof err, "--hw %s: %s (line %d)", o.hw, je.text, je.line);
    if (!hw || model_of(&o, &j.cfg, &F, &M, name, err, sizeof err) ||
        hw_rates(hw, o.hw, &dense, &bw, err, sizeof err)) {
        fprintf(stderr, "calibrate_mfu: %s\n", err);
        json_decref(hw);
        return 2;
    }
    j.B = o.micro;
    j.T = o.seq;
    const char *omp = getenv("OMP_NUM_THREADS");
    gpt_threads_init(o.threads ? o.threads : omp && atoi(omp) > 0 ? atoi(omp) : 1);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int ok = block_alloc(&j);
    double fb[2] = { 0, 0 };
    block_seconds(&j, ok, fb);
    double t = fb[0] + fb[1];
    block_free(&j);
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    rc = 0;
    if (!all) {
        if (0 == rank) fprintf(stderr, "calibrate_mfu: out of memory for %d blocks at --micro %d --seq %d\n", NBLK,
                               o.micro, o.seq);
        rc = 1;
    } else if (0 == rank) {
        /* what the products leave of the block's time; at least a tenth
         * of it (the bytes cannot take all of it) */
        double left = t - M / bw, mfu = F / dense / (left > 0.1 * t ? left : 0.1 * t);
        json_t *c = json_object_get(hw, "compute");
        /* the block's products ran faster than calibrate's sgemm windows
         * (ranks sharing cores, caught at another moment of a shared
         * machine): the planner reads mfu up to 1, so the block's own rate
         * becomes dense_flops, and the sgemm's is kept beside it. Capping
         * mfu at 1 instead left every prediction slower than the block. */
        double sgemm = dense;
        if (mfu > 1) {
            dense *= mfu;
            mfu = 1;
            json_object_set_new(c, "dense_flops", json_real(dense));
        }
        if (mfu < 0.01) {   /* the planner reads 0.01..1 */
            fprintf(stderr, "calibrate_mfu: --hw %s: its dense_flops (%.3g) is not this machine's: the block "
                    "ran at %.3g of it; write the file with `strata calibrate` on these ranks\n", o.hw, dense, mfu);
            rc = 2;
        } else {
            json_object_set_new(c, "mfu", json_real(mfu));
            json_object_set_new(c, "mfu_from", json_pack("{s:s,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "measured_by",
                                "bench/calibrate_mfu: one block forward and backward through the GPT's CPU "
                                "kernels", "model", name, "micro_batch", o.micro, "seq", o.seq, "block_s", t,
                                "forward_s", fb[0], "backward_s", fb[1],
                                "matrix_s_at_dense", F / dense, "elementwise_s", M / bw,
                                "sgemm_dense_flops", sgemm));
            rc = hw_write(hw, o.hw) ? 1 : 0;
        }
    }
    json_decref(hw);
    MPI_Finalize();
    return rc;
}
