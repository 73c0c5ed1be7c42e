/*
 * cuda.c - the cuda backend (built with HAVE_CUDA): DEVICE is one
 * cudaMalloc'd region (device_mem less NCCL's bytes, which the arena
 * reserves), PINNED_HOST one cudaHostAlloc'd region (host_mem=auto:
 * address space, cudaHostRegister'd in pieces as the blocks reach them),
 * both carved by the same arenas as on the host backend. Each copy engine thread owns a non-blocking stream and
 * queues chunks with cudaMemcpyAsync, each followed by an event; the op
 * completes when its last chunk's event has fired (cuda_drain), so chunks
 * pipeline on the copy engine instead of a host wait per chunk. Chunking,
 * FIFO order, the small-copy overtaking and the strata events stay the
 * engine's, shared with the host backend. A block whose data a stream
 * produces (tiers_block_after) has its next copy ordered after that
 * stream's event on the engine's stream. The storage tier reads and
 * writes the pinned-host region directly (its blocks live there).
 */
#include "config.h"
#include "tiers/tiers.h"
#include "base/wait.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <sys/mman.h>

static strata_status_t cuda_fail(tiers_state_t *ts, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return base_error(ts->ctx, STRATA_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

/* The device tier's region: budget less NCCL's bytes (the arena reserves
 * those, tiers.c), refused at init, with the figures, when the device
 * has not that much free once the context and NCCL have taken theirs. */
static strata_status_t device_region(tiers_state_t *ts, size_t len, void **p)
{
    size_t free_b = 0, total_b = 0, nccl = 0;
    char msg[STRATA_ERRMSG_LEN], s[32], what[128];
    if (ts->dev_nccl && tiers_round(ts->dev_nccl, &nccl)) nccl = ts->dev_nccl;
    size_t region = len > nccl ? len - nccl : TIERS_ALIGN;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (cudaSuccess != e) return cuda_fail(ts, e, "cudaMemGetInfo (before the device tier)");
    ts->dev_init_used = total_b - free_b;
    ts->dev_total = total_b;
    int fit = tiers_device_fit(free_b, total_b, nccl, len, msg, sizeof msg);
    if (fit < 0) return base_error(ts->ctx, STRATA_ERR_CONFIG, "%s", msg);
    if (fit > 0) strata_warn(ts->ctx, "%s", msg);
    else strata_info(ts->ctx, "%s", msg);
    ts->dev_region = region;
    e = cudaMalloc(p, region);
    if (cudaSuccess != e) {
        snprintf(what, sizeof what, "reserving %s for the device tier (lower device_mem)",
                 strata_format_size(region, s, sizeof s));
        return cuda_fail(ts, e, what);
    }
    return STRATA_OK;
}

strata_status_t tiers_cuda_used(tiers_state_t *ts, size_t *used_p)
{
    size_t free_b = 0, total_b = 0;
    cudaError_t e = 0 <= ts->ctx->device ? cudaSetDevice(ts->ctx->device) : cudaSuccess;
    if (cudaSuccess == e) e = cudaMemGetInfo(&free_b, &total_b);
    if (cudaSuccess != e) return cuda_fail(ts, e, "cudaMemGetInfo");
    *used_p = total_b - free_b;
    return STRATA_OK;
}

static strata_status_t cuda_region_create(tiers_state_t *ts, strata_tier_t tier,
                                          size_t capacity, void **base_p)
{
    char s[32], what[128];
    size_t len = capacity ? capacity : TIERS_ALIGN;
    void *p = NULL;
    if (STRATA_TIER_DEVICE == tier) {
        strata_status_t st = device_region(ts, len, &p);
        if (STRATA_OK != st) return st;
    } else if (ts->host_auto) {
        /* address space only: pinned piece by piece (cuda_region_grow) */
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
        if (MAP_FAILED == p)
            return base_error(ts->ctx, STRATA_ERR_NOMEM, "cannot reserve %s of address space "
                              "for the host tier (host_mem auto): set host_mem to a size",
                              strata_format_size(len, s, sizeof s));
    } else {
        cudaError_t e = cudaHostAlloc(&p, len, cudaHostAllocPortable);
        if (cudaSuccess != e) {
            snprintf(what, sizeof what, "pinning %s for the host tier (lower host_mem, or "
                     "host_mem=auto to pin what the run uses)", strata_format_size(len, s, sizeof s));
            return cuda_fail(ts, e, what);
        }
    }
    *base_p = p;
    return STRATA_OK;
}

static strata_status_t cuda_region_grow(tiers_state_t *ts, void *base, size_t from, size_t len,
                                        char *msg, size_t msglen)
{
    char a[32], b[32];
    cudaError_t e = cudaHostRegister((char *)base + from, len, cudaHostRegisterPortable);
    if (cudaSuccess == e) return STRATA_OK;
    (void)cudaGetLastError();
    snprintf(msg, msglen, "host tier (host_mem auto): pinning %s more beyond the %s pinned "
             "failed: %s; set host_mem to a size the node can pin, or lower what the run puts "
             "on the host (act_policy, state_place)", strata_format_size(len, a, sizeof a),
             strata_format_size(from, b, sizeof b), cudaGetErrorString(e));
    return STRATA_ERR_NOMEM;
}

static void cuda_region_destroy(tiers_state_t *ts, strata_tier_t tier, void *base,
                                size_t capacity)
{
    if (!base) return;
    if (STRATA_TIER_DEVICE == tier) {
        cudaFree(base);
    } else if (ts->host_auto) {
        for (int i = 0; i < ts->npin; i++) cudaHostUnregister((char *)base + ts->pin_off[i]);
        munmap(base, capacity ? capacity : TIERS_ALIGN);
    } else {
        cudaFreeHost(base);
    }
}

/* A copy engine's stream and a ring of chunk events: copy queues a chunk
 * and records its event; only when the ring is full does it wait, for the
 * oldest chunk (so up to RING chunks are in flight and the host never
 * waits per chunk); drain waits for the newest, which the stream orders
 * after all others. Completion is seen by cudaEventQuery between 20 us
 * naps, so no thread blocks inside the driver. */
#define RING 4

typedef struct {
    cudaStream_t s;
    cudaEvent_t  ev[RING];
    unsigned     queued, seen;     /* chunks queued, chunks seen complete */
} cuda_engine_t;

static cudaError_t event_wait(cudaEvent_t ev)
{
    cudaError_t e;
    base_waiter_t w;   /* no spinning: 20 us naps */
    base_waiter_init(&w, 0, 0, 20000, 20000);
    while (cudaErrorNotReady == (e = cudaEventQuery(ev)))
        base_waiter_pause(&w);
    return e;
}

static strata_status_t cuda_engine_init(tiers_state_t *ts, int engine, void **data_p)
{
    *data_p = NULL;
    if (ENG_IO == engine) return STRATA_OK;
    /* the stream and its events on the rank's device (engine_init runs on
     * the thread that comm_init made it current on; copies may be queued
     * on another device's stream from the engine thread) */
    cudaError_t de = cudaSetDevice(ts->device);
    if (cudaSuccess != de) return cuda_fail(ts, de, "cudaSetDevice (copy engine)");
    cuda_engine_t *ce = calloc(1, sizeof *ce);
    if (!ce) return base_error(ts->ctx, STRATA_ERR_NOMEM, "allocating a copy engine");
    cudaError_t e = cudaStreamCreateWithFlags(&ce->s, cudaStreamNonBlocking);
    for (int i = 0; cudaSuccess == e && i < RING; i++)
        e = cudaEventCreateWithFlags(&ce->ev[i], cudaEventDisableTiming);
    if (cudaSuccess != e) {
        *data_p = ce;
        return cuda_fail(ts, e, "creating a copy stream and its events");
    }
    *data_p = ce;
    return STRATA_OK;
}

static void cuda_engine_cleanup(tiers_state_t *ts, int engine, void *data)
{
    cuda_engine_t *ce = data;
    if (!ce) return;
    for (int i = 0; i < RING; i++)
        if (ce->ev[i]) cudaEventDestroy(ce->ev[i]);
    if (ce->s) cudaStreamDestroy(ce->s);
    free(ce);
}

static strata_status_t cuda_copy(tiers_state_t *ts, int engine, void *data,
                                 void *dst, const void *src, size_t n)
{
    cuda_engine_t *ce = data;
    cudaError_t e = cudaSuccess;
    if (ce->queued - ce->seen == RING) {           /* ring full: the oldest must land */
        e = event_wait(ce->ev[ce->seen % RING]);
        ce->seen++;
    }
    if (cudaSuccess == e) e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, ce->s);
    if (cudaSuccess == e) e = cudaEventRecord(ce->ev[ce->queued % RING], ce->s);
    if (cudaSuccess == e) ce->queued++;
    if (cudaSuccess != e) return cuda_fail(ts, e, ENG_D2H == engine ? "device->host copy"
                                                                    : "host->device copy");
    return STRATA_OK;
}

static strata_status_t cuda_drain(tiers_state_t *ts, int engine, void *data)
{
    cuda_engine_t *ce = data;
    if (ce->queued == ce->seen) return STRATA_OK;
    cudaError_t e = event_wait(ce->ev[(ce->queued - 1) % RING]);
    ce->seen = ce->queued;
    return cudaSuccess == e ? STRATA_OK
                            : cuda_fail(ts, e, ENG_D2H == engine ? "device->host copy"
                                                                 : "host->device copy");
}

/* A producer's stream work as an event; the engine's stream waits for it. */
static strata_status_t cuda_mark(tiers_state_t *ts, void *stream, void **mark_p)
{
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess == e) e = cudaEventRecord(ev, (cudaStream_t)stream);
    if (cudaSuccess != e) return cuda_fail(ts, e, "recording the producer of a copy");
    *mark_p = ev;
    return STRATA_OK;
}

static strata_status_t cuda_order(tiers_state_t *ts, int engine, void *data, void *mark)
{
    cuda_engine_t *ce = data;
    (void)engine;
    cudaError_t e = cudaStreamWaitEvent(ce->s, (cudaEvent_t)mark, 0);
    return cudaSuccess == e ? STRATA_OK : cuda_fail(ts, e, "ordering a copy after its producer");
}

static void cuda_forget(void *mark)
{
    cudaEventDestroy((cudaEvent_t)mark);   /* a wait queued on it still holds */
}

const tiers_backend_t tiers_cuda_backend = {
    .name           = "cuda",
    .region_create  = cuda_region_create,
    .region_destroy = cuda_region_destroy,
    .region_grow    = cuda_region_grow,
    .engine_init    = cuda_engine_init,
    .engine_cleanup = cuda_engine_cleanup,
    .copy           = cuda_copy,
    .drain          = cuda_drain,
    .mark           = cuda_mark,
    .order          = cuda_order,
    .forget         = cuda_forget,
};
