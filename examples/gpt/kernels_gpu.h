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

/* Cross-entropy of one row of V logits with target tg >= 0: the loss, and
 * the row's gradient (softmax - onehot) * scale in di unless NULL (di may
 * equal li). The row sum is in double, as in kernels.c. */
static inline STRATA_HD double gpt_s_ce_row(float *di, const float *li, int32_t tg,
                                            float scale, int V)
{
    float mx = li[0];
    for (int j = 1; j < V; j++)
        mx = li[j] > mx ? li[j] : mx;
    double sum = 0.0;
    for (int j = 0; j < V; j++)
        sum += gpt_s_exp(li[j] - mx);
    float lt = li[tg];
    if (NULL != di) {
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < V; j++)
            di[j] = gpt_s_exp(li[j] - mx) * inv * scale;
        di[tg] -= scale;
    }
    return log(sum) - (double)(lt - mx);
}

/* The AdamW step's constants for step t (1-based), once per step. */
typedef struct {
    float b1, b2, step, rbc2, eps, decay;
} gpt_adamw_k;

/* ------------------------------------------------ per-index kernel bodies --- */

/* out [B*T, C] = wte[token] + wpe[t]; i over B*T*C. */
static inline STRATA_HD void gpt_k_embed(size_t i, float *out, const int32_t *tok,
                                         const float *wte, const float *wpe, int T, int C)
{
    size_t bt = i / C;
    int c = (int)(i % C), t = (int)(bt % T);
    out[i] = wte[(size_t)tok[bt] * C + c] + wpe[(size_t)t * C + c];
}

/* One LayerNorm row r of C. */
static inline STRATA_HD void gpt_k_layernorm(size_t r, float *y, float *xhat, float *mean,
                                             float *rstd, const float *x, const float *w,
                                             const float *b, int C)
{
    size_t o = r * C;
    gpt_s_layernorm_row(y + o, NULL == xhat ? NULL : xhat + o, mean + r, rstd + r, x + o,
                        w, b, C);
}

/* LayerNorm backward, dx of row r. */
static inline STRATA_HD void gpt_k_layernorm_dx(size_t r, float *dx, const float *dy,
                                                const float *xhat, const float *w,
                                                const float *rstd, int C)
{
    size_t o = r * C;
    gpt_s_layernorm_row_backward(dx + o, dy + o, xhat + o, w, rstd[r], C);
}

/* LayerNorm backward, dw and db of column c: sums over the N rows in row
 * order (kernels.c's order, so the sums agree bit for bit). */
static inline STRATA_HD void gpt_k_layernorm_dwdb(int c, float *dw, float *db, const float *dy,
                                                  const float *xhat, size_t N, int C)
{
    float sw = dw[c], sb = db[c];
    for (size_t r = 0; r < N; r++) {
        sw += dy[r * C + c] * xhat[r * C + c];
        sb += dy[r * C + c];
    }
    dw[c] = sw;
    db[c] = sb;
}

/* Causal softmax of score row r of [B*H, T, T] (row i = r % T). */
static inline STRATA_HD void gpt_k_softmax(size_t r, float *P, int T)
{
    gpt_s_softmax_causal_row(P + r * T, (int)(r % T), T);
}

static inline STRATA_HD void gpt_k_softmax_backward(size_t r, float *dP, const float *P, int T,
                                                    float scale)
{
    gpt_s_softmax_row_backward(dP + r * T, P + r * T, (int)(r % T), T, scale);
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

/* Cross-entropy row r: its loss into loss[r] (0 without a target). */
static inline STRATA_HD void gpt_k_crossentropy(size_t r, double *loss, float *dlogits,
                                                const float *logits, const int32_t *tg,
                                                float scale, int V)
{
    float *di = NULL == dlogits ? NULL : dlogits + r * V;
    if (0 > tg[r]) {
        if (NULL != di)
            for (int j = 0; j < V; j++)
                di[j] = 0.0f;
        loss[r] = 0.0;
        return;
    }
    loss[r] = gpt_s_ce_row(di, logits + r * V, tg[r], scale, V);
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
