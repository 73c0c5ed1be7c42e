/*
 * fsdp_errors.c - bad use of the FSDP API returns a clear status, never a
 * crash or a hang: bad shard size, registering after commit, calls out of
 * order, callbacks that write past their buffers or misuse the call handle,
 * a device budget too small. After each failed step a new one works.
 * Run on 2 ranks by t/fsdp-errors.t, always on the host backend: the
 * callbacks compute on the host and the test reads the master shard, and
 * two ranks would share one GPU, which NCCL refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "fsdp/fsdp.h"   /* the enumeration checkpoints use */

enum { GOOD, OVERRUN_OUT, NO_OUTPUT, OUTPUT_TWICE, OVERRUN_SAVE, SAVED_UNKNOWN, OVERRUN_GIN,
       RETURN_POSITIVE, PARAM_AS_BF16 };
static int mode = GOOD;
static void *seen_stream = &mode;   /* what strata_call_stream gave the last forward */

#define F 4   /* features */

/* y = x * w elementwise; unit 1 misbehaves as `mode` says */
static strata_status_t fwd(strata_unit_call_t *c, void *user)
{
    int bad = 1 == *(int *)user;
    const float *x;
    size_t bytes;
    float *y, *w, *sv;
    strata_call_input(c, (const void **)&x, &bytes);
    strata_call_param(c, 0, (void **)&w, NULL);
    seen_stream = strata_call_stream(c);
    if (bad && NO_OUTPUT == mode) return STRATA_OK;
    if (bad && PARAM_AS_BF16 == mode) {
        void *wb;   /* the model computes in f32: the runtime reports it anyway */
        strata_call_param_as(c, 0, STRATA_BF16, &wb, NULL);
    }
    strata_status_t st = strata_call_output(c, bytes, (void **)&y);
    if (STRATA_OK != st) return st;
    if (bad && OUTPUT_TWICE == mode) {
        void *again;
        strata_call_output(c, bytes, &again);   /* the runtime reports it anyway */
    }
    size_t n = bytes / sizeof(float) + (bad && OVERRUN_OUT == mode ? 2 : 0);
    for (size_t i = 0; i < n; i++) y[i] = x[i] * w[i % F];
    if (STRATA_OK != (st = strata_save(c, "x_copy", bytes, (void **)&sv))) return st;
    n = bytes / sizeof(float) + (bad && OVERRUN_SAVE == mode ? 1 : 0);
    for (size_t i = 0; i < n; i++) sv[i] = x[i % (bytes / sizeof(float))];
    return bad && RETURN_POSITIVE == mode ? STRATA_INPROGRESS : STRATA_OK;
}

static strata_status_t bwd(strata_unit_call_t *c, void *user)
{
    int bad = 1 == *(int *)user;
    const float *dy, *w;
    float *dx, *dw, *x;
    size_t bytes, gbytes;
    strata_status_t st;
    if (bad && SAVED_UNKNOWN == mode) {
        void *p;
        if (STRATA_OK != (st = strata_saved(c, "nope", &p, NULL))) return st;
    }
    if (STRATA_OK != (st = strata_saved(c, "x_copy", (void **)&x, &bytes))) return st;
    strata_call_grad_output(c, (const void **)&dy, NULL);
    strata_call_grad_input(c, (void **)&dx, &gbytes);
    strata_call_param(c, 0, (void **)&w, NULL);
    strata_call_grad(c, 0, &dw, NULL);
    size_t n = bytes / sizeof(float);
    for (size_t i = 0; i < n; i++) {
        dw[i % F] += dy[i] * x[i];
        if (dx) dx[i] = dy[i] * w[i % F];
    }
    if (bad && OVERRUN_GIN == mode && dx) dx[n + 3] = 1.0f;
    return STRATA_OK;
}

static int ids[2] = { 0, 1 };

static strata_status_t build(strata_context_t *ctx, strata_model_t **m_p, int big)
{
    strata_model_t *m;
    strata_unit_t *u;
    strata_status_t st = strata_model_create(ctx, NULL, &m);
    if (STRATA_OK != st) return st;
    size_t dims[1] = { big ? 4096 : F };
    strata_init_t one = { .kind = STRATA_INIT_ONES };
    for (int i = 0; i < 2 && STRATA_OK == st; i++) {
        char name[8];
        snprintf(name, sizeof name, "u%d", i);
        st = strata_model_add_unit(m, name, fwd, bwd, &ids[i], &u);
        if (STRATA_OK == st) st = strata_unit_add_param(u, "w", 1, dims, STRATA_F32, one, NULL);
    }
    if (STRATA_OK == st) st = strata_model_commit(m);
    if (STRATA_OK != st) strata_model_destroy(m);
    else *m_p = m;
    return st;
}

