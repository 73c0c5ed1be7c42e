/* gpt_ref.t - the whole GPT model run unit by unit through examples/gpt
 * equals a plain, loop-only reference written here: loss and every
 * parameter gradient within 1e-4. The reference is double precision, no
 * BLAS, and gets its gradients by central differences of its own forward
 * (so it shares no backward code, and no forward code, with the model).
 * Then: gradients accumulate across calls, parameter init is slice-exact,
 * and bad configurations and calls are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "examples/gpt/gpt.h"
#include "tap.h"

static const gpt_config cfg = { .n_layer = 2, .dim = 8, .n_head = 2, .max_seq = 7 };
enum { B = 2, T = 6, NU = 4 };              /* units: embed, 2 blocks, head */

static int np[NU];
static gpt_param_info info[NU][GPT_MAX_PARAMS];
static double *rp[NU][GPT_MAX_PARAMS];      /* reference parameters */
static int32_t tok[B * T], tg[B * T];

/* -------------------------------------------------------- reference --- */

static void ref_ln(double *y, const double *x, const double *w, const double *b, int C)
{
    double m = 0.0, v = 0.0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    for (int c = 0; c < C; c++) y[c] = (x[c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
}

/* y[o] = sum_i W[o][i] x[i] + b[o] */
static void ref_linear(double *y, const double *x, const double *W, const double *b, int IC, int OC)
{
    for (int o = 0; o < OC; o++) {
        double s = NULL != b ? b[o] : 0.0;
        for (int i = 0; i < IC; i++) s += W[o * IC + i] * x[i];
        y[o] = s;
    }
}

static double ref_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* The mean cross-entropy over positions with a target. */
static double ref_loss(void)
{
    enum { C = 8, H = 2, HD = 4, V = GPT_VOCAB };
    static double x[B][T][C], h[B][T][C], qkv[B][T][3 * C], att[B][T][C], tmp[C], up[4 * C];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                x[b][t][c] = rp[0][GPT_P_WTE][tok[b * T + t] * C + c] + rp[0][GPT_P_WPE][t * C + c];
    for (int l = 0; l < cfg.n_layer; l++) {
        double **P = rp[l + 1];
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                ref_ln(h[b][t], x[b][t], P[GPT_P_LN1_W], P[GPT_P_LN1_B], C);
                ref_linear(qkv[b][t], h[b][t], P[GPT_P_QKV_W], P[GPT_P_QKV_B], C, 3 * C);
            }
        for (int b = 0; b < B; b++)
            for (int hh = 0; hh < H; hh++)
                for (int i = 0; i < T; i++) {
                    double s[T], mx = -INFINITY, z = 0.0;
                    for (int j = 0; j <= i; j++) {
                        s[j] = 0.0;
                        for (int d = 0; d < HD; d++)
                            s[j] += qkv[b][i][hh * HD + d] * qkv[b][j][C + hh * HD + d];
                        s[j] /= sqrt((double)HD);
                        mx = s[j] > mx ? s[j] : mx;
                    }
                    for (int j = 0; j <= i; j++) z += exp(s[j] - mx);
                    for (int d = 0; d < HD; d++) {
                        double o = 0.0;
                        for (int j = 0; j <= i; j++)
                            o += exp(s[j] - mx) / z * qkv[b][j][2 * C + hh * HD + d];
                        att[b][i][hh * HD + d] = o;
                    }
                }
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                ref_linear(tmp, att[b][t], P[GPT_P_ATTN_PROJ_W], P[GPT_P_ATTN_PROJ_B], C, C);
                for (int c = 0; c < C; c++) x[b][t][c] += tmp[c];
                ref_ln(h[b][t], x[b][t], P[GPT_P_LN2_W], P[GPT_P_LN2_B], C);
                ref_linear(up, h[b][t], P[GPT_P_FC_W], P[GPT_P_FC_B], C, 4 * C);
                for (int k = 0; k < 4 * C; k++) up[k] = ref_gelu(up[k]);
                ref_linear(tmp, up, P[GPT_P_FC_PROJ_W], P[GPT_P_FC_PROJ_B], 4 * C, C);
                for (int c = 0; c < C; c++) x[b][t][c] += tmp[c];
            }
    }
    double **P = rp[NU - 1], loss = 0.0;
    int count = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int target = tg[b * T + t];
            if (0 > target)
                continue;
            double lg[V], mx = -INFINITY, z = 0.0;
            ref_ln(h[b][t], x[b][t], P[GPT_P_LNF_W], P[GPT_P_LNF_B], C);
            ref_linear(lg, h[b][t], P[GPT_P_LM_W], NULL, C, V);
            for (int v = 0; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
            for (int v = 0; v < V; v++) z += exp(lg[v] - mx);
            loss += log(z) + mx - lg[target];
            count++;
        }
    return loss / count;
}

