/*
 * abi_grow.t.c - the growable public structures (strata.h, "structures
 * the library reads or fills"), through the shared library as a program
 * sees it. An older program is simulated by a prefix of today's struct
 * with its smaller size, a newer one by today's struct followed by more
 * fields:
 *  - the initialisers fill only the caller's bytes;
 *  - a model made from an older program's options equals one made from
 *    today's with the fields it lacks at their defaults, and the fields it
 *    has are read;
 *  - statistics are filled only as far as the caller's size reaches;
 *  - an unset or garbage size, and a newer program's field set to a value
 *    this library does not know, fail with STRATA_ERR_INVALID and a
 *    message naming the initialiser.
 * One rank; strata_init starts MPI.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata.h"
#include "tap.h"

#define N 8
#define CANARY 0xa5

/* strata_model_opts_t as a program built before its last eight fields
 * existed would have it: the size, the optimizer and its seven scalars */
typedef struct {
    size_t size;
    strata_optim_kind_t optimizer;
    float lr, beta1, beta2, eps, weight_decay, momentum, clip_norm;
} old_opts_t;

/* strata_model_stats_t of a program that knew only its first fields */
typedef struct {
    size_t size;
    int    steps;
    double step_s;
} old_stats_t;

/* a program from a later version: today's fields, then one more */
typedef struct {
    strata_model_opts_t now;
    uint64_t            later;
} new_opts_t;

typedef struct {
    strata_ckpt_save_opts_t now;
    uint64_t                later;
} new_save_opts_t;

static strata_context_t *ctx;

static int has(const char *s) { return NULL != strstr(strata_last_error(ctx), s); }

static int all_bytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v) return 0;
    return 1;
}

/* y = w * x elementwise; the loss is sum(y), so dy = 1 */
static strata_status_t fwd(strata_unit_call_t *c, void *user)
{
    const float *x, *w;
    float *y;
    size_t bytes;
    strata_status_t st;
    (void)user;
    strata_call_input(c, (const void **)&x, &bytes);
    if (STRATA_OK != (st = strata_call_param(c, 0, (void **)&w, NULL))) return st;
    if (STRATA_OK != (st = strata_call_output(c, bytes, (void **)&y))) return st;
    for (int i = 0; i < N; i++) y[i] = w[i] * x[i];
    return STRATA_OK;
}

static strata_status_t bwd(strata_unit_call_t *c, void *user)
{
    const float *x;
    float *g;
    strata_status_t st;
    (void)user;
    strata_call_input(c, (const void **)&x, NULL);
    if (STRATA_OK != (st = strata_call_grad(c, 0, &g, NULL))) return st;
    for (int i = 0; i < N; i++) g[i] += x[i];
    return STRATA_OK;
}

/* A one-unit model from opts, two steps on a fixed input; its weights go
 * into w. */
static strata_status_t train(const strata_model_opts_t *opts, float *w, strata_model_t **keep_p)
{
    strata_model_t *m = NULL;
    strata_unit_t *u;
    size_t dims[1] = { N };
    strata_init_t init = { .kind = STRATA_INIT_NORMAL, .std = 0.5f };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = 0.25f * (float)(i + 1);
    strata_status_t st = strata_model_create(ctx, opts, &m);
    if (STRATA_OK == st) st = strata_model_add_unit(m, "u", fwd, bwd, NULL, &u);
    if (STRATA_OK == st) st = strata_unit_add_param(u, "w", 1, dims, STRATA_F32, init, NULL);
    if (STRATA_OK == st) st = strata_model_commit(m);
    for (int s = 0; s < 2 && STRATA_OK == st; s++) {
        const void *out;
        size_t ob;
        float ones[N];
        for (int i = 0; i < N; i++) ones[i] = 1;
        st = strata_model_step_begin(m, 1);
        if (STRATA_OK == st) st = strata_model_forward(m, x, sizeof x, NULL, &out, &ob);
        if (STRATA_OK == st) st = strata_model_backward(m, ones, sizeof ones);
        if (STRATA_OK == st) st = strata_model_step_end(m);
    }
    if (STRATA_OK == st) st = strata_unit_read_param(u, 0, w, N);
    if (STRATA_OK == st && keep_p) *keep_p = m;
    else strata_model_destroy(m);
    return st;
}

