/* tiers_storage.t - the HDF5 storage tier: private spill directory and file
 * permissions, removal at finalize, dataset reuse, checksums catching
 * corruption, and each failure (unwritable spill_dir, spill file removed
 * underneath, storage budget, file system full) leaving the block valid
 * where it came from; the process's HDF5 lock serialising the spill's HDF5
 * calls with a checkpoint's. */
#include "strata.h"
#include "tiers/tiers.h"
#include "io/io.h"
#include "tap.h"
#include "tiers_util.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

static char root[] = "/tmp/strata-tstore-XXXXXX";

static strata_context_t *make_ctx(const char *spill_dir, const char *storage_mem, const char *checksums)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create");
    strata_config_set(cfg, "device_mem", "64M", NULL, 0);
    strata_config_set(cfg, "host_mem", "64M", NULL, 0);
    strata_config_set(cfg, "chunk_size", "256K", NULL, 0);
    strata_config_set(cfg, "spill_dir", spill_dir, NULL, 0);
    strata_config_set(cfg, "storage_mem", storage_mem, NULL, 0);
    strata_config_set(cfg, "checksums", checksums, NULL, 0);
    strata_config_set(cfg, "log_level", "error", NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init failed");
    return ctx;
}

static strata_block_t *host_block(strata_context_t *ctx, size_t n, unsigned seed)
{
    strata_block_t *b;
    if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, n, STRATA_TAG_ACTIVATION, &b))
        bail_out("alloc: %s", strata_last_error(ctx));
    uint8_t *p = strata_block_ptr(b, STRATA_TIER_PINNED_HOST);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + seed);
    return b;
}

static int intact(strata_block_t *b, strata_tier_t t, unsigned seed)
{
    const uint8_t *p = strata_block_ptr(b, t);
    if (!p) return 0;
    for (size_t i = 0; i < strata_block_size(b); i++)
        if (p[i] != (uint8_t)(i * 31 + seed)) return 0;
    return 1;
}

static int flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    uint8_t c;
    if (fd < 0 || 1 != pread(fd, &c, 1, (off_t)off)) return -1;
    c ^= 0x5a;
    int r = 1 == pwrite(fd, &c, 1, (off_t)off) ? 0 : -1;
    close(fd);
    return r;
}

static void test_files(void)
{
    strata_context_t *ctx = make_ctx(root, "64G", "on");
    char path[4096], dir[4096];
    struct stat st;
    tiers_spill_path(ctx, path, sizeof path);
    ok('\0' == path[0], "no spill file before the first spill");
    strata_block_t *a = host_block(ctx, MiB + 3, 1), *b = host_block(ctx, MiB + 3, 2);
    ok(STRATA_OK == move_wait(a, STRATA_TIER_STORAGE, 1) && only_in(a, STRATA_TIER_STORAGE), "spilled");
    tiers_spill_path(ctx, path, sizeof path);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    ok(0 == strncmp(dir, root, strlen(root)) && 0 == stat(dir, &st) && S_ISDIR(st.st_mode) &&
       0700 == (st.st_mode & 07777), "private directory under spill_dir with mode 0700 (%s)", dir);
    ok(0 == stat(path, &st) && S_ISREG(st.st_mode) && 0600 == (st.st_mode & 07777), "spill file mode 0600");
    uint64_t off_a, off_b;
    tiers_storage_offset(a, &off_a);
    ok(STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) && only_in(a, STRATA_TIER_PINNED_HOST) &&
       intact(a, STRATA_TIER_PINNED_HOST, 1), "read back bit-exact, storage copy released");
    ok(STRATA_OK == move_wait(b, STRATA_TIER_STORAGE, 1) && STRATA_OK == tiers_storage_offset(b, &off_b) &&
       off_a == off_b, "the next spill of the same size reuses the freed dataset");
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &u);
    ok(u.used == MiB + 256 && u.used_by_tag[STRATA_TAG_ACTIVATION] == MiB + 256 && u.peak == MiB + 256,
       "storage accounting per tag");
    strata_finalize(ctx);
    ok(0 != stat(path, &st) && ENOENT == errno && 0 != stat(dir, &st), "file and directory gone after finalize");
}

