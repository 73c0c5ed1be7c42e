/*
 * kernels_scalar.h - the per-element and per-row arithmetic of the GPT
 * kernels, in one place, so that every back end computes the same maths:
 * kernels.c loops over rows with these (its threads split rows, never a
 * row), and device kernels compiled by nvcc get the same functions as
 * __host__ __device__ (STRATA_HD). Only plain C arithmetic here: no
 * library calls, no allocation; each function is a pure function of its
 * arguments and reads and writes only the row it is given.
 *
 * Row functions take a row pointer and its length C; a device kernel with
 * one thread block per row calls them from one thread, or splits the
 * c-loops itself keeping these expressions.
 */
#ifndef STRATA_EXAMPLES_GPT_KERNELS_SCALAR_H
#define STRATA_EXAMPLES_GPT_KERNELS_SCALAR_H

#include <math.h>      /* sqrtf */
#include <stddef.h>    /* NULL */
#include <stdint.h>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

#define GPT_LN_EPS 1e-5f
#define GPT_GELU_S 0.7978845608028654f     /* sqrt(2/pi) */
#define GPT_GELU_K 0.044715f

/* exp without a library call, so loops around it vectorise (glibc's expf
 * is a call the compiler cannot vectorise without -ffast-math). Cephes'
 * polynomial on [-ln2/2, ln2/2] and an exponent add; relative error
 * ~2e-7; inputs are clamped to [-86, 88] (results stay normal). */
static inline STRATA_HD float gpt_s_exp(float x)
{
    union { float f; int32_t i; } t, p;
    x = x < -86.0f ? -86.0f : (x > 88.0f ? 88.0f : x);
    t.f = x * 1.44269504088896341f + 12582912.0f;    /* round(x/ln2) in the low bits */
    float n = t.f - 12582912.0f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    p.f = ((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
             + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r * r
           + r + 1.0f);
    p.i += (int32_t)((uint32_t)(t.i - 0x4B400000) << 23); /* times 2^n, no signed shift */
    return p.f;
}

/* tanh through one exp (glibc's tanhf took a third of a training step).
 * Absolute error ~2e-7; large |u| saturate to +-1. */
static inline STRATA_HD float gpt_s_tanh(float u)
{
    return 1.0f - 2.0f / (1.0f + gpt_s_exp(2.0f * u));
}

/* GELU, tanh approximation, and its derivative times dy. */
static inline STRATA_HD float gpt_s_gelu(float x)
{
    float u = GPT_GELU_S * (x + GPT_GELU_K * x * x * x);
    return 0.5f * x * (1.0f + gpt_s_tanh(u));
}

static inline STRATA_HD float gpt_s_gelu_grad(float x, float dy)
{
    float u = GPT_GELU_S * (x + GPT_GELU_K * x * x * x);
    float t = gpt_s_tanh(u);
    float du = GPT_GELU_S * (1.0f + 3.0f * GPT_GELU_K * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
}

/* LayerNorm of one row: mean and rstd in two passes (the variance of an
 * activation with a large mean would lose its digits in E[x^2]-E[x]^2),
 * then y = xhat * w + b and, when xhat is not NULL, xhat itself, in one
 * pass. */
static inline STRATA_HD void gpt_s_layernorm_row(float *y, float *xhat, float *mean_out,
                                                 float *rstd_out, const float *x,
                                                 const float *w, const float *b, int C)
{
    float m = 0.0f, v = 0.0f;
    for (int c = 0; c < C; c++)
        m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) {
        float d = x[c] - m;
        v += d * d;
    }
    v /= C;
    float r = 1.0f / sqrtf(v + GPT_LN_EPS);
    if (NULL != xhat)
        for (int c = 0; c < C; c++) {
            float h = (x[c] - m) * r;
            xhat[c] = h;
            y[c] = h * w[c] + b[c];
        }
    else
        for (int c = 0; c < C; c++)
            y[c] = (x[c] - m) * r * w[c] + b[c];
    *mean_out = m;
    *rstd_out = r;
}

/* dx += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), with
 * dxhat = dy * w, for one row; the parameter gradients (dw, db) are sums
 * over rows and are left to the caller (gpt_s_layernorm_param_grads). */
static inline STRATA_HD void gpt_s_layernorm_row_backward(float *dx, const float *dy,
                                                          const float *xhat, const float *w,
                                                          float rstd, int C)
{
    float s1 = 0.0f, s2 = 0.0f;
    for (int c = 0; c < C; c++) {
        float g = dy[c] * w[c];
        s1 += g;
        s2 += g * xhat[c];
    }
    s1 /= C;
    s2 /= C;
    for (int c = 0; c < C; c++)
        dx[c] += rstd * (dy[c] * w[c] - s1 - xhat[c] * s2);
}

/* a * b rounded on its own, never fused with the add that takes it into
 * an FMA (see gpt_s_layernorm_rows). */
#if defined(__CUDA_ARCH__)
#define gpt_s_mul_rn(a, b) __fmul_rn((a), (b))
#else
static inline float gpt_s_mul_rn(float a, float b)
{
    float p = a * b;
#if defined(__GNUC__) && defined(__x86_64__)
    __asm__("" : "+x"(p));      /* opaque to the compiler: no fusion across it */
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__("" : "+w"(p));
#else
    volatile float q = p;
    p = q;
#endif
    return p;
}
#endif

/* The two functions above for R rows at once (1 <= R <= GPT_LN_ROWS),
 * row r at x + r*C (y, xhat, dx, dy alike), mean_out[r], rstd_out[r]: each
 * row's sums over c run in order as above, but the R rows' sums
 * interleave, so the CPU overlaps R chains of dependent adds instead of
 * waiting out one (the one-row sums take 4 cycles an element). Bitwise
 * the same as the one-row functions as kernels.c's clones compile them
 * when C is a multiple of 16: there the products of the sums are vector
 * products added lane by lane, each rounded before its add (so
 * gpt_s_mul_rn here); other widths end in a scalar tail that the
 * compiler fuses, and kernels.c keeps the one-row functions for them. */
#define GPT_LN_ROWS 8
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define GPT_UNROLL_ROWS _Pragma("GCC unroll 8")    /* the R chains in registers */
#else
#define GPT_UNROLL_ROWS
#endif

static inline STRATA_HD void gpt_s_layernorm_rows(int R, float *y, float *xhat, float *mean_out,
                                                  float *rstd_out, const float *x,
                                                  const float *w, const float *b, int C)
{
    float m[GPT_LN_ROWS], v[GPT_LN_ROWS];
    for (int r = 0; r < R; r++)
        m[r] = v[r] = 0.0f;
    for (int c = 0; c < C; c++)
        GPT_UNROLL_ROWS
        for (int r = 0; r < R; r++)
            m[r] += x[r * C + c];
    for (int r = 0; r < R; r++)
        m[r] /= C;
    for (int c = 0; c < C; c++)
        GPT_UNROLL_ROWS
        for (int r = 0; r < R; r++) {
            float d = x[r * C + c] - m[r];
            v[r] += gpt_s_mul_rn(d, d);
        }
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C, mr = m[r];
        float q = v[r] / C;
        float rs = 1.0f / sqrtf(q + GPT_LN_EPS);
        if (NULL != xhat)
            for (int c = 0; c < C; c++) {
                float h = (xr[c] - mr) * rs;
                xhat[r * C + c] = h;
                yr[c] = h * w[c] + b[c];
            }
        else
            for (int c = 0; c < C; c++)
                yr[c] = (xr[c] - mr) * rs * w[c] + b[c];
        mean_out[r] = mr;
        rstd_out[r] = rs;
    }
}

