/*
 * dev_cuda.c - the device layer on the cuda backend (dev.h): the context's
 * compute stream, the runtime's work queued on it (dev_kernels.cu, the
 * 16-bit casts of base/dtype_cuda.cu), and the stream-ordered release of
 * device blocks, whose pending list is this context's state.
 */
#include "config.h"
#include "dev.h"
#include "base/dtype_cuda.h"
#include "base/wait.h"
#include "comm/comm.h"
#include "fsdp/dev_kernels.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define STREAM(ctx) ((cudaStream_t)(ctx)->compute_stream)

/* Event polls: a short spin (queued work often ends within microseconds),
 * then naps from 20 us, doubling up to 100 us. */
#define POLL_SPIN_S   10e-6
#define POLL_NAP_NS   20000L
#define POLL_NAP_MAX  100000L

typedef struct pending {
    struct pending *next;
    cudaEvent_t     ev;
    fsdp_mem_t     *h;
} pending_t;

/* The callbacks' timing events: pair i is ev[2i] (start), ev[2i + 1]
 * (end); n pairs in use since the last take. Past TIME_MAX pairs without
 * a take (evaluation outside steps) further callbacks go untimed. */
#define TIME_MAX 65536

/* ctx->dev_state: the releases waiting for their event, oldest first; the
 * callbacks' timing events. */
typedef struct {
    pthread_mutex_t lock;
    pending_t      *head, *tail;
    cudaEvent_t    *ev;
    int             n, cap;
} cuda_dev_t;

static strata_status_t cuda_st(strata_context_t *ctx, cudaError_t e, const char *what)
{
    if (cudaSuccess == e) return STRATA_OK;
    (void)cudaGetLastError();
    return base_error(ctx, STRATA_ERR_CUDA, "%s on the compute stream: %s", what,
                      cudaGetErrorString(e));
}

static void poll_start(base_waiter_t *w)
{
    base_waiter_init(w, POLL_SPIN_S, 0, POLL_NAP_NS, POLL_NAP_MAX);
}

/* ---- the devices, the compute stream and the state ----------------------------------- */

/* Only the runtime API is used (never the driver library directly), so a
 * CUDA build runs on machines without a GPU or driver: cudaGetDeviceCount
 * then fails and strata_init uses the host backend. */
static int cuda_devices(void)
{
    int n = 0;
    if (cudaSuccess != cudaGetDeviceCount(&n)) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* The compute stream, on which callbacks queue their device work
 * (strata_call_stream); non-blocking, so it never serialises with the
 * legacy default stream. */
static strata_status_t cuda_init(strata_context_t *ctx)
{
    cuda_dev_t *d = calloc(1, sizeof *d);
    if (!d) return base_error(ctx, STRATA_ERR_NOMEM, "allocating the device layer's state");
    cudaStream_t s;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (cudaSuccess != e) {
        free(d);
        return base_error(ctx, STRATA_ERR_UNSUPPORTED,
                          "cudaStreamCreateWithFlags (the compute stream): %s",
                          cudaGetErrorString(e));
    }
    pthread_mutex_init(&d->lock, NULL);
    ctx->compute_stream = (void *)s;
    ctx->dev_state = d;
    return STRATA_OK;
}

/* After the tiers' cleanup, which freed every block: releases still
 * pending only lose their events. */
static void cuda_cleanup(strata_context_t *ctx)
{
    cuda_dev_t *d = ctx->dev_state;
    for (pending_t *p = d ? d->head : NULL, *n; p; p = n) {
        n = p->next;
        (void)cudaEventDestroy(p->ev);
        free(p);
    }
    if (d) {
        for (int i = 0; i < 2 * d->cap; i++) (void)cudaEventDestroy(d->ev[i]);
        free(d->ev);
        pthread_mutex_destroy(&d->lock);
        free(d);
    }
    if (NULL != ctx->compute_stream) (void)cudaStreamDestroy(STREAM(ctx));
    ctx->compute_stream = NULL;
    ctx->dev_state = NULL;
}

/* ---- stream-ordered release ---------------------------------------------------------- */

static void cuda_free_later(strata_context_t *ctx, fsdp_mem_t *h)
{
    cuda_dev_t *d = ctx->dev_state;
    pending_t *p = malloc(sizeof *p);
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
        (void)cudaStreamSynchronize(STREAM(ctx));
        (void)cudaGetLastError();
        strata_block_free(h);
        return;
    }
    p->h = h;
    p->next = NULL;
    pthread_mutex_lock(&d->lock);
    if (d->tail) d->tail->next = p;
    else d->head = p;
    d->tail = p;
    pthread_mutex_unlock(&d->lock);
}

