/*
 * kernels.c - the layer kernels of the GPT model: pure functions over
 * caller-provided buffers. Matrix products go to oneDNN or the CBLAS
 * (gemm.c picks one per machine), split between the rank's threads here
 * (the library itself runs one thread per call, see threads.c); the arithmetic of every other kernel is the shared per-row
 * code of kernels_scalar.h, run here over rows split between the rank's
 * threads (OpenMP, where the compiler has it). A thread always owns whole
 * rows (of a product: whole rows or columns of the result, each summed over
 * the full depth by one library call), and sums over rows (parameter
 * gradients, the loss) run in a fixed order, so results are bitwise the
 * same for any thread count.
 * Row-major throughout.
 */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "examples/gpt/gpt.h"
#include "examples/gpt/kernels_scalar.h"

/* Loops below this many elements of work stay on the calling thread:
 * starting the team costs more than it saves. */
#define PAR_MIN 16384

#ifdef _OPENMP
#define PAR_PRAGMA(x) _Pragma(#x)
#define PAR_FOR(work) PAR_PRAGMA(omp parallel for schedule(static) if ((work) >= PAR_MIN))
#else
#define PAR_FOR(work)
#endif

/* The elementwise and row kernels are compiled for AVX-512 and AVX2+FMA
 * besides the baseline, the best picked at load time (GCC's function
 * multiversioning; a distribution's binary must run on any x86-64). Only
 * the machine picks the clone, never the thread count. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && 11 <= __GNUC__
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

/* Columns of a sum over rows (dw, db) are split in groups of this many:
 * each thread sums its columns over every row in row order. */
#define COL_BLOCK 128

/* ---------------------------------------------------------- LayerNorm --- */

/* Rows of a width that is a multiple of this go GPT_LN_ROWS at a time
 * (gpt_s_layernorm_rows: bitwise the one-row result there); others one by
 * one. */
#define LN_MULTI_C 16

CLONES void gpt_layernorm_forward(float *y, float *xhat, float *mean, float *rstd,
                           const float *x, const float *w, const float *b,
                           size_t N, int C)
{
    if (0 != C % LN_MULTI_C) {
        PAR_FOR(N * C)
        for (size_t i = 0; i < N; i++)
            gpt_s_layernorm_row(y + i * C, NULL != xhat ? xhat + i * C : NULL, &mean[i],
                                &rstd[i], x + i * C, w, b, C);
        return;
    }
    const size_t R = GPT_LN_ROWS, nb = (N + R - 1) / R;
    PAR_FOR(N * C)
    for (size_t k = 0; k < nb; k++) {
        size_t i = k * R;
        float *h = NULL != xhat ? xhat + i * C : NULL;
        if (i + R <= N)     /* R a constant here: the compiler unrolls the rows */
            gpt_s_layernorm_rows(GPT_LN_ROWS, y + i * C, h, &mean[i], &rstd[i], x + i * C,
                                 w, b, C);
        else
            gpt_s_layernorm_rows((int)(N - i), y + i * C, h, &mean[i], &rstd[i], x + i * C,
                                 w, b, C);
    }
}

CLONES void gpt_layernorm_affine(float *y, const float *xhat, const float *w, const float *b,
                          size_t N, int C)
{
    PAR_FOR(N * C)
    for (size_t i = 0; i < N; i++) {
        const float *hi = xhat + i * C;
        float *yi = y + i * C;
        for (int c = 0; c < C; c++)
            yi[c] = hi[c] * w[c] + b[c];
    }
}

/* dw[c] += sum_i a[i,c] * h[i,c] (h NULL: sum of a), rows in order. The
 * columns go in groups of COL_BLOCK, a group to a thread, which walks the
 * rows over its columns: a row's part is contiguous, so the pass streams
 * through a and h instead of striding down narrow columns. */
CLONES static void colsum(float *restrict dw, const float *restrict a, const float *restrict h,
                          size_t N, int C)
{
    const int nb = (C + COL_BLOCK - 1) / COL_BLOCK;
    PAR_FOR(N * C)
    for (int k = 0; k < nb; k++) {
        int c0 = k * COL_BLOCK, c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        for (size_t i = 0; i < N; i++) {
            const float *ai = a + i * C;
            if (NULL != h) {
                const float *hi = h + i * C;
                for (int c = c0; c < c1; c++)
                    dw[c] += ai[c] * hi[c];
            } else {
                for (int c = c0; c < c1; c++)
                    dw[c] += ai[c];
            }
        }
    }
}