static void test_checksums(void)
{
    char path[4096];
    uint64_t off;
    strata_context_t *ctx = make_ctx(root, "64G", "on");
    strata_block_t *a = host_block(ctx, 3 * MiB, 3);
    move_wait(a, STRATA_TIER_STORAGE, 1);
    tiers_spill_path(ctx, path, sizeof path);
    tiers_storage_offset(a, &off);
    ok(0 == flip_byte(path, off + 2 * MiB + 12345), "flipped one byte in the spill file");
    is_int(move_wait(a, STRATA_TIER_PINNED_HOST, 1), STRATA_ERR_CHECKSUM, "read-back fails with CHECKSUM");
    ok(only_in(a, STRATA_TIER_STORAGE), "the block keeps its storage copy; no host copy appears");
    ok(NULL != strstr(strata_last_error(ctx), "checksum mismatch"), "message: %s", strata_last_error(ctx));
    flip_byte(path, off + 2 * MiB + 12345);
    ok(STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) && intact(a, STRATA_TIER_PINNED_HOST, 3),
       "byte restored: read back succeeds");
    strata_finalize(ctx);

    /* the same corruption without checksums comes back as data: the check is what catches it */
    ctx = make_ctx(root, "64G", "off");
    a = host_block(ctx, 3 * MiB, 3);
    move_wait(a, STRATA_TIER_STORAGE, 1);
    tiers_spill_path(ctx, path, sizeof path);
    tiers_storage_offset(a, &off);
    flip_byte(path, off + 2 * MiB + 12345);
    ok(STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) && !intact(a, STRATA_TIER_PINNED_HOST, 3),
       "checksums off: the corrupted byte is returned (so the test above tests something)");
    strata_finalize(ctx);
}

static void test_failures(void)
{
    char path[4096], bad[4096];
    strata_context_t *ctx;
    strata_block_t *a, *b;
    strata_event_t *ev;

    /* unwritable spill_dir: missing, a regular file, read-only (not for root) */
    const char *dirs[3] = { "/nonexistent-strata-dir/spill", bad, root };
    snprintf(bad, sizeof bad, "%s/plainfile", root);
    close(open(bad, O_CREAT | O_WRONLY, 0600));
    char ro[4096];
    snprintf(ro, sizeof ro, "%s/ro", root);
    mkdir(ro, 0500);
    dirs[2] = ro;
    for (int i = 0; i < 3; i++) {
        if (2 == i && 0 == geteuid()) {
            skip(2, "root writes into a mode 0500 directory");
            continue;
        }
        ctx = make_ctx(dirs[i], "64G", "on");
        a = host_block(ctx, 1000, 4);
        is_int(strata_block_move(a, STRATA_TIER_STORAGE, 1, NULL, NULL), STRATA_ERR_IO,
               "spill_dir %s: IO error at once", dirs[i]);
        ok(only_in(a, STRATA_TIER_PINNED_HOST) && intact(a, STRATA_TIER_PINNED_HOST, 4) &&
           NULL != strstr(strata_last_error(ctx), "spill_dir"),
           "block stays valid in host; message names the option: %s", strata_last_error(ctx));
        strata_finalize(ctx);
    }
    unlink(bad);
    rmdir(ro);

    /* spill file removed underneath */
    ctx = make_ctx(root, "64G", "on");
    a = host_block(ctx, MiB, 5);
    b = host_block(ctx, MiB, 6);
    move_wait(a, STRATA_TIER_STORAGE, 1);
    tiers_spill_path(ctx, path, sizeof path);
    ok(0 == unlink(path), "unlinked the spill file");
    ok(STRATA_OK == strata_block_move(b, STRATA_TIER_STORAGE, 1, NULL, &ev) &&
       STRATA_ERR_IO == strata_event_wait(ev), "a spill after that fails with IO");
    strata_event_release(ev);
    ok(only_in(b, STRATA_TIER_PINNED_HOST) && intact(b, STRATA_TIER_PINNED_HOST, 6) &&
       NULL != strstr(strata_last_error(ctx), "removed"),
       "the block stays valid in host: %s", strata_last_error(ctx));
    ok(STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) && intact(a, STRATA_TIER_PINNED_HOST, 5),
       "a block spilled before still reads back through the open handle");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    strata_finalize(ctx);
    struct stat st;
    ok(0 != stat(dir, &st), "directory removed at finalize");

    /* storage budget */
    ctx = make_ctx(root, "1M", "on");
    a = host_block(ctx, 2 * MiB, 7);
    is_int(strata_block_move(a, STRATA_TIER_STORAGE, 1, NULL, NULL), STRATA_ERR_TIER_FULL,
           "2 MiB into a 1 MiB storage budget: TIER_FULL");
    ok(only_in(a, STRATA_TIER_PINNED_HOST) &&
       NULL != strstr(strata_last_error(ctx), "storage tier full: need 2 MiB, budget 1 MiB"),
       "block stays in host: %s", strata_last_error(ctx));
    strata_finalize(ctx);

    /* file system full, simulated with RLIMIT_FSIZE */
    ctx = make_ctx(root, "64G", "on");
    a = host_block(ctx, 64 * KiB, 8);
    b = host_block(ctx, 8 * MiB, 9);
    move_wait(a, STRATA_TIER_STORAGE, 0);
    tiers_spill_path(ctx, path, sizeof path);
    stat(path, &st);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)st.st_size + 1 * MiB;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    ok(STRATA_OK == strata_block_move(b, STRATA_TIER_STORAGE, 1, NULL, &ev) &&
       STRATA_ERR_IO == strata_event_wait(ev), "file system full: the spill fails with IO");
    strata_event_release(ev);
    setrlimit(RLIMIT_FSIZE, &old);
    ok(only_in(b, STRATA_TIER_PINNED_HOST) && intact(b, STRATA_TIER_PINNED_HOST, 9),
       "the block stays valid in host: %s", strata_last_error(ctx));
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &u);
    is_int((long long)u.used, 64 * 1024, "the failed spill's storage space is returned");
    ok(STRATA_OK == move_wait(b, STRATA_TIER_STORAGE, 1) && STRATA_OK == move_wait(b, STRATA_TIER_PINNED_HOST, 1) &&
       intact(b, STRATA_TIER_PINNED_HOST, 9), "with room again, the same spill works");
    strata_finalize(ctx);
}

