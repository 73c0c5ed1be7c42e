/*
 * dev_kernels.cu - the runtime's device kernels (dev_kernels.h): one
 * thread per element with the per-element arithmetic of optim.c
 * (strata/elem.h), and a deterministic two-pass squared norm.
 */
#include "fsdp/dev_kernels.h"
#include "strata/elem.h"

#define THREADS 256
#define CHUNK   4096

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b > 65535u * 32u ? 65535u * 32u : (b ? b : 1));
}

__global__ void k_adamw(float *p, const float *g, float *m, float *v, size_t n, float b1,
                        float b2, float step, float rbc2, float eps, float decay)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        strata_elem_adamw(p + i, g[i], m + i, v + i, b1, b2, step, rbc2, eps, decay);
}

__global__ void k_sgd(float *p, const float *g, float *buf, size_t n, float lr, float wd,
                      float mu)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        if (buf) strata_elem_sgd_momentum(p + i, g[i], buf + i, lr, wd, mu);
        else strata_elem_sgd(p + i, g[i], lr, wd);
    }
}

__global__ void k_scale(float *x, size_t n, float a)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= a;
}

/* block c sums chunk c with a fixed tree: the same bits every run */
__global__ void k_sq_chunks(const float *x, size_t n, double *part)
{
    __shared__ double sh[THREADS];
    size_t lo = (size_t)blockIdx.x * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
    double s = 0;
    for (size_t i = lo + threadIdx.x; i < hi; i += THREADS) s += (double)x[i] * x[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (0 == threadIdx.x) part[blockIdx.x] = sh[0];
}

__global__ void k_sq_total(const double *part, size_t nc, double *acc)
{
    double s = *acc;
    for (size_t c = 0; c < nc; c++) s += part[c];
    *acc = s;
}

__global__ void k_to_float(const double *src, float *dst) { *dst = (float)*src; }

extern "C" cudaError_t fsdp_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n,
                                       float b1, float b2, float step, float rbc2, float eps,
                                       float decay, cudaStream_t s)
{
    if (0 == n) return cudaSuccess;
    k_adamw<<<blocks_for(n), THREADS, 0, s>>>(p, g, m, v, n, b1, b2, step, rbc2, eps, decay);
    return cudaGetLastError();
}

extern "C" cudaError_t fsdp_cuda_sgd(float *p, const float *g, float *buf, size_t n, float lr,
                                     float wd, float mu, cudaStream_t s)
{
    if (0 == n) return cudaSuccess;
    k_sgd<<<blocks_for(n), THREADS, 0, s>>>(p, g, buf, n, lr, wd, mu);
    return cudaGetLastError();
}

extern "C" cudaError_t fsdp_cuda_scale(float *x, size_t n, float a, cudaStream_t s)
{
    if (0 == n) return cudaSuccess;
    k_scale<<<blocks_for(n), THREADS, 0, s>>>(x, n, a);
    return cudaGetLastError();
}

extern "C" cudaError_t fsdp_cuda_sqnorm(const float *x, size_t n, double *part, double *acc,
                                        cudaStream_t s)
{
    size_t nc = (n + CHUNK - 1) / CHUNK;
    if (0 == nc) return cudaSuccess;
    k_sq_chunks<<<(unsigned)nc, THREADS, 0, s>>>(x, n, part);
    k_sq_total<<<1, 1, 0, s>>>(part, nc, acc);
    return cudaGetLastError();
}

extern "C" cudaError_t fsdp_cuda_to_float(const double *src, float *dst, cudaStream_t s)
{
    k_to_float<<<1, 1, 0, s>>>(src, dst);
    return cudaGetLastError();
}
