/*
 * dtype_cuda.h - f32 <-> bf16/f16 casts on a CUDA stream (dtype_cuda.cu),
 * with the bit-exact rounding of base/dtype.c (strata/elem.h: round to
 * nearest even, NaN stays NaN, overflow to infinity). Built wherever CUDA
 * is (HAVE_CUDA), with or without NCCL: the device layer's 16-bit casts
 * (fsdp/dev_cuda.c) and the NCCL backend's 16-bit reductions (comm/nccl.c)
 * both launch them. Plain C interface to a file nvcc compiles; this
 * header must not need MPI or strata.h.
 */
#ifndef STRATA_BASE_DTYPE_CUDA_H
#define STRATA_BASE_DTYPE_CUDA_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Formats of the 16-bit side. */
enum { BASE_CVT_BF16 = 1, BASE_CVT_F16 = 2 };

/* dst[i] = (float)src[i] for i < n, 16-bit src of format fmt. Enqueued on
 * stream; returns the launch status (cudaErrorInvalidValue for a bad fmt). */
cudaError_t base_cuda_widen(const void *src, float *dst, size_t n, int fmt, cudaStream_t stream);

/* dst[i] = round(src[i]) to format fmt, for i < n. */
cudaError_t base_cuda_round(const float *src, void *dst, size_t n, int fmt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
