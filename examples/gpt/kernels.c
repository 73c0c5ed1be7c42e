/*
 * kernels.c - the layer kernels of the GPT model: pure functions over
 * caller-provided buffers. Matrix products go to CBLAS (its threads are set
 * by gpt_threads_init); everything else is a plain loop that -O2 can
 * vectorise. Row-major throughout.
 */
#include <math.h>
#include <string.h>

#include <cblas.h>       /* cblas_sgemm */

#include "examples/gpt/gpt.h"

#define LN_EPS 1e-5f

/* exp without a library call, so the loops around it vectorise (glibc's
 * expf is a call the compiler cannot vectorise without -ffast-math).
 * Cephes' polynomial on [-ln2/2, ln2/2] and an exponent add; relative
 * error ~2e-7; inputs are clamped to [-86, 88] (results stay normal). */
static inline float vexpf(float x)
{
    union { float f; int32_t i; } t, p;
    x = x < -86.0f ? -86.0f : (x > 88.0f ? 88.0f : x);
    t.f = x * 1.44269504088896341f + 12582912.0f;    /* round(x/ln2) in the low bits */
    float n = t.f - 12582912.0f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    p.f = ((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
             + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r * r
           + r + 1.0f);
    p.i += (int32_t)((uint32_t)(t.i - 0x4B400000) << 23); /* times 2^n */
    return p.f;
}

/* ---------------------------------------------------------- LayerNorm --- */

void gpt_layernorm_forward(float *y, float *xhat, float *mean, float *rstd,
                           const float *x, const float *w, const float *b,
                           size_t N, int C)
{
    for (size_t i = 0; i < N; i++) {
        const float *xi = x + i * C;
        float m = 0.0f, v = 0.0f;
        for (int c = 0; c < C; c++)
            m += xi[c];
        m /= C;
        /* two passes: the variance of an activation with a large mean
         * would lose its digits in E[x^2] - E[x]^2 */
        for (int c = 0; c < C; c++) {
            float d = xi[c] - m;
            v += d * d;
        }
        v /= C;
        float r = 1.0f / sqrtf(v + LN_EPS);
        float *yi = y + i * C;
        for (int c = 0; c < C; c++)
            yi[c] = (xi[c] - m) * r * w[c] + b[c];
        if (NULL != xhat) {
            float *hi = xhat + i * C;
            for (int c = 0; c < C; c++)
                hi[c] = (xi[c] - m) * r;
        }
        mean[i] = m;
        rstd[i] = r;
    }
}

void gpt_layernorm_affine(float *y, const float *xhat, const float *w, const float *b,
                          size_t N, int C)
{
    for (size_t i = 0; i < N; i++) {
        const float *hi = xhat + i * C;
        float *yi = y + i * C;
        for (int c = 0; c < C; c++)
            yi[c] = hi[c] * w[c] + b[c];
    }
}

void gpt_layernorm_backward(float *dx, float *dw, float *db, const float *dy,
                            const float *xhat, const float *w, const float *rstd,
                            size_t N, int C)
{
    for (size_t i = 0; i < N; i++) {
        const float *dyi = dy + i * C, *hi = xhat + i * C;
        float *dxi = dx + i * C;
        /* dxhat = dy * w; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        float s1 = 0.0f, s2 = 0.0f;
        for (int c = 0; c < C; c++) {
            float g = dyi[c] * w[c];
            s1 += g;
            s2 += g * hi[c];
        }
        s1 /= C;
        s2 /= C;
        float r = rstd[i];
        for (int c = 0; c < C; c++) {
            float g = dyi[c] * w[c];
            dxi[c] += r * (g - s1 - hi[c] * s2);
            dw[c] += dyi[c] * hi[c];
            db[c] += dyi[c];
        }
    }
}

/* ------------------------------------------------------------- matmul --- */

void gpt_matmul_forward(float *y, const float *x, const float *W, const float *b,
                        size_t N, int IC, int OC)
{
    float beta = 0.0f;
    if (NULL != b) {
        for (size_t i = 0; i < N; i++)
            memcpy(y + i * OC, b, sizeof(float) * OC);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, OC, IC,
                1.0f, x, IC, W, IC, beta, y, OC);
}

void gpt_matmul_backward(float *dx, float *dW, float *db, const float *dy,
                         const float *x, const float *W, size_t N, int IC, int OC,
                         int accumulate)
{
    if (NULL != dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, IC, OC,
                    1.0f, dy, OC, W, IC, accumulate ? 1.0f : 0.0f, dx, IC);
    if (NULL != dW)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, (int)N,
                    1.0f, dy, OC, x, IC, 1.0f, dW, IC);
    if (NULL != db)
        for (size_t i = 0; i < N; i++) {
            const float *dyi = dy + i * OC;
            for (int o = 0; o < OC; o++)
                db[o] += dyi[o];
        }
}

/* ---------------------------------------------------------- attention --- */

/* Per (batch row, head) the scores are one T x T sgemm over strided views of
 * qkv; the causal upper triangle is computed and then zeroed, which doubles
 * the score flops but keeps every product a single BLAS call. */
void gpt_attention_forward(float *out, float *probs, const float *qkv,
                           int B, int T, int C, int H)
{
    const int hd = C / H, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * C3 + h * hd;
            const float *k = q + C, *v = q + 2 * C;
            float *P = probs + ((size_t)b * H + h) * T * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd,
                        scale, q, C3, k, C3, 0.0f, P, T);
            for (int i = 0; i < T; i++) {
                float *row = P + (size_t)i * T;
                float mx = row[0];
                for (int j = 1; j <= i; j++)
                    mx = row[j] > mx ? row[j] : mx;
                float sum = 0.0f;
                for (int j = 0; j <= i; j++) {
                    row[j] = vexpf(row[j] - mx);
                    sum += row[j];
                }
                float inv = 1.0f / sum;
                for (int j = 0; j <= i; j++)
                    row[j] *= inv;
                for (int j = i + 1; j < T; j++)
                    row[j] = 0.0f;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T,
                        1.0f, P, T, v, C3, 0.0f, out + (size_t)b * T * C + h * hd, C);
        }
}

