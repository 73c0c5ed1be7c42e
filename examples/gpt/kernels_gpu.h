/*
 * kernels_gpu.h - the bodies of the GPT's CUDA kernels, one call per thread
 * index, as STRATA_HD functions over the row arithmetic of kernels_scalar.h.
 * kernels_gpu.cu wraps each in a __global__ one-liner (index from the grid);
 * the host test (t/gpu_kernels_host.t.c) compiles this same header with the
 * C compiler and runs every index in a loop, so the device maths is checked
 * against the CPU kernels (kernels.c) where there is no GPU.
 *
 * Also here, because kernels_scalar.h has no row form of it yet: the
 * cross-entropy row, as kernels.c computes it. The AdamW element and the
 * bf16 rounding are the library's own (strata/elem.h), so the device
 * computes them as fsdp/optim.c and base/dtype.c do.
 */
#ifndef STRATA_EXAMPLES_GPT_KERNELS_GPU_H
#define STRATA_EXAMPLES_GPT_KERNELS_GPU_H

#include "examples/gpt/kernels_scalar.h"
#include "strata/elem.h"

/* The AdamW step's constants for step t (1-based), once per step. */
typedef struct {
    float b1, b2, step, rbc2, eps, decay;
} gpt_adamw_k;

/* ------------------------------------------- a warp per row, a block per column --- */

/* The device kernels of the rows (LayerNorm, softmax, cross-entropy) run a
 * warp per row: lane l takes entries l, l + 32, ... in order, and the 32
 * lanes' partial sums are combined by a butterfly (xor 16, 8, 4, 2, 1:
 * lane l adds lane l ^ o's value), which is __shfl_xor_sync's order. The
 * order is fixed, so a row gives the same bits every run; lanes l and l ^ o
 * add the same two values, so every lane ends with the same total. The
 * lane functions below are that arithmetic; kernels_gpu.cu drives them
 * with shuffles, gpt_w_* (host only, at the end) with arrays, for the test. */
#define GPT_WARP 32

static inline STRATA_HD float gpt_w_max(int l, const float *x, int n, float init)
{
    float m = init;
    for (int j = l; j < n; j += GPT_WARP)
        m = x[j] > m ? x[j] : m;
    return m;
}

static inline STRATA_HD float gpt_w_sum(int l, const float *x, int n)
{
    float s = 0.0f;
    for (int j = l; j < n; j += GPT_WARP)
        s += x[j];
    return s;
}

static inline STRATA_HD float gpt_w_sqdev(int l, const float *x, float m, int n)
{
    float s = 0.0f;
    for (int j = l; j < n; j += GPT_WARP) {
        float d = x[j] - m;
        s += d * d;
    }
    return s;
}

/* LayerNorm's last pass for lane l, with the row's mean m and rstd r. */
static inline STRATA_HD void gpt_w_ln_write(int l, float *y, float *xhat, const float *x,
                                            const float *w, const float *b, float m, float r,
                                            int C)
{
    for (int c = l; c < C; c += GPT_WARP) {
        float h = (x[c] - m) * r;
        if (NULL != xhat) xhat[c] = h;
        y[c] = h * w[c] + b[c];
    }
}

/* LayerNorm backward: lane l's parts of sum(dy w) and sum(dy w xhat). */
static inline STRATA_HD void gpt_w_ln_dsums(int l, float *s1, float *s2, const float *dy,
                                            const float *xhat, const float *w, int C)
{
    float a = 0.0f, e = 0.0f;
    for (int c = l; c < C; c += GPT_WARP) {
        float g = dy[c] * w[c];
        a += g;
        e += g * xhat[c];
    }
    *s1 = a;
    *s2 = e;
}

static inline STRATA_HD void gpt_w_ln_dx(int l, float *dx, const float *dy, const float *xhat,
                                         const float *w, float rstd, float a, float e, int C)
{
    for (int c = l; c < C; c += GPT_WARP)
        dx[c] += rstd * (dy[c] * w[c] - a - xhat[c] * e);
}

/* Causal softmax, entries 0..i live: exps in place (max mx), lane's sum. */
static inline STRATA_HD float gpt_w_softmax_exp(int l, float *row, int i, float mx)
{
    float s = 0.0f;
    for (int j = l; j <= i; j += GPT_WARP) {
        float e = gpt_s_exp(row[j] - mx);
        row[j] = e;
        s += e;
    }
    return s;
}

