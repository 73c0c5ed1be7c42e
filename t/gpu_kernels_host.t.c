/* gpu_kernels_host.t - the CUDA kernels' maths, compiled for the host: every
 * per-index body of examples/gpt/kernels_gpu.h (what kernels_gpu.cu runs on
 * the device, one index per thread) is run over all its indices here, every
 * warp-per-row driver (gpt_row_*: the host build runs the 32 lanes as a
 * loop and the shuffles' butterfly on arrays, in the device's order), the
 * column sums' block halving as k_colsum does it, and the attention's
 * head split, batched GEMM descriptors (run by a column-major emulation of
 * cublasGemmStridedBatchedEx) and merge; all compared with the CPU kernels
 * of kernels.c, with strata_f32_to_bf16, and with double-precision
 * formulas where the CPU side has no separate kernel (softmax row, AdamW
 * element, embedding). Runs without a GPU, never skips. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "examples/gpt/gpt.h"
#include "examples/gpt/kernels_gpu.h"
#include "strata.h"
#include "tap.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static float urand(void)      /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1p-52 - 1.0);
}

static float *rnd(size_t n, float scale, float shift)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        p[i] = shift + scale * urand();
    return p;
}

/* the largest |a-b| / max(|b|, floor) over n */
static double maxrel(const float *a, const float *b, size_t n, double floor)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(fabs((double)b[i]), floor);
        m = d > m || isnan(d) ? (isnan(d) ? INFINITY : d) : m;
    }
    return m;
}

/* C, V not multiples of 32 (lanes with one entry fewer), T < 32 (lanes with
 * none), N < GPT_CS_ROWS (row lanes with none); NB rows for the sums over
 * many rows */
enum { N = 24, C = 40, V = 67, T = 9, TOL = 1, NB = 301 };
/* kernels.c is built as AVX-512/AVX2+FMA clones (FMA contraction, vector
 * exp/tanh lanes), the host build of the device bodies as plain scalar
 * code: the same formulas agree to f32 rounding, not bit for bit. */
#define REL 1e-4

/* k_colsum's halving of a column's GPT_CS_ROWS row-lane parts (a step
 * reads only entries it does not write, so the threads' order is this) */
static float halve(float p[GPT_CS_ROWS])
{
    for (int h = GPT_CS_ROWS / 2; h; h >>= 1)
        for (int y = 0; y < h; y++)
            p[y] += p[y + h];
    return p[0];
}

/* k_colsum and k_ln_dwdb, block by block */
static void colsum(float *db, const float *dy, size_t n, int c_)
{
    for (int c = 0; c < c_; c++) {
        float p[GPT_CS_ROWS];
        for (int y = 0; y < GPT_CS_ROWS; y++)
            p[y] = gpt_b_colsum_part(c, y, dy, n, c_);
        db[c] += halve(p);
    }
}

static void ln_dwdb(float *dw, float *db, const float *dy, const float *xhat, size_t n, int c_)
{
    for (int c = 0; c < c_; c++) {
        float pw[GPT_CS_ROWS], pb[GPT_CS_ROWS];
        for (int y = 0; y < GPT_CS_ROWS; y++)
            gpt_b_lnw_part(c, y, &pw[y], &pb[y], dy, xhat, n, c_);
        dw[c] += halve(pw);
        db[c] += halve(pb);
    }
}