/* The oldest pending release if its event fired (or, with wait, once it
 * has), unlinked; NULL otherwise. Events fire in stream order. */
static pending_t *take_fired(cuda_dev_t *d, int wait)
{
    base_waiter_t w;
    poll_start(&w);
    pthread_mutex_lock(&d->lock);
    pending_t *p = d->head;
    if (p) {
        cudaError_t e;
        while (cudaErrorNotReady == (e = cudaEventQuery(p->ev)) && wait) {
            pthread_mutex_unlock(&d->lock);
            base_waiter_pause(&w);
            pthread_mutex_lock(&d->lock);
            if (p != d->head) break;   /* another thread took it */
        }
        if (p != d->head || cudaErrorNotReady == e) p = NULL;
        else {
            d->head = p->next;
            if (!d->head) d->tail = NULL;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return p;
}

static int cuda_reclaim(strata_context_t *ctx, int wait)
{
    int freed = 0;
    pending_t *p;
    while ((p = take_fired(ctx->dev_state, wait && !freed))) {
        cudaEventDestroy(p->ev);
        strata_block_free(p->h);
        free(p);
        freed = 1;
    }
    return freed;
}

/* An event after the work queued on the compute stream so far, polled:
 * this thread waits for that work only (later launches, from any thread,
 * go on). */
static strata_status_t cuda_host_sync(strata_context_t *ctx)
{
    cudaEvent_t ev;
    base_waiter_t w;
    poll_start(&w);
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess == e) e = cudaEventRecord(ev, STREAM(ctx));
    while (cudaSuccess == e && cudaErrorNotReady == (e = cudaEventQuery(ev)))
        base_waiter_pause(&w);
    cudaEventDestroy(ev);
    return cuda_st(ctx, e, "the step's device work");
}

static strata_status_t cuda_wait(strata_context_t *ctx)
{
    strata_status_t st = cuda_host_sync(ctx);
    while (cuda_reclaim(ctx, 0)) {}
    return st;
}

/* ---- the callbacks' device time ------------------------------------------------------ */

/* Room for one more pair: the array doubles, its new events created with
 * timing (the release events above are made without). 0, or -1. */
static int time_grow(cuda_dev_t *d)
{
    if (d->n < d->cap) return 0;
    if (d->cap >= TIME_MAX) return -1;
    int cap = d->cap ? 2 * d->cap : 64;
    cudaEvent_t *ev = realloc(d->ev, 2 * (size_t)cap * sizeof *ev);
    if (!ev) return -1;
    d->ev = ev;
    for (int i = 2 * d->cap; i < 2 * cap; i++) {
        if (cudaSuccess != cudaEventCreate(&ev[i])) {
            (void)cudaGetLastError();
            while (i-- > 2 * d->cap) cudaEventDestroy(ev[i]);
            return -1;
        }
    }
    d->cap = cap;
    return 0;
}

static int cuda_time_begin(strata_context_t *ctx)
{
    cuda_dev_t *d = ctx->dev_state;
    if (time_grow(d) || cudaSuccess != cudaEventRecord(d->ev[2 * d->n], STREAM(ctx))) {
        (void)cudaGetLastError();
        return -1;
    }
    return d->n++;
}

static void cuda_time_end(strata_context_t *ctx, int slot)
{
    cuda_dev_t *d = ctx->dev_state;
    if (slot < d->n && cudaSuccess != cudaEventRecord(d->ev[2 * slot + 1], STREAM(ctx)))
        (void)cudaGetLastError();
}

static double cuda_time_take(strata_context_t *ctx, int read)
{
    cuda_dev_t *d = ctx->dev_state;
    double s = 0;
    for (int i = 0; read && i < d->n; i++) {
        float ms = 0;
        if (cudaSuccess != cudaEventElapsedTime(&ms, d->ev[2 * i], d->ev[2 * i + 1])) {
            (void)cudaGetLastError();
            s = -1;
            break;
        }
        s += ms * 1e-3;
    }
    d->n = 0;
    return read ? s : -1;
}

/* ---- arithmetic and copies ------------------------------------------------------------- */

static strata_status_t cuda_fill(strata_context_t *ctx, void *p, int c, size_t bytes)
{
    return cuda_st(ctx, cudaMemsetAsync(p, c, bytes, STREAM(ctx)), "cudaMemsetAsync");
}

static strata_status_t cuda_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    return cuda_st(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, STREAM(ctx)),
                   "cudaMemcpyAsync");
}