static inline STRATA_HD void gpt_w_softmax_scale(int l, float *row, int i, int T, float inv)
{
    for (int j = l; j < T; j += GPT_WARP)
        row[j] = j <= i ? row[j] * inv : 0.0f;
}

static inline STRATA_HD float gpt_w_dot(int l, const float *p, const float *dp, int n)
{
    float s = 0.0f;
    for (int j = l; j < n; j += GPT_WARP)
        s += p[j] * dp[j];
    return s;
}

static inline STRATA_HD void gpt_w_softmax_bwd(int l, float *dp, const float *p, int T,
                                               float dot, float scale)
{
    for (int j = l; j < T; j += GPT_WARP)
        dp[j] = p[j] * (dp[j] - dot) * scale;
}

/* Cross-entropy: the lane's part of sum exp(li - mx), in double as kernels.c. */
static inline STRATA_HD double gpt_w_ce_sum(int l, const float *li, float mx, int V)
{
    double s = 0.0;
    for (int j = l; j < V; j += GPT_WARP)
        s += gpt_s_exp(li[j] - mx);
    return s;
}

/* (softmax - onehot) * scale into di (may be li): each lane its own j. */
static inline STRATA_HD void gpt_w_ce_grad(int l, float *di, const float *li, int32_t tg,
                                           float mx, float inv, float scale, int V)
{
    for (int j = l; j < V; j += GPT_WARP) {
        float g = gpt_s_exp(li[j] - mx) * inv * scale;
        di[j] = j == tg ? g - scale : g;
    }
}

/* Column sums (bias and LayerNorm parameter gradients) run a block per 32
 * columns: thread (x, y) sums rows y, y + GPT_CS_ROWS, ... of column x in
 * order, then the GPT_CS_ROWS partials of a column are halved in shared
 * memory (p[y] += p[y + h], h = 16, 8, 4, 2, 1), and the total is added to
 * the gradient. A fixed order again: the same bits every run. */
#define GPT_CS_COLS 32
#define GPT_CS_ROWS 32

static inline STRATA_HD float gpt_b_colsum_part(int c, int y, const float *dy, size_t N, int C)
{
    float s = 0.0f;
    for (size_t r = (size_t)y; r < N; r += GPT_CS_ROWS)
        s += dy[r * C + c];
    return s;
}

/* LayerNorm's dw and db parts of column c: sum dy * xhat and sum dy. */
static inline STRATA_HD void gpt_b_lnw_part(int c, int y, float *sw, float *sb, const float *dy,
                                            const float *xhat, size_t N, int C)
{
    float a = 0.0f, e = 0.0f;
    for (size_t r = (size_t)y; r < N; r += GPT_CS_ROWS) {
        a += dy[r * C + c] * xhat[r * C + c];
        e += dy[r * C + c];
    }
    *sw = a;
    *sb = e;
}

/* ------------------------------------------------------- the row drivers --- */

/* Each driver is one row's whole computation for one warp. On the device
 * (__CUDA_ARCH__) a lane is a thread: a lane variable is a float, the lane
 * loop runs once with l = the thread's lane, and the sums are shuffles. On
 * the host a lane variable is an array of 32, the lane loop runs all 32,
 * and the sums do the same butterfly on the array: the same code and the
 * same order of adds, so the host test checks what the device runs. */
#if defined(__CUDA_ARCH__)
#define GPT_LANES(T, v)     T v
#define GPT_FOR_LANES(l)    for (int l = (int)(threadIdx.x % GPT_WARP), once_ = 1; once_; once_ = 0)
#define GPT_AT(v, l)        (v)
#define GPT_ALL(v)          (v)
#define GPT_LANE0           (0 == threadIdx.x % GPT_WARP)
/* the reads of a row before this, by any lane, precede the writes after */
#define GPT_WARP_SYNC()     __syncwarp()
#define GPT_ROW_FN          static inline __device__
#define GPT_BUTTERFLY(v, OP) \
    for (int o_ = GPT_WARP / 2; o_; o_ >>= 1) { \
        auto u_ = __shfl_xor_sync(0xffffffffu, (v), o_); (v) = OP((v), u_); }