static void test_initialisers(void)
{
    struct { old_opts_t o; unsigned char after[64]; } old;
    memset(&old, CANARY, sizeof old);
    is_int(strata_model_opts_init((strata_model_opts_t *)&old.o, sizeof old.o), STRATA_OK,
           "strata_model_opts_init takes an older program's %zu-byte struct", sizeof old.o);
    ok(sizeof old.o == old.o.size && 1e-3f == old.o.lr && 0.999f == old.o.beta2 &&
       STRATA_OPTIM_ADAMW == old.o.optimizer && all_bytes(old.after, sizeof old.after, CANARY),
       "it fills the defaults of the fields the program has and writes nothing beyond");
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    ok(sizeof o == o.size && 1234 == o.seed && 1 == o.progress_thread && 1 == o.reshard_after_forward,
       "strata_model_opts_default sets size %zu and the defaults", sizeof o);
    new_opts_t n;
    memset(&n, CANARY, sizeof n);
    strata_model_opts_init(&n.now, sizeof n);
    ok(sizeof n == n.now.size && 0 == n.later && 1234 == n.now.seed,
       "a newer program's larger struct: the fields this library lacks are zeroed");
    is_int(strata_model_opts_init(&o, 12), STRATA_ERR_INVALID, "a size no struct has (12) is refused");
    strata_ckpt_save_opts_t so;
    memset(&so, CANARY, sizeof so);
    ok(STRATA_OK == strata_ckpt_save_opts_default(&so) && sizeof so == so.size &&
       STRATA_F32 == so.half_copy && 0 == so.keep, "strata_ckpt_save_opts_default: size and defaults");
}

static void test_older_opts(void)
{
    float w_old[N], w_now[N], w_lr[N];
    old_opts_t old;
    strata_model_opts_init((strata_model_opts_t *)&old, sizeof old);
    old.optimizer = STRATA_OPTIM_SGD;
    old.lr = 0.05f;
    old.momentum = 0.5f;
    strata_model_opts_t now;
    strata_model_opts_default(&now);
    now.optimizer = STRATA_OPTIM_SGD;
    now.lr = 0.05f;
    now.momentum = 0.5f;
    strata_status_t st = train((const strata_model_opts_t *)&old, w_old, NULL);
    ok(STRATA_OK == st, "a model from an older program's options trains: %s",
       STRATA_OK == st ? "ok" : strata_last_error(ctx));
    st = train(&now, w_now, NULL);
    ok(STRATA_OK == st && 0 == memcmp(w_old, w_now, sizeof w_old),
       "it equals the model from today's options with the missing fields at their defaults");
    now.lr = 0.01f;
    st = train(&now, w_lr, NULL);
    ok(STRATA_OK == st && 0 != memcmp(w_old, w_lr, sizeof w_old),
       "and the fields it has are read (another lr gives other weights)");
}

static void test_stats(void)
{
    float w[N];
    strata_model_t *m = NULL;
    if (STRATA_OK != train(NULL, w, &m)) bail_out("train: %s", strata_last_error(ctx));
    struct { old_stats_t s; unsigned char after[256]; } old;
    memset(&old, CANARY, sizeof old);
    old.s.size = sizeof old.s;
    is_int(strata_model_stats(m, (strata_model_stats_t *)&old.s), STRATA_OK,
           "strata_model_stats takes an older program's %zu-byte struct", sizeof old.s);
    ok(2 == old.s.steps && old.s.step_s > 0 && sizeof old.s == old.s.size &&
       all_bytes(old.after, sizeof old.after, CANARY),
       "it fills the fields the program has (steps %d) and nothing beyond", old.s.steps);
    strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
    ok(STRATA_OK == strata_model_stats(m, &ms) && 2 == ms.steps && sizeof ms == ms.size &&
       -1 == ms.grad_norm, "STRATA_MODEL_STATS_INIT: every field filled");
    struct { strata_model_stats_t now; uint64_t later; } big;
    memset(&big, CANARY, sizeof big);
    big.now.size = sizeof big;
    ok(STRATA_OK == strata_model_stats(m, &big.now) && 2 == big.now.steps &&
       all_bytes(&big.later, sizeof big.later, CANARY),
       "a newer program's larger struct: this library's fields filled, the rest untouched");
    ms.size = 0;
    is_int(strata_model_stats(m, &ms), STRATA_ERR_INVALID, "stats with size 0 are refused");
    ok(has("STRATA_MODEL_STATS_INIT"), "the message names the initialiser: %s", strata_last_error(ctx));
    strata_model_destroy(m);
}

