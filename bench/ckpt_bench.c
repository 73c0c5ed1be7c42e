/*
 * ckpt_bench.c - checkpoint save and load against raw parallel file I/O of
 * the same size in the same directory, in the same run, interleaved over
 * the repeats, medians reported. Even repeats run save, raw write, load,
 * raw read; odd repeats raw write, save, raw read, load. On this kind of
 * machine an operation right after a large write is slowed by the write
 * still draining below the guest (measured: the second of two identical
 * 1 GiB parallel writes ran at 1.0 GB/s against 2.0; a load right after
 * the raw write at 0.7 of the raw read, right before it at 0.9), so a
 * fixed order would favour one side of each pair; alternating gives each
 * side each place equally often (use an even number of repeats).
 *
 *   ckpt_bench [--json] [--header] [--bytes SIZE] [--repeats N] [--dir DIR]
 *
 * SIZE is the model + optimizer state (fp32 parameters, exp_avg,
 * exp_avg_sq: three equal parts), default 1G. Raw reference: every rank
 * pwrite()s / pread()s its own contiguous 1/W of one file. Both sides
 * fsync before a write counts as done, and both drop their file from the
 * page cache (posix_fadvise DONTNEED) before a timed read. A time is the
 * slowest rank's; GB/s are 1e9 bytes per second of state bytes.
 *
 * The training loop's stall per save: the MLP of examples/mlp (NUNITS
 * layers, AdamW) holding about the same state trains on two contexts,
 * ckpt_async off and on. A repeat times one plain step, then a save and
 * the step after it, on each (the order alternating). Synchronous, the
 * loop is held for the whole save. Asynchronous, it is held for the call
 * and for the next step's waits for the copy of a unit before its
 * optimizer runs (strata_model_stats' ckpt_wait_s): stall_ratio = that
 * over the synchronous save, medians (the slowest rank's). The loop also
 * shares the cores with the writer: cost = (save + step) - plain step,
 * and cost_ratio the asynchronous cost over the synchronous one -- near 1
 * where the write is CPU-bound and the cores are all busy (a page-cache
 * write on a machine with no core to spare), near the stall where they
 * are not. strata_model_save_wait then ends the write, untimed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata.h"
#include "examples/mlp/mlp_model.h"
#include "stats.h"

#define NUNITS 4

static int W, R;
static strata_context_t *ctx;

static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static void die(const char *what)
{
    fprintf(stderr, "ckpt_bench rank %d: %s: %s\n", R, what, ctx ? strata_last_error(ctx) : strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A model on a context of its own (ckpt_async on or off): the MLP, NUNITS
 * layers of width x width, trained one step at a time. */
typedef struct {
    strata_context_t *ctx;
    strata_model_t   *model;
    mlp_t             mlp;
    uint64_t          step;
} state_model_t;

static void state_model(state_model_t *sm, int async, int width)
{
    strata_config_t *cfg;
    memset(sm, 0, sizeof *sm);
    if (strata_config_create(&cfg) || strata_config_read_env(cfg, NULL, 0) ||
        strata_config_set(cfg, "ckpt_async", async ? "on" : "off", NULL, 0) ||
        strata_init(MPI_COMM_WORLD, cfg, &sm->ctx))
        die("strata_init (model)");
    strata_config_destroy(cfg);
    ctx = sm->ctx;
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    o.optimizer = STRATA_OPTIM_ADAMW;
    if (strata_model_create(sm->ctx, &o, &sm->model) || mlp_build(sm->model, &sm->mlp, NUNITS, width) ||
        strata_model_commit(sm->model))
        die("the MLP");
}

/* One training step (the slowest rank's seconds). */
static double train_step(state_model_t *sm)
{
    mlp_train_t a = { .batch = 4, .accum = 1, .steps = 1, .data_seed = 1000 + sm->step++,
                      .data_rank = R, .data_ranks = W };
    ctx = sm->ctx;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (mlp_train(sm->model, &sm->mlp, &a, NULL)) die("mlp_train");
    return slowest(MPI_Wtime() - t0);
}

/* A save into dir and the step after it (the slowest rank's seconds):
 * *all_p both, *held_p the save call and the step's waits for the copy;
 * then the write in the background, if any, waited for untimed. */
static void save_and_step(state_model_t *sm, const char *dir, double *all_p, double *held_p)
{
    strata_model_ckpt_t info = { .keep = 1, .half_copy = STRATA_F32 };
    char path[4200];
    ctx = sm->ctx;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (strata_model_save(sm->model, dir, &info, path, sizeof path)) die("strata_model_save");
    double call = MPI_Wtime() - t0;
    double step = train_step(sm);
    strata_model_stats_t st = STRATA_MODEL_STATS_INIT;
    strata_model_stats(sm->model, &st);
    *held_p = slowest(call + st.ckpt_wait_s);
    *all_p = slowest(call) + step;
    ctx = sm->ctx;
    if (strata_model_save_wait(sm->model, NULL, 0)) die("strata_model_save_wait");
}