static float xin[2 * F] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dout[2 * F] = { 1, 1, 1, 1, 1, 1, 1, 1 };

/* One step of one micro-batch; the status of the first call that failed. */
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

static int has(strata_context_t *ctx, const char *what)
{
    return NULL != strstr(strata_last_error(ctx), what);
}

#define EXPECT(call, status, text, ...)                                              \
    do {                                                                             \
        strata_status_t st_ = (call);                                                \
        ok(status == st_ && has(ctx, text), __VA_ARGS__);                            \
        if (status != st_ || !has(ctx, text))                                        \
            diag("got %s: %s", strata_strerror(st_), strata_last_error(ctx));        \
    } while (0)

/* A context of cfg with one option changed; bails out if it cannot start. */
static strata_context_t *context_with(const strata_config_t *cfg, const char *opt, size_t v)
{
    strata_config_t *c = NULL;
    strata_context_t *ctx = NULL;
    char val[32];
    snprintf(val, sizeof val, "%zu", v);
    if (STRATA_OK != strata_config_dup(cfg, &c) ||
        STRATA_OK != strata_config_set(c, opt, val, NULL, 0) ||
        STRATA_OK != strata_init(MPI_COMM_WORLD, c, &ctx)) bail_out("strata_init (%s) failed", opt);
    strata_config_destroy(c);
    return ctx;
}

/* a shard size that does not divide the world is refused at create */
static void test_bad_shard(const strata_config_t *cfg, int W)
{
    strata_context_t *ctx = context_with(cfg, "shard_size", (size_t)W + 1);
    strata_model_t *bad = NULL;
    EXPECT(strata_model_create(ctx, NULL, &bad), STRATA_ERR_INVALID, "does not divide",
           "shard size %d on %d ranks: STRATA_ERR_INVALID, 'does not divide'", W + 1, W);
    strata_finalize(ctx);
}

/* creation and registration: bad options, names, dtypes, order */
static void test_register(strata_context_t *ctx)
{
    strata_model_t *m = NULL, *bad = NULL;
    strata_unit_t *u = NULL;
    strata_model_opts_t o;
    strata_init_t zero = { .kind = STRATA_INIT_ZEROS };
    size_t dims[1] = { F };
    strata_model_opts_default(&o);
    o.compute_dtype = STRATA_F16;
    EXPECT(strata_model_create(ctx, &o, &bad), STRATA_ERR_INVALID, "compute dtype",
           "f16 compute copy is refused with a message");
    ok(STRATA_OK == strata_model_create(ctx, NULL, &m), "a model with the defaults is created");
    EXPECT(strata_model_commit(m), STRATA_ERR_STATE, "no units", "commit of an empty model");
    strata_model_add_unit(m, "u", fwd, bwd, &ids[0], &u);
    EXPECT(strata_unit_add_param(u, "w", 1, dims, STRATA_BF16, zero, NULL), STRATA_ERR_UNSUPPORTED,
           "master parameters are f32", "a bf16 master parameter is refused");
    EXPECT(strata_model_add_unit(m, "u", fwd, bwd, NULL, &u), STRATA_ERR_INVALID, "used twice",
           "a unit name used twice is refused");
    strata_unit_add_param(u, "w", 1, dims, STRATA_F32, zero, NULL);
    ok(STRATA_OK == strata_model_commit(m), "commit");
    EXPECT(strata_model_add_unit(m, "v", fwd, bwd, NULL, &u), STRATA_ERR_STATE, "committed",
           "adding a unit after commit: STRATA_ERR_STATE");
    EXPECT(strata_unit_add_param(u, "w2", 1, dims, STRATA_F32, zero, NULL), STRATA_ERR_STATE,
           "committed", "adding a param after commit: STRATA_ERR_STATE");
    strata_model_destroy(m);
}

