/*
 * model.c - the GPT model as FSDP units: geometry, parameter lists and
 * their initialisation, saved-activation sizes, and each unit's forward and
 * backward composed from the kernels in kernels.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "examples/gpt/gpt.h"

/* ------------------------------------------------------------- checks --- */

strata_status_t gpt_why_fail(strata_status_t st, char *why, size_t len, const char *fmt, ...)
{
    if (NULL != why && 0 < len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Largest element count any buffer of a (B, T) call may hold; the BLAS
 * takes int dimensions, so rows B*T and every leading dimension must fit. */
#define GPT_MAX_INT 2147483647LL

strata_status_t gpt_config_validate(const gpt_config *cfg, char *why, size_t why_len)
{
    if (NULL == cfg)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len, "no model configuration given");
    if (1 > cfg->n_layer)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "layers must be at least 1 (got %d)", cfg->n_layer);
    if (1 > cfg->n_head)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "heads must be at least 1 (got %d)", cfg->n_head);
    if (1 > cfg->dim)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "dim must be at least 1 (got %d)", cfg->dim);
    if (0 != cfg->dim % cfg->n_head)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "dim %d is not divisible by heads %d: each head needs dim/heads "
                            "channels (try dim %d)", cfg->dim, cfg->n_head,
                            (cfg->dim / cfg->n_head + 1) * cfg->n_head);
    if (1 > cfg->max_seq)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "seq must be at least 1 (got %d)", cfg->max_seq);
    if (GPT_MAX_INT / 4 < (long long)cfg->dim * 4 || GPT_MAX_INT / 4 / cfg->dim < cfg->dim)
        return gpt_why_fail(STRATA_ERR_OVERFLOW, why, why_len,
                            "dim %d is too large for the BLAS's int dimensions", cfg->dim);
    return STRATA_OK;
}

strata_status_t gpt_shape_validate(const gpt_config *cfg, int B, int T, char *why, size_t why_len)
{
    strata_status_t st = gpt_config_validate(cfg, why, why_len);
    if (STRATA_OK != st)
        return st;
    if (1 > B)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "batch must be at least 1 (got %d)", B);
    if (1 > T || T > cfg->max_seq)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "sequence length %d is outside 1..%d (the model's seq)",
                            T, cfg->max_seq);
    /* rows B*T times the widest row (4C, or 256 logits) must fit an int for
     * the BLAS; the attention probabilities B*H*T*T must fit a size_t */
    long long wide = 4LL * cfg->dim > GPT_VOCAB ? 4LL * cfg->dim : GPT_VOCAB;
    long long rows = (long long)B * T;
    if (GPT_MAX_INT / wide < rows)
        return gpt_why_fail(STRATA_ERR_OVERFLOW, why, why_len,
                            "batch %d x seq %d x width %lld elements is too large for one BLAS "
                            "call; use a smaller batch", B, T, wide);
    return STRATA_OK;
}

/* ---------------------------------------------------------- geometry --- */

int gpt_num_units(const gpt_config *cfg)
{
    return cfg->n_layer + 2;
}

gpt_unit_kind gpt_unit_kind_of(const gpt_config *cfg, int unit)
{
    if (0 == unit)
        return GPT_UNIT_EMBED;
    if (unit == cfg->n_layer + 1)
        return GPT_UNIT_HEAD;
    return GPT_UNIT_BLOCK;
}

void gpt_unit_name(const gpt_config *cfg, int unit, char *buf, size_t len)
{
    switch (gpt_unit_kind_of(cfg, unit)) {
    case GPT_UNIT_EMBED: snprintf(buf, len, "embed"); break;
    case GPT_UNIT_HEAD:  snprintf(buf, len, "head"); break;
    default:             snprintf(buf, len, "block%d", unit - 1); break;
    }
}

/* --------------------------------------------------------- parameters --- */

static void set_param(gpt_param_info *p, const char *name, size_t d0, size_t d1,
                      gpt_init_kind init, float std)
{
    p->name = name;
    p->ndim = 1 == d1 ? 1 : 2;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->numel = d0 * d1;
    p->init = init;
    p->std = std;
    p->decay = 2 == p->ndim;
}

