/*
 * optim.c - the optimizer on the local shard: AdamW and SGD with momentum,
 * gradient norms and scaling. Loops are plain, restrict-qualified and
 * branch-free inside so the compiler vectorises them; shards larger than
 * PAR_MIN elements are split into chunks between the calling thread and
 * the runtime's worker threads (pool.c). Every
 * element is computed the same way whatever the thread count, so results
 * are bitwise independent of it (norms are summed in fixed chunks).
 * The loops are compiled for AVX-512 and AVX2 besides the baseline, the
 * best picked at load time; fsdp/local.mk's flags (no FMA contraction)
 * make every clone round each element alike. Scalar, AdamW took ~9 ns an
 * element, a tenth of a 2-rank step of the 8-layer GPT.
 */
#define _GNU_SOURCE 1   /* sched_getaffinity, CPU_COUNT */
#include "config.h"
#include "fsdp.h"
#include "strata/elem.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN   (1u << 17)   /* below this the caller alone: AdamW does 128Ki elements in
                                * ~50-150 us, about what waking a worker can take */
#define NORM_CHUNK 4096

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && 11 <= __GNUC__
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

typedef struct {
    int   kind;                /* 0 adamw, 1 sgd, 2 sqnorm, 3 scale, 4 copy, 5 fill (bytes) */
    const strata_model_opts_t *o;
    int   t;
    float *p, *s0, *s1;
    const float *g;
    size_t lo, hi;             /* element range of this slice */
    float  scale;
    double *chunk_sums;        /* sqnorm: one per NORM_CHUNK */
    char  *dst;                /* copy, fill: byte ranges */
    const char *src;
    int    byte;
} job_t;

void fsdp_adamw_consts(const strata_model_opts_t *o, int t, fsdp_adamw_k *k)
{
    const float bc1 = 1.0f - powf(o->beta1, (float)t), bc2 = 1.0f - powf(o->beta2, (float)t);
    k->step = o->lr / bc1;
    k->rbc2 = 1.0f / sqrtf(bc2);
    k->decay = 1.0f - o->lr * o->weight_decay;
}

CLONES static void adamw(const strata_model_opts_t *o, int t, float *restrict p,
                  const float *restrict g, float *restrict m, float *restrict v,
                  size_t lo, size_t hi)
{
    const float b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    fsdp_adamw_k k;
    fsdp_adamw_consts(o, t, &k);
    const float step = k.step, rbc2 = k.rbc2, decay = k.decay;
    for (size_t i = lo; i < hi; i++)
        strata_elem_adamw(p + i, g[i], m + i, v + i, b1, b2, step, rbc2, eps, decay);
}

CLONES static void sgd(const strata_model_opts_t *o, float *restrict p, const float *restrict g,
                float *restrict buf, size_t lo, size_t hi)
{
    const float lr = o->lr, wd = o->weight_decay, mu = o->momentum;
    if (buf) {
        for (size_t i = lo; i < hi; i++) strata_elem_sgd_momentum(p + i, g[i], buf + i, lr, wd, mu);
    } else {
        for (size_t i = lo; i < hi; i++) strata_elem_sgd(p + i, g[i], lr, wd);
    }
}

/* Sum of squares of x[c, e) in 8 f32 lanes, then f64: the same partition
 * whatever the threading. */
CLONES static double chunk_sq(const float *x, size_t c, size_t e)
{
    float acc[8] = { 0 };
    size_t i = c;
    for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k] * x[i + k];
    double s = 0;
    for (int k = 0; k < 8; k++) s += acc[k];
    for (; i < e; i++) s += (double)x[i] * x[i];
    return s;
}

static void run_job(job_t *j)
{
    switch (j->kind) {
    case 0: adamw(j->o, j->t, j->p, j->g, j->s0, j->s1, j->lo, j->hi); break;
    case 1: sgd(j->o, j->p, j->g, j->s0, j->lo, j->hi); break;
    case 2:
        for (size_t c = j->lo; c < j->hi; c += NORM_CHUNK)
            j->chunk_sums[c / NORM_CHUNK] = chunk_sq(j->g, c, c + NORM_CHUNK < j->hi ?
                                                      c + NORM_CHUNK : j->hi);
        break;
    case 3:
        for (size_t i = j->lo; i < j->hi; i++) j->p[i] *= j->scale;
        break;
    case 4: memcpy(j->dst + j->lo, j->src + j->lo, j->hi - j->lo); break;
    case 5: memset(j->dst + j->lo, j->byte, j->hi - j->lo); break;
    }
}

