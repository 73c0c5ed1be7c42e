/*
 * kernels_gpu.cu - the GPT's kernels on a CUDA device: each __global__ is a
 * grid-stride loop over one per-index body of kernels_gpu.h (the maths lives
 * there, shared with the host test); the rows (LayerNorm, softmax,
 * cross-entropy) a warp each, the column sums a block per 32 columns, both
 * in a fixed order (the same bits every run); GEMMs through cuBLASLt with
 * one workspace, the attention's through strided-batched cuBLAS over all
 * (batch, head) pairs at once. Nothing here waits for the device.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
GRID_KERNEL(k_gelu, gpt_k_gelu, (size_t n, float *y, const float *x), (i, y, x))
GRID_KERNEL(k_gelu_bwd, gpt_k_gelu_backward, (size_t n, float *dx, const float *x,
            const float *dy), (i, dx, x, dy))
GRID_KERNEL(k_adamw, gpt_k_adamw, (size_t n, float *p, const float *g, float *m, float *v,
            gpt_adamw_k k), (i, p, g, m, v, k))
GRID_KERNEL(k_bf16, gpt_k_to_bf16, (size_t n, uint16_t *d, const float *s), (i, d, s))
GRID_KERNEL(k_f32, gpt_k_to_f32, (size_t n, float *d, const uint16_t *s), (i, d, s))
GRID_KERNEL(k_split, gpt_k_split_heads, (size_t n, float *hd, const float *rw, int P, int T,
            int C, int H, size_t NC), (i, hd, rw, P, T, C, H, NC))
GRID_KERNEL(k_merge, gpt_k_merge_heads, (size_t n, float *rw, const float *hd, int P, int T,
            int C, int H, size_t NC), (i, rw, hd, P, T, C, H, NC))

/* a warp per row: THREADS / 32 rows a block, grid-stride over n rows; the
 * row index is the same for the whole warp, so its shuffles see all lanes */
#define WARPS (THREADS / GPT_WARP)
#define ROW_KERNEL(NAME, BODY, PARAMS, ARGS)                                    \
    __global__ void NAME PARAMS                                                \
    {                                                                          \
        for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / GPT_WARP;   \
             r < n; r += (size_t)gridDim.x * WARPS)                            \
            BODY ARGS;                                                         \
    }

ROW_KERNEL(k_ln, gpt_row_layernorm, (size_t n, float *y, float *h, float *mu, float *rs,
           const float *x, const float *w, const float *b, int C), (r, y, h, mu, rs, x, w, b, C))
ROW_KERNEL(k_ln_dx, gpt_row_layernorm_dx, (size_t n, float *dx, const float *dy,
           const float *h, const float *w, const float *rs, int C), (r, dx, dy, h, w, rs, C))
ROW_KERNEL(k_softmax, gpt_row_softmax, (size_t n, float *P, int T), (r, P, T))
ROW_KERNEL(k_softmax_bwd, gpt_row_softmax_backward, (size_t n, float *dP, const float *P,
           int T, float s), (r, dP, P, T, s))
ROW_KERNEL(k_ce, gpt_row_crossentropy, (size_t n, double *l, float *d, const float *lg,
           const int32_t *tg, float s, int V), (r, l, d, lg, tg, s, V))

/* Column sums, a block of GPT_CS_COLS x GPT_CS_ROWS threads per 32 columns
 * (a warp reads 32 adjacent floats of a row): each thread its rows' part,
 * then the parts halved in shared memory in a fixed order (kernels_gpu.h). */
#define CS_HALVE(p, y, x)                                                      \
    for (int h_ = GPT_CS_ROWS / 2; h_; h_ >>= 1) {                             \
        if ((y) < h_) p[y][x] += p[(y) + h_][x];                               \
        __syncthreads();                                                       \
    }

__global__ void k_colsum(int C, float *db, const float *dy, size_t N)
{
    __shared__ float p[GPT_CS_ROWS][GPT_CS_COLS + 1];
    const int x = threadIdx.x, y = threadIdx.y, c = blockIdx.x * GPT_CS_COLS + x;
    p[y][x] = c < C ? gpt_b_colsum_part(c, y, dy, N, C) : 0.0f;
    __syncthreads();
    CS_HALVE(p, y, x)
    if (0 == y && c < C) db[c] += p[0][x];
}

