/*
 * kernels_gpu.cu - the GPT's kernels on a CUDA device: each __global__ is a
 * grid-stride loop over one per-index body of kernels_gpu.h (the maths lives
 * there, shared with the host test); GEMMs through cuBLAS. Nothing here
 * waits for the device.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>

#include "examples/gpt/gpt_cuda.h"
#include "examples/gpt/kernels_gpu.h"

#define THREADS 256

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

/* a grid-stride kernel named NAME over n indices calling BODY(i, args...) */
#define GRID_KERNEL(NAME, BODY, PARAMS, ARGS)                                   \
    __global__ void NAME PARAMS                                                \
    {                                                                          \
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;  \
             i += (size_t)gridDim.x * blockDim.x)                              \
            BODY ARGS;                                                         \
    }

GRID_KERNEL(k_embed, gpt_k_embed, (size_t n, float *o, const int32_t *tk, const float *te,
            const float *pe, int T, int C), (i, o, tk, te, pe, T, C))
GRID_KERNEL(k_ln, gpt_k_layernorm, (size_t n, float *y, float *h, float *mu, float *rs,
            const float *x, const float *w, const float *b, int C), (i, y, h, mu, rs, x, w, b, C))
GRID_KERNEL(k_ln_dx, gpt_k_layernorm_dx, (size_t n, float *dx, const float *dy,
            const float *h, const float *w, const float *rs, int C), (i, dx, dy, h, w, rs, C))
GRID_KERNEL(k_ln_dwdb, gpt_k_layernorm_dwdb, (size_t n, float *dw, float *db,
            const float *dy, const float *h, size_t N), ((int)i, dw, db, dy, h, N, (int)n))
GRID_KERNEL(k_softmax, gpt_k_softmax, (size_t n, float *P, int T), (i, P, T))
GRID_KERNEL(k_softmax_bwd, gpt_k_softmax_backward, (size_t n, float *dP, const float *P,
            int T, float s), (i, dP, P, T, s))
GRID_KERNEL(k_gelu, gpt_k_gelu, (size_t n, float *y, const float *x), (i, y, x))
GRID_KERNEL(k_gelu_bwd, gpt_k_gelu_backward, (size_t n, float *dx, const float *x,
            const float *dy), (i, dx, x, dy))
GRID_KERNEL(k_ce, gpt_k_crossentropy, (size_t n, double *l, float *d, const float *lg,
            const int32_t *tg, float s, int V), (i, l, d, lg, tg, s, V))
GRID_KERNEL(k_adamw, gpt_k_adamw, (size_t n, float *p, const float *g, float *m, float *v,
            gpt_adamw_k k), (i, p, g, m, v, k))
GRID_KERNEL(k_bf16, gpt_k_to_bf16, (size_t n, uint16_t *d, const float *s), (i, d, s))
GRID_KERNEL(k_f32, gpt_k_to_f32, (size_t n, float *d, const uint16_t *s), (i, d, s))
/* y[r, c] = b[c] before a GEMM with beta 1 */
__global__ void k_bias(size_t n, float *y, const float *b, int OC)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = b[i % OC];
}

__global__ void k_add(size_t n, float *y, const float *a, const float *b)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = a[i] + b[i];
}

__global__ void k_affine(size_t n, float *y, const float *h, const float *w, const float *b,
                         int C)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = h[i] * w[i % C] + b[i % C];
}

/* column c of dwte: the rows in order, as model.c adds them */
__global__ void k_dwte(size_t n, float *dwte, const int32_t *tok, const float *dx, size_t N)
{
    int C = (int)n;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < n;
         c += (size_t)gridDim.x * blockDim.x)
        for (size_t r = 0; r < N; r++)
            dwte[(size_t)tok[r] * C + c] += dx[r * C + c];
}

/* element (t, c) of dwpe: the batch rows in order */
__global__ void k_dwpe(size_t n, float *dwpe, const float *dx, int B, int T, int C)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = dwpe[i];
        for (int b = 0; b < B; b++)
            s += dx[(size_t)b * T * C + i];
        dwpe[i] = s;
    }
}

/* db[c] += sum over rows of dy[r, c], rows in order */
__global__ void k_colsum(size_t n, float *db, const float *dy, size_t N)
{
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < n;
         c += (size_t)gridDim.x * blockDim.x) {
        float s = db[c];
        for (size_t r = 0; r < N; r++)
            s += dy[r * n + c];
        db[c] = s;
    }
}

__global__ void k_sum_rows(size_t n, double *sum, const double *rows)
{
    if (0 != blockIdx.x || 0 != threadIdx.x) return;
    double s = *sum;
    for (size_t r = 0; r < n; r++)
        s += rows[r];
    *sum = s;
}

