/*
 * nccl_convert.cu - widen bf16/f16 to f32 and round f32 back, on a stream,
 * for the NCCL backend's 16-bit reductions (f32 on the wire, rounded once).
 * The rounding is the bit-level code of base/dtype.c, so a result is the
 * same bits whichever backend rounded it. Compiled by nvcc, called from C.
 */
#include <stdint.h>

#include "nccl_convert.h"

static __device__ __forceinline__ float bits_f32(uint32_t u) { return __uint_as_float(u); }

static __device__ __forceinline__ float bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

static __device__ __forceinline__ uint16_t f32_to_bf16(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);  /* quiet NaN */
    uint32_t bias = 0x7fffu + ((u >> 16) & 1u);                                    /* nearest even */
    return (uint16_t)((u + bias) >> 16);
}

static __device__ __forceinline__ float f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (0 == exp) {
        float v = (float)mant * 0x1p-24f;            /* zero or subnormal, exact */
        return sign ? -v : v;
    }
    if (31 == exp) return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static __device__ __forceinline__ uint16_t f32_to_f16(float f)
{
    uint32_t u = __float_as_uint(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);        /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);       /* rounds to inf */
    if (absu >= 0x38800000u) {                                         /* normal */
        uint32_t mant_round = absu + 0xfffu + ((absu >> 13) & 1u);
        return (uint16_t)(sign | ((mant_round - 0x38000000u) >> 13));
    }
    if (absu < 0x33000000u) return (uint16_t)sign;                     /* rounds to 0 */
    uint32_t exp = absu >> 23;                                         /* subnormal */
    uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp;
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

/* grid-stride loops: any n with a bounded grid */
static __global__ void widen_kernel(const uint16_t *src, float *dst, size_t n, int fmt)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = COMM_CVT_BF16 == fmt ? bf16_to_f32(src[i]) : f16_to_f32(src[i]);
}

static __global__ void round_kernel(const float *src, uint16_t *dst, size_t n, int fmt)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = COMM_CVT_BF16 == fmt ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
}

static const unsigned threads = 256;

static unsigned blocks_for(size_t n)
{
    /* enough blocks to fill any current GPU; more only adds scheduling */
    size_t b = (n + threads - 1) / threads;
    return b > 4096 ? 4096u : (unsigned)b;
}

extern "C" cudaError_t comm_cuda_widen(const void *src, float *dst, size_t n, int fmt,
                                       cudaStream_t stream)
{
    if (COMM_CVT_BF16 != fmt && COMM_CVT_F16 != fmt) return cudaErrorInvalidValue;
    if (0 == n) return cudaSuccess;
    widen_kernel<<<blocks_for(n), threads, 0, stream>>>((const uint16_t *)src, dst, n, fmt);
    return cudaGetLastError();
}

extern "C" cudaError_t comm_cuda_round(const float *src, void *dst, size_t n, int fmt,
                                       cudaStream_t stream)
{
    if (COMM_CVT_BF16 != fmt && COMM_CVT_F16 != fmt) return cudaErrorInvalidValue;
    if (0 == n) return cudaSuccess;
    round_kernel<<<blocks_for(n), threads, 0, stream>>>(src, (uint16_t *)dst, n, fmt);
    return cudaGetLastError();
}