int gpt_unit_params(const gpt_config *cfg, int unit, gpt_param_info out[GPT_MAX_PARAMS])
{
    const size_t C = (size_t)cfg->dim;
    const float std = 0.02f;
    if (0 > unit || unit >= gpt_num_units(cfg))
        return 0;
    switch (gpt_unit_kind_of(cfg, unit)) {
    case GPT_UNIT_EMBED:
        set_param(&out[GPT_P_WTE], "wte", GPT_VOCAB, C, GPT_INIT_NORMAL, std);
        set_param(&out[GPT_P_WPE], "wpe", (size_t)cfg->max_seq, C, GPT_INIT_NORMAL, std);
        return 2;
    case GPT_UNIT_HEAD:
        set_param(&out[GPT_P_LNF_W], "lnf_w", C, 1, GPT_INIT_ONES, 0.0f);
        set_param(&out[GPT_P_LNF_B], "lnf_b", C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_LM_W], "lm_w", GPT_VOCAB, C, GPT_INIT_NORMAL, std);
        return 3;
    default: {
        /* GPT-2 scales the projections that add into the residual stream so
         * its variance does not grow with depth */
        const float rstd = std / sqrtf(2.0f * cfg->n_layer);
        set_param(&out[GPT_P_LN1_W], "ln1_w", C, 1, GPT_INIT_ONES, 0.0f);
        set_param(&out[GPT_P_LN1_B], "ln1_b", C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_QKV_W], "qkv_w", 3 * C, C, GPT_INIT_NORMAL, std);
        set_param(&out[GPT_P_QKV_B], "qkv_b", 3 * C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_ATTN_PROJ_W], "attn_proj_w", C, C, GPT_INIT_NORMAL, rstd);
        set_param(&out[GPT_P_ATTN_PROJ_B], "attn_proj_b", C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_LN2_W], "ln2_w", C, 1, GPT_INIT_ONES, 0.0f);
        set_param(&out[GPT_P_LN2_B], "ln2_b", C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_FC_W], "fc_w", 4 * C, C, GPT_INIT_NORMAL, std);
        set_param(&out[GPT_P_FC_B], "fc_b", 4 * C, 1, GPT_INIT_ZEROS, 0.0f);
        set_param(&out[GPT_P_FC_PROJ_W], "fc_proj_w", C, 4 * C, GPT_INIT_NORMAL, rstd);
        set_param(&out[GPT_P_FC_PROJ_B], "fc_proj_b", C, 1, GPT_INIT_ZEROS, 0.0f);
        return 12;
    }
    }
}

size_t gpt_num_params(const gpt_config *cfg)
{
    size_t total = 0;
    gpt_param_info info[GPT_MAX_PARAMS];
    for (int u = 0; u < gpt_num_units(cfg); u++) {
        int n = gpt_unit_params(cfg, u, info);
        for (int i = 0; i < n; i++)
            total += info[i].numel;
    }
    return total;
}

static uint64_t mix64(uint64_t z)    /* splitmix64's finaliser */
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit_open(uint64_t r)  /* (0, 1): never 0, so log() is finite */
{
    return ((double)(r >> 11) + 0.5) * 0x1p-53;
}

void gpt_param_init(const gpt_param_info *p, uint64_t seed, int unit, int index,
                    size_t offset, size_t n, float *out)
{
    if (GPT_INIT_ZEROS == p->init || GPT_INIT_ONES == p->init) {
        float v = GPT_INIT_ONES == p->init ? 1.0f : 0.0f;
        for (size_t i = 0; i < n; i++)
            out[i] = v;
        return;
    }
    /* Box-Muller over element pairs (2k, 2k+1): a pair is a pure function
     * of (seed, unit, index, k), so any slice is reproducible on its own */
    uint64_t key = mix64(mix64(mix64(seed) ^ (uint64_t)unit) ^ ((uint64_t)index << 32));
    for (size_t i = 0; i < n; i++) {
        size_t e = offset + i;
        uint64_t r = mix64(key ^ mix64(e >> 1));
        double u1 = unit_open(r), u2 = unit_open(mix64(r));
        double rad = sqrt(-2.0 * log(u1)), ang = 2.0 * M_PI * u2;
        double z = (e & 1) ? rad * sin(ang) : rad * cos(ang);
        out[i] = (float)(z * p->std);
    }
}