__global__ void k_argmax_last(size_t n, int32_t *next, const float *lg, int T, int V)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < n;
         r += (size_t)gridDim.x * blockDim.x) {
        const float *l = lg + (r * T + T - 1) * V;
        int best = 0;
        for (int j = 1; j < V; j++)
            best = l[j] > l[best] ? j : best;
        next[r] = best;
    }
}

#define LAUNCH(K, n, s, ...) \
    (K<<<blocks_for(n), THREADS, 0, (cudaStream_t)(s)>>>(n, __VA_ARGS__), (int)cudaGetLastError())

extern "C" {

int gpt_cuda_embed(void *s, float *out, const int32_t *tok, const float *wte,
                   const float *wpe, int B, int T, int C)
{
    return LAUNCH(k_embed, (size_t)B * T * C, s, out, tok, wte, wpe, T, C);
}

int gpt_cuda_layernorm(void *s, float *y, float *xhat, float *mean, float *rstd,
                       const float *x, const float *w, const float *b, size_t N, int C)
{
    return LAUNCH(k_ln, N, s, y, xhat, mean, rstd, x, w, b, C);
}

int gpt_cuda_layernorm_backward(void *s, float *dx, float *dw, float *db, const float *dy,
                                const float *xhat, const float *w, const float *rstd,
                                size_t N, int C)
{
    int rc = LAUNCH(k_ln_dx, N, s, dx, dy, xhat, w, rstd, C);
    return rc ? rc : LAUNCH(k_ln_dwdb, (size_t)C, s, dw, db, dy, xhat, N);
}

int gpt_cuda_gelu(void *s, float *y, const float *x, size_t n)
{
    return LAUNCH(k_gelu, n, s, y, x);
}

int gpt_cuda_gelu_backward(void *s, float *dx, const float *x, const float *dy, size_t n)
{
    return LAUNCH(k_gelu_bwd, n, s, dx, x, dy);
}

int gpt_cuda_crossentropy(void *s, double *loss_rows, float *dlogits, const float *logits,
                          const int32_t *targets, float scale, size_t N, int V)
{
    return LAUNCH(k_ce, N, s, loss_rows, dlogits, logits, targets, scale, V);
}

int gpt_cuda_adamw(void *s, float *p, const float *g, float *m, float *v, size_t n, int t,
                   float lr, float beta1, float beta2, float eps, float wd)
{
    gpt_adamw_k k;
    k.b1 = beta1;
    k.b2 = beta2;
    k.step = lr / (1.0f - powf(beta1, (float)t));
    k.rbc2 = 1.0f / sqrtf(1.0f - powf(beta2, (float)t));
    k.eps = eps;
    k.decay = 1.0f - lr * wd;
    return LAUNCH(k_adamw, n, s, p, g, m, v, k);
}

int gpt_cuda_to_bf16(void *s, uint16_t *dst, const float *src, size_t n)
{
    return LAUNCH(k_bf16, n, s, dst, src);
}

int gpt_cuda_to_f32(void *s, float *dst, const uint16_t *src, size_t n)
{
    return LAUNCH(k_f32, n, s, dst, src);
}

void *gpt_cublas_create(void)
{
    cublasHandle_t h = NULL;
    return CUBLAS_STATUS_SUCCESS == cublasCreate(&h) ? (void *)h : NULL;
}

void gpt_cublas_destroy(void *h)
{
    if (h) cublasDestroy((cublasHandle_t)h);
}

/* Row-major y = x W^T is column-major y^T = W x^T: op(A) = W^T of W [OC, IC]
 * stored column-major as [IC, OC]. */
int gpt_cuda_matmul(void *h, void *s, float *y, const void *x, const void *W, const float *b,
                    size_t N, int IC, int OC, int bf16)
{
    cublasHandle_t hd = (cublasHandle_t)h;
    float one = 1.0f, beta = 0.0f;
    if (NULL != b) {
        int rc = LAUNCH(k_bias, N * OC, s, y, b, OC);
        if (rc) return rc;
        beta = 1.0f;
    }
    cublasSetStream(hd, (cudaStream_t)s);
    cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    return (int)cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, OC, (int)N, IC, &one, W, in, IC,
                             x, in, IC, &beta, y, CUDA_R_32F, OC, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
}

int gpt_cuda_add(void *s, float *y, const float *a, const float *b, size_t n)
{
    return LAUNCH(k_add, n, s, y, a, b);
}

int gpt_cuda_layernorm_affine(void *s, float *y, const float *xhat, const float *w,
                              const float *b, size_t N, int C)
{
    return LAUNCH(k_affine, N * C, s, y, xhat, w, b, C);
}

int gpt_cuda_embed_backward(void *s, float *dwte, float *dwpe, const int32_t *tok,
                            const float *dx, int B, int T, int C)
{
    int rc = LAUNCH(k_dwte, (size_t)C, s, dwte, tok, dx, (size_t)B * T);
    return rc ? rc : LAUNCH(k_dwpe, (size_t)T * C, s, dwpe, dx, B, T, C);
}

int gpt_cuda_sum_rows(void *s, double *sum, const double *rows, size_t N)
{
    k_sum_rows<<<1, 1, 0, (cudaStream_t)s>>>(N, sum, rows);
    return (int)cudaGetLastError();
}

int gpt_cuda_argmax_last(void *s, int32_t *next, const float *logits, int B, int T, int V)
{
    return LAUNCH(k_argmax_last, (size_t)B, s, next, logits, T, V);
}

/* Row-major dx [N, IC] = dy [N, OC] W [OC, IC] is column-major
 * dx^T = W^T dy^T; dW [OC, IC] += dy^T x is column-major dW^T += x^T dy. */
int gpt_cuda_matmul_backward(void *h, void *s, float *dx, float *dW, float *db,
                             const float *dy, const float *x, const float *W, size_t N,
                             int IC, int OC, int accumulate)
{
    cublasHandle_t hd = (cublasHandle_t)h;
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    int rc = 0;
    cublasSetStream(hd, (cudaStream_t)s);
    if (NULL != dx)
        rc = (int)cublasSgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, IC, (int)N, OC, &one, W, IC, dy,
                              OC, &beta, dx, IC);
    if (0 == rc && NULL != dW)
        rc = (int)cublasSgemm(hd, CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, (int)N, &one, x, IC, dy,
                              OC, &one, dW, IC);
    if (0 == rc && NULL != db)
        rc = LAUNCH(k_colsum, (size_t)OC, s, db, dy, N);
    return rc;
}