static void layernorm(void)
{
    float *x = rnd(N * C, 3.0f, 5.0f), *w = rnd(C, 1.0f, 1.0f), *b = rnd(C, 0.5f, 0.0f);
    float *y0 = calloc(N * C, 4), *h0 = calloc(N * C, 4), *m0 = calloc(N, 4), *r0 = calloc(N, 4);
    float *y1 = calloc(N * C, 4), *h1 = calloc(N * C, 4), *m1 = calloc(N, 4), *r1 = calloc(N, 4);
    gpt_layernorm_forward(y0, h0, m0, r0, x, w, b, N, C);
    for (size_t r = 0; r < N; r++)
        gpt_row_layernorm(r, y1, h1, m1, r1, x, w, b, C);
    /* the warp's order of the mean's adds is not kernels.c's: an ulp of the
     * mean (5 here) is ~3e-7 of xhat, so xhat near 0 is compared with the
     * floor the backward uses, and both against a double reference */
    double ref = 0.0;
    for (int r = 0; r < N; r++) {
        double m = 0.0, v = 0.0;
        for (int c = 0; c < C; c++) m += x[r * C + c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[r * C + c] - m) * (x[r * C + c] - m);
        double rs = 1.0 / sqrt(v / C + GPT_LN_EPS);
        for (int c = 0; c < C; c++) ref = fmax(ref, fabs((x[r * C + c] - m) * rs - h1[r * C + c]));
    }
    ok(maxrel(y1, y0, N * C, 1e-2) < REL && maxrel(h1, h0, N * C, 1e-2) < REL && ref < 1e-6,
       "layernorm forward rows match kernels.c (y, xhat: %.1e), xhat a double reference to %.1e",
       maxrel(h1, h0, N * C, 1e-2), ref);
    ok(maxrel(m1, m0, N, 1e-3) < REL && maxrel(r1, r0, N, 1e-3) < REL,
       "layernorm mean and rstd match kernels.c");

    float *dy = rnd(N * C, 1.0f, 0.0f);
    float *dx0 = calloc(N * C, 4), *dw0 = calloc(C, 4), *db0 = calloc(C, 4);
    float *dx1 = calloc(N * C, 4), *dw1 = calloc(C, 4), *db1 = calloc(C, 4);
    gpt_layernorm_backward(dx0, dw0, db0, dy, h0, w, r0, N, C);
    for (size_t r = 0; r < N; r++)
        gpt_row_layernorm_dx(r, dx1, dy, h0, w, r0, C);
    ln_dwdb(dw1, db1, dy, h0, N, C);
    ok(maxrel(dx1, dx0, N * C, 1e-2) < REL, "layernorm backward dx matches kernels.c (%.1e)",
       maxrel(dx1, dx0, N * C, 1e-2));
    ok(maxrel(dw1, dw0, C, 1e-2) < REL && maxrel(db1, db0, C, 1e-2) < REL,
       "layernorm backward dw, db (block column sums) match kernels.c");
    free(x); free(w); free(b); free(y0); free(h0); free(m0); free(r0);
    free(y1); free(h1); free(m1); free(r1); free(dy); free(dx0); free(dw0); free(db0);
    free(dx1); free(dw1); free(db1);
}

static void gelu(void)
{
    const size_t n = 4000;
    float *x = rnd(n, 6.0f, 0.0f), *dy = rnd(n, 1.0f, 0.0f);
    float *y0 = malloc(4 * n), *y1 = malloc(4 * n), *d0 = malloc(4 * n), *d1 = malloc(4 * n);
    gpt_gelu_forward(y0, x, n);
    gpt_gelu_backward(d0, x, dy, n);
    for (size_t i = 0; i < n; i++) {
        gpt_k_gelu(i, y1, x);
        gpt_k_gelu_backward(i, d1, x, dy);
    }
    ok(maxrel(y1, y0, n, 1e-3) < REL, "GELU forward matches kernels.c (%.1e)",
       maxrel(y1, y0, n, 1e-3));
    ok(maxrel(d1, d0, n, 1e-3) < REL, "GELU backward matches kernels.c (%.1e)",
       maxrel(d1, d0, n, 1e-3));
    double worst = 0.0;                  /* against the textbook tanh form */
    for (size_t i = 0; i < n; i++) {
        double u = 0.7978845608028654 * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
        worst = fmax(worst, fabs(0.5 * x[i] * (1.0 + tanh(u)) - y1[i]));
    }
    ok(worst < 1e-5, "GELU forward is the tanh approximation to %.1e", worst);
    free(x); free(dy); free(y0); free(y1); free(d0); free(d1);
}