/* -------------------------------------------------------------- saves --- */

static const char *const save_names[GPT_MAX_SAVES] = {
    "ln1", "ln1_mean", "ln1_rstd", "qkv", "attn_probs", "attn_out",
    "ln2", "ln2_mean", "ln2_rstd", "mlp_up", "mlp_act"
};

const char *gpt_save_name(int index)
{
    return 0 <= index && index < GPT_MAX_SAVES ? save_names[index] : NULL;
}

int gpt_block_save_sizes(const gpt_config *cfg, int B, int T, size_t sizes_out[GPT_MAX_SAVES])
{
    size_t N = (size_t)B * T, C = (size_t)cfg->dim;
    sizes_out[GPT_S_LN1] = N * C;
    sizes_out[GPT_S_LN1_MEAN] = N;
    sizes_out[GPT_S_LN1_RSTD] = N;
    sizes_out[GPT_S_QKV] = N * 3 * C;
    sizes_out[GPT_S_ATTN_PROBS] = (size_t)B * cfg->n_head * T * T;
    sizes_out[GPT_S_ATTN_OUT] = N * C;
    sizes_out[GPT_S_LN2] = N * C;
    sizes_out[GPT_S_LN2_MEAN] = N;
    sizes_out[GPT_S_LN2_RSTD] = N;
    sizes_out[GPT_S_MLP_UP] = N * 4 * C;
    sizes_out[GPT_S_MLP_ACT] = N * 4 * C;
    return GPT_MAX_SAVES;
}

double gpt_block_save_flops(const gpt_config *cfg, int B, int T, double flops_out[GPT_MAX_SAVES])
{
    double N = (double)B * T, C = cfg->dim, att = 2.0 * B * T * T * C;
    for (int s = 0; s < GPT_MAX_SAVES; s++)
        flops_out[s] = 0;
    flops_out[GPT_S_QKV] = 2 * N * C * 3 * C;
    flops_out[GPT_S_ATTN_PROBS] = att;          /* attention's two products, one per output */
    flops_out[GPT_S_ATTN_OUT] = att;
    flops_out[GPT_S_LN2] = 2 * N * C * C;       /* its input: the attention projection */
    flops_out[GPT_S_MLP_UP] = 2 * N * C * 4 * C;
    return 2 * N * C * 12 * C + 2 * att;        /* with the MLP's output projection */
}

int gpt_unit_save_sizes(const gpt_config *cfg, int unit, int B, int T,
                        size_t sizes_out[GPT_MAX_SAVES])
{
    if (GPT_UNIT_BLOCK != gpt_unit_kind_of(cfg, unit))
        return 0;
    return gpt_block_save_sizes(cfg, B, T, sizes_out);
}

/* ---------------------------------------------------------- workspace --- */

/* block forward: one N*C temporary (two without x_out). block backward: y, dy (N*C each), a
 * N*4C gradient buffer (later reused for dqkv), a T*T attention gradient
 * per (batch row, head). head: xhat, y (N*C), mean, rstd (N), logits (N*256). */
static size_t block_ws(const gpt_config *cfg, int B, int T)
{
    size_t N = (size_t)B * T, C = (size_t)cfg->dim;
    return 6 * N * C + (size_t)B * cfg->n_head * T * T;
}

static size_t head_ws(const gpt_config *cfg, int B, int T)
{
    size_t N = (size_t)B * T, C = (size_t)cfg->dim;
    return 2 * N * C + 2 * N + N * GPT_VOCAB;
}

size_t gpt_workspace_floats(const gpt_config *cfg, int B, int T)
{
    size_t a = block_ws(cfg, B, T), b = head_ws(cfg, B, T);
    return a > b ? a : b;
}

size_t gpt_unit_workspace_floats(const gpt_config *cfg, int unit, int B, int T)
{
    switch (gpt_unit_kind_of(cfg, unit)) {
    case GPT_UNIT_EMBED: return 0;
    case GPT_UNIT_HEAD:  return head_ws(cfg, B, T);
    default:             return block_ws(cfg, B, T);
    }
}