/* ------------------------------------------------------------ model --- */

static float *fp[NU][GPT_MAX_PARAMS], *fg[NU][GPT_MAX_PARAMS];

/* Forward and backward through the units; returns the mean loss. */
static double model_run(gpt_saves saves[], float *x[], float *d0, float *d1, gpt_workspace *ws)
{
    int count = 0;
    for (int i = 0; i < B * T; i++) count += 0 <= tg[i];
    const float *const *P[NU];
    for (int u = 0; u < NU; u++) P[u] = (const float *const *)fp[u];
    double sum = 0.0;
    int st = gpt_embed_forward(&cfg, B, T, P[0], tok, x[0]);
    for (int l = 0; l < cfg.n_layer; l++)
        st |= gpt_block_forward(&cfg, B, T, P[l + 1], x[l], x[l + 1], &saves[l], ws);
    st |= gpt_head_forward(&cfg, B, T, P[NU - 1], x[cfg.n_layer], tg, 1.0f / count, &sum,
                           d0, fg[NU - 1], NULL, ws);
    for (int l = cfg.n_layer - 1; l >= 0; l--) {
        st |= gpt_block_backward(&cfg, B, T, P[l + 1], &saves[l], d0, d1, fg[l + 1], ws);
        float *t = d0; d0 = d1; d1 = t;
    }
    st |= gpt_embed_backward(&cfg, B, T, tok, d0, fg[0]);
    return 0 == st ? sum / count : NAN;
}