static void softmax(void)
{
    const size_t rows = 3 * T;      /* three (batch, head) pairs of T rows */
    float *P = rnd(rows * T, 4.0f, 0.0f), *S = malloc(4 * rows * T);
    memcpy(S, P, 4 * rows * T);
    for (size_t r = 0; r < rows; r++)
        gpt_row_softmax(r, P, T);
    double worst = 0.0;
    int masked = 1;
    for (size_t r = 0; r < rows; r++) {
        int i = (int)(r % T);
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j <= i; j++) mx = fmax(mx, S[r * T + j]);
        for (int j = 0; j <= i; j++) sum += exp(S[r * T + j] - mx);
        for (int j = 0; j < T; j++) {
            if (j > i) { masked &= 0.0f == P[r * T + j]; continue; }
            worst = fmax(worst, fabs(exp(S[r * T + j] - mx) / sum - P[r * T + j]));
        }
    }
    ok(worst < 1e-6 && masked, "causal softmax rows: probabilities to %.1e, future masked", worst);

    float *dP = rnd(rows * T, 1.0f, 0.0f), *dS = malloc(4 * rows * T);
    memcpy(dS, dP, 4 * rows * T);
    for (size_t r = 0; r < rows; r++)
        gpt_row_softmax_backward(r, dS, P, T, 0.25f);
    worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        double dot = 0.0;
        for (int j = 0; j < T; j++) dot += (double)P[r * T + j] * dP[r * T + j];
        for (int j = 0; j < T; j++)
            worst = fmax(worst, fabs(P[r * T + j] * (dP[r * T + j] - dot) * 0.25 - dS[r * T + j]));
    }
    ok(worst < 1e-6, "softmax backward rows to %.1e", worst);
    free(P); free(S); free(dP); free(dS);
}

static void crossentropy(void)
{
    float *lg = rnd(N * V, 5.0f, 0.0f);
    int32_t tg[N];
    for (int r = 0; r < N; r++)
        tg[r] = r % 5 == 3 ? -1 : (int32_t)((r * 31) % V);     /* some rows without target */
    float *d0 = malloc(4 * N * V), *d1 = malloc(4 * N * V);
    double loss_rows[N], l1 = 0.0;
    double l0 = gpt_crossentropy(d0, lg, tg, 0.125f, N, V);
    for (size_t r = 0; r < N; r++)
        gpt_row_crossentropy(r, loss_rows, d1, lg, tg, 0.125f, V);
    for (int r = 0; r < N; r++)
        l1 += loss_rows[r];
    is_double(l1, l0, 1e-9 * fabs(l0), "cross-entropy loss sum matches kernels.c");
    ok(maxrel(d1, d0, N * V, 1e-4) < REL, "cross-entropy gradient matches kernels.c (%.1e)",
       maxrel(d1, d0, N * V, 1e-4));
    ok(0.0 == loss_rows[3] && 0.0f == d1[3 * V] && 0.0f == d1[3 * V + V - 1],
       "a row without a target (-1) has loss 0 and gradient 0");
    /* the head writes the gradient over the logits */
    memcpy(d1, lg, 4 * N * V);
    double again[N];
    for (size_t r = 0; r < N; r++)
        gpt_row_crossentropy(r, again, d1, d1, tg, 0.125f, V);
    ok(maxrel(d1, d0, N * V, 1e-4) < REL && 0 == memcmp(again, loss_rows, sizeof again),
       "cross-entropy in place (dlogits = logits) gives the same loss and gradient");
    free(lg); free(d0); free(d1);
}

static void adamw(void)
{
    const size_t n = 1000;
    float *p = rnd(n, 1.0f, 0.0f), *g = rnd(n, 0.1f, 0.0f), *m = rnd(n, 0.01f, 0.0f);
    float *v = rnd(n, 0.001f, 0.002f), *p0 = malloc(4 * n), *m0 = malloc(4 * n), *v0 = malloc(4 * n);
    memcpy(p0, p, 4 * n); memcpy(m0, m, 4 * n); memcpy(v0, v, 4 * n);
    const int t = 7;
    const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    gpt_adamw_k k = { (float)b1, (float)b2, (float)(lr / (1 - pow(b1, t))),
                      (float)(1 / sqrt(1 - pow(b2, t))), (float)eps, (float)(1 - lr * wd) };
    for (size_t i = 0; i < n; i++)
        gpt_k_adamw(i, p, g, m, v, k);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double mi = b1 * m0[i] + (1 - b1) * g[i], vi = b2 * v0[i] + (1 - b2) * g[i] * g[i];
        double mh = mi / (1 - pow(b1, t)), vh = vi / (1 - pow(b2, t));
        double pe = p0[i] - lr * (mh / (sqrt(vh) + eps) + wd * p0[i]);
        worst = fmax(worst, fabs(pe - p[i]) / lr);
    }
    ok(worst < 1e-3, "AdamW elements match the bias-corrected update (error %.1e of lr)", worst);
    free(p); free(g); free(m); free(v); free(p0); free(m0); free(v0);
}

