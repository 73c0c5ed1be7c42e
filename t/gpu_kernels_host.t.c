/* gpu_kernels_host.t - the CUDA kernels' maths, compiled for the host: every
 * per-index body of examples/gpt/kernels_gpu.h (what kernels_gpu.cu runs on
 * the device, one index per thread) is run over all its indices here and
 * compared with the CPU kernels of kernels.c, with strata_f32_to_bf16, and
 * with double-precision formulas where the CPU side has no separate kernel
 * (softmax row, AdamW element, embedding). Runs without a GPU, never skips. */
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

enum { N = 24, C = 40, V = 67, T = 9, TOL = 1 };
/* kernels.c is built as AVX-512/AVX2+FMA clones (FMA contraction, vector
 * exp/tanh lanes), the host build of the device bodies as plain scalar
 * code: the same formulas agree to f32 rounding, not bit for bit. */
#define REL 1e-4

static void layernorm(void)
{
    float *x = rnd(N * C, 3.0f, 5.0f), *w = rnd(C, 1.0f, 1.0f), *b = rnd(C, 0.5f, 0.0f);
    float *y0 = calloc(N * C, 4), *h0 = calloc(N * C, 4), *m0 = calloc(N, 4), *r0 = calloc(N, 4);
    float *y1 = calloc(N * C, 4), *h1 = calloc(N * C, 4), *m1 = calloc(N, 4), *r1 = calloc(N, 4);
    gpt_layernorm_forward(y0, h0, m0, r0, x, w, b, N, C);
    for (size_t r = 0; r < N; r++)
        gpt_k_layernorm(r, y1, h1, m1, r1, x, w, b, C);
    ok(maxrel(y1, y0, N * C, 1e-3) < REL && maxrel(h1, h0, N * C, 1e-3) < REL,
       "layernorm forward rows match kernels.c (y, xhat: %.1e)", maxrel(y1, y0, N * C, 1e-3));
    ok(maxrel(m1, m0, N, 1e-3) < REL && maxrel(r1, r0, N, 1e-3) < REL,
       "layernorm mean and rstd match kernels.c");

    float *dy = rnd(N * C, 1.0f, 0.0f);
    float *dx0 = calloc(N * C, 4), *dw0 = calloc(C, 4), *db0 = calloc(C, 4);
    float *dx1 = calloc(N * C, 4), *dw1 = calloc(C, 4), *db1 = calloc(C, 4);
    gpt_layernorm_backward(dx0, dw0, db0, dy, h0, w, r0, N, C);
    for (size_t r = 0; r < N; r++)
        gpt_k_layernorm_dx(r, dx1, dy, h0, w, r0, C);
    for (int c = 0; c < C; c++)
        gpt_k_layernorm_dwdb(c, dw1, db1, dy, h0, N, C);
    ok(maxrel(dx1, dx0, N * C, 1e-2) < REL, "layernorm backward dx matches kernels.c (%.1e)",
       maxrel(dx1, dx0, N * C, 1e-2));
    ok(maxrel(dw1, dw0, C, 1e-2) < REL && maxrel(db1, db0, C, 1e-2) < REL,
       "layernorm backward dw, db (column sums) match kernels.c");
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
        gpt_k_softmax(r, P, T);
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
        gpt_k_softmax_backward(r, dS, P, T, 0.25f);
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
        gpt_k_crossentropy(r, loss_rows, d1, lg, tg, 0.125f, V);
    for (int r = 0; r < N; r++)
        l1 += loss_rows[r];
    is_double(l1, l0, 1e-9 * fabs(l0), "cross-entropy loss sum matches kernels.c");
    ok(maxrel(d1, d0, N * V, 1e-4) < REL, "cross-entropy gradient matches kernels.c (%.1e)",
       maxrel(d1, d0, N * V, 1e-4));
    ok(0.0 == loss_rows[3] && 0.0f == d1[3 * V] && 0.0f == d1[3 * V + V - 1],
       "a row without a target (-1) has loss 0 and gradient 0");
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

int main(void)
{
    plan(16);
    layernorm();
    gelu();
    softmax();
    crossentropy();
    adamw();
    casts();
    embed();
    return done_testing();
}