/* calls out of order are refused, and the step goes on after them */
static void test_order(strata_context_t *ctx, strata_model_t *m)
{
    const void *out;
    size_t ob;
    EXPECT(strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob), STRATA_ERR_STATE,
           "step_begin", "forward before step_begin: STRATA_ERR_STATE");
    strata_model_step_begin(m, 2);
    EXPECT(strata_model_backward(m, dout, sizeof dout), STRATA_ERR_STATE, "backward before forward",
           "backward before forward: STRATA_ERR_STATE");
    strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob);
    EXPECT(strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob), STRATA_ERR_STATE,
           "twice", "a second forward before backward: STRATA_ERR_STATE");
    EXPECT(strata_model_backward(m, dout, sizeof dout - 4), STRATA_ERR_MISMATCH, "bytes",
           "grad_out of the wrong size: STRATA_ERR_MISMATCH");
    ok(STRATA_OK == strata_model_backward(m, dout, ob) && STRATA_OK == strata_model_forward(m, xin,
       sizeof xin, NULL, &out, &ob) && STRATA_OK == strata_model_backward(m, dout, ob) &&
       STRATA_OK == strata_model_step_end(m), "after a refused backward the step goes on");
    strata_model_step_begin(m, 2);
    strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob);
    strata_model_backward(m, dout, ob);
    EXPECT(strata_model_step_end(m), STRATA_ERR_STATE, "1 of 2",
           "step_end after 1 of 2 micro-batches: STRATA_ERR_STATE");
    strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob);
    strata_model_backward(m, dout, ob);
    strata_model_step_end(m);
}

/* callbacks that misbehave (unit u1): each fails its step with a message */
static void test_bad_callbacks(strata_context_t *ctx, strata_model_t *m)
{
    static const struct { int mode; strata_status_t st; const char *text, *what; } bad_cb[] = {
        { OVERRUN_OUT, STRATA_ERR_MISMATCH, "'u1' forward wrote past the end of its output",
          "forward writing past its output" },
        { NO_OUTPUT, STRATA_ERR_STATE, "never called strata_call_output",
          "forward that makes no output" },
        { OUTPUT_TWICE, STRATA_ERR_STATE, "strata_call_output twice",
          "forward that allocates its output twice" },
        { OVERRUN_SAVE, STRATA_ERR_MISMATCH, "x_copy", "forward writing past a saved buffer" },
        { SAVED_UNKNOWN, STRATA_ERR_NOT_FOUND, "it saved: x_copy",
          "backward asking for a name never saved" },
        { OVERRUN_GIN, STRATA_ERR_MISMATCH, "grad_input", "backward writing past grad_input" },
        { RETURN_POSITIVE, STRATA_ERR_INVALID, "returned 1", "forward returning a positive "
          "value (not \"in progress\")" },
        { PARAM_AS_BF16, STRATA_ERR_MISMATCH, "reads param 0 as bf16, but the gathered copy is f32",
          "a parameter read as another dtype than compute_dtype" },
    };
    for (size_t i = 0; i < sizeof bad_cb / sizeof bad_cb[0]; i++) {
        mode = bad_cb[i].mode;
        EXPECT(one_step(m), bad_cb[i].st, bad_cb[i].text, "%s: %s", bad_cb[i].what,
               strata_strerror(bad_cb[i].st));
    }
    mode = GOOD;
}

/* declared shapes: u1 takes and makes f32 rows of F; a declared output of
 * F + 1 columns does not fit what the forward makes */
