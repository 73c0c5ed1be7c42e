/*
 * nccl_convert.h - the kernels the NCCL backend uses for the 16-bit rule:
 * widen bf16/f16 to f32 and round f32 back once, on a stream, with the
 * same bit-exact rounding as base/dtype.c (round to nearest even, NaN
 * stays NaN, overflow to infinity). Plain C interface to nccl_convert.cu,
 * which nvcc compiles; this header must not need MPI or strata.h.
 */
#ifndef STRATA_COMM_NCCL_CONVERT_H
#define STRATA_COMM_NCCL_CONVERT_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Formats of the 16-bit side. */
enum { COMM_CVT_BF16 = 1, COMM_CVT_F16 = 2 };

/* dst[i] = (float)src[i] for i < n, 16-bit src of format fmt. Enqueued on
 * stream; returns the launch status (cudaErrorInvalidValue for a bad fmt). */
cudaError_t comm_cuda_widen(const void *src, float *dst, size_t n, int fmt, cudaStream_t stream);

/* dst[i] = round(src[i]) to format fmt, for i < n. */
cudaError_t comm_cuda_round(const float *src, void *dst, size_t n, int fmt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
