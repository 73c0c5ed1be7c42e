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
    p.i += (t.i - 0x4B400000) << 23;                   /* times 2^n */
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

/* Causal softmax of one score row in place: entries 0..i are exponentiated
 * and normalised, i+1..T-1 set to 0. */
static inline STRATA_HD void gpt_s_softmax_causal_row(float *row, int i, int T)
{
    float mx = row[0];
    for (int j = 1; j <= i; j++)
        mx = row[j] > mx ? row[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j <= i; j++) {
        row[j] = gpt_s_exp(row[j] - mx);
        sum += row[j];
    }
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