double gpt_flops_per_token(const gpt_config *cfg, int T)
{
    double C = cfg->dim, L = cfg->n_layer;
    /* forward: 2 flops per multiply-add; per block 12 C^2 weights and the
     * two T x T attention products; the head 256 C. Backward is twice that. */
    double fwd = L * (2.0 * 12.0 * C * C + 2.0 * 2.0 * T * C) + 2.0 * GPT_VOCAB * C;
    return 3.0 * fwd;
}

/* -------------------------------------------------------------- units --- */

static strata_status_t check_call(const gpt_config *cfg, int B, int T, const gpt_workspace *ws,
                                  size_t need)
{
    if (STRATA_OK != gpt_shape_validate(cfg, B, T, NULL, 0))
        return STRATA_ERR_INVALID;
    if (NULL != ws && (NULL == ws->buf || ws->n < need))
        return STRATA_ERR_INVALID;
    return STRATA_OK;
}

static int saves_complete(const gpt_saves *s)
{
    if (NULL == s)
        return 0;
    for (int i = 0; i < GPT_MAX_SAVES; i++)
        if (NULL == s->p[i])
            return 0;
    return 1;
}

strata_status_t gpt_embed_forward(const gpt_config *cfg, int B, int T,
                                  const float *const params[], const int32_t *tokens,
                                  float *x_out)
{
    if (STRATA_OK != check_call(cfg, B, T, NULL, 0) || NULL == params || NULL == tokens ||
        NULL == x_out)
        return STRATA_ERR_INVALID;
    const int C = cfg->dim;
    const float *wte = params[GPT_P_WTE], *wpe = params[GPT_P_WPE];
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (0 > tokens[i] || GPT_VOCAB <= tokens[i])
            return STRATA_ERR_INVALID;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            const float *e = wte + (size_t)tokens[i] * C, *p = wpe + (size_t)t * C;
            float *x = x_out + i * C;
            for (int c = 0; c < C; c++)
                x[c] = e[c] + p[c];
        }
    return STRATA_OK;
}

strata_status_t gpt_embed_backward(const gpt_config *cfg, int B, int T,
                                   const int32_t *tokens, const float *dx,
                                   float *const dparams[])
{
    if (STRATA_OK != check_call(cfg, B, T, NULL, 0) || NULL == tokens || NULL == dx ||
        NULL == dparams)
        return STRATA_ERR_INVALID;
    const int C = cfg->dim;
    float *dwte = dparams[GPT_P_WTE], *dwpe = dparams[GPT_P_WPE];
    for (size_t i = 0; i < (size_t)B * T; i++)      /* all checked before any write */
        if (0 > tokens[i] || GPT_VOCAB <= tokens[i])
            return STRATA_ERR_INVALID;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            float *e = dwte + (size_t)tokens[i] * C, *p = dwpe + (size_t)t * C;
            const float *g = dx + i * C;
            for (int c = 0; c < C; c++) {
                e[c] += g[c];
                p[c] += g[c];
            }
        }
    return STRATA_OK;
}

/* The units' matrix products: bf16 inputs through gemm_bf16.c when the
 * caller gave bf16 copies of the parameters (ws->params_bf16), else f32. */
static strata_status_t mm_fwd(const gpt_workspace *ws, const float *const P[], int w, int bias,
                              float *y, const float *x, size_t N, int IC, int OC)
{
    const float *b = 0 <= bias ? P[bias] : NULL;
    if (NULL != ws->params_bf16)
        return gpt_matmul_forward_bf16(y, x, ws->params_bf16[w], b, N, IC, OC);
    gpt_matmul_forward(y, x, P[w], b, N, IC, OC);
    return STRATA_OK;
}

static strata_status_t mm_bwd(const gpt_workspace *ws, const float *const P[], int w,
                              float *dx, float *dW, float *db, const float *dy, const float *x,
                              size_t N, int IC, int OC)
{
    if (NULL != ws->params_bf16)
        return gpt_matmul_backward_bf16(dx, dW, db, dy, x, ws->params_bf16[w], N, IC, OC);
    gpt_matmul_backward(dx, dW, db, dy, x, P[w], N, IC, OC, 0);
    return STRATA_OK;
}

