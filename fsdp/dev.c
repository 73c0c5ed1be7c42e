/*
 * dev.c - the runtime's arithmetic and copies where the step's buffers
 * live (dev.h): the host code of before on the host backend, work queued
 * on the compute stream on the cuda backend, and the stream-ordered
 * release of device blocks.
 */
#include "config.h"
#include "dev.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#include "fsdp/dev_kernels.h"
#ifdef HAVE_NCCL
#include "comm/nccl_convert.h"
#endif
#include "comm/comm.h"

#define STREAM(ctx) ((cudaStream_t)(ctx)->compute_stream)

static strata_status_t cuda_st(strata_context_t *ctx, cudaError_t e, const char *what)
{
    if (cudaSuccess == e) return STRATA_OK;
    (void)cudaGetLastError();
    return base_error(ctx, STRATA_ERR_CUDA, "%s on the compute stream: %s", what,
                      cudaGetErrorString(e));
}

/* ---- stream-ordered release ---------------------------------------------------------- */

typedef struct pending {
    struct pending *next;
    cudaEvent_t     ev;
    fsdp_mem_t     *h;
} pending_t;

/* one list per process: the compute stream is the context's, and a
 * process has one context on the cuda backend */
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_t *pend_head, *pend_tail;

void fsdp_dev_free_later(strata_context_t *ctx, fsdp_mem_t *h)
{
    if (!h) return;
    pending_t *p = fsdp_dev_on(ctx) ? malloc(sizeof *p) : NULL;
    if (p && cudaSuccess != cudaEventCreateWithFlags(&p->ev, cudaEventDisableTiming)) {
        free(p);
        p = NULL;
    }
    if (p && cudaSuccess != cudaEventRecord(p->ev, STREAM(ctx))) {
        cudaEventDestroy(p->ev);
        free(p);
        p = NULL;
    }
    if (!p) {   /* no event: the stream must be idle before the block goes */
        if (fsdp_dev_on(ctx)) (void)cudaStreamSynchronize(STREAM(ctx));
        (void)cudaGetLastError();
        fsdp_mem_free(h);
        return;
    }
    p->h = h;
    p->next = NULL;
    pthread_mutex_lock(&pend_lock);
    if (pend_tail) pend_tail->next = p;
    else pend_head = p;
    pend_tail = p;
    pthread_mutex_unlock(&pend_lock);
}

/* The oldest pending release if its event fired (or, with wait, once it
 * has), unlinked; NULL otherwise. Events fire in stream order. */
static pending_t *take_fired(int wait)
{
    struct timespec nap = { 0, 20000 };
    pthread_mutex_lock(&pend_lock);
    pending_t *p = pend_head;
    if (p) {
        cudaError_t e;
        while (cudaErrorNotReady == (e = cudaEventQuery(p->ev)) && wait) {
            pthread_mutex_unlock(&pend_lock);
            nanosleep(&nap, NULL);
            pthread_mutex_lock(&pend_lock);
            if (p != pend_head) break;   /* another thread took it */
        }
        if (p != pend_head || cudaErrorNotReady == e) p = NULL;
        else {
            pend_head = p->next;
            if (!pend_head) pend_tail = NULL;
        }
    }
    pthread_mutex_unlock(&pend_lock);
    return p;
}

int fsdp_dev_reclaim(strata_context_t *ctx, int wait)
{
    (void)ctx;
    int freed = 0;
    pending_t *p;
    while ((p = take_fired(wait && !freed))) {
        cudaEventDestroy(p->ev);
        fsdp_mem_free(p->h);
        free(p);
        freed = 1;
    }
    return freed;
}

strata_status_t fsdp_dev_wait(strata_context_t *ctx)
{
    if (!fsdp_dev_on(ctx)) return STRATA_OK;
    cudaEvent_t ev;
    struct timespec nap = { 0, 20000 };
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess == e) e = cudaEventRecord(ev, STREAM(ctx));
    while (cudaSuccess == e && cudaErrorNotReady == (e = cudaEventQuery(ev)))
        nanosleep(&nap, NULL);
    cudaEventDestroy(ev);
    while (fsdp_dev_reclaim(ctx, 0)) {}
    return cuda_st(ctx, e, "the step's device work");
}

#else
void fsdp_dev_free_later(strata_context_t *ctx, fsdp_mem_t *h) { (void)ctx; fsdp_mem_free(h); }
int fsdp_dev_reclaim(strata_context_t *ctx, int wait) { (void)ctx; (void)wait; return 0; }
strata_status_t fsdp_dev_wait(strata_context_t *ctx) { (void)ctx; return STRATA_OK; }
#endif

/* ---- arithmetic and copies ------------------------------------------------------------- */

strata_status_t fsdp_dev_fill(strata_context_t *ctx, void *p, int c, size_t bytes)
{
    if (!fsdp_dev_on(ctx)) {
        fsdp_host_fill(ctx, p, c, bytes);
        return STRATA_OK;
    }
#ifdef HAVE_CUDA
    return cuda_st(ctx, cudaMemsetAsync(p, c, bytes, STREAM(ctx)), "cudaMemsetAsync");
#else
    return STRATA_ERR_UNSUPPORTED;
#endif
}

strata_status_t fsdp_dev_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (!fsdp_dev_on(ctx)) {
        fsdp_host_copy(ctx, dst, src, bytes);
        return STRATA_OK;
    }
#ifdef HAVE_CUDA
    return cuda_st(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, STREAM(ctx)),
                   "cudaMemcpyAsync");
#else
    return STRATA_ERR_UNSUPPORTED;
#endif
}