/* Raw reference: each rank writes its contiguous part of one file, fsyncs. */
/* Both sides start from no file: deleting the previous one is not timed
 * (a checkpoint save makes a new file; rank 0 creates the raw one inside
 * the timed region, as HDF5 does). */
static void remove_before(const char *path)
{
    if (0 == R) unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
}

static double raw_write(const char *path, const char *buf, size_t off, size_t len)
{
    remove_before(path);
    double t0 = MPI_Wtime();
    if (0 == R) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("create raw file");
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(path, O_WRONLY);
    if (fd < 0) die("open raw file");
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(fd, buf + done, len - done, (off_t)(off + done));
        if (n <= 0) die("pwrite");
        done += (size_t)n;
    }
    if (fsync(fd)) die("fsync");
    close(fd);
    return slowest(MPI_Wtime() - t0);
}

static double raw_read(const char *path, char *buf, size_t off, size_t len)
{
    drop_cache(path);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open raw file");
    for (size_t done = 0; done < len;) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n <= 0) die("pread");
        done += (size_t)n;
    }
    close(fd);
    return slowest(MPI_Wtime() - t0);
}

int main(int argc, char **argv)
{
    int json = 0, header = 0, repeats = 4;
    size_t bytes = (size_t)1 << 30;
    const char *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--header")) header = 1;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) strata_parse_size(argv[++i], &bytes);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else {
            fprintf(stderr, "usage: ckpt_bench [--json] [--header] [--bytes SIZE] [--repeats N] [--dir DIR]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > 51) repeats = 4;
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    if (strata_init(MPI_COMM_WORLD, NULL, &ctx)) die("strata_init");

    /* NUNITS units, each a [rows, 1000] matrix and a 1-d tail whose sizes
     * are not multiples of W: shards cut rows and span both parameters */
    uint64_t per_unit = bytes / 12 / NUNITS;      /* parameter elements per unit */
    if (per_unit < 2000) per_unit = 2000;
    strata_ckpt_unit_t units[NUNITS];
    strata_ckpt_param_t params[NUNITS][2];
    strata_ckpt_state_t states[NUNITS][2];
    strata_ckpt_scalar_t scalars[NUNITS][1];
    static const char *const unames[NUNITS] = { "block.0", "block.1", "block.2", "block.3" };
    size_t shard_total = 0;
    for (int u = 0; u < NUNITS; u++) {
        uint64_t rows = per_unit * 9 / 10 / 1000, tail = per_unit - rows * 1000 + 7;
        params[u][0] = (strata_ckpt_param_t){ "w", 2, { rows, 1000 }, 0 };
        params[u][1] = (strata_ckpt_param_t){ "b", 1, { tail }, rows * 1000 };
        uint64_t n = rows * 1000 + tail, npad = (n + (uint64_t)W - 1) / (uint64_t)W * (uint64_t)W;
        size_t len = (size_t)(npad / (uint64_t)W);
        float *sh = malloc(len * sizeof(float)), *m = malloc(len * sizeof(float)), *v = malloc(len * sizeof(float));
        if (!sh || !m || !v) die("malloc");
        for (size_t i = 0; i < len; i++) {
            sh[i] = (float)(i % 1000) * 0.001f + (float)R;
            m[i] = -sh[i];
            v[i] = sh[i] * sh[i];
        }
        states[u][0] = (strata_ckpt_state_t){ "exp_avg", m };
        states[u][1] = (strata_ckpt_state_t){ "exp_avg_sq", v };
        scalars[u][0] = (strata_ckpt_scalar_t){ "step", 1 };
        units[u] = (strata_ckpt_unit_t){ unames[u], npad, 2, params[u], sh, 2, states[u], 1, scalars[u] };
        shard_total += 3 * len * sizeof(float);
    }
    strata_ckpt_layout_t L = { NUNITS, units, W, R, 0, W, { 1, 0, NULL, 0 }, 0, NULL };
    size_t state_bytes = 0;
    MPI_Allreduce(&shard_total, &state_bytes, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);

    /* raw reference: the same bytes, each rank one contiguous part */
    size_t raw_len = shard_total;
    size_t raw_off = 0;
    MPI_Exscan(&raw_len, &raw_off, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == R) raw_off = 0;
    char *raw = malloc(raw_len);
    if (!raw) die("malloc raw");
    memset(raw, 0x3c, raw_len);

    /* names of this run only (rank 0's pid): runs sharing a directory
     * must not delete or overwrite each other's files */
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char ck[4096], rawpath[4096];
    snprintf(ck, sizeof ck, "%s/ckpt-bench-%d-%ld.h5", dir, W, pid);
    snprintf(rawpath, sizeof rawpath, "%s/ckpt-bench-raw-%d-%ld.bin", dir, W, pid);
    double ts[51], tw[51], tl[51], tr[51];
    for (int k = 0; k < repeats; k++) {
        int raw_first = k % 2;
        if (raw_first) tw[k] = raw_write(rawpath, raw, raw_off, raw_len);
        remove_before(ck);
        double t0 = MPI_Wtime();
        if (strata_ckpt_write(ctx, &L, ck, NULL)) die("strata_ckpt_write");
        ts[k] = slowest(MPI_Wtime() - t0);
        if (!raw_first) tw[k] = raw_write(rawpath, raw, raw_off, raw_len);

        if (raw_first) tr[k] = raw_read(rawpath, raw, raw_off, raw_len);
        drop_cache(ck);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (strata_ckpt_load(ctx, &L, ck)) die("strata_ckpt_load");
        tl[k] = slowest(MPI_Wtime() - t0);
        if (!raw_first) tr[k] = raw_read(rawpath, raw, raw_off, raw_len);
    }
    if (0 == R) {
        unlink(ck);
        unlink(rawpath);
    }
    /* the training loop's stall per save, synchronous and asynchronous */
    strata_context_t *main_ctx = ctx;
    int width = 1;
    while ((double)(width + 1) * (width + 2) * NUNITS * 3 * sizeof(float) <= (double)bytes) width++;
    state_model_t ms, ma;
    state_model(&ms, 0, width);
    state_model(&ma, 1, width);
    char dsync[4200], dasync[4200];
    snprintf(dsync, sizeof dsync, "%s/ckpt-bench-sync-%d-%ld", dir, W, pid);
    snprintf(dasync, sizeof dasync, "%s/ckpt-bench-async-%d-%ld", dir, W, pid);
    double tsync[51], tstall[51], csync[51], casync[51], held, all, plain;
    train_step(&ms);    /* the first step records and plans: not timed */
    train_step(&ma);
    for (int k = 0; k < repeats; k++)
        for (int j = 0; j < 2; j++) {
            int async = (k + j) % 2;    /* each goes first every other repeat */
            state_model_t *sm = async ? &ma : &ms;
            plain = train_step(sm);
            save_and_step(sm, async ? dasync : dsync, &all, &held);
            if (async) {
                tstall[k] = held;
                casync[k] = all - plain;
            } else {
                tsync[k] = held;      /* the call is the whole save */
                csync[k] = all - plain;
            }
        }
    strata_model_destroy(ms.model);
    strata_model_destroy(ma.model);
    strata_finalize(ms.ctx);
    strata_finalize(ma.ctx);
    ctx = main_ctx;
    if (0 == R) {
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dsync, dasync);
        if (system(cmd)) fprintf(stderr, "ckpt_bench: could not remove %s, %s\n", dsync, dasync);
    }
    double sync_s = median(tsync, repeats), stall_s = median(tstall, repeats);
    double cost_sync = median(csync, repeats), cost_async = median(casync, repeats);
    double gb = (double)state_bytes / 1e9;
    double save = gb / median(ts, repeats), rw = gb / median(tw, repeats);
    double load = gb / median(tl, repeats), rr = gb / median(tr, repeats);
    if (0 == R) {
        if (json) {
            printf("{\"ranks\":%d,\"bytes\":%zu,\"save_gbs\":%.4f,\"raw_write_gbs\":%.4f,\"save_ratio\":%.4f,"
                   "\"load_gbs\":%.4f,\"raw_read_gbs\":%.4f,\"load_ratio\":%.4f,\"sync_save_s\":%.4f,"
                   "\"async_stall_s\":%.4f,\"stall_ratio\":%.4f,\"async_cost_s\":%.4f,"
                   "\"cost_ratio\":%.4f,\"repeats\":%d}\n",
                   W, state_bytes, save, rw, save / rw, load, rr, load / rr, sync_s, stall_s,
                   stall_s / sync_s, cost_async, cost_async / cost_sync, repeats);
        } else {
            if (header)
                printf("%5s %12s %9s %9s %7s %9s %9s %7s %9s %9s %7s %9s %7s   (GB/s, s; medians of %d)\n",
                       "ranks", "bytes", "save", "raw_wr", "ratio", "load", "raw_rd", "ratio",
                       "sync_s", "stall_s", "stall", "cost_s", "cost", repeats);
            printf("%5d %12zu %9.3f %9.3f %7.2f %9.3f %9.3f %7.2f %9.4f %9.4f %7.3f %9.4f %7.3f\n",
                   W, state_bytes, save, rw, save / rw, load, rr, load / rr, sync_s, stall_s,
                   stall_s / sync_s, cost_async, cost_async / cost_sync);
        }
        fflush(stdout);
    }
    for (int u = 0; u < NUNITS; u++) {
        free(units[u].shard);
        free(states[u][0].shard);
        free(states[u][1].shard);
    }
    free(raw);
    strata_finalize(ctx);
    MPI_Finalize();
    return 0;
}