static void casts(void)
{
    float src[] = { 1.0f, -2.5f, 3.14159f, 1.00390625f /* tie, even down */,
                    1.01171875f /* tie, even up */, 65504.0f, 3.4e38f, INFINITY, -0.0f,
                    NAN, 1e-40f };
    enum { K = sizeof src / sizeof src[0] };
    uint16_t a[K], b[K];
    float back[K];
    strata_f32_to_bf16(src, a, K);
    for (size_t i = 0; i < K; i++)
        gpt_k_to_bf16(i, b, src);
    ok(0 == memcmp(a, b, sizeof a), "bf16 rounding is bitwise strata_f32_to_bf16's (ties, inf, NaN)");
    for (size_t i = 0; i < K; i++)
        gpt_k_to_f32(i, back, b);
    ok(1.0f == back[0] && 1.0f == back[3] && 1.015625f == back[4] && isnan(back[9]),
       "bf16 -> f32 widening");
}

static void embed(void)
{
    const int B = 2, TT = 5, CC = 8, VV = 11;
    float *wte = rnd(VV * CC, 1.0f, 0.0f), *wpe = rnd(TT * CC, 1.0f, 0.0f);
    float *out = malloc(4 * B * TT * CC);
    int32_t tok[10] = { 3, 0, 10, 7, 7, 1, 2, 9, 4, 5 };
    for (size_t i = 0; i < (size_t)B * TT * CC; i++)
        gpt_k_embed(i, out, tok, wte, wpe, TT, CC);
    int good = 1;
    for (int r = 0; r < B * TT; r++)
        for (int c = 0; c < CC; c++)
            good &= out[r * CC + c] == wte[tok[r] * CC + c] + wpe[(r % TT) * CC + c];
    ok(good, "embedding rows are wte[token] + wpe[position]");
    free(wte); free(wpe); free(out);
}

/* The butterfly leaves every lane with the same total (GPT_ALL reads lane
 * 0), and the warp's order, not the row's: a sum that a sequential loop
 * would round differently. */
static void butterfly(void)
{
    float v[GPT_WARP], w[GPT_WARP];
    for (int l = 0; l < GPT_WARP; l++)
        v[l] = w[l] = 1.0f + urand() * 1e-3f * (float)(l + 1);
    GPT_BUTTERFLY(v, GPT_OP_ADD);
    int same = 1;
    for (int l = 1; l < GPT_WARP; l++)
        same &= 0 == memcmp(&v[l], &v[0], sizeof v[0]);
    float t = ((w[0] + w[16]) + (w[8] + w[24])) + ((w[4] + w[20]) + (w[12] + w[28]));
    float u = ((w[2] + w[18]) + (w[10] + w[26])) + ((w[6] + w[22]) + (w[14] + w[30]));
    float x = ((w[1] + w[17]) + (w[9] + w[25])) + ((w[5] + w[21]) + (w[13] + w[29]));
    float y = ((w[3] + w[19]) + (w[11] + w[27])) + ((w[7] + w[23]) + (w[15] + w[31]));
    float tree = (t + u) + (x + y);
    ok(same && 0 == memcmp(&v[0], &tree, sizeof tree),
       "warp butterfly: all lanes equal, the pairwise tree xor 16, 8, 4, 2, 1");
}

/* Bias gradients: the block column sums against kernels.c's db, over more
 * rows than a block has row lanes. */
static void colsums(void)
{
    float *dy = rnd((size_t)NB * C, 1.0f, 0.5f), *db0 = rnd(C, 1.0f, 0.0f), *db1 = malloc(4 * C);
    memcpy(db1, db0, 4 * C);
    gpt_matmul_backward(NULL, NULL, db0, dy, NULL, NULL, NB, 1, C, 0);
    colsum(db1, dy, NB, C);
    ok(maxrel(db1, db0, C, 1e-2) < REL, "bias gradient (block column sums, %d rows) matches "
       "kernels.c (%.1e)", NB, maxrel(db1, db0, C, 1e-2));
    free(dy); free(db0); free(db1);
}