/* One cast between f32 and a 16-bit format: to16 rounds, else widens. */
static strata_status_t cast(strata_context_t *ctx, const void *src, void *dst, size_t n,
                            strata_dtype_t dt, int to16)
{
    if (!fsdp_dev_on(ctx)) {
        if (to16 && STRATA_BF16 == dt) strata_f32_to_bf16(src, dst, n);
        else if (to16) strata_f32_to_f16(src, dst, n);
        else if (STRATA_BF16 == dt) strata_bf16_to_f32(src, dst, n);
        else strata_f16_to_f32(src, dst, n);
        return STRATA_OK;
    }
#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
    int fmt = STRATA_BF16 == dt ? COMM_CVT_BF16 : COMM_CVT_F16;
    return cuda_st(ctx, to16 ? comm_cuda_round(src, dst, n, fmt, STREAM(ctx))
                             : comm_cuda_widen(src, dst, n, fmt, STREAM(ctx)),
                   to16 ? "rounding to 16 bits" : "widening to f32");
#else
    return base_error(ctx, STRATA_ERR_UNSUPPORTED, "16-bit casts on the device need NCCL's "
                      "conversion kernels (configure found no NCCL)");
#endif
}

strata_status_t fsdp_dev_round(strata_context_t *ctx, const float *src, void *dst, size_t n,
                               strata_dtype_t dt)
{
    return cast(ctx, src, dst, n, dt, 1);
}

strata_status_t fsdp_dev_widen(strata_context_t *ctx, const void *src, float *dst, size_t n,
                               strata_dtype_t dt)
{
    return cast(ctx, src, dst, n, dt, 0);
}

strata_status_t fsdp_dev_scale(strata_context_t *ctx, float *x, size_t n, float s, int threads)
{
    if (!fsdp_dev_on(ctx)) {
        fsdp_scale(x, n, s, threads);
        return STRATA_OK;
    }
#ifdef HAVE_CUDA
    return cuda_st(ctx, fsdp_cuda_scale(x, n, s, STREAM(ctx)), "gradient scaling");
#else
    return STRATA_ERR_UNSUPPORTED;
#endif
}

strata_status_t fsdp_dev_optim(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                               float *p, const float *g, float *s0, float *s1, size_t n,
                               int threads)
{
    if (!fsdp_dev_on(ctx)) {
        fsdp_optim_step(o, t, p, g, s0, s1, n, threads);
        return STRATA_OK;
    }
#ifdef HAVE_CUDA
    cudaError_t e;
    if (STRATA_OPTIM_ADAMW == o->optimizer) {
        /* optim.c's constants, computed the same way on the host */
        const float bc1 = 1.0f - powf(o->beta1, (float)t), bc2 = 1.0f - powf(o->beta2, (float)t);
        e = fsdp_cuda_adamw(p, g, s0, s1, n, o->beta1, o->beta2, o->lr / bc1, 1.0f / sqrtf(bc2),
                            o->eps, 1.0f - o->lr * o->weight_decay, STREAM(ctx));
    } else {
        e = fsdp_cuda_sgd(p, g, s0, n, o->lr, o->weight_decay, o->momentum, STREAM(ctx));
    }
    return cuda_st(ctx, e, "the optimizer step");
#else
    return STRATA_ERR_UNSUPPORTED;
#endif
}

#ifdef HAVE_CUDA
strata_status_t fsdp_dev_global_sqnorm(strata_model_t *m, float *total_p)
{
    strata_context_t *ctx = m->ctx;
    cudaStream_t s = STREAM(ctx);
    size_t maxc = 1;
    for (int u = 0; u < m->nunits; u++) {
        size_t c = (m->units[u]->shard_len + 4095) / 4096;
        if (c > maxc) maxc = c;
    }
    /* scratch: accumulator, its float, the partials (stream-ordered pool) */
    char *scr = NULL;
    cudaError_t e = cudaMallocAsync((void **)&scr, 16 + maxc * sizeof(double), s);
    if (cudaSuccess != e) return cuda_st(ctx, e, "cudaMallocAsync (norm scratch)");
    double *acc = (double *)scr, *part = (double *)(scr + 16);
    float *f = (float *)(scr + 8);
    e = cudaMemsetAsync(acc, 0, sizeof *acc, s);
    for (int u = 0; cudaSuccess == e && u < m->nunits; u++)
        e = fsdp_cuda_sqnorm(m->units[u]->grad_shard.ptr, m->units[u]->shard_len, part, acc, s);
    if (cudaSuccess == e) e = fsdp_cuda_to_float(acc, f, s);
    strata_status_t st = cuda_st(ctx, e, "the gradient norm");
    if (STRATA_OK == st) st = comm_stream_wait(m->shard, s);
    if (STRATA_OK == st) {
        pthread_mutex_lock(&m->lock);
        st = strata_allreduce(m->shard, f, f, 1, STRATA_F32, STRATA_SUM);
        pthread_mutex_unlock(&m->lock);
    }
    /* the allreduce completed (host saw its event): the word is final */
    if (STRATA_OK == st)
        st = cuda_st(ctx, cudaMemcpyAsync(total_p, f, sizeof *f, cudaMemcpyDeviceToHost, s),
                     "reading the gradient norm");
    if (STRATA_OK == st) st = fsdp_dev_wait(ctx);
    (void)cudaFreeAsync(scr, s);
    return st;
}

#else
strata_status_t fsdp_dev_global_sqnorm(strata_model_t *m, float *total_p)
{
    (void)total_p;
    return base_error(m->ctx, STRATA_ERR_UNSUPPORTED, "a device gradient norm needs CUDA");
}
#endif