#else
#define GPT_LANES(T, v)     T v[GPT_WARP]
#define GPT_FOR_LANES(l)    for (int l = 0; l < GPT_WARP; l++)
#define GPT_AT(v, l)        ((v)[l])
#define GPT_ALL(v)          ((v)[0])
#define GPT_LANE0           1
#define GPT_WARP_SYNC()     ((void)0)
#if defined(__CUDACC__)
#define GPT_ROW_FN          static inline __host__ __device__
#else
#define GPT_ROW_FN          static inline
#endif
/* lane l gets OP(v[l], v[l ^ o]) for o = 16 .. 1, as the shuffles give */
#define GPT_BUTTERFLY(v, OP) \
    for (int o_ = GPT_WARP / 2; o_; o_ >>= 1) { \
        __typeof__((v)[0]) u_[GPT_WARP]; \
        for (int l_ = 0; l_ < GPT_WARP; l_++) u_[l_] = OP((v)[l_], (v)[l_ ^ o_]); \
        for (int l_ = 0; l_ < GPT_WARP; l_++) (v)[l_] = u_[l_]; }
#endif
#define GPT_OP_ADD(a, b) ((a) + (b))
#define GPT_OP_MAX(a, b) ((b) > (a) ? (b) : (a))

/* One LayerNorm row r of C: mean, then variance about it (two passes, as
 * kernels_scalar.h), then y and xhat. */
GPT_ROW_FN void gpt_row_layernorm(size_t r, float *y, float *xhat, float *mean, float *rstd,
                                  const float *x, const float *w, const float *b, int C)
{
    const float *xr = x + r * C;
    GPT_LANES(float, s);
    GPT_FOR_LANES(l) GPT_AT(s, l) = gpt_w_sum(l, xr, C);
    GPT_BUTTERFLY(s, GPT_OP_ADD);
    float m = GPT_ALL(s) / C;
    GPT_FOR_LANES(l) GPT_AT(s, l) = gpt_w_sqdev(l, xr, m, C);
    GPT_BUTTERFLY(s, GPT_OP_ADD);
    float rs = 1.0f / sqrtf(GPT_ALL(s) / C + GPT_LN_EPS);
    GPT_FOR_LANES(l)
        gpt_w_ln_write(l, y + r * C, NULL == xhat ? NULL : xhat + r * C, xr, w, b, m, rs, C);
    if (GPT_LANE0) {
        mean[r] = m;
        rstd[r] = rs;
    }
}

/* LayerNorm backward, dx (+=) of row r. */
GPT_ROW_FN void gpt_row_layernorm_dx(size_t r, float *dx, const float *dy, const float *xhat,
                                     const float *w, const float *rstd, int C)
{
    const size_t o = r * C;
    GPT_LANES(float, s1);
    GPT_LANES(float, s2);
    GPT_FOR_LANES(l) gpt_w_ln_dsums(l, &GPT_AT(s1, l), &GPT_AT(s2, l), dy + o, xhat + o, w, C);
    GPT_BUTTERFLY(s1, GPT_OP_ADD);
    GPT_BUTTERFLY(s2, GPT_OP_ADD);
    float a = GPT_ALL(s1) / C, e = GPT_ALL(s2) / C;
    GPT_FOR_LANES(l) gpt_w_ln_dx(l, dx + o, dy + o, xhat + o, w, rstd[r], a, e, C);
}

/* Causal softmax of score row r of [B*H, T, T] in place (row i = r % T). */
GPT_ROW_FN void gpt_row_softmax(size_t r, float *P, int T)
{
    float *row = P + r * T;
    const int i = (int)(r % T);
    GPT_LANES(float, m);
    GPT_FOR_LANES(l) GPT_AT(m, l) = gpt_w_max(l, row, i + 1, row[0]);
    GPT_BUTTERFLY(m, GPT_OP_MAX);
    const float mx = GPT_ALL(m);
    GPT_WARP_SYNC();   /* every lane has read row[0] before lane 0 rewrites it */
    GPT_LANES(float, s);
    GPT_FOR_LANES(l) GPT_AT(s, l) = gpt_w_softmax_exp(l, row, i, mx);
    GPT_BUTTERFLY(s, GPT_OP_ADD);
    const float inv = 1.0f / GPT_ALL(s);
    GPT_FOR_LANES(l) gpt_w_softmax_scale(l, row, i, T, inv);
}

