/*
 * dev_kernels.h - the runtime's own device kernels (dev_kernels.cu): the
 * optimizer on a shard, scaling and the squared norm, with the arithmetic
 * of optim.c. Plain C interface; every call queues on `stream` and
 * returns the launch status.
 */
#ifndef STRATA_FSDP_DEV_KERNELS_H
#define STRATA_FSDP_DEV_KERNELS_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* AdamW with optim.c's constants: step = lr/bc1, rbc2 = 1/sqrt(bc2),
 * decay = 1 - lr*wd. */
cudaError_t fsdp_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float b1,
                            float b2, float step, float rbc2, float eps, float decay,
                            cudaStream_t s);
/* SGD with optional momentum buffer (buf NULL: none). */
cudaError_t fsdp_cuda_sgd(float *p, const float *g, float *buf, size_t n, float lr, float wd,
                          float mu, cudaStream_t s);
cudaError_t fsdp_cuda_scale(float *x, size_t n, float a, cudaStream_t s);
/* *acc += sum of x[i]^2 (double), in a fixed order whatever the timing:
 * partials per 4096-element chunk, then summed in chunk order. part
 * holds ceil(n/4096) doubles of scratch. */
cudaError_t fsdp_cuda_sqnorm(const float *x, size_t n, double *part, double *acc,
                             cudaStream_t s);
/* *dst = (float)*src on the device. */
cudaError_t fsdp_cuda_to_float(const double *src, float *dst, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