/* One strided-batched GEMM over the B*H (batch, head) pairs of row-major
 * matrices: C [m, n] = alpha op(A) op(B); per-head strides sa, sb, sc within
 * a batch row and the batch strides Ba, Bb, Bc. Heads are batched per b. */
static int bgemm(cublasHandle_t hd, int ta, int tb, int m, int n, int k, float alpha,
                 const float *A, int lda, long long sa, const float *Bm, int ldb, long long sb,
                 float *Cm, int ldc, long long sc, int H)
{
    float beta = 0.0f;
    /* row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T */
    return (int)cublasSgemmStridedBatched(hd, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                                          Bm, ldb, sb, A, lda, sa, &beta, Cm, ldc, sc, H);
}

int gpt_cuda_attention(void *h, void *s, float *out, float *probs, const float *qkv,
                       int B, int T, int C, int H)
{
    cublasHandle_t hd = (cublasHandle_t)h;
    const int hd_ = C / H, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hd_);
    cublasSetStream(hd, (cudaStream_t)s);
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *P = probs + (size_t)b * H * T * T;
        int rc = bgemm(hd, 0, 1, T, T, hd_, scale, q, C3, hd_, k, C3, hd_, P, T,
                       (long long)T * T, H);
        if (rc) return rc;
        if ((rc = LAUNCH(k_softmax, (size_t)H * T, s, P, T))) return rc;
        if ((rc = bgemm(hd, 0, 0, T, hd_, T, 1.0f, P, T, (long long)T * T, v, C3, hd_,
                        out + (size_t)b * T * C, C, hd_, H)))
            return rc;
    }
    return 0;
}

int gpt_cuda_attention_backward(void *h, void *s, float *dqkv, float *dP, const float *dout,
                                const float *qkv, const float *probs, int B, int T, int C,
                                int H)
{
    cublasHandle_t hd = (cublasHandle_t)h;
    const int hd_ = C / H, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hd_);
    const long long TT = (long long)T * T;
    cublasSetStream(hd, (cudaStream_t)s);
    for (int b = 0; b < B; b++) {
        const float *q = qkv + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + (size_t)b * T * C3, *dk = dq + C, *dv = dq + 2 * C;
        const float *dO = dout + (size_t)b * T * C, *P = probs + (size_t)b * H * TT;
        float *dPb = dP + (size_t)b * H * TT;
        int rc;
        if ((rc = bgemm(hd, 0, 1, T, T, hd_, 1.0f, dO, C, hd_, v, C3, hd_, dPb, T, TT, H)) ||
            (rc = bgemm(hd, 1, 0, T, hd_, T, 1.0f, P, T, TT, dO, C, hd_, dv, C3, hd_, H)) ||
            (rc = LAUNCH(k_softmax_bwd, (size_t)H * T, s, dPb, P, T, scale)) ||
            (rc = bgemm(hd, 0, 0, T, hd_, T, 1.0f, dPb, T, TT, k, C3, hd_, dq, C3, hd_, H)) ||
            (rc = bgemm(hd, 1, 0, T, hd_, T, 1.0f, dPb, T, TT, q, C3, hd_, dk, C3, hd_, H)))
            return rc;
    }
    return 0;
}

} /* extern "C" */
