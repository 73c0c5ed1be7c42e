/*
 * calibrate_mfu.c - compute.mfu measured rather than assumed: one
 * transformer block of the example GPT run forward and backward through
 * strata's CPU kernels (examples/gpt, the kernels train_gpt runs) at the
 * model file's width and heads and the planned micro-batch and sequence,
 * on the rank's threads, every rank at once. The planner charges a block
 * its matrix FLOPs at dense_flops x mfu plus its elementwise bytes at the
 * hbm bandwidth (docs/planner.md, Costs); mfu is what makes that sum the
 * measured time:
 *
 *     mfu = (1 + b) F / dense_flops / (t - (1 + b) M / hbm_bw)
 *
 * with F, M and b the planner's own forward FLOPs, forward bytes and
 * backward factor of the block (plan_units), t the measured seconds of a
 * forward and a backward. A GPU file takes mfu from published training
 * runs; here the kernels' achieved fraction is this machine's own: the
 * products on warm operands, split over the team, the bias, and the
 * layernorms, attention and GELU at what they really cost beside the
 * bytes they move.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <mpi.h>

#include "strata.h"
#include "examples/gpt/gpt.h"
#include "sched/planner.h"
#include "tools/calibrate.h"

/* Blocks the loop cycles through: each call's weights and activations
 * were last touched a few blocks ago, as in a step, not a call ago. */
#define NBLK 4

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

/* one block's forward and backward, the next block's buffers each call */
static void block_op(void *p)
{
    block_job_t *j = p;
    block_bufs_t *b = &j->b[j->calls++ % NBLK];
    gpt_block_forward(&j->cfg, j->B, j->T, (const float *const *)b->params, b->x_in, b->x_out, &b->saves, &j->ws);
    gpt_block_backward(&j->cfg, j->B, j->T, (const float *const *)b->params, &b->saves, b->dx_out, b->dx_in,
                       b->dparams, &j->ws);
}

/* median seconds of one block's forward + backward over windows of 0.1 s
 * that every rank starts at once */
static double block_seconds(block_job_t *j, int ok)
{
    double t[7];
    if (ok) block_op(j);   /* first touch */
    for (int w = 0; w < 7; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = calib_now(), dt;
        long n = 0;
        do {
            if (ok) block_op(j);
            n++;
        } while ((dt = calib_now() - t0) < 0.1);
        t[w] = dt / (double)n;
    }
    return calib_median(t, 7);
}

/* --model read, of the gpt family, and --micro x --seq a shape its
 * kernels take: 0, or -1 with err */
static int model_of(const copts_t *o, plan_model_t *m, gpt_config *cfg, char *err, size_t len)
{
    char why[256];
    if (STRATA_OK != plan_model_load(o->model, m, err, len)) return -1;
    if (PLAN_GPT != m->family) {
        snprintf(err, len, "--model %s: only the example GPT's family (gpt) has CPU kernels to time; "
                 "leave --model out (mfu 1) or give a gpt model file", o->model);
        return -1;
    }
    *cfg = (gpt_config){ (int)m->layers, (int)m->hidden, (int)m->heads, (int)m->max_seq };
    if (STRATA_OK != gpt_shape_validate(cfg, o->micro, o->seq, why, sizeof why)) {
        snprintf(err, len, "--model %s at --micro %d --seq %d: %s", o->model, o->micro, o->seq, why);
        return -1;
    }
    return 0;
}

int calib_mfu_check(const copts_t *o, char *err, size_t len)
{
    plan_model_t m;
    gpt_config cfg;
    return model_of(o, &m, &cfg, err, len);
}

int calib_mfu(const copts_t *o, double dense, double hbm_bw, json_t **from_p, double *mfu_p, char *err,
              size_t len)
{
    plan_model_t m;
    block_job_t j;
    memset(&j, 0, sizeof j);
    if (model_of(o, &m, &j.cfg, err, len)) return -1;
    j.B = o->micro;
    j.T = o->seq;
    plan_shape_t sh = { .fsdp = 1, .replicas = 1, .ep = 1, .micro = o->micro, .seq = o->seq, .accum = 1 };
    plan_unit_t *u = NULL;
    int nu = 0;
    if (STRATA_OK != plan_units(&m, &sh, &u, &nu, err, len)) return -1;
    const plan_unit_t *blk = NULL;
    for (int i = 0; i < nu && !blk; i++) if (!strcmp(u[i].name, "block0")) blk = &u[i];
    double F = blk ? (1 + blk->bwd_factor) * blk->fwd_flops : 0, M = blk ? (1 + blk->bwd_factor) * blk->fwd_mem_bytes : 0;
    free(u);
    int ok = blk && block_alloc(&j);
    gpt_threads_init(o->threads);   /* the OpenMP team train_gpt runs, the BLAS on 1 thread */
    /* every rank times, also one that could not allocate (the barriers) */
    double t = block_seconds(&j, ok);
    block_free(&j);
    calib_blas_threads(1);
    if (!ok) {
        snprintf(err, len, "--model %s: out of memory for %d blocks at micro-batch %d, seq %d", o->model, NBLK,
                 o->micro, o->seq);
        return -1;
    }
    /* what the products leave of the block's time; at least a tenth of
     * it (the bytes cannot take all of it), mfu at most 1 */
    double left = t - M / hbm_bw, mfu = F / dense / (left > 0.1 * t ? left : 0.1 * t);
    *mfu_p = mfu < 1 ? mfu : 1;
    *from_p = json_pack("{s:s,s:i,s:i,s:f,s:f,s:f}", "model", m.name, "micro_batch", o->micro, "seq", o->seq,
                        "block_s", t, "matrix_s_at_dense", F / dense, "elementwise_s", M / hbm_bw);
    return 0;
}