__global__ void k_ln_dwdb(int C, float *dw, float *db, const float *dy, const float *xhat,
                          size_t N)
{
    __shared__ float pw[GPT_CS_ROWS][GPT_CS_COLS + 1], pb[GPT_CS_ROWS][GPT_CS_COLS + 1];
    const int x = threadIdx.x, y = threadIdx.y, c = blockIdx.x * GPT_CS_COLS + x;
    pw[y][x] = pb[y][x] = 0.0f;
    if (c < C) gpt_b_lnw_part(c, y, &pw[y][x], &pb[y][x], dy, xhat, N, C);
    __syncthreads();
    CS_HALVE(pw, y, x)
    CS_HALVE(pb, y, x)
    if (0 == y && c < C) {
        dw[c] += pw[0][x];
        db[c] += pb[0][x];
    }
}
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
/* n rows, a warp each */
#define LAUNCH_ROWS(K, n, s, ...) \
    (K<<<blocks_for(((n) + WARPS - 1) / WARPS * THREADS), THREADS, 0, (cudaStream_t)(s)>>>( \
        n, __VA_ARGS__), (int)cudaGetLastError())
/* C columns, a block per GPT_CS_COLS */
#define LAUNCH_COLS(K, C, s, ...) \
    (K<<<(unsigned)(((C) + GPT_CS_COLS - 1) / GPT_CS_COLS), dim3(GPT_CS_COLS, GPT_CS_ROWS), 0, \
         (cudaStream_t)(s)>>>(C, __VA_ARGS__), (int)cudaGetLastError())

/* ---- GEMMs ---------------------------------------------------------------- */

/* The process's cuBLAS state (callbacks run on the thread that steps and
 * queue on the one compute stream, so one workspace serves every GEMM in
 * turn): the handles, the workspace the caller allocated, TF32 or not. */
typedef struct {
    cublasHandle_t   h;
    cublasLtHandle_t lt;
    void            *ws;
    size_t           ws_bytes;
    int              tf32;
} blas_t;

/* cuBLASLt picks an algorithm per shape; the heuristic query costs tens of
 * microseconds, a step has ~150 GEMMs of a dozen shapes: remembered here. */
typedef struct {
    int key[14];
    cublasStatus_t st;            /* NOT_SUPPORTED remembered too */
    cublasLtMatmulAlgo_t algo;
} algo_memo;
#define MEMO 64
static algo_memo memo[MEMO];
static int memo_n;

/* the alignment cuBLASLt may assume of p (at most 256 bytes) */
static int align_of(const void *p)
{
    uintptr_t a = (uintptr_t)p & (0 - (uintptr_t)p);
    return a && a < 256 ? (int)a : 256;
}

typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldd, ab, epi;
    const void *A, *B;
    float beta, *D;
    const float *bias;
    float *aux;
} lt_args;

static cublasStatus_t lt_algo(blas_t *bl, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                              cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t ld,
                              const lt_args *g, cublasLtMatmulAlgo_t *algo)
{
    int key[14] = { g->ta, g->tb, g->m, g->n, g->k, g->lda, g->ldb, g->ldd, g->ab, g->epi,
                    align_of(g->A), align_of(g->B), align_of(g->D), bl->tf32 };
    for (int i = 0; i < memo_n; i++)
        if (0 == memcmp(memo[i].key, key, sizeof key)) {
            *algo = memo[i].algo;
            return memo[i].st;
        }
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int got = 0, aa = key[10], ab = key[11], ad = key[12];
    cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
    if (st) return st;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &bl->ws_bytes, sizeof bl->ws_bytes);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa,
                                         sizeof aa);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab,
                                         sizeof ab);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad,
                                         sizeof ad);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad,
                                         sizeof ad);
    st = cublasLtMatmulAlgoGetHeuristic(bl->lt, op, la, lb, ld, ld, pref, 1, &res, &got);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st && CUBLAS_STATUS_NOT_SUPPORTED != st) return st;
    if (0 == got) st = CUBLAS_STATUS_NOT_SUPPORTED;   /* the caller goes unfused */
    if (memo_n < MEMO) {
        memcpy(memo[memo_n].key, key, sizeof key);
        memo[memo_n].st = st;
        memo[memo_n++].algo = res.algo;
    }
    *algo = res.algo;
    return st;
}

/* Column-major D [m, n] = op(A) op(B) + beta D (f32 D; A and B f32 or, ab,
 * bf16; f32 accumulation, TF32 only when asked), with epilogue epi: its
 * bias [m] (f32) and its aux (GELU's input, f32, ld ldd) where it has them. */