/* dx += the rows' input gradients (the sums over rows are colsum's) */
CLONES static void layernorm_dx(float *dx, const float *dy, const float *xhat, const float *w,
                                const float *rstd, size_t N, int C)
{
    if (0 != C % LN_MULTI_C) {
        PAR_FOR(N * C)
        for (size_t i = 0; i < N; i++)
            gpt_s_layernorm_row_backward(dx + i * C, dy + i * C, xhat + i * C, w, rstd[i], C);
        return;
    }
    const size_t R = GPT_LN_ROWS, nb = (N + R - 1) / R;
    PAR_FOR(N * C)
    for (size_t k = 0; k < nb; k++) {
        size_t i = k * R, o = i * C;
        if (i + R <= N)
            gpt_s_layernorm_rows_backward(GPT_LN_ROWS, dx + o, dy + o, xhat + o, w, &rstd[i], C);
        else
            gpt_s_layernorm_rows_backward((int)(N - i), dx + o, dy + o, xhat + o, w, &rstd[i],
                                          C);
    }
}

CLONES void gpt_layernorm_backward(float *dx, float *dw, float *db, const float *dy,
                            const float *xhat, const float *w, const float *rstd,
                            size_t N, int C)
{
    layernorm_dx(dx, dy, xhat, w, rstd, N, C);
    colsum(dw, dy, xhat, N, C);
    colsum(db, dy, NULL, N, C);
}

/* ------------------------------------------------------------- matmul --- */

/* Products below this many multiply-adds run on the calling thread. A
 * split of the result is by rows, at multiples of GEMM_ROWS: OpenBLAS's
 * AVX2 sgemm (Haswell and Zen kernels, 0.3.21) computes the last rows of a
 * call that are not a multiple of its 12-row block with other kernels,
 * which round differently, and any split by columns changes the rounding
 * there; oneDNN's sgemm (2.6, AVX2 and AVX-512 kernels of 24 and 48 rows)
 * likewise. With row parts on multiples of 48 (of 12, 16, 24 and 48, the
 * blocks of the x86-64 kernels) each row is computed as in one call over
 * all of C, so the result does not depend on the thread count. */
#define GEMM_PAR_MIN (1L << 20)
#define GEMM_ROWS 48

/* Row i0 of thread t's part: t/nt of M, to the nearest multiple of GEMM_ROWS. */
static int gemm_part_row(int t, int nt, int M)
{
    if (t >= nt) return M;
    long r = ((long)M * t + (long)nt * GEMM_ROWS / 2) / ((long)nt * GEMM_ROWS) * GEMM_ROWS;
    return r < M ? (int)r : M;
}

/* C's rows i0..i0+m-1 (of n columns) set to the bias (per column). */
static void fill_bias(float *C, int ldc, const float *bias, int i0, int m, int n)
{
    for (int i = i0; i < i0 + m; i++)
        memcpy(C + (size_t)i * ldc, bias, sizeof(float) * (size_t)n);
}

/* gpt_sgemm1 (row-major) with C's rows split between the rank's threads:
 * each thread computes its rows of C with one single-threaded call
 * over the full depth K, the same arithmetic per element as one call over
 * all of C (GEMM_ROWS). Inside a parallel region it is just the BLAS call.
 * With bias (beta 1 then), each thread first sets its rows of C to the
 * bias: one pass on the calling thread over a 1024 x 1024 output took
 * 0.4 ms the other threads waited for. */
static void sgemm_b(int ta, int tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta,
                    float *C, int ldc, const float *bias)
{
#ifdef _OPENMP
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt > M / GEMM_ROWS) nt = M / GEMM_ROWS;
    if (1 < nt && GEMM_PAR_MIN <= (long)M * N * K) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), i0 = gemm_part_row(t, nt, M), n = gemm_part_row(t + 1, nt, M) - i0;
            if (0 < n) {
                if (NULL != bias) fill_bias(C, ldc, bias, i0, n, N);
                gpt_sgemm1(ta, tb, n, N, K, alpha, ta ? A + i0 : A + (size_t)i0 * lda, lda,
                           B, ldb, beta, C + (size_t)i0 * ldc, ldc);
            }
        }
        return;
    }