static void test_bad_opts(void)
{
    strata_model_t *m = NULL;
    strata_model_opts_t o;
    memset(&o, 0, sizeof o);
    o.lr = 1e-3f;
    is_int(strata_model_create(ctx, &o, &m), STRATA_ERR_INVALID, "options with size 0 are refused");
    ok(has("strata_model_opts_default"), "the message says to call strata_model_opts_default: %s",
       strata_last_error(ctx));
    strata_model_opts_default(&o);
    o.size = (size_t)0xdeadbeef;
    is_int(strata_model_create(ctx, &o, &m), STRATA_ERR_INVALID, "a garbage size is refused");
    new_opts_t n;
    strata_model_opts_init(&n.now, sizeof n);
    n.later = 7;
    is_int(strata_model_create(ctx, &n.now, &m), STRATA_ERR_INVALID,
           "a newer program's option this library lacks, set, is refused");
    ok(has("newer strata.h"), "the message says the program is newer: %s", strata_last_error(ctx));
    n.later = 0;
    ok(STRATA_OK == strata_model_create(ctx, &n.now, &m), "left at zero, the newer struct is taken");
    strata_model_destroy(m);
}

/* strata_ckpt_save with bad, newer and good save options, on a one-unit
 * layout */
static void test_save_opts(const char *dir)
{
    float shard[4] = { 1, 2, 3, 4 };
    strata_ckpt_param_t p = { .name = "w", .ndims = 1, .dims = { 4 }, .offset = 0 };
    strata_ckpt_unit_t u = { .name = "u", .npad = 4, .nparams = 1, .params = &p, .shard = shard };
    strata_ckpt_layout_t L = { .nunits = 1, .units = &u, .shard_size = 1, .world_size = 1,
                               .train = { .step = 3 } };
    strata_ckpt_save_opts_t so;
    memset(&so, 0, sizeof so);
    is_int(strata_ckpt_save(ctx, &L, dir, &so, NULL, 0), STRATA_ERR_INVALID,
           "save options with size 0 are refused");
    ok(has("strata_ckpt_save_opts_default"), "the message names strata_ckpt_save_opts_default");
    new_save_opts_t n;
    strata_ckpt_save_opts_init(&n.now, sizeof n);
    n.later = 1;
    is_int(strata_ckpt_save(ctx, &L, dir, &n.now, NULL, 0), STRATA_ERR_INVALID,
           "a newer program's save option this library lacks, set, is refused");
    n.later = 0;
    n.now.keep = 1;
    char path[512];
    strata_status_t st = strata_ckpt_save(ctx, &L, dir, &n.now, path, sizeof path);
    ok(STRATA_OK == st && 0 == access(path, R_OK), "left at zero, it saves (%s)",
       STRATA_OK == st ? path : strata_last_error(ctx));
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    plan(25);
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, NULL, &ctx)) bail_out("strata_init failed");
    tap_use_comm(MPI_COMM_WORLD);
    char dir[] = "/tmp/abi_grow.XXXXXX";
    if (!mkdtemp(dir)) bail_out("mkdtemp failed");
    test_initialisers();
    test_older_opts();
    test_stats();
    test_bad_opts();
    test_save_opts(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) diag("could not remove %s", dir);
    strata_finalize(ctx);
    return done_testing();
}