#define TRY(x) do { strata_status_t st_ = (x); if (STRATA_OK != st_) return st_; } while (0)
#define BETWEEN(ws) do { if (NULL != (ws)->between) (ws)->between((ws)->between_arg); } while (0)

/* The block's forward ops in order; a recompute runs only those whose
 * output it still needs (block_needs). */
enum { OP_LN1, OP_QKV, OP_ATT, OP_PROJ, OP_LN2, OP_FC, OP_GELU, OP_OUT, OP_COUNT };

/* held NULL: the whole forward (OP_OUT when the output is wanted). Else a
 * recompute, which never makes the output again: an op runs when one of
 * its saved outputs is not held, or when a needed op reads its unsaved
 * output (the layernorms' affine output, x_mid). A layernorm runs whole
 * from its input, so its saves come out bit for bit as before. */
static void block_needs(const unsigned char *held, int want_out, int need[OP_COUNT])
{
#define H(s) (NULL != held && held[GPT_S_##s])
    need[OP_OUT] = NULL == held && want_out;
    need[OP_GELU] = !H(MLP_ACT);
    need[OP_FC] = !H(MLP_UP);
    need[OP_LN2] = !H(LN2) || !H(LN2_MEAN) || !H(LN2_RSTD) || need[OP_FC];
    need[OP_PROJ] = need[OP_LN2] || need[OP_OUT];
    need[OP_ATT] = !H(ATTN_OUT) || !H(ATTN_PROBS);
    need[OP_QKV] = !H(QKV);
    need[OP_LN1] = !H(LN1) || !H(LN1_MEAN) || !H(LN1_RSTD) || need[OP_QKV];
#undef H
}

static void count_op(gpt_recompute_count *n, double flops)
{
    if (NULL == n)
        return;
    n->products++;
    n->flops += flops;
}

static strata_status_t block_run(const gpt_config *cfg, int B, int T, const float *const P[],
                                 const float *x_in, float *x_out, const gpt_saves *saves,
                                 const int need[OP_COUNT], const gpt_workspace *ws,
                                 gpt_recompute_count *n)
{
    const int C = cfg->dim, H = cfg->n_head;
    const size_t N = (size_t)B * T;
    float *const *S = saves->p;
    float *a = ws->buf;                                  /* N*C */
    if (NULL == x_out)          /* recompute: x_mid lives in the workspace */
        x_out = a + N * C;

    /* x_mid = x_in + proj(attention(ln1(x_in))), kept in x_out */
    if (need[OP_LN1])
        gpt_layernorm_forward(a, S[GPT_S_LN1], S[GPT_S_LN1_MEAN], S[GPT_S_LN1_RSTD], x_in,
                              P[GPT_P_LN1_W], P[GPT_P_LN1_B], N, C);
    if (need[OP_QKV]) {
        TRY(mm_fwd(ws, P, GPT_P_QKV_W, GPT_P_QKV_B, S[GPT_S_QKV], a, N, C, 3 * C));
        count_op(n, 2.0 * N * C * 3 * C);
        BETWEEN(ws);
    }
    if (need[OP_ATT]) {
        gpt_attention_forward(S[GPT_S_ATTN_OUT], S[GPT_S_ATTN_PROBS], S[GPT_S_QKV], B, T, C, H);
        count_op(n, 4.0 * B * T * T * C);               /* Q K^T and P V, counted over T x T */
        BETWEEN(ws);
    }
    if (need[OP_PROJ]) {
        TRY(mm_fwd(ws, P, GPT_P_ATTN_PROJ_W, GPT_P_ATTN_PROJ_B, a, S[GPT_S_ATTN_OUT], N, C, C));
        count_op(n, 2.0 * N * C * C);
        gpt_add(x_out, x_in, a, N * C);
        BETWEEN(ws);
    }

    /* x_out = x_mid + fc_proj(gelu(fc(ln2(x_mid)))) */
    if (need[OP_LN2])
        gpt_layernorm_forward(a, S[GPT_S_LN2], S[GPT_S_LN2_MEAN], S[GPT_S_LN2_RSTD], x_out,
                              P[GPT_P_LN2_W], P[GPT_P_LN2_B], N, C);
    if (need[OP_FC]) {
        TRY(mm_fwd(ws, P, GPT_P_FC_W, GPT_P_FC_B, S[GPT_S_MLP_UP], a, N, C, 4 * C));
        count_op(n, 2.0 * N * C * 4 * C);
        BETWEEN(ws);
    }
    if (need[OP_GELU])
        gpt_gelu_forward(S[GPT_S_MLP_ACT], S[GPT_S_MLP_UP], N * 4 * C);
    if (need[OP_OUT]) {
        TRY(mm_fwd(ws, P, GPT_P_FC_PROJ_W, GPT_P_FC_PROJ_B, a, S[GPT_S_MLP_ACT], N, 4 * C, C));
        count_op(n, 2.0 * N * 4 * C * C);
        gpt_residual_add(x_out, a, N * C);
    }
    return STRATA_OK;
}