#endif
    if (NULL != bias) fill_bias(C, ldc, bias, 0, M, N);
    gpt_sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void sgemm(int ta, int tb, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc)
{
    sgemm_b(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void gpt_matmul_forward(float *y, const float *x, const float *W, const float *b,
                        size_t N, int IC, int OC)
{
    sgemm_b(0, 1, (int)N, OC, IC, 1.0f, x, IC, W, IC, NULL != b ? 1.0f : 0.0f,
            y, OC, b);
}

void gpt_matmul_backward(float *dx, float *dW, float *db, const float *dy,
                         const float *x, const float *W, size_t N, int IC, int OC,
                         int accumulate)
{
    if (NULL != dx)
        sgemm(0, 0, (int)N, IC, OC,
              1.0f, dy, OC, W, IC, accumulate ? 1.0f : 0.0f, dx, IC);
    if (NULL != dW)
        sgemm(1, 0, OC, IC, (int)N, 1.0f, dy, OC, x, IC, 1.0f, dW, IC);
    if (NULL != db)
        colsum(db, dy, NULL, N, OC);
}

/* ---------------------------------------------------------- attention --- */

/* Per (batch row, head) the products run over strided views of qkv in
 * blocks of ATT_ROWS query rows: a block's rows i0..i1-1 see keys 0..i1-1
 * only (causal), so its scores are an (i1-i0) x i1 product and P V sums
 * over i1 keys, not T. Against one T x T product per pair this skips
 * (nb-1)/(2 nb) of the score flops (nb blocks): at T 128, 256 the pair
 * took 15-25% less time here (oneDNN 2.6, AVX-512), and blocks of 48 rows
 * (oneDNN's AVX-512 row block) were as fast as any. The entries a block
 * does not compute are zero in P: the softmax writes them. The (b, h)
 * pairs are independent: the rank's threads take whole pairs, each running
 * its small products on one thread (the BLAS runs one per call), which
 * scales where a split of products this small would not; the blocks depend
 * on T alone, so the bits do not depend on the thread count. */
#define ATT_ROWS 48

CLONES static void attn_fwd_one(float *out, float *P, const float *q, int T, int C, int hd)
{
    const int C3 = 3 * C;
    const float *k = q + C, *v = q + 2 * C;
    for (int i0 = 0; i0 < T; i0 += ATT_ROWS) {
        const int i1 = i0 + ATT_ROWS < T ? i0 + ATT_ROWS : T;
        float *Pi = P + (size_t)i0 * T;
        gpt_sgemm1(0, 1, i1 - i0, i1, hd,
                   1.0f / sqrtf((float)hd), q + (size_t)i0 * C3, C3, k, C3, 0.0f, Pi, T);
        for (int i = i0; i < i1; i++)
            gpt_s_softmax_causal_row(P + (size_t)i * T, i, T);
        gpt_sgemm1(0, 0, i1 - i0, hd, i1,
                   1.0f, Pi, T, v, C3, 0.0f, out + (size_t)i0 * C, C);
    }
}

void gpt_attention_forward(float *out, float *probs, const float *qkv,
                           int B, int T, int C, int H)
{
    const int hd = C / H;
    PAR_FOR((size_t)B * H * T * T * hd)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        attn_fwd_one(out + (size_t)b * T * C + h * hd, probs + (size_t)bh * T * T,
                     qkv + (size_t)b * T * 3 * C + h * hd, T, C, hd);
    }
}

/* The backward in the forward's blocks: dP = dO v^T and dq = dS k over
 * query rows i0..i1-1 and keys 0..i1-1 (dS past i1 is never written or
 * read); dv = P^T dO and dk = dS^T q over key rows j0..j1-1 and the query
 * rows j0..T-1 that see them (P and dS are 0 above the diagonal there). */
CLONES static void attn_bwd_one(float *dq, float *dP, const float *dO, const float *q,
                         const float *P, int T, int C, int hd)
{
    const int C3 = 3 * C;
    const float *k = q + C, *v = q + 2 * C;
    float *dk = dq + C, *dv = dq + 2 * C;
    for (int i0 = 0; i0 < T; i0 += ATT_ROWS) {
        const int i1 = i0 + ATT_ROWS < T ? i0 + ATT_ROWS : T;
        float *dPi = dP + (size_t)i0 * T;
        gpt_sgemm1(0, 1, i1 - i0, i1, hd,
                   1.0f, dO + (size_t)i0 * C, C, v, C3, 0.0f, dPi, T);
        /* softmax backward in place: dS = P * (dP - rowsum(P * dP)) * scale */
        for (int i = i0; i < i1; i++)
            gpt_s_softmax_row_backward(dP + (size_t)i * T, P + (size_t)i * T, i, i1,
                                       1.0f / sqrtf((float)hd));
        gpt_sgemm1(0, 0, i1 - i0, hd, i1,
                   1.0f, dPi, T, k, C3, 0.0f, dq + (size_t)i0 * C3, C3);
    }
    for (int j0 = 0; j0 < T; j0 += ATT_ROWS) {
        const int j1 = j0 + ATT_ROWS < T ? j0 + ATT_ROWS : T;
        const size_t d = (size_t)j0 * T + j0;     /* P[j0][j0], dS[j0][j0] */
        gpt_sgemm1(1, 0, j1 - j0, hd, T - j0,
                   1.0f, P + d, T, dO + (size_t)j0 * C, C, 0.0f, dv + (size_t)j0 * C3, C3);
        gpt_sgemm1(1, 0, j1 - j0, hd, T - j0,
                   1.0f, dP + d, T, q + (size_t)j0 * C3, C3, 0.0f, dk + (size_t)j0 * C3, C3);
    }
}

void gpt_attention_backward(float *dqkv, float *dP, const float *dout,
                            const float *qkv, const float *probs,
                            int B, int T, int C, int H)
{
    const int hd = C / H;
    PAR_FOR((size_t)B * H * T * T * hd)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        size_t base = (size_t)b * T * 3 * C + h * hd, tt = (size_t)bh * T * T;
        attn_bwd_one(dqkv + base, dP + tt, dout + (size_t)b * T * C + h * hd, qkv + base,
                     probs + tt, T, C, hd);
    }
}