static int lt_gemm(blas_t *bl, cudaStream_t s, const lt_args *g)
{
    const cudaDataType_t in = g->ab ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t ct = bl->tf32 && !g->ab ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F;
    const cublasOperation_t oa = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            ob = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = (cublasLtEpilogue_t)g->epi;
    const float one = 1.0f;
    const int64_t ldaux = g->ldd;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulAlgo_t algo;
    cublasStatus_t st = cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F);
    if (!st) st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof oa);
    if (!st) st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof ob);
    if (!st) st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                 sizeof epi);
    if (!st && g->bias)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                            sizeof g->bias);
    if (!st && g->aux)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                            &g->aux, sizeof g->aux);
    if (!st && g->aux)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldaux,
                                            sizeof ldaux);
    if (!st) st = cublasLtMatrixLayoutCreate(&la, in, g->ta ? g->k : g->m,
                                             g->ta ? g->m : g->k, g->lda);
    if (!st) st = cublasLtMatrixLayoutCreate(&lb, in, g->tb ? g->n : g->k,
                                             g->tb ? g->k : g->n, g->ldb);
    if (!st) st = cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, g->m, g->n, g->ldd);
    if (!st) st = lt_algo(bl, op, la, lb, ld, g, &algo);
    if (!st) st = cublasLtMatmul(bl->lt, op, &one, g->A, la, g->B, lb, &g->beta, g->D, ld,
                                 g->D, ld, &algo, bl->ws, bl->ws_bytes, s);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    return (int)st;
}