/* wait_copies: a waiter runs a storage op that needs no HDF5 call itself;
 * ops that need one (the file, a new dataset) stay on the I/O thread,
 * which meanwhile runs a small op queued behind a helped one. */
static unsigned long helped(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    unsigned long h = ts->helped_storage;
    tiers_unlock(ts);
    return h;
}

static int io_head_helped(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    int h = ts->eng[ENG_IO].head && ts->eng[ENG_IO].head->helped;
    tiers_unlock(ts);
    return h;
}

struct mover { strata_block_t *b; strata_status_t st; };

static void *mover_main(void *arg)
{
    struct mover *m = arg;
    m->st = move_wait(m->b, STRATA_TIER_STORAGE, 1);
    return NULL;
}

static void test_waiters(void)
{
    strata_context_t *ctx = make_ctx(root, "64G", "on");
    strata_block_t *a = host_block(ctx, 3 * MiB, 21);
    unsigned long h0 = helped(ctx);
    ok(STRATA_OK == move_wait(a, STRATA_TIER_STORAGE, 1) && helped(ctx) == h0,
       "the first spill (creates the file and a dataset) runs on the I/O thread");
    /* a waiter claims an op within the engine's grace unless it loses the
     * core meanwhile: a few tries */
    int wrote = 0, read = 0, exact = 1;
    int tries = 0;
    for (; tries < 20 && !(wrote && read); tries++) {
        unsigned long h = helped(ctx);
        exact = exact && STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) &&
                intact(a, STRATA_TIER_PINNED_HOST, 21);
        read = read || helped(ctx) > h;
        h = helped(ctx);
        exact = exact && STRATA_OK == move_wait(a, STRATA_TIER_STORAGE, 1);
        wrote = wrote || helped(ctx) > h;
    }
    ok(read && wrote, "a waiter runs a read-back and a spill into a free dataset itself "
       "(read %d, spill %d, %d round trips)", read, wrote, tries);
    ok(exact && STRATA_OK == move_wait(a, STRATA_TIER_PINNED_HOST, 1) &&
       intact(a, STRATA_TIER_PINNED_HOST, 21), "round trips run by waiters are bit-exact, checksummed");
    strata_block_t *c = host_block(ctx, 7 * MiB, 22);
    unsigned long h = helped(ctx);
    ok(STRATA_OK == move_wait(c, STRATA_TIER_STORAGE, 0) && helped(ctx) == h,
       "a spill that needs a new dataset runs on the I/O thread");

    /* the I/O thread creates a dataset for a small spill while a waiter
     * writes a large one */
    strata_block_t *big = host_block(ctx, 40 * MiB, 23), *small;
    move_wait(big, STRATA_TIER_STORAGE, 0);          /* gives it a dataset */
    strata_block_evict(big, STRATA_TIER_STORAGE);
    int was_helped = 0, overtook = 0;
    for (int attempt = 0; attempt < 5 && !(was_helped && overtook); attempt++) {
        small = host_block(ctx, (size_t)(100 + attempt) * KiB, 24);   /* a new size each time */
        struct mover m = { big, STRATA_ERR_STATE };
        pthread_t th;
        if (0 != pthread_create(&th, NULL, mover_main, &m)) bail_out("pthread_create");
        double t0 = base_now();
        while (!(was_helped = io_head_helped(ctx)) && !strata_block_resident(big, STRATA_TIER_STORAGE) &&
               base_now() - t0 < 2.0) { }
        if (was_helped)
            overtook = STRATA_OK == move_wait(small, STRATA_TIER_STORAGE, 0) &&
                       !strata_block_resident(big, STRATA_TIER_STORAGE);
        pthread_join(th, NULL);
        if (STRATA_OK != m.st) bail_out("the large spill failed: %s", strata_last_error(ctx));
        if (STRATA_OK != move_wait(big, STRATA_TIER_PINNED_HOST, 0)) bail_out("read back");
        strata_block_evict(big, STRATA_TIER_STORAGE);
        if (attempt < 4 && !(was_helped && overtook)) strata_block_free(small);
    }
    ok(was_helped && overtook, "the I/O thread spilled a small block (new dataset) while a waiter "
       "wrote a large one");
    ok(intact(big, STRATA_TIER_PINNED_HOST, 23) && STRATA_OK == strata_block_evict(small, STRATA_TIER_PINNED_HOST) &&
       STRATA_OK == move_wait(small, STRATA_TIER_PINNED_HOST, 0) && intact(small, STRATA_TIER_PINNED_HOST, 24),
       "both read back bit-exact");
    strata_finalize(ctx);
}

