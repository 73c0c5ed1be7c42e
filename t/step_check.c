/*
 * step_check.c - a rank that diverges fails every rank, no hang, with a
 * message naming the first unit or save that differs and the ranks on each
 * side. "extra": rank 1 saves one extra activation in step 1; "param":
 * rank 2 registers a larger parameter. Run on 4 ranks by t/step-check.t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"

#define F 4
static int rank, extra;

static strata_status_t fwd(strata_unit_call_t *c, void *user)
{
    const float *x;
    size_t bytes;
    float *y, *w, *sv;
    strata_call_input(c, (const void **)&x, &bytes);
    strata_call_param(c, 0, (void **)&w, NULL);
    strata_status_t st = strata_call_output(c, bytes, (void **)&y);
    if (STRATA_OK != st) return st;
    for (size_t i = 0; i < bytes / sizeof(float); i++) y[i] = x[i] * w[i % F];
    if (STRATA_OK != (st = strata_save(c, "x_copy", bytes, (void **)&sv))) return st;
    memcpy(sv, x, bytes);
    if (extra && 1 == rank && 1 == *(int *)user) {   /* the divergent rank */
        if (STRATA_OK != (st = strata_save(c, "extra", 64, (void **)&sv))) return st;
        memset(sv, 0, 64);
    }
    return STRATA_OK;
}

static strata_status_t bwd(strata_unit_call_t *c, void *user)
{
    (void)user;
    const float *dy, *w;
    float *dx, *dw, *x;
    size_t bytes, gbytes;
    strata_status_t st = strata_saved(c, "x_copy", (void **)&x, &bytes);
    if (STRATA_OK != st) return st;
    strata_call_grad_output(c, (const void **)&dy, NULL);
    strata_call_grad_input(c, (void **)&dx, &gbytes);
    strata_call_param(c, 0, (void **)&w, NULL);
    strata_call_grad(c, 0, &dw, NULL);
    for (size_t i = 0; i < bytes / sizeof(float); i++) {
        dw[i % F] += dy[i] * x[i];
        if (dx) dx[i] = dy[i] * w[i % F];
    }
    return STRATA_OK;
}

static int ids[3] = { 0, 1, 2 };
static float xin[2 * F] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dout[2 * F] = { 1, 1, 1, 1, 1, 1, 1, 1 };

static int has(strata_context_t *ctx, const char *what)
{
    int yes = NULL != strstr(strata_last_error(ctx), what);
    if (!yes) diag("message: %s", strata_last_error(ctx));
    return yes;
}

/* Three units of F weights; with param, rank 2's unit 1 has F + 4. */
static strata_status_t build(strata_context_t *ctx, int param, strata_model_t **m_p)
{
    strata_model_t *m = NULL;
    strata_unit_t *u = NULL;
    strata_init_t one = { .kind = STRATA_INIT_ONES };
    strata_status_t st = strata_model_create(ctx, NULL, &m);
    for (int i = 0; i < 3 && STRATA_OK == st; i++) {
        char name[8];
        snprintf(name, sizeof name, "u%d", i);
        size_t dims[1] = { param && 2 == rank && 1 == i ? F + 4 : F };
        st = strata_model_add_unit(m, name, fwd, bwd, &ids[i], &u);
        if (STRATA_OK == st) st = strata_unit_add_param(u, "w", 1, dims, STRATA_F32, one, NULL);
    }
    if (STRATA_OK == st) st = strata_model_commit(m);
    *m_p = m;
    return st;
}

static strata_status_t one_step(strata_model_t *m)
{
    const void *out;
    size_t ob;
    strata_status_t st = strata_model_step_begin(m, 1);
    if (STRATA_OK == st) st = strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob);
    if (STRATA_OK == st) st = strata_model_backward(m, dout, ob);
    if (STRATA_OK == st) st = strata_model_step_end(m);
    return st;
}

int main(int argc, char **argv)
{
    int provided, W;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    tap_use_comm(MPI_COMM_WORLD);
    plan(6);
    if (W < 3) bail_out("run on 3 or more ranks");
    strata_context_t *ctx = NULL;
    strata_config_t *cfg = NULL;
    if (STRATA_OK != strata_config_create(&cfg) ||
        STRATA_OK != strata_config_read_env(cfg, NULL, 0)) bail_out("strata_config_create failed");
    /* a policy makes the runtime record step 1's program and plan */
    strata_config_set(cfg, "act_policy", "x_copy=host", NULL, 0);
    strata_status_t ist = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != ist) bail_out("strata_init failed");
    for (int param = 1; param >= 0; param--) {
        extra = !param;
        strata_model_t *m = NULL;
        strata_status_t st = build(ctx, param, &m);
        if (param) {
            ok(STRATA_ERR_MISMATCH == st, "commit fails with a mismatch on every rank (got %s)",
               strata_strerror(st));
            ok(has(ctx, "the registered parameters (strata_model_commit) differs between ranks"),
               "the message says the registered parameters differ");
            ok(has(ctx, "rank 0,1,3: param 'w' of unit 1 'u1': 4 elements; rank 2: param 'w' of "
                   "unit 1 'u1': 8 elements"), "it names the parameter and the ranks on each side");
        } else {
            if (STRATA_OK != st) bail_out("finalize failed: %s", strata_last_error(ctx));
            st = one_step(m);
            ok(STRATA_ERR_MISMATCH == st, "step 1 fails with a mismatch on every rank (got %s)",
               strata_strerror(st));
            ok(has(ctx, "the step program recorded at step 1 differs"),
               "the message says the step program differs");
            /* where rank 1 saves 'extra', the others have the unit's input */
            ok(has(ctx, "rank 0,2,3: save #1 'unit_input' of unit 1 'u1' (") &&
               has(ctx, "rank 1: save #1 'extra' of unit 1 'u1' ("),
               "it names the extra save and the ranks on each side");
        }
        strata_model_destroy(m);
    }
    strata_finalize(ctx);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