/* cublasGemmStridedBatchedEx's meaning, column-major, in double */
static void emu_bgemm(const gpt_bgemm *g)
{
    for (int i = 0; i < g->batch; i++) {
        const float *A = g->A + i * g->sa, *B = g->B + i * g->sb;
        float *Cm = g->C + i * g->sc;
        for (int c = 0; c < g->n; c++)
            for (int r = 0; r < g->m; r++) {
                double s = 0.0;
                for (int p = 0; p < g->k; p++)
                    s += (double)(g->ta ? A[p + r * g->lda] : A[r + p * g->lda]) *
                         (g->tb ? B[c + p * g->ldb] : B[p + c * g->ldb]);
                Cm[r + c * g->ldc] = (float)(g->alpha * s) +
                                     (0.0f == g->beta ? 0.0f : g->beta * Cm[r + c * g->ldc]);
            }
    }
}

/* gpt_cuda_attention and its backward, launch by launch, against kernels.c */
static void attention(void)
{
    enum { B = 2, TA = 37, CA = 32, H = 4 };
    const size_t NC = (size_t)B * TA * CA, TT = (size_t)B * H * TA * TA;
    float *qkv = rnd(3 * NC, 1.0f, 0.0f), *qkvh = malloc(4 * 3 * NC), *oh = malloc(4 * NC);
    float *o0 = malloc(4 * NC), *o1 = malloc(4 * NC), *p0 = malloc(4 * TT), *p1 = malloc(4 * TT);
    gpt_bgemm g[4];
    gpt_attention_forward(o0, p0, qkv, B, TA, CA, H);
    for (size_t i = 0; i < 3 * NC; i++)
        gpt_k_split_heads(i, qkvh, qkv, 3, TA, CA, H, NC);
    gpt_attn_fwd_gemms(g, oh, p1, qkvh, B, TA, CA, H);
    emu_bgemm(&g[0]);
    for (size_t r = 0; r < (size_t)B * H * TA; r++)
        gpt_row_softmax(r, p1, TA);
    emu_bgemm(&g[1]);
    for (size_t i = 0; i < NC; i++)
        gpt_k_merge_heads(i, o1, oh, 1, TA, CA, H, NC);
    ok(maxrel(p1, p0, TT, 1e-3) < REL && maxrel(o1, o0, NC, 1e-2) < REL,
       "batched attention forward (split, 2 GEMMs over B*H, softmax, merge) matches "
       "kernels.c (probs %.1e, out %.1e)", maxrel(p1, p0, TT, 1e-3), maxrel(o1, o0, NC, 1e-2));

    float *dout = rnd(NC, 1.0f, 0.0f), *d0 = calloc(3 * NC, 4), *d1 = malloc(4 * 3 * NC);
    float *dP0 = malloc(4 * TT), *dP1 = malloc(4 * TT), *doh = malloc(4 * NC);
    float *dqkvh = malloc(4 * 3 * NC);
    gpt_attention_backward(d0, dP0, dout, qkv, p0, B, TA, CA, H);
    for (size_t i = 0; i < NC; i++)
        gpt_k_split_heads(i, doh, dout, 1, TA, CA, H, NC);
    gpt_attn_bwd_gemms(g, dqkvh, dP1, doh, qkvh, p1, B, TA, CA, H);
    emu_bgemm(&g[0]);
    emu_bgemm(&g[1]);
    for (size_t r = 0; r < (size_t)B * H * TA; r++)
        gpt_row_softmax_backward(r, dP1, p1, TA, 1.0f / sqrtf((float)(CA / H)));
    emu_bgemm(&g[2]);
    emu_bgemm(&g[3]);
    for (size_t i = 0; i < 3 * NC; i++)
        gpt_k_merge_heads(i, d1, dqkvh, 3, TA, CA, H, NC);
    ok(maxrel(d1, d0, 3 * NC, 1e-2) < REL, "batched attention backward (split, 4 GEMMs, "
       "softmax backward, merge) matches kernels.c (%.1e)", maxrel(d1, d0, 3 * NC, 1e-2));
    free(qkv); free(qkvh); free(oh); free(o0); free(o1); free(p0); free(p1); free(dout);
    free(d0); free(d1); free(dP0); free(dP1); free(doh); free(dqkvh);
}

int main(void)
{
    plan(21);
    layernorm();
    gelu();
    softmax();
    crossentropy();
    adamw();
    casts();
    embed();
    butterfly();
    colsums();
    attention();
    return done_testing();
}