void gpt_attention_backward(float *dqkv, float *dP, const float *dout,
                            const float *qkv, const float *probs,
                            int B, int T, int C, int H)
{
    const int hd = C / H, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t base = (size_t)b * T * C3 + h * hd;
            const float *q = qkv + base, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + base, *dk = dq + C, *dv = dq + 2 * C;
            const float *dO = dout + (size_t)b * T * C + h * hd;
            const float *P = probs + ((size_t)b * H + h) * T * T;
            /* dP = dO v^T; dv = P^T dO */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd,
                        1.0f, dO, C, v, C3, 0.0f, dP, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T,
                        1.0f, P, T, dO, C, 0.0f, dv, C3);
            /* softmax backward, in place: dS = P * (dP - rowsum(P * dP)) * scale;
             * masked entries have P = 0 and so get 0 */
            for (int i = 0; i < T; i++) {
                const float *pr = P + (size_t)i * T;
                float *dr = dP + (size_t)i * T;
                float dot = 0.0f;
                for (int j = 0; j <= i; j++)
                    dot += pr[j] * dr[j];
                for (int j = 0; j < T; j++)
                    dr[j] = pr[j] * (dr[j] - dot) * scale;
            }
            /* dq = dS k; dk = dS^T q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T,
                        1.0f, dP, T, k, C3, 0.0f, dq, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T,
                        1.0f, dP, T, q, C3, 0.0f, dk, C3);
        }
}

/* --------------------------------------------------------------- GELU --- */

#define GELU_S 0.7978845608028654f     /* sqrt(2/pi) */
#define GELU_K 0.044715f

/* tanh through one exp: glibc's tanhf (expm1f inside) took a third of a
 * training step. Absolute error ~2e-7, which is what GELU's
 * 0.5 x (1 + tanh) sees; large |u| saturate to +-1. */
static inline float fast_tanhf(float u)
{
    return 1.0f - 2.0f / (1.0f + vexpf(2.0f * u));
}

void gpt_gelu_forward(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float xi = x[i];
        float u = GELU_S * (xi + GELU_K * xi * xi * xi);
        y[i] = 0.5f * xi * (1.0f + fast_tanhf(u));
    }
}

void gpt_gelu_backward(float *dx, const float *x, const float *dy, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float xi = x[i];
        float u = GELU_S * (xi + GELU_K * xi * xi * xi);
        float t = fast_tanhf(u);
        float du = GELU_S * (1.0f + 3.0f * GELU_K * xi * xi);
        float g = 0.5f * (1.0f + t) + 0.5f * xi * (1.0f - t * t) * du;
        dx[i] = dy[i] * g;
    }
}

void gpt_residual_add(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* ------------------------------------------------------ cross-entropy --- */

double gpt_crossentropy(float *dlogits, const float *logits, const int32_t *targets,
                        float scale, size_t N, int V)
{
    double loss = 0.0;
    for (size_t i = 0; i < N; i++) {
        const float *li = logits + i * V;
        int32_t tg = targets[i];
        float *di = NULL == dlogits ? NULL : dlogits + i * V;
        if (0 > tg) {
            if (NULL != di)
                memset(di, 0, sizeof(float) * V);
            continue;
        }
        float mx = li[0];
        for (int j = 1; j < V; j++)
            mx = li[j] > mx ? li[j] : mx;
        double sum = 0.0;
        for (int j = 0; j < V; j++)
            sum += vexpf(li[j] - mx);
        float lt = li[tg];       /* read before an in-place write */
        loss += log(sum) - (double)(lt - mx);
        if (NULL != di) {
            float inv = (float)(1.0 / sum);
            for (int j = 0; j < V; j++)
                di[j] = vexpf(li[j] - mx) * inv * scale;
            di[tg] -= scale;
        }
    }
    return loss;
}