static void test_declared_io(strata_context_t *ctx, strata_model_t *m)
{
    size_t rows[2] = { 0, F }, wide[2] = { 0, F + 1 }, three[2] = { 0, 3 };
    strata_unit_t *u1 = strata_model_unit(m, 1);
    ok(STRATA_OK == strata_unit_set_io(u1, 0, STRATA_F32, 2, rows) &&
       STRATA_OK == strata_unit_set_io(u1, 1, STRATA_F32, 2, rows) && STRATA_OK == one_step(m),
       "declared input and output shapes that fit: the step runs");
    strata_unit_set_io(u1, 1, STRATA_F32, 2, wide);
    EXPECT(one_step(m), STRATA_ERR_MISMATCH, "unit 'u1' output is 32 bytes, but it declared f32 "
           "[any x 5]: a multiple of 20 bytes", "an output that does not fit its declaration");
    strata_unit_set_io(u1, 1, STRATA_F32, 0, NULL);
    strata_unit_set_io(u1, 0, STRATA_F32, 2, three);
    EXPECT(one_step(m), STRATA_ERR_MISMATCH, "unit 'u1' input is 32 bytes, but it declared f32 "
           "[any x 3]: a multiple of 12 bytes", "an input that does not fit its declaration");
    strata_unit_set_io(u1, 0, STRATA_F32, 0, NULL);
    ok(STRATA_OK == one_step(m), "a good step runs after the failed ones");
    int cuda = 0 == strcmp(strata_backend_name(ctx), "cuda");
    ok(cuda ? NULL != seen_stream && &mode != (int *)seen_stream : NULL == seen_stream,
       "strata_call_stream: %s on the %s backend", cuda ? "a stream" : "NULL",
       strata_backend_name(ctx));
    ok(NULL == strata_call_stream(NULL), "strata_call_stream(NULL) is NULL");
}

/* eval: the same output as a training forward, and not inside a step */
static void test_eval(strata_context_t *ctx, strata_model_t *m)
{
    float ev[2 * F];
    const void *eo, *out;
    size_t eb = 0, ob;
    strata_status_t est = strata_model_eval(m, xin, sizeof xin, NULL, &eo, &eb);
    if (STRATA_OK == est) memcpy(ev, eo, sizeof ev);
    strata_model_step_begin(m, 1);
    strata_model_forward(m, xin, sizeof xin, NULL, &out, &ob);
    ok(STRATA_OK == est && sizeof ev == eb && ob == eb && !memcmp(ev, out, eb),
       "eval gives the training forward's output");
    EXPECT(strata_model_eval(m, xin, sizeof xin, NULL, &eo, &eb), STRATA_ERR_STATE,
           "inside a training step", "eval inside a step: STRATA_ERR_STATE");
    strata_model_backward(m, dout, ob);
    strata_model_step_end(m);
}

/* the checkpoint view: the master shard is the slice base_shard_range names */
static void test_checkpoint_view(strata_context_t *ctx, strata_model_t *m, int W)
{
    float w[F];
    strata_unit_t *u0 = strata_model_unit(m, 0);
    fsdp_geom_t g;
    fsdp_scalars_t sc;
    size_t soff, slen, fpad = 0;
    fsdp_model_geom(m, &g);
    fsdp_model_scalars(m, &sc);
    int geo = STRATA_OK == strata_unit_read_param(u0, 0, w, F) &&
              0 == base_shard_padded(F, g.S, &fpad) &&
              0 == base_shard_range(fpad, g.S, g.shard_rank, &soff, &slen) && g.S == W &&
              g.n_replicas == 1 && 0 == g.replica_index;
    const float *ms = fsdp_unit_master(u0);
    for (size_t i = 0; geo && i < slen; i++)
        geo = ms[i] == (soff + i < F ? w[soff + i] : 0.0f);
    ok(geo, "the master shard holds elements [s*Npad/S, (s+1)*Npad/S) of the flat vector");
    ok(2 == fsdp_optim_nstate(&(strata_model_opts_t){ .optimizer = STRATA_OPTIM_ADAMW }) &&
       fsdp_unit_state(u0, 0) && fsdp_unit_state(u0, 1) && !fsdp_unit_state(u0, 2) &&
       sc.step >= 1 && sc.optimizer == STRATA_OPTIM_ADAMW && sc.beta2 > 0.99f,
       "optimizer state shards and scalars are enumerable (step %d)", sc.step);
    EXPECT(strata_unit_read_param(u0, 0, w, F + 1), STRATA_ERR_INVALID, "exactly",
           "read_param with a wrong element count");
    EXPECT(strata_model_save(m, NULL, NULL, NULL, 0), STRATA_ERR_INVALID,
           "pass dir, or set the option ckpt_dir", "strata_model_save without a directory "
           "says what is missing");
    EXPECT(strata_finalize(ctx), STRATA_ERR_STATE, "1 model of this context is still alive",
           "strata_finalize with a live model says so");
}