extern "C" {

int gpt_cuda_embed(void *s, float *out, const int32_t *tok, const float *wte,
                   const float *wpe, int B, int T, int C)
{
    return LAUNCH(k_embed, (size_t)B * T * C, s, out, tok, wte, wpe, T, C);
}

int gpt_cuda_layernorm(void *s, float *y, float *xhat, float *mean, float *rstd,
                       const float *x, const float *w, const float *b, size_t N, int C)
{
    return LAUNCH_ROWS(k_ln, N, s, y, xhat, mean, rstd, x, w, b, C);
}

int gpt_cuda_layernorm_backward(void *s, float *dx, float *dw, float *db, const float *dy,
                                const float *xhat, const float *w, const float *rstd,
                                size_t N, int C)
{
    int rc = LAUNCH_ROWS(k_ln_dx, N, s, dx, dy, xhat, w, rstd, C);
    return rc ? rc : LAUNCH_COLS(k_ln_dwdb, C, s, dw, db, dy, xhat, N);
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
    return LAUNCH_ROWS(k_ce, N, s, loss_rows, dlogits, logits, targets, scale, V);
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

void *gpt_cublas_create(void *workspace, size_t bytes, int tf32)
{
    blas_t *bl = (blas_t *)calloc(1, sizeof *bl);
    if (NULL == bl) return NULL;
    bl->ws = workspace;
    bl->ws_bytes = bytes;
    bl->tf32 = tf32;
    if (CUBLAS_STATUS_SUCCESS != cublasCreate(&bl->h) ||
        CUBLAS_STATUS_SUCCESS != cublasLtCreate(&bl->lt) ||
        CUBLAS_STATUS_SUCCESS != cublasSetWorkspace(bl->h, workspace, bytes)) {
        gpt_cublas_destroy(bl);
        return NULL;
    }
    return bl;
}

void gpt_cublas_destroy(void *h)
{
    blas_t *bl = (blas_t *)h;
    if (NULL == bl) return;
    if (bl->lt) cublasLtDestroy(bl->lt);
    if (bl->h) cublasDestroy(bl->h);
    free(bl);
}

/* Row-major y = x W^T is column-major y^T = W x^T: op(A) = W^T of W [OC, IC]
 * stored column-major as [IC, OC]. The bias (and GELU, with pre) in
 * cuBLASLt's epilogue; where it has no algorithm for that, unfused. */
int gpt_cuda_matmul(void *h, void *s, float *y, float *pre, const void *x, const void *W,
                    const float *b, size_t N, int IC, int OC, int bf16)
{
    blas_t *bl = (blas_t *)h;
    lt_args g = { 1, 0, OC, (int)N, IC, IC, IC, OC, bf16, CUBLASLT_EPILOGUE_DEFAULT,
                  W, x, 0.0f, y, b, NULL };
    int rc;
    if (NULL != pre) {   /* y = GELU(pre), pre = x W^T + b */
        g.epi = b ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        g.aux = pre;
        if (0 == OC % 8 && CUBLAS_STATUS_NOT_SUPPORTED != (rc = lt_gemm(bl, (cudaStream_t)s, &g)))
            return rc;
        g.D = pre;
        g.aux = NULL;
    }
    g.epi = b ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    rc = lt_gemm(bl, (cudaStream_t)s, &g);
    if (CUBLAS_STATUS_NOT_SUPPORTED == rc && NULL != b) {   /* bias first, then beta 1 */
        g.epi = CUBLASLT_EPILOGUE_DEFAULT;
        g.bias = NULL;
        g.beta = 1.0f;
        if ((rc = LAUNCH(k_bias, N * OC, s, g.D, b, OC))) return rc;
        rc = lt_gemm(bl, (cudaStream_t)s, &g);
    }
    if (0 == rc && NULL != pre) rc = LAUNCH(k_gelu, N * OC, s, y, pre);
    return rc;
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
    blas_t *bl = (blas_t *)h;
    int rc = 0;
    if (NULL != dx) {
        lt_args g = { 0, 0, IC, (int)N, OC, IC, OC, IC, 0, CUBLASLT_EPILOGUE_DEFAULT,
                      W, dy, accumulate ? 1.0f : 0.0f, dx, NULL, NULL };
        rc = lt_gemm(bl, (cudaStream_t)s, &g);
    }
    if (0 == rc && NULL != dW) {
        lt_args g = { 0, 1, IC, OC, (int)N, IC, OC, IC, 0, CUBLASLT_EPILOGUE_DEFAULT,
                      x, dy, 1.0f, dW, NULL, NULL };
        rc = lt_gemm(bl, (cudaStream_t)s, &g);
    }
    if (0 == rc && NULL != db)
        rc = LAUNCH_COLS(k_colsum, OC, s, db, dy, N);
    return rc;
}

/* One strided-batched GEMM of kernels_gpu.h's descriptors, f32 (TF32 only
 * when asked), over every (batch, head) pair at once. */
static int bgemm(blas_t *bl, const gpt_bgemm *g)
{
    return (int)cublasGemmStridedBatchedEx(
        bl->h, g->ta ? CUBLAS_OP_T : CUBLAS_OP_N, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N, g->m, g->n,
        g->k, &g->alpha, g->A, CUDA_R_32F, g->lda, g->sa, g->B, CUDA_R_32F, g->ldb, g->sb,
        &g->beta, g->C, CUDA_R_32F, g->ldc, g->sc, g->batch,
        bl->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/* Five launches whatever B: heads split, scores, softmax, P V, heads merged. */
int gpt_cuda_attention(void *h, void *s, float *out, float *probs, float *qkvh, float *oh,
                       const float *qkv, int B, int T, int C, int H)
{
    blas_t *bl = (blas_t *)h;
    const size_t NC = (size_t)B * T * C;
    gpt_bgemm g[2];
    int rc;
    cublasSetStream(bl->h, (cudaStream_t)s);
    gpt_attn_fwd_gemms(g, oh, probs, qkvh, B, T, C, H);
    if ((rc = LAUNCH(k_split, 3 * NC, s, qkvh, qkv, 3, T, C, H, NC)) || (rc = bgemm(bl, &g[0])) ||
        (rc = LAUNCH_ROWS(k_softmax, (size_t)B * H * T, s, probs, T)) ||
        (rc = bgemm(bl, &g[1])))
        return rc;
    return LAUNCH(k_merge, NC, s, out, oh, 1, T, C, H, NC);
}

/* Seven: dout split, dP and dV, softmax backward, dQ and dK, dqkv merged. */
int gpt_cuda_attention_backward(void *h, void *s, float *dqkv, float *dP, float *dqkvh,
                                float *doh, const float *dout, const float *qkvh,
                                const float *probs, int B, int T, int C, int H)
{
    blas_t *bl = (blas_t *)h;
    const size_t NC = (size_t)B * T * C;
    const float scale = 1.0f / sqrtf((float)(C / H));
    gpt_bgemm g[4];
    int rc;
    cublasSetStream(bl->h, (cudaStream_t)s);
    gpt_attn_bwd_gemms(g, dqkvh, dP, doh, qkvh, probs, B, T, C, H);
    if ((rc = LAUNCH(k_split, NC, s, doh, dout, 1, T, C, H, NC)) || (rc = bgemm(bl, &g[0])) ||
        (rc = bgemm(bl, &g[1])) ||
        (rc = LAUNCH_ROWS(k_softmax_bwd, (size_t)B * H * T, s, dP, probs, T, scale)) ||
        (rc = bgemm(bl, &g[2])) || (rc = bgemm(bl, &g[3])))
        return rc;
    return LAUNCH(k_merge, 3 * NC, s, dqkv, dqkvh, 3, T, C, H, NC);
}
} /* extern "C" */
