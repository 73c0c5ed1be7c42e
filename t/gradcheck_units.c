/*
 * gradcheck_units.c - strata_unit_gradcheck on units with a right and with
 * deliberately wrong backwards, and on examples/mlp's layers:
 *  - y = tanh(x W^T + b) with its right backward: a small error;
 *  - the same forward, backward without tanh's derivative, and with the
 *    bias gradient doubled: both caught (a large error, at a parameter of
 *    the wrong part);
 *  - every layer of the example MLP passes;
 *  - the model's parameters are unchanged, bad arguments are refused.
 * Run on 2 ranks by t/gradcheck.t (the probed elements lie in either
 * rank's shard).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "../examples/mlp/mlp_model.h"

#define IN 5
#define OUT 3
#define ROWS 4

typedef enum { RIGHT = 0, NO_TANH_DERIV, BIAS_TWICE } bug_t;

static strata_status_t tanh_fwd(strata_unit_call_t *c, void *user)
{
    const float *x, *w, *b;
    float *y;
    strata_status_t st;
    (void)user;
    if (STRATA_OK != (st = strata_call_input(c, (const void **)&x, NULL)) ||
        STRATA_OK != (st = strata_call_param(c, 0, (void **)&w, NULL)) ||
        STRATA_OK != (st = strata_call_param(c, 1, (void **)&b, NULL)) ||
        STRATA_OK != (st = strata_call_output(c, ROWS * OUT * sizeof(float), (void **)&y)))
        return st;
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++) {
            float s = b[o];
            for (int k = 0; k < IN; k++) s += w[o * IN + k] * x[r * IN + k];
            y[r * OUT + o] = tanhf(s);
        }
    return STRATA_OK;
}

static strata_status_t tanh_bwd(strata_unit_call_t *c, void *user)
{
    const bug_t bug = *(const bug_t *)user;
    const float *x, *w, *y, *dy;
    float *gw, *gb, *dx;
    strata_status_t st;
    if (STRATA_OK != (st = strata_call_input(c, (const void **)&x, NULL)) ||
        STRATA_OK != (st = strata_call_param(c, 0, (void **)&w, NULL)) ||
        STRATA_OK != (st = strata_call_forward_output(c, (const void **)&y, NULL)) ||
        STRATA_OK != (st = strata_call_grad_output(c, (const void **)&dy, NULL)) ||
        STRATA_OK != (st = strata_call_grad(c, 0, &gw, NULL)) ||
        STRATA_OK != (st = strata_call_grad(c, 1, &gb, NULL)) ||
        STRATA_OK != (st = strata_call_grad_input(c, (void **)&dx, NULL)))
        return st;
    for (int r = 0; r < ROWS; r++)
        for (int o = 0; o < OUT; o++) {
            const float yo = y[r * OUT + o];
            const float ds = dy[r * OUT + o] * (NO_TANH_DERIV == bug ? 1.0f : 1.0f - yo * yo);
            gb[o] += BIAS_TWICE == bug ? 2 * ds : ds;
            for (int k = 0; k < IN; k++) {
                gw[o * IN + k] += ds * x[r * IN + k];
                if (dx) dx[r * IN + k] += ds * w[o * IN + k];
            }
        }
    return STRATA_OK;
}

static strata_context_t *ctx;

static strata_model_t *tanh_model(bug_t *bug, strata_unit_t **unit_p)
{
    strata_model_t *m = NULL;
    size_t dw[2] = { OUT, IN }, db[1] = { OUT };
    if (STRATA_OK != strata_model_create(ctx, NULL, &m) ||
        STRATA_OK != strata_model_add_unit(m, "tanh", tanh_fwd, tanh_bwd, bug, unit_p) ||
        STRATA_OK != strata_unit_add_param(*unit_p, "w", 2, dw, STRATA_F32,
                                           STRATA_PARAM_NORMAL(0.5f), NULL) ||
        STRATA_OK != strata_unit_add_param(*unit_p, "b", 1, db, STRATA_F32,
                                           STRATA_PARAM_NORMAL(0.5f), NULL) ||
        STRATA_OK != strata_model_commit(m))
        bail_out("tanh model: %s", strata_last_error(ctx));
    return m;
}

static void test_tanh(const float *x)
{
    static const char *const what[] = { "the right backward", "a backward without tanh's "
                                        "derivative", "a backward doubling the bias gradient" };
    for (bug_t bug = RIGHT; bug <= BIAS_TWICE; bug++) {
        strata_unit_t *u;
        strata_model_t *m = tanh_model(&bug, &u);
        float before[OUT * IN], after[OUT * IN];
        strata_unit_read_param(u, 0, before, OUT * IN);
        strata_gradcheck_t rep = STRATA_GRADCHECK_INIT;
        strata_status_t st = strata_unit_gradcheck(m, u, x, ROWS * IN * sizeof *x, NULL, 18,
                                                   1e-3, &rep);
        if (STRATA_OK != st) diag("gradcheck: %s", strata_last_error(ctx));
        diag("%s: max rel err %.3g at param %d element %zu (backward %.6g, differences %.6g)",
             what[bug], rep.max_rel_err, rep.worst_param, rep.worst_element,
             rep.worst_analytic, rep.worst_numeric);
        if (RIGHT == bug)
            ok(STRATA_OK == st && 18 == rep.nprobed && rep.max_rel_err < 1e-2,
               "%s passes (max rel err %.2g over %d elements)", what[bug], rep.max_rel_err,
               rep.nprobed);
        else
            ok(STRATA_OK == st && rep.max_rel_err > 0.1 &&
               (BIAS_TWICE != bug || 1 == rep.worst_param),
               "%s is caught (max rel err %.2g, at param %d)", what[bug], rep.max_rel_err,
               rep.worst_param);
        if (RIGHT == bug) {
            strata_unit_read_param(u, 0, after, OUT * IN);
            ok(0 == memcmp(before, after, sizeof before), "the model's parameters are unchanged");
        }
        strata_model_destroy(m);
    }
}

static void test_bad_args(const float *x)
{
    bug_t bug = RIGHT;
    strata_unit_t *u, *u2;
    strata_model_t *m = tanh_model(&bug, &u), *m2 = tanh_model(&bug, &u2);
    strata_gradcheck_t rep = STRATA_GRADCHECK_INIT, unset = { 0 };
    const size_t n = ROWS * IN * sizeof *x;
    is_int(strata_unit_gradcheck(m, u, x, n, NULL, 4, 1e-3, &unset), STRATA_ERR_INVALID,
           "a report whose size is unset is refused");
    ok(NULL != strstr(strata_last_error(ctx), "STRATA_GRADCHECK_INIT"), "the message names "
       "STRATA_GRADCHECK_INIT");
    is_int(strata_unit_gradcheck(m, u2, x, n, NULL, 4, 1e-3, &rep), STRATA_ERR_INVALID,
           "a unit of another model is refused");
    is_int(strata_unit_gradcheck(m, u, x, n, NULL, 0, 1e-3, &rep), STRATA_ERR_INVALID,
           "nprobe 0 is refused");
    is_int(strata_unit_gradcheck(m, u, x, n, NULL, 4, 0, &rep), STRATA_ERR_INVALID,
           "eps 0 is refused");
    strata_model_destroy(m2);
    strata_model_destroy(m);
}

/* examples/mlp's layers: ReLU layers and the last, linear one */
static void test_mlp(void)
{
    enum { W = 6, B = 3 };
    strata_model_t *m = NULL;
    mlp_t mlp = { .chunk_rows = 0 };
    if (STRATA_OK != strata_model_create(ctx, NULL, &m) ||
        STRATA_OK != mlp_build(m, &mlp, 3, W) || STRATA_OK != strata_model_commit(m))
        bail_out("mlp: %s", strata_last_error(ctx));
    float x[B * W], y[B * W];
    mlp_data(7, 0, B, W, x, y);
    double worst = 0;
    strata_status_t st = STRATA_OK;
    for (int i = 0; STRATA_OK == st && i < strata_model_unit_count(m); i++) {
        strata_gradcheck_t rep = STRATA_GRADCHECK_INIT;
        st = strata_unit_gradcheck(m, strata_model_unit(m, i), x, sizeof x, NULL, 12, 1e-3, &rep);
        if (rep.max_rel_err > worst) worst = rep.max_rel_err;
    }
    ok(STRATA_OK == st && worst < 1e-2, "every layer of examples/mlp passes (max rel err %.2g)%s%s",
       worst, STRATA_OK == st ? "" : ": ", STRATA_OK == st ? "" : strata_last_error(ctx));
    strata_model_destroy(m);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    plan(10);
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, NULL, &ctx)) bail_out("strata_init failed");
    float x[ROWS * IN];
    for (int i = 0; i < ROWS * IN; i++) x[i] = sinf(0.7f * (float)i) * 1.5f;
    test_tanh(x);
    test_bad_args(x);
    test_mlp();
    strata_finalize(ctx);
    MPI_Finalize();
    return done_testing();
}