static void *try_h5_lock(void *arg)
{
    int *got = arg;
    *got = base_h5_trylock();
    if (*got) base_h5_unlock();
    return NULL;
}

static int other_thread_gets_h5_lock(void)
{
    pthread_t t;
    int got = -1;
    if (pthread_create(&t, NULL, try_h5_lock, &got)) bail_out("pthread_create");
    pthread_join(t, NULL);
    return got;
}

/* Debian's HDF5 is not thread-safe: a checkpoint's HDF5 calls (bracketed
 * by ckpt_h5_quiet/restore) and the I/O thread's spill-file calls hold
 * one lock, so a spill that needs a new dataset waits for the checkpoint. */
static void test_h5_lock(void)
{
    ckpt_h5quiet_t q;
    ckpt_h5_quiet(&q);
    ok(0 == other_thread_gets_h5_lock(), "a checkpoint's HDF5 bracket holds the HDF5 lock");
    ckpt_h5_restore(&q);
    ok(1 == other_thread_gets_h5_lock(), "and releases it at the end");

    strata_context_t *ctx = make_ctx(root, "64G", "on");
    strata_block_t *b = host_block(ctx, 64 * KiB, 7);
    strata_event_t *ev = NULL;
    base_h5_lock();                 /* as a checkpoint on this thread would */
    strata_status_t st = strata_block_move(b, STRATA_TIER_STORAGE, 0, NULL, &ev);
    usleep(200 * 1000);
    int done = -1;
    if (STRATA_OK == st) strata_event_query(ev, &done);
    ok(STRATA_OK == st && 0 == done,
       "a first spill (HDF5 file and dataset to create) waits while the lock is held");
    base_h5_unlock();
    st = STRATA_OK == st ? strata_event_wait(ev) : st;
    ok(STRATA_OK == st, "and completes once it is released: %s", strata_last_error(ctx));
    strata_event_release(ev);
    ev = NULL;
    st = strata_block_move(b, STRATA_TIER_PINNED_HOST, 1, NULL, &ev);
    if (STRATA_OK == st) st = strata_event_wait(ev);
    ok(STRATA_OK == st && intact(b, STRATA_TIER_PINNED_HOST, 7), "the data reads back intact");
    strata_event_release(ev);
    strata_block_free(b);
    strata_finalize(ctx);
}

int main(void)
{
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (!mkdtemp(root)) bail_out("mkdtemp: %s", strerror(errno));
    plan(8 + 6 + 6 + 5 + 2 + 4 + 6 + 5);
    test_files();
    test_checksums();
    test_failures();
    test_waiters();
    test_h5_lock();
    int r = rmdir(root);
    MPI_Finalize();
    if (0 != r) diag("%s not empty after the tests", root);
    return done_testing();
}