/* a device budget too small names the tier and the budget */
static void test_tiny_budget(const strata_config_t *cfg)
{
    strata_context_t *tiny = context_with(cfg, "device_mem", 4096);
    strata_model_t *m = NULL;
    strata_status_t st = build(tiny, &m, 1);
    ok(STRATA_ERR_TIER_FULL == st && strstr(strata_last_error(tiny), "device tier full") &&
       strstr(strata_last_error(tiny), "budget 4 KiB"),
       "a budget too small fails with STRATA_ERR_TIER_FULL naming the tier and budget");
    diag("%s", strata_last_error(tiny));
    strata_finalize(tiny);
}

/* Whether m's last step placed its device buffers by the memory plan. */
static int placed(strata_model_t *m)
{
    strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
    return STRATA_OK == strata_model_stats(m, &ms) && ms.mem_planned;
}

/* The memory plan is its model's: two models of one context stepping in
 * turn each record their own (neither places by the other's), a model
 * stepping on its own places from its third step, and one made after
 * another was destroyed does not place by the old one's. */
static void test_two_models(const strata_config_t *cfg)
{
    strata_config_t *c = NULL;
    strata_context_t *two = NULL;
    if (STRATA_OK != strata_config_dup(cfg, &c) ||
        STRATA_OK != strata_config_set(c, "act_policy", "x_copy=host", NULL, 0) ||
        STRATA_OK != strata_init(MPI_COMM_WORLD, c, &two)) bail_out("strata_init (two models)");
    strata_config_destroy(c);
    mode = GOOD;
    strata_model_t *a = NULL, *b = NULL;
    if (STRATA_OK != build(two, &a, 0) || STRATA_OK != build(two, &b, 0))
        bail_out("build: %s", strata_last_error(two));
    int st_ok = 1, seq = 0;
    for (int s = 0; s < 3; s++) {
        st_ok = st_ok && STRATA_OK == one_step(a);
        seq = seq * 2 + placed(a);
    }
    ok(st_ok && 1 == seq, "one model on its own: steps 1-2 record, step 3 places (%d)", seq);
    int any = 0;
    for (int s = 0; s < 4; s++) {
        st_ok = st_ok && STRATA_OK == one_step(b) && STRATA_OK == one_step(a);
        any |= placed(a) | placed(b);
    }
    ok(st_ok && !any, "two models stepping in turn: every step trains, neither places by the "
       "other's plan");
    st_ok = st_ok && STRATA_OK == one_step(a);
    int first = placed(a);
    st_ok = st_ok && STRATA_OK == one_step(a);
    /* its last step in turn recorded (after b's), and nothing came between */
    ok(st_ok && first && placed(a), "back on its own: its last step's record places at once");
    strata_model_destroy(a);
    strata_model_t *c2 = NULL;
    if (STRATA_OK != build(two, &c2, 0)) bail_out("build: %s", strata_last_error(two));
    seq = 0;
    for (int s = 0; s < 3; s++) {
        st_ok = st_ok && STRATA_OK == one_step(c2);
        seq = seq * 2 + placed(c2);
    }
    ok(st_ok && 1 == seq, "a model made after one was destroyed records its own plan (%d)", seq);
    if (!st_ok) diag("%s", strata_last_error(two));
    strata_model_destroy(c2);
    strata_model_destroy(b);
    strata_finalize(two);
}

int main(int argc, char **argv)
{
    int provided, W;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    tap_use_comm(MPI_COMM_WORLD);
    plan(41);

    strata_config_t *cfg = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    strata_config_read_env(cfg, NULL, 0);
    if (STRATA_OK != strata_config_set(cfg, "backend", "host", NULL, 0))
        bail_out("strata_config_set backend=host failed");
    strata_config_set(cfg, "ckpt_dir", "", NULL, 0);   /* strata_model_save(m, NULL) has none */
    strata_context_t *ctx = NULL;
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");

    test_bad_shard(cfg, W);
    test_register(ctx);
    strata_model_t *m = NULL;
    if (STRATA_OK != build(ctx, &m, 0)) bail_out("build: %s", strata_last_error(ctx));
    test_order(ctx, m);
    test_bad_callbacks(ctx, m);
    test_declared_io(ctx, m);
    test_eval(ctx, m);
    test_checkpoint_view(ctx, m, W);
    strata_model_destroy(m);
    strata_model_destroy(NULL);
    test_tiny_budget(cfg);
    test_two_models(cfg);
    strata_config_destroy(cfg);

    strata_finalize(ctx);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