static strata_status_t cuda_cast(strata_context_t *ctx, const void *src, void *dst, size_t n,
                                 strata_dtype_t dt, int to16)
{
    int fmt = STRATA_BF16 == dt ? BASE_CVT_BF16 : BASE_CVT_F16;
    return cuda_st(ctx, to16 ? base_cuda_round(src, dst, n, fmt, STREAM(ctx))
                             : base_cuda_widen(src, dst, n, fmt, STREAM(ctx)),
                   to16 ? "rounding to 16 bits" : "widening to f32");
}

static strata_status_t cuda_scale(strata_context_t *ctx, float *x, size_t n, float s, int threads)
{
    (void)threads;
    return cuda_st(ctx, fsdp_cuda_scale(x, n, s, STREAM(ctx)), "gradient scaling");
}

static strata_status_t cuda_optim(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                                  float *p, const float *g, float *s0, float *s1, size_t n,
                                  int threads)
{
    (void)threads;
    cudaError_t e;
    if (STRATA_OPTIM_ADAMW == o->optimizer) {
        fsdp_adamw_k k;   /* the host loops' constants, bit for bit */
        fsdp_adamw_consts(o, t, &k);
        e = fsdp_cuda_adamw(p, g, s0, s1, n, o->beta1, o->beta2, k.step, k.rbc2, o->eps,
                            k.decay, STREAM(ctx));
    } else {
        e = fsdp_cuda_sgd(p, g, s0, n, o->lr, o->weight_decay, o->momentum, STREAM(ctx));
    }
    return cuda_st(ctx, e, "the optimizer step");
}

static strata_status_t cuda_global_sqnorm(strata_model_t *m, float *total_p)
{
    strata_context_t *ctx = m->ctx;
    cudaStream_t s = STREAM(ctx);
    size_t bytes = fsdp_norm_scratch_bytes(m);
    /* scratch: accumulator, its float, the partials: the model's
     * device-tier block (commit made it, with clipping), else the
     * stream-ordered pool, outside the tiers */
    char *scr = m->norm_scratch.bytes >= bytes ? m->norm_scratch.ptr : NULL;
    int own = NULL == scr;
    cudaError_t e = own ? cudaMallocAsync((void **)&scr, bytes, s) : cudaSuccess;
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
    if (STRATA_OK == st) st = cuda_wait(ctx);
    if (own) (void)cudaFreeAsync(scr, s);
    return st;
}

const fsdp_dev_ops_t fsdp_dev_cuda_ops = {
    .name = "cuda",
    .devices = cuda_devices,
    .init = cuda_init,
    .cleanup = cuda_cleanup,
    .fill = cuda_fill,
    .copy = cuda_copy,
    .cast = cuda_cast,
    .scale = cuda_scale,
    .optim = cuda_optim,
    .global_sqnorm = cuda_global_sqnorm,
    .wait = cuda_wait,
    .host_sync = cuda_host_sync,
    .free_later = cuda_free_later,
    .reclaim = cuda_reclaim,
    .time_begin = cuda_time_begin,
    .time_end = cuda_time_end,
    .time_take = cuda_time_take,
};