static inline STRATA_HD void gpt_s_layernorm_rows_backward(int R, float *dx, const float *dy,
                                                           const float *xhat, const float *w,
                                                           const float *rstd, int C)
{
    float s1[GPT_LN_ROWS], s2[GPT_LN_ROWS];
    for (int r = 0; r < R; r++)
        s1[r] = s2[r] = 0.0f;
    for (int c = 0; c < C; c++)
        GPT_UNROLL_ROWS
        for (int r = 0; r < R; r++) {
            float g = gpt_s_mul_rn(dy[r * C + c], w[c]);
            s1[r] += g;
            s2[r] += gpt_s_mul_rn(g, xhat[r * C + c]);
        }
    for (int r = 0; r < R; r++) {
        float a = s1[r] / C, e = s2[r] / C, rs = rstd[r];
        const float *dyr = dy + r * C, *hr = xhat + r * C;
        float *dxr = dx + r * C;
        for (int c = 0; c < C; c++)
            dxr[c] += rs * (dyr[c] * w[c] - a - hr[c] * e);
    }
}

/* The largest of x[0..n-1] (n >= 1) as the loop m = x[j] > m ? x[j] : m
 * from m = x[0] finds it, NaNs included (one in x[0] stays, others are
 * passed over), but in 16 lanes: a maximum does not depend on the order,
 * and a serial chain of compares took a third of the softmax. */
#define GPT_MAX_LANES 16
static inline STRATA_HD float gpt_s_row_max(const float *x, int n)
{
    float m[GPT_MAX_LANES];
    int j = 0;
    for (int k = 0; k < GPT_MAX_LANES; k++)
        m[k] = x[0];
    for (; j + GPT_MAX_LANES <= n; j += GPT_MAX_LANES)
        for (int k = 0; k < GPT_MAX_LANES; k++)
            m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
    float mx = m[0];
    for (int k = 1; k < GPT_MAX_LANES; k++)
        mx = m[k] > mx ? m[k] : mx;
    for (; j < n; j++)
        mx = x[j] > mx ? x[j] : mx;
    return mx;
}

/* Causal softmax of one score row in place: entries 0..i are exponentiated
 * and normalised, i+1..T-1 set to 0. */
static inline STRATA_HD void gpt_s_softmax_causal_row(float *row, int i, int T)
{
    float mx = gpt_s_row_max(row, i + 1);
    /* the exps apart from the sum: that loop vectorises, the sum (in
     * order, for the same bits) is one add per entry */
    for (int j = 0; j <= i; j++)
        row[j] = gpt_s_exp(row[j] - mx);
    float sum = 0.0f;
    for (int j = 0; j <= i; j++)
        sum += row[j];
    float inv = 1.0f / sum;
    for (int j = 0; j <= i; j++)
        row[j] *= inv;
    for (int j = i + 1; j < T; j++)
        row[j] = 0.0f;
}

/* Softmax backward of one row in place: dp <- p * (dp - sum(p * dp)) * scale
 * (masked entries have p = 0 and so get 0). */
static inline STRATA_HD void gpt_s_softmax_row_backward(float *dp, const float *p, int i, int T,
                                                        float scale)
{
    float dot = 0.0f;
    for (int j = 0; j <= i; j++)
        dot += p[j] * dp[j];
    for (int j = 0; j < T; j++)
        dp[j] = p[j] * (dp[j] - dot) * scale;
}

#endif
