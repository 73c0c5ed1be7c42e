/* gpt_grad.t - finite-difference gradient checks of every GPT kernel and of
 * whole block, embedding and head units on tiny shapes.
 *
 * Each check defines a scalar loss = sum(output * R) for a fixed random R
 * (or the cross-entropy itself), perturbs every input element by +-eps in
 * float, and compares the central difference with the analytic gradient by
 * the relative error of the whole vector: ||fd - an|| / max(||fd||, ||an||).
 * Inputs are O(1) so every nonlinearity is exercised, not just its linear
 * part near zero. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/gpt/gpt.h"
#include "tap.h"

#define EPS 1e-2f       /* float central differences: truncation ~eps^2 */
#define TOL 1e-3        /* relative error of the gradient vector (seen: ~1e-5) */

static uint64_t rng = 88172645463325252ULL;

static double urand(void)      /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-52 - 1.0;
}

static float *rnd(size_t n, double scale, double shift)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(shift + scale * urand());
    return p;
}

static float *zeros(size_t n)
{
    return calloc(n ? n : 1, sizeof(float));
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* The relative error between the analytic gradient an[0..n) of loss() with
 * respect to x[0..n) and central differences. */
static double fd_rel(double (*loss)(void *), void *ctx, float *x, const float *an, size_t n)
{
    double num = 0.0, na = 0.0, nf = 0.0;
    for (size_t i = 0; i < n; i++) {
        float keep = x[i];
        x[i] = keep + EPS;
        double lp = loss(ctx);
        x[i] = keep - EPS;
        double lm = loss(ctx);
        x[i] = keep;
        double fd = (lp - lm) / (2.0 * EPS);
        num += (fd - an[i]) * (fd - an[i]);
        na += (double)an[i] * an[i];
        nf += fd * fd;
    }
    double den = sqrt(na > nf ? na : nf);
    return 0.0 < den ? sqrt(num) / den : (0.0 == num ? 0.0 : INFINITY);
}

static int check(double rel, const char *what)
{
    return ok(rel < TOL && isfinite(rel), "%s: relative gradient error %.2e < %.0e", what, rel, TOL);
}

/* ---------------------------------------------------------- LayerNorm --- */

typedef struct { size_t N; int C; float *x, *w, *b, *y, *xhat, *mean, *rstd, *R; } ln_ctx;

static double ln_loss(void *p)
{
    ln_ctx *c = p;
    gpt_layernorm_forward(c->y, c->xhat, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C);
    return dot(c->y, c->R, c->N * c->C);
}

static void test_layernorm(void)
{
    ln_ctx c = { .N = 5, .C = 7 };
    size_t n = c.N * c.C;
    c.x = rnd(n, 2.0, 0.5); c.w = rnd(c.C, 0.5, 1.0); c.b = rnd(c.C, 0.5, 0.0);
    c.y = zeros(n); c.xhat = zeros(n); c.mean = zeros(c.N); c.rstd = zeros(c.N); c.R = rnd(n, 1.0, 0.0);
    float *dx = zeros(n), *dw = zeros(c.C), *db = zeros(c.C);
    ln_loss(&c);
    gpt_layernorm_backward(dx, dw, db, c.R, c.xhat, c.w, c.rstd, c.N, c.C);
    check(fd_rel(ln_loss, &c, c.x, dx, n), "layernorm dx");
    check(fd_rel(ln_loss, &c, c.w, dw, c.C), "layernorm dw");
    check(fd_rel(ln_loss, &c, c.b, db, c.C), "layernorm db");
    free(c.x); free(c.w); free(c.b); free(c.y); free(c.xhat); free(c.mean); free(c.rstd); free(c.R);
    free(dx); free(dw); free(db);
}

/* ------------------------------------------------------------- matmul --- */

typedef struct { size_t N; int IC, OC; float *x, *W, *b, *y, *R; } mm_ctx;

static double mm_loss(void *p)
{
    mm_ctx *c = p;
    gpt_matmul_forward(c->y, c->x, c->W, c->b, c->N, c->IC, c->OC);
    return dot(c->y, c->R, c->N * c->OC);
}

static void test_matmul(void)
{
    mm_ctx c = { .N = 6, .IC = 5, .OC = 3 };
    c.x = rnd(c.N * c.IC, 1.0, 0.0); c.W = rnd((size_t)c.OC * c.IC, 1.0, 0.0);
    c.b = rnd(c.OC, 1.0, 0.0); c.y = zeros(c.N * c.OC); c.R = rnd(c.N * c.OC, 1.0, 0.0);
    float *dx = rnd(c.N * c.IC, 1.0, 0.0), *dW = zeros((size_t)c.OC * c.IC), *db = zeros(c.OC);
    gpt_matmul_backward(dx, dW, db, c.R, c.x, c.W, c.N, c.IC, c.OC, 0);   /* overwrites dx */
    check(fd_rel(mm_loss, &c, c.x, dx, c.N * c.IC), "matmul dx");
    check(fd_rel(mm_loss, &c, c.W, dW, (size_t)c.OC * c.IC), "matmul dW");
    check(fd_rel(mm_loss, &c, c.b, db, c.OC), "matmul db");
    free(c.x); free(c.W); free(c.b); free(c.y); free(c.R); free(dx); free(dW); free(db);
}

/* ---------------------------------------------------------- attention --- */

typedef struct { int B, T, C, H; float *qkv, *out, *probs, *R; } at_ctx;

static double at_loss(void *p)
{
    at_ctx *c = p;
    gpt_attention_forward(c->out, c->probs, c->qkv, c->B, c->T, c->C, c->H);
    return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

/* T within one block of the kernels' query rows, and T over three (the
 * last partial: 48 + 48 + 4), whose blocks skip the causal upper part. */
static void test_attention(int B, int T, int C, int H)
{
    at_ctx c = { .B = B, .T = T, .C = C, .H = H };
    size_t nq = (size_t)c.B * c.T * 3 * c.C, no = (size_t)c.B * c.T * c.C;
    size_t np = (size_t)c.B * c.H * c.T * c.T;
    c.qkv = rnd(nq, 1.5, 0.0); c.out = zeros(no); c.probs = zeros(np); c.R = rnd(no, 1.0, 0.0);
    float *dqkv = zeros(nq), *scratch = zeros((size_t)c.B * c.H * c.T * c.T);
    /* the backward must not read the scratch it did not write (a NaN would
     * reach dqkv) */
    for (size_t i = 0; i < np; i++)
        scratch[i] = NAN;
    at_loss(&c);
    /* the probabilities are causal rows that sum to one */
    int good = 1;
    for (size_t r = 0; r < np / c.T; r++) {
        int i = (int)(r % c.T);
        double s = 0.0;
        for (int j = 0; j < c.T; j++) {
            float pj = c.probs[r * c.T + j];
            s += pj;
            if ((j > i && 0.0f != pj) || 0.0f > pj)
                good = 0;
        }
        if (fabs(s - 1.0) > 1e-5)
            good = 0;
    }
    ok(good, "attention T %d: probabilities are causal and each row sums to 1", T);
    gpt_attention_backward(dqkv, scratch, c.R, c.qkv, c.probs, c.B, c.T, c.C, c.H);
    char name[64];
    snprintf(name, sizeof(name), "attention T %d dqkv", T);
    check(fd_rel(at_loss, &c, c.qkv, dqkv, nq), name);
    free(c.qkv); free(c.out); free(c.probs); free(c.R); free(dqkv); free(scratch);
}

/* --------------------------------------------------------------- GELU --- */

typedef struct { size_t n; float *x, *y, *R; } ge_ctx;

static double ge_loss(void *p)
{
    ge_ctx *c = p;
    gpt_gelu_forward(c->y, c->x, c->n);
    return dot(c->y, c->R, c->n);
}

static void test_gelu(void)
{
    ge_ctx c = { .n = 40 };
    c.x = rnd(c.n, 4.0, 0.0); c.y = zeros(c.n); c.R = rnd(c.n, 1.0, 0.0);
    float *dx = zeros(c.n);
    gpt_gelu_backward(dx, c.x, c.R, c.n);
    check(fd_rel(ge_loss, &c, c.x, dx, c.n), "gelu dx");
    /* known values of the tanh approximation */
    float x[3] = { 0.0f, 1.0f, -1.0f }, y[3];
    gpt_gelu_forward(y, x, 3);
    ok(0.0f == y[0] && fabsf(y[1] - 0.841192f) < 1e-5f && fabsf(y[2] + 0.158808f) < 1e-5f,
       "gelu(0, 1, -1) = 0, 0.841192, -0.158808 (got %g %g %g)", y[0], y[1], y[2]);
    free(c.x); free(c.y); free(c.R); free(dx);
}

/* ------------------------------------------------------ cross-entropy --- */

typedef struct { size_t N; int V; float *lg; int32_t *tg; } ce_ctx;

static double ce_loss(void *p)
{
    ce_ctx *c = p;
    return gpt_crossentropy(NULL, c->lg, c->tg, 1.0f, c->N, c->V);
}

static void test_crossentropy(void)
{
    ce_ctx c = { .N = 4, .V = 9 };
    int32_t tg[4] = { 3, -1, 0, 8 };
    c.tg = tg;
    c.lg = rnd(c.N * c.V, 3.0, 0.0);
    float *d = zeros(c.N * c.V);
    gpt_crossentropy(d, c.lg, c.tg, 1.0f, c.N, c.V);
    check(fd_rel(ce_loss, &c, c.lg, d, c.N * c.V), "cross-entropy dlogits (one row masked)");
    /* uniform logits: loss ln(V) per row with a target */
    float u[2 * 9] = { 0 };
    int32_t t2[2] = { 4, -1 };
    is_double(gpt_crossentropy(NULL, u, t2, 1.0f, 2, 9), log(9.0), 1e-6,
              "uniform logits give ln(V), masked rows add nothing");
    free(c.lg); free(d);
}

/* --------------------------------------------------------------- units --- */

static const gpt_config tiny = { .n_layer = 2, .dim = 8, .n_head = 2, .max_seq = 6 };
enum { TB = 2, TT = 5 };

typedef struct {
    const gpt_config *cfg;
    float *x, *y, *R;
    float *p[GPT_MAX_PARAMS];
    gpt_saves s;
    gpt_workspace ws;
    int32_t *tok, *tg;
} unit_ctx;

static double block_loss(void *q)
{
    unit_ctx *c = q;
    if (STRATA_OK != gpt_block_forward(c->cfg, TB, TT, (const float *const *)c->p, c->x, c->y,
                                       &c->s, &c->ws))
        return NAN;
    return dot(c->y, c->R, (size_t)TB * TT * c->cfg->dim);
}

static void test_block(void)
{
    unit_ctx c = { .cfg = &tiny };
    size_t n = (size_t)TB * TT * tiny.dim, sz[GPT_MAX_SAVES];
    gpt_param_info info[GPT_MAX_PARAMS];
    int np = gpt_unit_params(&tiny, 1, info);
    float *dp[GPT_MAX_PARAMS];
    for (int i = 0; i < np; i++) {
        /* weights O(0.5), LN weights around 1, biases O(0.3): all paths active */
        double scale = 2 == info[i].ndim ? 0.5 : 0.3;
        double shift = GPT_INIT_ONES == info[i].init ? 1.0 : 0.0;
        c.p[i] = rnd(info[i].numel, scale, shift);
        dp[i] = zeros(info[i].numel);
    }
    gpt_block_save_sizes(&tiny, TB, TT, sz);
    for (int s = 0; s < GPT_MAX_SAVES; s++)
        c.s.p[s] = zeros(sz[s]);
    c.ws.n = gpt_workspace_floats(&tiny, TB, TT);
    c.ws.buf = zeros(c.ws.n);
    c.x = rnd(n, 1.0, 0.0); c.y = zeros(n); c.R = rnd(n, 1.0, 0.0);
    float *dx = zeros(n);
    block_loss(&c);
    int st = gpt_block_backward(&tiny, TB, TT, (const float *const *)c.p, &c.s, c.R, dx, dp, &c.ws);
    is_int(st, STRATA_OK, "block backward succeeds");
    check(fd_rel(block_loss, &c, c.x, dx, n), "block dx_in");
    for (int i = 0; i < np; i++) {
        char what[64];
        snprintf(what, sizeof(what), "block d%s", info[i].name);
        check(fd_rel(block_loss, &c, c.p[i], dp[i], info[i].numel), what);
    }
    for (int i = 0; i < np; i++) { free(c.p[i]); free(dp[i]); }
    for (int s = 0; s < GPT_MAX_SAVES; s++) free(c.s.p[s]);
    free(c.ws.buf); free(c.x); free(c.y); free(c.R); free(dx);
}

static double embed_loss(void *q)
{
    unit_ctx *c = q;
    gpt_embed_forward(c->cfg, TB, TT, (const float *const *)c->p, c->tok, c->y);
    return dot(c->y, c->R, (size_t)TB * TT * c->cfg->dim);
}

static void test_embed(void)
{
    unit_ctx c = { .cfg = &tiny };
    size_t n = (size_t)TB * TT * tiny.dim;
    gpt_param_info info[GPT_MAX_PARAMS];
    gpt_unit_params(&tiny, 0, info);
    int32_t tok[TB * TT] = { 1, 200, 1, 7, 255, 0, 3, 3, 3, 9 };  /* repeats accumulate */
    c.tok = tok;
    float *dp[2];
    for (int i = 0; i < 2; i++) {
        c.p[i] = rnd(info[i].numel, 1.0, 0.0);
        dp[i] = zeros(info[i].numel);
    }
    c.y = zeros(n); c.R = rnd(n, 1.0, 0.0);
    gpt_embed_backward(&tiny, TB, TT, tok, c.R, dp);
    /* only the rows used matter for the difference check; check them all anyway */
    check(fd_rel(embed_loss, &c, c.p[GPT_P_WTE], dp[GPT_P_WTE], info[GPT_P_WTE].numel), "embed dwte");
    check(fd_rel(embed_loss, &c, c.p[GPT_P_WPE], dp[GPT_P_WPE], info[GPT_P_WPE].numel), "embed dwpe");
    for (int i = 0; i < 2; i++) { free(c.p[i]); free(dp[i]); }
    free(c.y); free(c.R);
}

static double head_loss(void *q)
{
    unit_ctx *c = q;
    double sum = NAN;
    gpt_head_forward(c->cfg, TB, TT, (const float *const *)c->p, c->x, c->tg, 0.0f, &sum,
                     NULL, NULL, NULL, &c->ws);
    return sum / 7.0;   /* 7 positions carry a target below */
}

static void test_head(void)
{
    unit_ctx c = { .cfg = &tiny };
    size_t n = (size_t)TB * TT * tiny.dim;
    gpt_param_info info[GPT_MAX_PARAMS];
    int np = gpt_unit_params(&tiny, tiny.n_layer + 1, info);
    int32_t tg[TB * TT] = { 5, -1, 65, 200, 0, -1, 255, 5, -1, 12 };
    c.tg = tg;
    float *dp[GPT_MAX_PARAMS];
    for (int i = 0; i < np; i++) {
        double shift = GPT_INIT_ONES == info[i].init ? 1.0 : 0.0;
        c.p[i] = rnd(info[i].numel, 0.5, shift);
        dp[i] = zeros(info[i].numel);
    }
    c.ws.n = gpt_workspace_floats(&tiny, TB, TT);
    c.ws.buf = zeros(c.ws.n);
    c.x = rnd(n, 1.0, 0.0);
    float *dx = zeros(n);
    double sum = 0.0;
    int st = gpt_head_forward(&tiny, TB, TT, (const float *const *)c.p, c.x, tg, 1.0f / 7.0f,
                              &sum, dx, dp, NULL, &c.ws);
    is_int(st, STRATA_OK, "head forward with gradients succeeds");
    check(fd_rel(head_loss, &c, c.x, dx, n), "head dx_in");
    for (int i = 0; i < np; i++) {
        char what[64];
        snprintf(what, sizeof(what), "head d%s", info[i].name);
        check(fd_rel(head_loss, &c, c.p[i], dp[i], info[i].numel), what);
    }
    for (int i = 0; i < np; i++) { free(c.p[i]); free(dp[i]); }
    free(c.ws.buf); free(c.x); free(dx);
}

int main(void)
{
    plan(3 + 3 + 2 * 2 + 2 + 2 + 14 + 2 + 5);
    test_layernorm();
    test_matmul();
    test_attention(2, 5, 6, 2);
    test_attention(1, 100, 8, 2);
    test_gelu();
    test_crossentropy();
    test_block();
    test_embed();
    test_head();
    return done_testing();
}
