/*
 * dtype_cuda.cu - widen bf16/f16 to f32 and round f32 back, on a stream
 * (dtype_cuda.h). The per-element code is strata/elem.h's, the same that
 * base/dtype.c loops over on the host, so a result is the same bits
 * whichever side rounded it. Compiled by nvcc, called from C.
 */
#include <stdint.h>

#include "base/dtype_cuda.h"
#include "strata/elem.h"

/* grid-stride loops: any n with a bounded grid */
static __global__ void widen_kernel(const uint16_t *src, float *dst, size_t n, int fmt)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = BASE_CVT_BF16 == fmt ? strata_elem_bf16_to_f32(src[i])
                                      : strata_elem_f16_to_f32(src[i]);
}

static __global__ void round_kernel(const float *src, uint16_t *dst, size_t n, int fmt)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = BASE_CVT_BF16 == fmt ? strata_elem_f32_to_bf16(src[i])
                                      : strata_elem_f32_to_f16(src[i]);
}

static const unsigned threads = 256;

static unsigned blocks_for(size_t n)
{
    /* enough blocks to fill any current GPU; more only adds scheduling */
    size_t b = (n + threads - 1) / threads;
    return b > 4096 ? 4096u : (unsigned)b;
}

extern "C" cudaError_t base_cuda_widen(const void *src, float *dst, size_t n, int fmt,
                                       cudaStream_t stream)
{
    if (BASE_CVT_BF16 != fmt && BASE_CVT_F16 != fmt) return cudaErrorInvalidValue;
    if (0 == n) return cudaSuccess;
    widen_kernel<<<blocks_for(n), threads, 0, stream>>>((const uint16_t *)src, dst, n, fmt);
    return cudaGetLastError();
}

extern "C" cudaError_t base_cuda_round(const float *src, void *dst, size_t n, int fmt,
                                       cudaStream_t stream)
{
    if (BASE_CVT_BF16 != fmt && BASE_CVT_F16 != fmt) return cudaErrorInvalidValue;
    if (0 == n) return cudaSuccess;
    round_kernel<<<blocks_for(n), threads, 0, stream>>>(src, (uint16_t *)dst, n, fmt);
    return cudaGetLastError();
}
