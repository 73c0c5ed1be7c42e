/*
 * ckpt_rt.c - multi-rank checkpoint tests, started by the t/ckpt-*.t
 * scripts through t/launch:
 *
 *   ckpt_rt roundtrip DIR                 save, load back, check every element
 *                                         (plain, hybrid S=W/2 when W>=4, bf16 copy)
 *   ckpt_rt save DIR STEP [--shard S] [--half bf16|f16] [--keep K]
 *   ckpt_rt load DIR STEP [--shard S]     find the newest checkpoint in DIR, load
 *                                         it on this W and S, check it is STEP's
 */
#include "config.h"
#include "t/tap.h"
#include "t/ckpt_synth.h"

#include <stdlib.h>
#include <string.h>

static strata_context_t *ctx;
static int W, R;

static int save_step(const char *dir, uint64_t step, int S, strata_dtype_t half, int keep, char *path,
                     size_t len)
{
    synth_t s;
    if (synth_init(&s, W, S, R, step, 0)) bail_out("no memory");
    synth_fill(&s);
    strata_ckpt_save_opts_t o;
    strata_ckpt_save_opts_default(&o);
    o.half_copy = half;
    o.keep = keep;
    strata_status_t st = strata_ckpt_save(ctx, &s.L, dir, &o, path, len);
    if (STRATA_OK != st && 0 == R) diag("save: %s: %s", strata_strerror(st), strata_last_error(ctx));
    synth_free(&s);
    return st;
}

/* Load path (or DIR's newest when path is NULL) with shard size S; check. */
static void load_check(const char *dir, const char *path, uint64_t step, int S, const char *what)
{
    char found[4300];
    synth_t s;
    if (synth_init(&s, W, S, R, 0, 0)) bail_out("no memory");
    synth_scribble(&s);
    strata_status_t st = STRATA_OK;
    if (!path) {
        st = strata_ckpt_find_latest(ctx, dir, found, sizeof found);
        ok(STRATA_OK == st, "%s: find_latest in %s -> %s", what, dir, STRATA_OK == st ? found : strata_last_error(ctx));
        path = found;
    }
    st = strata_ckpt_load(ctx, &s.L, path);
    if (STRATA_OK != st && 0 == R) diag("load: %s", strata_last_error(ctx));
    ok(STRATA_OK == st, "%s: load %s on %d ranks, S=%d", what, path, W, S);
    char why[256];
    long bad = synth_check(&s, step, why, sizeof why);
    if (bad) diag("rank %d: %ld wrong, first: %s", R, bad, why);
    ok(0 == bad, "%s: every element, padding zero, scalars, rng and train data as saved", what);
    synth_free(&s);
}

static int arg_int(int argc, char **argv, const char *name, int dflt)
{
    for (int i = 0; i + 1 < argc; i++) if (!strcmp(argv[i], name)) return atoi(argv[i + 1]);
    return dflt;
}

static const char *arg_str(int argc, char **argv, const char *name)
{
    for (int i = 0; i + 1 < argc; i++) if (!strcmp(argv[i], name)) return argv[i + 1];
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    tap_use_comm(MPI_COMM_WORLD);
    if (argc < 3) bail_out("usage: ckpt_rt roundtrip|save|load DIR [STEP] [options]");
    if (strata_init(MPI_COMM_WORLD, NULL, &ctx)) bail_out("strata_init failed");
    const char *mode = argv[1], *dir = argv[2];
    int S = arg_int(argc, argv, "--shard", W);
    char path[4300];

    if (!strcmp(mode, "roundtrip")) {
        plan(8);
        strata_status_t st = save_step(dir, 5, W, STRATA_F32, 0, path, sizeof path);
        ok(STRATA_OK == st, "save step 5 on %d ranks (S=W)", W);
        ok(STRATA_OK == st && strstr(path, "/step-00000005.h5"), "file named step-00000005.h5 (%s)", path);
        load_check(dir, path, 5, W, "same W and S");
        if (W >= 4 && 0 == W % 2) {
            st = save_step(dir, 6, W / 2, STRATA_BF16, 0, path, sizeof path);
            ok(STRATA_OK == st, "hybrid save step 6: S=%d, %d replicas (only replica 0 writes), bf16 copy", W / 2, 2);
            load_check(dir, NULL, 6, W / 2, "hybrid");
        } else {
            st = save_step(dir, 6, W, STRATA_F16, 0, path, sizeof path);
            ok(STRATA_OK == st, "save step 6 with an f16 copy");
            load_check(dir, NULL, 6, W, "with f16 copy");
        }
    } else if (!strcmp(mode, "save") && argc >= 4) {
        plan(1);
        const char *h = arg_str(argc, argv, "--half");
        strata_dtype_t half = !h ? STRATA_F32 : !strcmp(h, "bf16") ? STRATA_BF16 : STRATA_F16;
        uint64_t step = strtoull(argv[3], NULL, 10);
        strata_status_t st = save_step(dir, step, S, half, arg_int(argc, argv, "--keep", 0), path, sizeof path);
        ok(STRATA_OK == st, "save step %llu on %d ranks, S=%d -> %s", (unsigned long long)step, W, S, path);
    } else if (!strcmp(mode, "load") && argc >= 4) {
        plan(3);
        load_check(dir, NULL, strtoull(argv[3], NULL, 10), S, "reshard");
    } else {
        bail_out("unknown mode %s", mode);
    }
    strata_finalize(ctx);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