/* held NULL: the forward; else the recompute of gpt_block_recompute */
static strata_status_t block_entry(const gpt_config *cfg, int B, int T, const float *const params[],
                                   const float *x_in, float *x_out, const gpt_saves *saves,
                                   const unsigned char *held, const gpt_workspace *ws,
                                   gpt_recompute_count *count)
{
    int need[OP_COUNT];
    if (STRATA_OK != check_call(cfg, B, T, ws, block_ws(cfg, B, T)) || NULL == ws ||
        NULL == params || NULL == x_in || x_in == x_out || !saves_complete(saves))
        return STRATA_ERR_INVALID;
    block_needs(held, NULL != x_out, need);
    return block_run(cfg, B, T, params, x_in, x_out, saves, need, ws, count);
}

strata_status_t gpt_block_forward(const gpt_config *cfg, int B, int T,
                                  const float *const params[], const float *x_in,
                                  float *x_out, const gpt_saves *saves,
                                  const gpt_workspace *ws)
{
    return block_entry(cfg, B, T, params, x_in, x_out, saves, NULL, ws, NULL);
}

strata_status_t gpt_block_recompute(const gpt_config *cfg, int B, int T,
                                    const float *const params[], const float *x_in,
                                    const gpt_saves *saves, const unsigned char held[GPT_MAX_SAVES],
                                    const gpt_workspace *ws, gpt_recompute_count *count)
{
    if (NULL == held)
        return STRATA_ERR_INVALID;
    return block_entry(cfg, B, T, params, x_in, NULL, saves, held, ws, count);
}