static void test_against_reference(void)
{
    /* parameters: O(0.3) so attention and GELU are well off their linear
     * regimes; LN weights around 1 */
    uint64_t seed = 42;
    for (int u = 0; u < NU; u++)
        for (int i = 0; i < np[u]; i++) {
            size_t n = info[u][i].numel;
            gpt_param_info p = info[u][i];
            p.init = GPT_INIT_NORMAL;
            p.std = 0.3f;
            fp[u][i] = malloc(sizeof(float) * n);
            fg[u][i] = calloc(n, sizeof(float));
            rp[u][i] = malloc(sizeof(double) * n);
            gpt_param_init(&p, seed, u, i, 0, n, fp[u][i]);
            for (size_t k = 0; k < n; k++) {
                if (GPT_INIT_ONES == info[u][i].init)
                    fp[u][i][k] += 1.0f;
                rp[u][i][k] = fp[u][i][k];
            }
        }

    size_t sz[GPT_MAX_SAVES], NC = (size_t)B * T * cfg.dim;
    gpt_saves saves[2];
    gpt_block_save_sizes(&cfg, B, T, sz);
    for (int l = 0; l < 2; l++)
        for (int s = 0; s < GPT_MAX_SAVES; s++) saves[l].p[s] = calloc(sz[s], sizeof(float));
    float *x[3], *d0 = calloc(NC, sizeof(float)), *d1 = calloc(NC, sizeof(float));
    for (int l = 0; l < 3; l++) x[l] = calloc(NC, sizeof(float));
    gpt_workspace ws = { .n = gpt_workspace_floats(&cfg, B, T) };
    ws.buf = calloc(ws.n, sizeof(float));

    double loss = model_run(saves, x, d0, d1, &ws);
    double rloss = ref_loss();
    is_double(loss, rloss, 1e-4, "loss %.6f equals the loop reference's %.6f", loss, rloss);

    /* every gradient, tensor by tensor, against central differences of the
     * double reference (h = 1e-5: error ~1e-10) */
    const double h = 1e-5;
    for (int u = 0; u < NU; u++)
        for (int i = 0; i < np[u]; i++) {
            double maxdiff = 0.0, maxref = 0.0;
            for (size_t k = 0; k < info[u][i].numel; k++) {
                double keep = rp[u][i][k];
                rp[u][i][k] = keep + h;
                double lp = ref_loss();
                rp[u][i][k] = keep - h;
                double lm = ref_loss();
                rp[u][i][k] = keep;
                double g = (lp - lm) / (2 * h);
                double dd = fabs(g - fg[u][i][k]);
                maxdiff = dd > maxdiff ? dd : maxdiff;
                maxref = fabs(g) > maxref ? fabs(g) : maxref;
            }
            char name[32];
            gpt_unit_name(&cfg, u, name, sizeof(name));
            ok(maxdiff < 1e-4 && maxref > 1e-4, "%s.%s gradient: max |diff| %.2e < 1e-4 "
               "(largest reference entry %.2e)", name, info[u][i].name, maxdiff, maxref);
        }

    /* a second call without zeroing accumulates: every gradient doubles */
    float *g1 = malloc(sizeof(float) * info[1][GPT_P_FC_W].numel);
    memcpy(g1, fg[1][GPT_P_FC_W], sizeof(float) * info[1][GPT_P_FC_W].numel);
    float wte0 = fg[0][GPT_P_WTE][tok[0] * cfg.dim];
    model_run(saves, x, d0, d1, &ws);
    double worst = 0.0;
    for (size_t k = 0; k < info[1][GPT_P_FC_W].numel; k++)
        worst = fmax(worst, fabs(fg[1][GPT_P_FC_W][k] - 2.0f * g1[k]));
    ok(worst < 1e-6 && fabsf(fg[0][GPT_P_WTE][tok[0] * cfg.dim] - 2 * wte0) < 1e-6,
       "gradients accumulate across calls (max deviation from 2x: %.1e)", worst);
    free(g1);

    /* recompute: a forward without x_out rebuilds the same saves */
    {
        gpt_saves again;
        int same = 1;
        for (int k = 0; k < GPT_MAX_SAVES; k++) again.p[k] = calloc(sz[k], sizeof(float));
        gpt_block_forward(&cfg, B, T, (const float *const *)fp[2], x[1], NULL, &again, &ws);
        for (int k = 0; k < GPT_MAX_SAVES; k++) {
            same &= 0 == memcmp(again.p[k], saves[1].p[k], sizeof(float) * sz[k]);
            free(again.p[k]);
        }
        ok(same, "a forward with x_out NULL recomputes identical saves");
    }

    /* recompute at name granularity: held saves are read, not made again,
     * and the rest come out bit for bit as the forward made them */
    {
        static const struct { const char *what; unsigned mask; long products; } cases[] = {
            { "nothing held: qkv, attention, projection, fc", 0, 4 },
            { "qkv held: no q/k/v projection", 1u << GPT_S_QKV, 3 },
            { "ln1, qkv and attention held: projection and fc", 0x3fu, 2 },
            { "mlp_up, mlp_act held: ln2 still needs the projection",
              (1u << GPT_S_MLP_UP) | (1u << GPT_S_MLP_ACT), 3 },
            { "all but mlp_act held: only the GELU", 0x7ffu & ~(1u << GPT_S_MLP_ACT), 0 },
        };
        gpt_saves again;
        for (int k = 0; k < GPT_MAX_SAVES; k++) again.p[k] = malloc(sizeof(float) * sz[k]);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            unsigned char held[GPT_MAX_SAVES];
            gpt_recompute_count n = { 0, 0 };
            int same = 1;
            for (int k = 0; k < GPT_MAX_SAVES; k++) {
                held[k] = (unsigned char)(cases[c].mask >> k & 1);
                if (held[k]) memcpy(again.p[k], saves[1].p[k], sizeof(float) * sz[k]);
                else memset(again.p[k], 0xff, sizeof(float) * sz[k]);   /* NaNs */
            }
            strata_status_t st = gpt_block_recompute(&cfg, B, T, (const float *const *)fp[2], x[1],
                                                     &again, held, &ws, &n);
            for (int k = 0; k < GPT_MAX_SAVES; k++)
                same &= 0 == memcmp(again.p[k], saves[1].p[k], sizeof(float) * sz[k]);
            ok(STRATA_OK == st && same && n.products == cases[c].products,
               "recompute, %s: identical saves, %ld products", cases[c].what, n.products);
        }
        is_int(gpt_block_recompute(&cfg, B, T, (const float *const *)fp[2], x[1], &again, NULL, &ws,
                                   NULL), STRATA_ERR_INVALID, "recompute refuses a NULL held list");
        for (int k = 0; k < GPT_MAX_SAVES; k++) free(again.p[k]);
    }

    /* too small a workspace, a missing save, aliasing, a bad token */
    gpt_workspace small = { ws.buf, gpt_unit_workspace_floats(&cfg, 1, B, T) - 1 };
    const float *const *P1 = (const float *const *)fp[1];
    is_int(gpt_block_forward(&cfg, B, T, P1, x[0], x[1], &saves[0], &small), STRATA_ERR_INVALID,
           "block forward refuses a workspace one float short");
    gpt_saves holed = saves[0];
    holed.p[GPT_S_ATTN_PROBS] = NULL;
    is_int(gpt_block_forward(&cfg, B, T, P1, x[0], x[1], &holed, &ws), STRATA_ERR_INVALID,
           "block forward refuses saves with a missing buffer");
    is_int(gpt_block_backward(&cfg, B, T, P1, &saves[0], d0, d0, fg[1], &ws), STRATA_ERR_INVALID,
           "block backward refuses dx_in aliasing dx_out");
    is_int(gpt_block_forward(&cfg, B, cfg.max_seq + 1, P1, x[0], x[1], &saves[0], &ws),
           STRATA_ERR_INVALID, "block forward refuses T beyond max_seq");
    int32_t keep = tok[3];
    tok[3] = 256;
    is_int(gpt_embed_forward(&cfg, B, T, (const float *const *)fp[0], tok, x[0]),
           STRATA_ERR_INVALID, "embed refuses token 256");
    tok[3] = keep;

    for (int l = 0; l < 2; l++)
        for (int s = 0; s < GPT_MAX_SAVES; s++) free(saves[l].p[s]);
    for (int l = 0; l < 3; l++) free(x[l]);
    free(d0); free(d1); free(ws.buf);
}

