/*
 * cuda.c - the cuda backend (built with HAVE_CUDA): DEVICE is one
 * cudaMalloc'd region, PINNED_HOST one cudaHostAlloc'd region, both carved
 * by the same arenas as on the host backend. Each copy engine thread owns a
 * non-blocking stream and moves a chunk with cudaMemcpyAsync followed by a
 * stream synchronize, so chunking, FIFO order, the small-copy overtaking
 * and the events are the engine's, shared with the host backend. The
 * storage tier reads and writes the pinned-host region directly.
 */
#include "config.h"
#include "tiers/tiers.h"

#include <cuda_runtime_api.h>

static strata_status_t cuda_fail(tiers_state_t *ts, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return base_error(ts->ctx, STRATA_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

static strata_status_t cuda_region_create(tiers_state_t *ts, strata_tier_t tier,
                                          size_t capacity, void **base_p)
{
    char s[32], what[128];
    size_t len = capacity ? capacity : TIERS_ALIGN;
    void *p = NULL;
    cudaError_t e = STRATA_TIER_DEVICE == tier ? cudaMalloc(&p, len)
                                               : cudaHostAlloc(&p, len, cudaHostAllocPortable);
    if (cudaSuccess != e) {
        snprintf(what, sizeof what, "reserving %s for the %s tier (lower the %s_mem budget)",
                 strata_format_size(len, s, sizeof s), strata_tier_name(tier),
                 STRATA_TIER_DEVICE == tier ? "device" : "host");
        return cuda_fail(ts, e, what);
    }
    *base_p = p;
    return STRATA_OK;
}

static void cuda_region_destroy(tiers_state_t *ts, strata_tier_t tier, void *base,
                                size_t capacity)
{
    if (!base) return;
    if (STRATA_TIER_DEVICE == tier) cudaFree(base);
    else cudaFreeHost(base);
}

static strata_status_t cuda_engine_init(tiers_state_t *ts, int engine, void **data_p)
{
    cudaStream_t s = NULL;
    if (ENG_IO != engine) {
        cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        if (cudaSuccess != e) return cuda_fail(ts, e, "creating a copy stream");
    }
    *data_p = s;
    return STRATA_OK;
}

static void cuda_engine_cleanup(tiers_state_t *ts, int engine, void *data)
{
    if (data) cudaStreamDestroy((cudaStream_t)data);
}

static strata_status_t cuda_copy(tiers_state_t *ts, int engine, void *data,
                                 void *dst, const void *src, size_t n)
{
    cudaStream_t s = data;
    cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
    if (cudaSuccess == e) e = cudaStreamSynchronize(s);
    if (cudaSuccess != e) return cuda_fail(ts, e, ENG_D2H == engine ? "device->host copy"
                                                                    : "host->device copy");
    return STRATA_OK;
}

const tiers_backend_t tiers_cuda_backend = {
    .name           = "cuda",
    .region_create  = cuda_region_create,
    .region_destroy = cuda_region_destroy,
    .engine_init    = cuda_engine_init,
    .engine_cleanup = cuda_engine_cleanup,
    .copy           = cuda_copy,
};