strata_status_t gpt_block_backward(const gpt_config *cfg, int B, int T,
                                   const float *const params[], const gpt_saves *saves,
                                   const float *dx_out, float *dx_in,
                                   float *const dparams[], const gpt_workspace *ws)
{
    if (STRATA_OK != check_call(cfg, B, T, ws, block_ws(cfg, B, T)) || NULL == ws ||
        NULL == params || NULL == dx_out || NULL == dx_in || dx_out == dx_in ||
        NULL == dparams || !saves_complete(saves))
        return STRATA_ERR_INVALID;
    const int C = cfg->dim, H = cfg->n_head;
    const size_t N = (size_t)B * T;
    const float *const *P = params;
    float *const *S = saves->p;
    float *const *D = dparams;
    float *y = ws->buf, *dy = y + N * C, *big = dy + N * C, *dP = big + N * 4 * C;

    /* MLP: dx_out -> d(mlp_act) -> d(mlp_up) -> d(ln2 output) */
    TRY(mm_bwd(ws, P, GPT_P_FC_PROJ_W, big, D[GPT_P_FC_PROJ_W], D[GPT_P_FC_PROJ_B], dx_out,
               S[GPT_S_MLP_ACT], N, 4 * C, C));
    BETWEEN(ws);
    gpt_gelu_backward(big, S[GPT_S_MLP_UP], big, N * 4 * C);
    gpt_layernorm_affine(y, S[GPT_S_LN2], P[GPT_P_LN2_W], P[GPT_P_LN2_B], N, C);
    TRY(mm_bwd(ws, P, GPT_P_FC_W, dy, D[GPT_P_FC_W], D[GPT_P_FC_B], big, y, N, C, 4 * C));
    BETWEEN(ws);
    /* the residual carries dx_out straight to x_mid; ln2 adds its part */
    gpt_copy(dx_in, dx_out, N * C);
    gpt_layernorm_backward(dx_in, D[GPT_P_LN2_W], D[GPT_P_LN2_B], dy, S[GPT_S_LN2],
                           P[GPT_P_LN2_W], S[GPT_S_LN2_RSTD], N, C);

    /* attention: d(x_mid) -> d(attn_out) -> d(qkv) -> d(ln1 output) */
    TRY(mm_bwd(ws, P, GPT_P_ATTN_PROJ_W, dy, D[GPT_P_ATTN_PROJ_W], D[GPT_P_ATTN_PROJ_B], dx_in,
               S[GPT_S_ATTN_OUT], N, C, C));
    BETWEEN(ws);
    gpt_attention_backward(big, dP, dy, S[GPT_S_QKV], S[GPT_S_ATTN_PROBS], B, T, C, H);
    BETWEEN(ws);
    gpt_layernorm_affine(y, S[GPT_S_LN1], P[GPT_P_LN1_W], P[GPT_P_LN1_B], N, C);
    TRY(mm_bwd(ws, P, GPT_P_QKV_W, dy, D[GPT_P_QKV_W], D[GPT_P_QKV_B], big, y, N, C, 3 * C));
    gpt_layernorm_backward(dx_in, D[GPT_P_LN1_W], D[GPT_P_LN1_B], dy, S[GPT_S_LN1],
                           P[GPT_P_LN1_W], S[GPT_S_LN1_RSTD], N, C);
    return STRATA_OK;
}

strata_status_t gpt_head_forward(const gpt_config *cfg, int B, int T,
                                 const float *const params[], const float *x_in,
                                 const int32_t *targets, float grad_scale,
                                 double *loss_sum_p, float *dx_in,
                                 float *const dparams[], float *logits,
                                 const gpt_workspace *ws)
{
    if (STRATA_OK != check_call(cfg, B, T, ws, head_ws(cfg, B, T)) || NULL == ws ||
        NULL == params || NULL == x_in || (NULL != dx_in && (NULL == dparams || NULL == targets)))
        return STRATA_ERR_INVALID;
    const int C = cfg->dim;
    const size_t N = (size_t)B * T;
    for (size_t i = 0; NULL != targets && i < N; i++)
        if (GPT_VOCAB <= targets[i])
            return STRATA_ERR_INVALID;
    float *xhat = ws->buf, *y = xhat + N * C, *mean = y + N * C, *rstd = mean + N;
    float *lg = rstd + N;
    float *out = NULL != logits ? logits : lg;

    gpt_layernorm_forward(y, xhat, mean, rstd, x_in, params[GPT_P_LNF_W], params[GPT_P_LNF_B],
                          N, C);
    TRY(mm_fwd(ws, params, GPT_P_LM_W, -1, out, y, N, C, GPT_VOCAB));
    if (NULL == targets)
        return STRATA_OK;
    /* the loss gradient goes to lg: in place over the logits unless the
     * caller keeps them */
    double loss = gpt_crossentropy(NULL != dx_in ? lg : NULL, out, targets, grad_scale,
                                   N, GPT_VOCAB);
    if (NULL != loss_sum_p)
        *loss_sum_p = loss;
    if (NULL == dx_in)
        return STRATA_OK;
    /* d(lm_w) += dlogits^T y, then y's buffer takes d(y) = dlogits lm_w */
    TRY(mm_bwd(ws, params, GPT_P_LM_W, NULL, dparams[GPT_P_LM_W], NULL, lg, y, N, C, GPT_VOCAB));
    TRY(mm_bwd(ws, params, GPT_P_LM_W, y, NULL, NULL, lg, y, N, C, GPT_VOCAB));
    memset(dx_in, 0, sizeof(float) * N * C);
    gpt_layernorm_backward(dx_in, dparams[GPT_P_LNF_W], dparams[GPT_P_LNF_B], y, xhat,
                           params[GPT_P_LNF_W], rstd, N, C);
    return STRATA_OK;
}