/* ------------------------------------------------ geometry and init --- */

static void test_params(void)
{
    is_int(gpt_num_units(&cfg), 4, "units: embed + 2 blocks + head");
    static const char *const names[GPT_MAX_PARAMS] = {
        "ln1_w", "ln1_b", "qkv_w", "qkv_b", "attn_proj_w", "attn_proj_b",
        "ln2_w", "ln2_b", "fc_w", "fc_b", "fc_proj_w", "fc_proj_b" };
    int same = 12 == np[1];
    for (int i = 0; same && i < 12; i++) same = 0 == strcmp(names[i], info[1][i].name);
    ok(same, "block tensors are named and ordered as the runtime expects");
    size_t C = cfg.dim, expect = 256 * C + cfg.max_seq * C +
        cfg.n_layer * (12 * C * C + 13 * C) + 2 * C + 256 * C;
    is_int((long long)gpt_num_params(&cfg), (long long)expect, "parameter count");

    /* initialising a slice gives the same values as the whole tensor */
    gpt_param_info *qw = &info[1][GPT_P_QKV_W];
    float *all = malloc(sizeof(float) * qw->numel), part[37];
    gpt_param_init(qw, 7, 1, GPT_P_QKV_W, 0, qw->numel, all);
    gpt_param_init(qw, 7, 1, GPT_P_QKV_W, 11, 37, part);
    ok(0 == memcmp(all + 11, part, sizeof(part)), "init of a slice [11, 48) equals the whole's");
    double s = 0.0, s2 = 0.0;
    for (size_t k = 0; k < qw->numel; k++) { s += all[k]; s2 += (double)all[k] * all[k]; }
    double sd = sqrt(s2 / qw->numel - (s / qw->numel) * (s / qw->numel));
    ok(fabs(sd - 0.02) < 0.003, "qkv_w init std %.4f is near 0.02", sd);
    gpt_param_init(qw, 8, 1, GPT_P_QKV_W, 11, 37, part);
    ok(0 != memcmp(all + 11, part, sizeof(part)), "another seed gives other values");
    is_double(info[1][GPT_P_FC_PROJ_W].std, 0.02 / sqrt(2.0 * cfg.n_layer), 1e-7,
              "residual projection std is 0.02/sqrt(2L)");
    free(all);
    size_t sz[GPT_MAX_SAVES];
    gpt_block_save_sizes(&cfg, B, T, sz);
    ok(sz[GPT_S_ATTN_PROBS] == (size_t)B * cfg.n_head * T * T &&
       sz[GPT_S_MLP_ACT] == (size_t)B * T * 4 * cfg.dim &&
       0 == strcmp(gpt_save_name(GPT_S_QKV), "qkv") && NULL == gpt_save_name(GPT_MAX_SAVES),
       "save sizes and names");
    is_int(gpt_unit_save_sizes(&cfg, 0, B, T, sz) + gpt_unit_save_sizes(&cfg, 3, B, T, sz), 0,
           "embed and head save nothing");
}