/* Softmax backward of row r in place: dp <- p (dp - sum p dp) scale. */
GPT_ROW_FN void gpt_row_softmax_backward(size_t r, float *dP, const float *P, int T,
                                         float scale)
{
    const size_t o = r * T;
    GPT_LANES(float, s);
    GPT_FOR_LANES(l) GPT_AT(s, l) = gpt_w_dot(l, P + o, dP + o, (int)(r % T) + 1);
    GPT_BUTTERFLY(s, GPT_OP_ADD);
    const float dot = GPT_ALL(s);
    GPT_FOR_LANES(l) gpt_w_softmax_bwd(l, dP + o, P + o, T, dot, scale);
}

/* Cross-entropy row r: loss[r] (0 without a target, tg[r] < 0) and, when
 * dlogits is not NULL (it may be logits), (softmax - onehot) * scale. The
 * exp sum in double, as kernels.c. */
GPT_ROW_FN void gpt_row_crossentropy(size_t r, double *loss, float *dlogits,
                                     const float *logits, const int32_t *tg, float scale, int V)
{
    const float *li = logits + r * V;
    float *di = NULL == dlogits ? NULL : dlogits + r * V;
    const int32_t t = tg[r];
    if (0 > t) {
        if (NULL != di)
            GPT_FOR_LANES(l) for (int j = l; j < V; j += GPT_WARP) di[j] = 0.0f;
        if (GPT_LANE0) loss[r] = 0.0;
        return;
    }
    const float lt = li[t];
    GPT_LANES(float, m);
    GPT_FOR_LANES(l) GPT_AT(m, l) = gpt_w_max(l, li, V, li[0]);
    GPT_BUTTERFLY(m, GPT_OP_MAX);
    const float mx = GPT_ALL(m);
    GPT_LANES(double, s);
    GPT_FOR_LANES(l) GPT_AT(s, l) = gpt_w_ce_sum(l, li, mx, V);
    GPT_BUTTERFLY(s, GPT_OP_ADD);
    const double sum = GPT_ALL(s);
    if (NULL != di) {
        GPT_WARP_SYNC();   /* lt and the sums read before di (maybe li) is written */
        GPT_FOR_LANES(l) gpt_w_ce_grad(l, di, li, t, mx, (float)(1.0 / sum), scale, V);
    }
    if (GPT_LANE0) loss[r] = log(sum) - (double)(lt - mx);
}

/* ------------------------------------------------------ batched attention --- */

/* The heads of qkv [B, T, P*C] (P = 3: q, k, v; P = 1: one tensor) as P
 * tensors [B, H, T, hd], so each (batch, head) pair's matrix lies at a
 * fixed stride T*hd and one strided-batched GEMM covers all B*H pairs. The
 * index in the head layout of element i of the row layout (NC = B*T*C). */
static inline STRATA_HD size_t gpt_k_head_index(size_t i, int P, int T, int C, int H, size_t NC)
{
    const int hd = C / H;
    size_t bt = i / ((size_t)P * C);
    int j = (int)(i % ((size_t)P * C));
    int p = j / C, h = (j % C) / hd, d = j % hd;
    size_t b = bt / T, t = bt % T;
    return p * NC + ((b * H + h) * T + t) * hd + d;
}

static inline STRATA_HD void gpt_k_split_heads(size_t i, float *heads, const float *rows, int P,
                                               int T, int C, int H, size_t NC)
{
    heads[gpt_k_head_index(i, P, T, C, H, NC)] = rows[i];
}

static inline STRATA_HD void gpt_k_merge_heads(size_t i, float *rows, const float *heads, int P,
                                               int T, int C, int H, size_t NC)
{
    rows[i] = heads[gpt_k_head_index(i, P, T, C, H, NC)];
}

/* One strided-batched GEMM as cuBLAS takes it (column-major):
 * C_i = alpha op(A_i) op(B_i) (+ beta C_i), A_i = A + i*sa, ... */
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gpt_bgemm;

/* The row-major product C [m, n] = alpha op(A) op(B) of matrices with row
 * strides lda, ldb, ldc, as cuBLAS's column-major C^T = op(B)^T op(A)^T. */
static inline STRATA_HD gpt_bgemm gpt_bgemm_rm(int ta, int tb, int m, int n, int k, float alpha,
                                               const float *A, int lda, long long sa,
                                               const float *B, int ldb, long long sb,
                                               float *C, int ldc, long long sc, int batch)
{
    gpt_bgemm g = { tb, ta, n, m, k, ldb, lda, ldc, batch, sb, sa, sc, alpha, 0.0f, B, A, C };
    return g;
}