/* --------------------------------------------------------------- GELU --- */

CLONES void gpt_gelu_forward(float *y, const float *x, size_t n)
{
    PAR_FOR(n)
    for (size_t i = 0; i < n; i++)
        y[i] = gpt_s_gelu(x[i]);
}

CLONES void gpt_gelu_backward(float *dx, const float *x, const float *dy, size_t n)
{
    PAR_FOR(n)
    for (size_t i = 0; i < n; i++)
        dx[i] = gpt_s_gelu_grad(x[i], dy[i]);
}

CLONES void gpt_residual_add(float *y, const float *x, size_t n)
{
    PAR_FOR(n)
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

CLONES void gpt_add(float *y, const float *a, const float *b, size_t n)
{
    PAR_FOR(n)
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

/* in blocks of COPY_BLOCK floats, each one memcpy */
#define COPY_BLOCK 16384

void gpt_copy(float *y, const float *x, size_t n)
{
    const size_t nb = (n + COPY_BLOCK - 1) / COPY_BLOCK;
    PAR_FOR(n)
    for (size_t k = 0; k < nb; k++)
        memcpy(y + k * COPY_BLOCK, x + k * COPY_BLOCK,
               sizeof(float) * (n - k * COPY_BLOCK < COPY_BLOCK ? n - k * COPY_BLOCK : COPY_BLOCK));
}

/* ------------------------------------------------------ cross-entropy --- */

/* The loss of one row (its target tg >= 0); writes the row's gradient to
 * di when not NULL (di may equal li). */
CLONES static double ce_row(float *di, const float *li, int32_t tg, float scale, int V)
{
    float mx = gpt_s_row_max(li, V);
    double sum = 0.0;
    float lt = li[tg];       /* read before an in-place write */
    if (NULL != di) {
        /* the exps once, in a loop of their own that vectorises; the
         * sum then in order, as in the loop below */
        for (int j = 0; j < V; j++)
            di[j] = gpt_s_exp(li[j] - mx);
        for (int j = 0; j < V; j++)
            sum += di[j];
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < V; j++)
            di[j] = di[j] * inv * scale;
        di[tg] -= scale;
    } else {
        for (int j = 0; j < V; j++)
            sum += gpt_s_exp(li[j] - mx);
    }
    return log(sum) - (double)(lt - mx);
}

/* Rows go in chunks fixed by N alone; the chunks' losses are added in
 * order, so the sum does not depend on the threads. */
#define CE_CHUNKS 256

double gpt_crossentropy(float *dlogits, const float *logits, const int32_t *targets,
                        float scale, size_t N, int V)
{
    double part[CE_CHUNKS];
    const size_t per = (N + CE_CHUNKS - 1) / CE_CHUNKS;
    const int nchunks = (int)((N + per - 1) / (0 < per ? per : 1));
    PAR_FOR(N * V)
    for (int k = 0; k < nchunks; k++) {
        double loss = 0.0;
        for (size_t i = (size_t)k * per; i < N && i < (size_t)(k + 1) * per; i++) {
            float *di = NULL == dlogits ? NULL : dlogits + i * V;
            if (0 > targets[i]) {
                if (NULL != di)
                    memset(di, 0, sizeof(float) * V);
                continue;
            }
            loss += ce_row(di, logits + i * V, targets[i], scale, V);
        }
        part[k] = loss;
    }
    double loss = 0.0;
    for (int k = 0; k < nchunks; k++)
        loss += part[k];
    return loss;
}