/* One chunk [lo, hi) of the job in arg (fsdp_pool_run's callback). */
static void run_range(void *arg, size_t lo, size_t hi)
{
    job_t j = *(const job_t *)arg;
    j.lo = lo;
    j.hi = hi;
    run_job(&j);
}

/* [0, n) in chunks on the caller and the pool's workers (pool.c): chunks
 * of elements are multiples of NORM_CHUNK, so a norm's partial sums fall
 * on the same boundaries whatever the threads; copies and fills go in
 * chunks of COPY_CHUNK bytes. */
#define ELEM_CHUNK (4 * NORM_CHUNK)
#define COPY_CHUNK ((size_t)256 << 10)

static void parallel(job_t *proto, size_t n, int threads)
{
    if (n < PAR_MIN) threads = 1;
    fsdp_pool_run(run_range, proto, n, proto->kind >= 4 ? COPY_CHUNK : ELEM_CHUNK, threads);
}

double fsdp_sqnorm(const float *x, size_t n, int threads)
{
    size_t nchunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    double stack[64], *sums = nchunks <= 64 ? stack : malloc(nchunks * sizeof *sums);
    if (!sums) {   /* no memory for partials: one thread, same chunks */
        double t = 0;
        for (size_t c = 0; c < n; c += NORM_CHUNK)
            t += chunk_sq(x, c, c + NORM_CHUNK < n ? c + NORM_CHUNK : n);
        return t;
    }
    job_t j = { .kind = 2, .g = x, .chunk_sums = sums };
    parallel(&j, n, threads);
    double s = 0;
    for (size_t c = 0; c < nchunks; c++) s += sums[c];
    if (sums != stack) free(sums);
    return s;
}

void fsdp_scale(float *x, size_t n, float s, int threads)
{
    job_t j = { .kind = 3, .p = x, .scale = s };
    parallel(&j, n, threads);
}

/* Host copies and fills: one core does not reach the memory's bandwidth
 * (a 28 MB copy ran at 6.8 GB/s on one thread, 12.5 on two; the 1-rank
 * gathers and gradient copies of a 12-layer dim-768 GPT took a tenth of
 * its step). Below COPY_PAR_MIN bytes starting a thread costs more. */
#define COPY_PAR_MIN (1u << 20)

void fsdp_host_copy(const strata_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    job_t j = { .kind = 4, .dst = dst, .src = src };
    parallel(&j, bytes, bytes < COPY_PAR_MIN ? 1 : fsdp_host_threads(ctx));
}

void fsdp_host_fill(const strata_context_t *ctx, void *p, int byte, size_t bytes)
{
    job_t j = { .kind = 5, .dst = p, .byte = byte };
    parallel(&j, bytes, bytes < COPY_PAR_MIN ? 1 : fsdp_host_threads(ctx));
}

void fsdp_optim_step(const strata_model_opts_t *o, int t, float *param, const float *grad,
                     float *s0, float *s1, size_t n, int threads)
{
    job_t j = { .kind = STRATA_OPTIM_ADAMW == o->optimizer ? 0 : 1, .o = o, .t = t,
                .p = param, .g = grad, .s0 = s0, .s1 = s1 };
    parallel(&j, n, threads);
}

int fsdp_optim_nstate(const strata_model_opts_t *o)
{
    if (STRATA_OPTIM_ADAMW == o->optimizer) return 2;
    return 0.0f != o->momentum ? 1 : 0;
}

const char *fsdp_optim_state_name(const strata_model_opts_t *o, int i)
{
    if (i < 0 || i >= fsdp_optim_nstate(o)) return NULL;
    if (STRATA_OPTIM_ADAMW == o->optimizer) return 0 == i ? "exp_avg" : "exp_avg_sq";
    return "momentum";
}

int fsdp_optim_threads(const strata_model_t *m)
{
    return m->opts.optim_threads > 0 ? m->opts.optim_threads : fsdp_host_threads(m->ctx);
}

int fsdp_host_threads(const strata_context_t *ctx)
{
    int t = ctx->cfg.threads;
    if (t <= 0) {
        cpu_set_t set;
        t = 0 == sched_getaffinity(0, sizeof set, &set) ? CPU_COUNT(&set) : 1;
    }
    return t < 1 ? 1 : t;
}