/* The forward's two products over the B*H pairs, heads split (q, k, v at
 * qkvh, qkvh + NC, qkvh + 2 NC): 0: P = Q K^T / sqrt(hd) [T, T]; then the
 * caller's softmax; 1: O = P V [T, hd] into oh. */
static inline STRATA_HD void gpt_attn_fwd_gemms(gpt_bgemm g[2], float *oh, float *probs,
                                                const float *qkvh, int B, int T, int C, int H)
{
    const int hd = C / H, BH = B * H;
    const size_t NC = (size_t)B * T * C;
    const long long TT = (long long)T * T, Th = (long long)T * hd;
    const float *q = qkvh, *k = q + NC, *v = k + NC;
    g[0] = gpt_bgemm_rm(0, 1, T, T, hd, 1.0f / sqrtf((float)hd), q, hd, Th, k, hd, Th, probs,
                        T, TT, BH);
    g[1] = gpt_bgemm_rm(0, 0, T, hd, T, 1.0f, probs, T, TT, v, hd, Th, oh, hd, Th, BH);
}

/* The backward's four, from dO (doh, heads split) into dq, dk, dv (dqkvh):
 * 0: dP = dO V^T, 1: dV = P^T dO; then the caller's softmax backward on dP
 * (with the 1/sqrt(hd) scale); 2: dQ = dS K, 3: dK = dS^T Q. */
static inline STRATA_HD void gpt_attn_bwd_gemms(gpt_bgemm g[4], float *dqkvh, float *dP,
                                                const float *doh, const float *qkvh,
                                                const float *probs, int B, int T, int C, int H)
{
    const int hd = C / H, BH = B * H;
    const size_t NC = (size_t)B * T * C;
    const long long TT = (long long)T * T, Th = (long long)T * hd;
    const float *q = qkvh, *k = q + NC, *v = k + NC;
    float *dq = dqkvh, *dk = dq + NC, *dv = dk + NC;
    g[0] = gpt_bgemm_rm(0, 1, T, T, hd, 1.0f, doh, hd, Th, v, hd, Th, dP, T, TT, BH);
    g[1] = gpt_bgemm_rm(1, 0, T, hd, T, 1.0f, probs, T, TT, doh, hd, Th, dv, hd, Th, BH);
    g[2] = gpt_bgemm_rm(0, 0, T, hd, T, 1.0f, dP, T, TT, k, hd, Th, dq, hd, Th, BH);
    g[3] = gpt_bgemm_rm(1, 0, T, hd, T, 1.0f, dP, T, TT, q, hd, Th, dk, hd, Th, BH);
}

/* ------------------------------------------------ per-index kernel bodies --- */

/* out [B*T, C] = wte[token] + wpe[t]; i over B*T*C. */
static inline STRATA_HD void gpt_k_embed(size_t i, float *out, const int32_t *tok,
                                         const float *wte, const float *wpe, int T, int C)
{
    size_t bt = i / C;
    int c = (int)(i % C), t = (int)(bt % T);
    out[i] = wte[(size_t)tok[bt] * C + c] + wpe[(size_t)t * C + c];
}

static inline STRATA_HD void gpt_k_gelu(size_t i, float *y, const float *x)
{
    y[i] = gpt_s_gelu(x[i]);
}

static inline STRATA_HD void gpt_k_gelu_backward(size_t i, float *dx, const float *x,
                                                 const float *dy)
{
    dx[i] = gpt_s_gelu_grad(x[i], dy[i]);
}

static inline STRATA_HD void gpt_k_adamw(size_t i, float *p, const float *g, float *m, float *v,
                                         gpt_adamw_k k)
{
    strata_elem_adamw(p + i, g[i], m + i, v + i, k.b1, k.b2, k.step, k.rbc2, k.eps, k.decay);
}

/* The casts of the gathered copy. */
static inline STRATA_HD void gpt_k_to_bf16(size_t i, uint16_t *dst, const float *src)
{
    dst[i] = strata_elem_f32_to_bf16(src[i]);
}

static inline STRATA_HD void gpt_k_to_f32(size_t i, float *dst, const uint16_t *src)
{
    dst[i] = strata_elem_bf16_to_f32(src[i]);
}

#endif