static void test_validate(void)
{
    char why[256];
    struct { gpt_config c; int b, t; const char *what; } bad[] = {
        { { 2, 10, 4, 8 }, 1, 8, "dim 10 not divisible by 4 heads" },
        { { 2, 8, 2, 0 }, 1, 1, "seq 0" },
        { { 0, 8, 2, 8 }, 1, 8, "0 layers" },
        { { 2, 8, 0, 8 }, 1, 8, "0 heads" },
        { { 2, 8, 2, 8 }, 0, 8, "batch 0" },
        { { 2, 8, 2, 8 }, 1, 0, "T 0" },
        { { 2, 8, 2, 8 }, 1, 9, "T beyond seq" },
        { { 2, 8, 2, 8 }, 1 << 30, 8, "batch too large for the BLAS" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = 0;
        strata_status_t st = gpt_shape_validate(&bad[i].c, bad[i].b, bad[i].t, why, sizeof(why));
        ok(STRATA_OK != st && 0 != why[0], "refused: %s (%s)", bad[i].what, why);
    }
    gpt_config c = { 2, 10, 4, 8 };
    gpt_config_validate(&c, why, sizeof(why));
    ok(NULL != strstr(why, "divisible"), "the message says why: %s", why);
    is_int(gpt_config_validate(&cfg, why, sizeof(why)), STRATA_OK, "the test's config is valid");
    is_int(gpt_config_validate(NULL, NULL, 0), STRATA_ERR_INVALID, "NULL config refused");
}

/* OpenBLAS's own query, where the BLAS is OpenBLAS */
int openblas_get_num_threads(void) __attribute__((weak));

static void test_threads(void)
{
    int cores = gpt_affinity_cores();
    ok(1 <= cores && cores == gpt_threads_init(0),
       "threads default to the %d core(s) this process may run on", cores);
    int n = gpt_threads_init(2);
#ifdef _OPENMP
    /* one team of 2 for every kernel; the BLAS on one thread per call */
    const int blas = 1;
    is_int(omp_get_max_threads(), 2, "the OpenMP team has 2 threads");
#else
    const int blas = 2;
    skip(1, "built without OpenMP: no team, the BLAS gets the threads");
#endif
    if (NULL != openblas_get_num_threads)
        ok(2 == n && blas == openblas_get_num_threads(), "OpenBLAS now runs %d thread(s)",
           openblas_get_num_threads());
    else
        ok(2 == n && NULL != getenv("OPENBLAS_NUM_THREADS"), "OPENBLAS_NUM_THREADS set");
    gpt_threads_init(1);
}

int main(void)
{
    for (int u = 0; u < NU; u++) np[u] = gpt_unit_params(&cfg, u, info[u]);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 37 + 11) % 256;
        tg[i] = 0 == i % 5 ? -1 : (i * 53 + 3) % 256;    /* some positions masked */
    }
    tok[4] = tok[1];                                        /* a repeated token */
    int ngrads = 0;
    for (int u = 0; u < NU; u++) ngrads += np[u];
    plan(1 + ngrads + 1 + 1 + 5 + 9 + 11 + 3 + 6);
    test_against_reference();
    test_params();
    test_validate();
    test_threads();
    return done_testing();
}
