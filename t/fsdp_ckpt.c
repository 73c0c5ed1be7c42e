/*
 * fsdp_ckpt.c - model checkpoints through strata_model_save / _load.
 *
 *   fsdp_ckpt resume DIR   train 3 steps, save, train 3 more; a second model
 *                          loads the checkpoint and trains the same 3 steps:
 *                          parameters bitwise equal to the uninterrupted run
 *   fsdp_ckpt save DIR     train 3 steps, save, write every parameter to
 *                          DIR/params.bin (rank 0)
 *   fsdp_ckpt load DIR     on another world size: load DIR's latest
 *                          checkpoint, parameters bitwise equal to
 *                          params.bin, then one more step trains
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/mlp/mlp_model.h"
#include "tap.h"

#define LAYERS 3
#define WIDTH 24

static int W, R;

static strata_model_t *make_model(strata_context_t *ctx, mlp_t *mlp)
{
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    o.optimizer = STRATA_OPTIM_ADAMW;
    o.lr = 1e-2f;
    o.seed = 99;
    strata_model_t *m = NULL;
    if (strata_model_create(ctx, &o, &m) || mlp_build(m, mlp, LAYERS, WIDTH) ||
        strata_model_commit(m))
        bail_out("model set-up failed: %s", strata_last_error(ctx));
    return m;
}

static strata_status_t train(strata_model_t *m, mlp_t *mlp, int first, int steps)
{
    mlp_train_t a = { .batch = 4, .accum = 1, .steps = steps, .data_seed = 5,
                      .data_rank = R, .data_ranks = W, .first_step = first };
    return mlp_train(m, mlp, &a, NULL);
}

/* every parameter of every unit, concatenated, on every rank */
static float *read_all(strata_model_t *m, size_t *n_p)
{
    size_t total = 0, at = 0;
    int nu = strata_model_unit_count(m);
    float *all = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int u = 0; u < nu; u++) {
            strata_unit_t *un = strata_model_unit(m, u);
            for (int i = 0; i < strata_unit_param_count(un); i++) {
                const char *name;
                int nd;
                size_t dims[4], numel = 0;
                strata_unit_param_info(un, i, &name, &numel, &nd, dims);
                if (pass) { strata_unit_read_param(un, i, all + at, numel); at += numel; }
                else total += numel;
            }
        }
        if (!pass && !(all = malloc(total * sizeof *all))) bail_out("out of memory");
    }
    *n_p = total;
    return all;
}

/* The path of the checkpoint and the parameter dump beside it. */
static char path[4096], bin[4200];

/* resume: 3 steps, a save, 3 more; a second model loads the save and
 * trains the same 3 steps bitwise */
static void test_resume(strata_context_t *ctx, const char *dir)
{
    mlp_t mlp_a = { 0 }, mlp_b = { 0 };   /* every layer saves "pre" */
    size_t n, nb;
    plan(6);
    strata_model_t *a = make_model(ctx, &mlp_a);
    ok(STRATA_OK == train(a, &mlp_a, 0, 3), "3 steps");
    uint32_t rng_in = 0xfeedbeef, rng_out = 0;
    strata_model_ckpt_t info = { .data_pos = 12345, .rng = &rng_in, .rng_len = sizeof rng_in };
    ok(STRATA_OK == strata_model_save(a, NULL, &info, path, sizeof path) &&
       strstr(path, dir) && strstr(path, "step-00000003.h5"),
       "saved %s (dir NULL: the option ckpt_dir)", path);
    float *at_save = read_all(a, &n);
    ok(STRATA_OK == train(a, &mlp_a, 3, 3), "3 more steps");
    float *uninterrupted = read_all(a, &n);

    strata_model_t *b = make_model(ctx, &mlp_b);
    strata_model_ckpt_t got = { .rng = &rng_out, .rng_len = sizeof rng_out };
    strata_status_t st = strata_model_load(b, path, &got);
    float *loaded = read_all(b, &nb);
    ok(STRATA_OK == st && nb == n && !memcmp(loaded, at_save, n * sizeof *loaded) &&
       12345 == got.data_pos && 0xfeedbeef == rng_out,
       "load restores parameters bitwise, data position and RNG state: %s",
       STRATA_OK == st ? "ok" : strata_last_error(ctx));
    ok(STRATA_OK == train(b, &mlp_b, 3, 3), "resumed model trains 3 steps");
    float *resumed = read_all(b, &nb);
    ok(!memcmp(resumed, uninterrupted, n * sizeof *resumed),
       "resumed run is bitwise identical to the uninterrupted one");
    free(at_save); free(uninterrupted); free(loaded); free(resumed);
    strata_model_destroy(a);
    strata_model_destroy(b);
}

/* save: 3 steps on W ranks, the checkpoint and rank 0's parameter dump */
static void test_save(strata_context_t *ctx, const char *dir)
{
    mlp_t mlp_a = { 0 };
    size_t n;
    plan(2);
    strata_model_t *a = make_model(ctx, &mlp_a);
    ok(STRATA_OK == train(a, &mlp_a, 0, 3), "3 steps on %d ranks", W);
    float *p = read_all(a, &n);
    int good = STRATA_OK == strata_model_save(a, dir, NULL, path, sizeof path);
    if (good && 0 == R) {
        FILE *f = fopen(bin, "wb");
        good = f && n == fwrite(p, sizeof *p, n, f);
        if (f) fclose(f);
    }
    ok(good, "saved %s and %s", path, bin);
    free(p);
    strata_model_destroy(a);
}

/* load: the latest checkpoint on this rank count, resharded bitwise */
static void test_load(strata_context_t *ctx, const char *dir)
{
    mlp_t mlp_b = { 0 };
    size_t n;
    plan(3);
    strata_model_t *b = make_model(ctx, &mlp_b);
    strata_status_t st = strata_ckpt_find_latest(ctx, dir, path, sizeof path);
    if (STRATA_OK == st) st = strata_model_load(b, path, NULL);
    ok(STRATA_OK == st, "load on %d ranks: %s", W, STRATA_OK == st ? path : strata_last_error(ctx));
    float *p = read_all(b, &n), *want = malloc(n * sizeof *want);
    FILE *f = fopen(bin, "rb");
    int good = f && want && n == fread(want, sizeof *want, n, f);
    if (f) fclose(f);
    ok(good && !memcmp(p, want, n * sizeof *p), "parameters resharded bitwise");
    ok(STRATA_OK == train(b, &mlp_b, 3, 1), "one more step after resharding");
    free(p); free(want);
    strata_model_destroy(b);
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: fsdp_ckpt resume|save|load DIR\n"); return 2; }
    const char *mode = argv[1], *dir = argv[2];
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    strata_config_t *cfg = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", "host", NULL, 0);
    strata_config_set(cfg, "ckpt_dir", dir, NULL, 0);   /* where a NULL dir saves */
    strata_context_t *ctx;
    if (strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    strata_config_destroy(cfg);   /* the context holds a copy */
    snprintf(bin, sizeof bin, "%s/params.bin", dir);
    if (!strcmp(mode, "resume")) test_resume(ctx, dir);
    else if (!strcmp(mode, "save")) test_save(ctx, dir);
    else test_load(ctx, dir);
    int rc = done_testing();
    strata_finalize(ctx);
    MPI_Finalize();
    return rc;
}
