/*
 * tiers_bench.c - copy engine and storage tier bandwidth against a
 * reference measured in the same run, on the same buffers.
 *
 *   tiers_bench [--json] [--min SIZE] [--max SIZE] [--repeats N] [--fsync]
 *               [--dir DIR] [--storage-budget SIZE] [--no-interference]
 *
 * d2h, h2d: strata_block_move + strata_event_wait (no link model) vs memcpy
 *   between the same two pre-faulted arena buffers (the bench checks that
 *   every move lands on the same destination span the reference writes).
 *   With wait_copies on (the default) a copy waited on before its engine
 *   starts it runs on the waiting thread; STRATA_WAIT_COPIES=off measures
 *   the engine threads alone (two thread hand-offs per copy).
 * h2s, s2h: the storage tier vs pwrite/pread of the same bytes from the
 *   same host buffer to a file in the same directory, with the same fsync
 *   policy; before every timed read both files are written back and
 *   dropped from the page cache (fdatasync + posix_fadvise DONTNEED), and
 *   before every timed write both files' ranges are wholly in the page
 *   cache and clean, brought in the same way (after the timed reads, both
 *   are dropped again and read back by one untimed pread each, so the
 *   engine's read pattern does not leave its file with other folio sizes
 *   than the reference's); the bench checks residency with mincore and
 *   says on stderr if a pair started otherwise. Both writes go over clean cached pages, so neither
 *   pays for reading pages in or for writing back the other's dirty data
 *   inside its timing; write-back happens between the phases, untimed.
 *   Rows with checksums on and off; with --fsync also with fsync on.
 * interference: sgemm throughput alone vs while d2h copies stream.
 *
 * Fairness on a noisy machine: two untimed warm-up pairs, then pairs of
 * (engine, reference) measurements whose order alternates (A B, B A, ...)
 * so neither side always runs first, in a warmer cache or after the
 * other's write-back; --repeats pairs at least, more for small blocks
 * (up to 512 MiB per side for copies, --storage-budget (2 GiB) and at
 * least 16 pairs for storage; at most 254 pairs), an even number; the
 * medians of each side, and as the ratio the median of the per-pair
 * ratios (see row()).
 */
#include "config.h"
#include "strata.h"
#include "tiers/tiers.h"
#include "stats.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef HAVE_CBLAS
#include <cblas.h>
#endif

static int json;
/* bytes per side timed for a storage row (--storage-budget) */
static size_t storage_budget = (size_t)2 << 30;

static void die(strata_context_t *ctx, const char *what)
{
    fprintf(stderr, "tiers_bench: %s: %s\n", what, ctx ? strata_last_error(ctx) : "");
    exit(1);
}

static double move_time(strata_block_t *b, strata_tier_t dst, strata_context_t *ctx)
{
    strata_event_t *ev;
    double t0 = base_now();
    if (STRATA_OK != strata_block_move(b, dst, 0, NULL, &ev)) die(ctx, "move");
    if (STRATA_OK != strata_event_wait(ev)) die(ctx, "move wait");
    double t = base_now() - t0;
    strata_event_release(ev);
    return t;
}

/*
 * One row from n pairs of times (engine t, reference r, pair i measured
 * back to back; both arrays sorted here). gbs and ref_gbs: the median of
 * each side. ratio: the median of the per-pair ratios (ref time / engine
 * time), with their quartiles for the noise. On a machine whose disk and
 * cores are shared, a burst of someone else's I/O slows both halves of the
 * pairs it hits, so the paired ratio cancels it where the ratio of the two
 * medians need not (seen: 0.38 and 1.76 for the same 64 MiB s2h code);
 * ratio_of_medians is printed too.
 */
static void row(const char *path, size_t bytes, int checksums, int fsync_on, double *t, double *r,
                int n)
{
    double *q = malloc(sizeof(double) * (size_t)n);
    if (!q) { fprintf(stderr, "tiers_bench: out of memory\n"); exit(1); }
    for (int i = 0; i < n; i++) q[i] = r[i] / t[i];
    double q1, q3, ratio;
    qsort(q, (size_t)n, sizeof *q, cmp_double);
    q1 = q[n / 4];
    q3 = q[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
    ratio = median(q, n);
    free(q);
    double gbs = (double)bytes / median(t, n) / 1e9, ref = (double)bytes / median(r, n) / 1e9;
    if (json) {
        printf("{\"path\":\"%s\",\"bytes\":%zu,\"checksums\":%s,\"fsync\":%s,\"gbs\":%.3f,"
               "\"ref_gbs\":%.3f,\"ratio\":%.3f,\"pairs\":%d,\"pair_ratio_q1\":%.3f,"
               "\"pair_ratio_q3\":%.3f,\"ratio_of_medians\":%.3f}\n", path, bytes,
               checksums ? "true" : "false", fsync_on ? "true" : "false", gbs, ref, ratio, n, q1, q3,
               gbs / ref);
    } else {
        char s[32];
        printf("%-4s %10s %9s %5s %9.2f %9.2f %7.2f %5d %5.2f-%-5.2f %7.2f\n", path,
               strata_format_size(bytes, s, sizeof s), checksums ? "on" : "off",
               fsync_on ? "on" : "off", gbs, ref, ratio, n, q1, q3, gbs / ref);
    }
    fflush(stdout);
}

static strata_context_t *make_ctx(size_t max, const char *dir, int checksums)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx;
    if (STRATA_OK != strata_config_create(&cfg)) die(NULL, "strata_config_create");
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set_size(cfg, "device_mem", 2 * max + (64u << 20), NULL, 0);
    strata_config_set_size(cfg, "host_mem", 2 * max + (64u << 20), NULL, 0);
    strata_config_set(cfg, "spill_dir", dir, NULL, 0);
    strata_config_set_int(cfg, "checksums", checksums, NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) die(NULL, "strata_init");
    return ctx;
}

/* Pairs to time for a block: at least `repeats`, more while they stay
 * within `budget` bytes per side; an even number, so that as many pairs
 * run the engine first as run the reference first (a position bias then
 * splits the per-pair ratios into two equal groups and their median falls
 * between them). */
static int pairs_for(size_t bytes, int repeats, size_t budget)
{
    size_t n = bytes ? budget / bytes : 254;
    if (n > 254) n = 254;
    int p = (int)n > repeats ? (int)n : repeats;
    return p + (p & 1);
}

static double *samples(int n)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) die(NULL, "out of memory");
    return v;
}

/* d2h and h2d: the engine against memcpy between the same two buffers. */
static void bench_copies(strata_context_t *ctx, size_t bytes, int repeats)
{
    int n = pairs_for(bytes, repeats, (size_t)512 << 20);
    double *t = samples(n), *r = samples(n);
    for (int dir = 0; dir < 2; dir++) {
        strata_tier_t src = dir ? STRATA_TIER_PINNED_HOST : STRATA_TIER_DEVICE;
        strata_tier_t dst = dir ? STRATA_TIER_DEVICE : STRATA_TIER_PINNED_HOST;
        strata_block_t *b;
        if (STRATA_OK != strata_block_alloc(ctx, src, bytes, STRATA_TAG_WORKSPACE, &b)) die(ctx, "alloc");
        void *s = strata_block_ptr(b, src);
        memset(s, 0x3c, bytes);
        move_time(b, dst, ctx);                     /* faults the destination's pages */
        void *d = strata_block_ptr(b, dst);
        strata_block_evict(b, dst);
        for (int i = -2; i < n; i++) {              /* i < 0: warm-up */
            double te = 0, tr = 0;
            for (int k = 0; k < 2; k++) {
                if ((0 == k) == (0 == (i & 1))) {
                    te = move_time(b, dst, ctx);
                    if (strata_block_ptr(b, dst) != d) die(ctx, "the move landed on another span");
                    strata_block_evict(b, dst);
                } else {
                    double t0 = base_now();
                    memcpy(d, s, bytes);
                    tr = base_now() - t0;
                }
            }
            if (i >= 0) { t[i] = te; r[i] = tr; }
        }
        row(dir ? "h2d" : "d2h", bytes, 0, 0, t, r, n);
        strata_block_free(b);
    }
    free(t);
    free(r);
}

static void drop_cache(int fd)
{
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void pwrite_all(int fd, const char *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w <= 0) { perror("pwrite"); exit(1); }
        p += w; n -= (size_t)w; off += w;
    }
}

static void pread_all(int fd, char *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t r = pread(fd, p, n, off);
        if (r <= 0) { perror("pread"); exit(1); }
        p += r; n -= (size_t)r; off += r;
    }
}

/* Pages of [off, off + n) of fd in the page cache: 0 (none), 1 (some), 2 (all). */
static int residency(int fd, off_t off, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    off_t start = off & ~(off_t)(pg - 1);
    size_t len = n + (size_t)(off - start), pages = (len + (size_t)pg - 1) / (size_t)pg, in = 0;
    if (0 == n) return 2;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, start);
    unsigned char *v = malloc(pages);
    if (m == MAP_FAILED || !v || 0 != mincore(m, len, v)) {
        perror("mincore");
        exit(1);
    }
    for (size_t i = 0; i < pages; i++) in += v[i] & 1;
    munmap(m, len);
    free(v);
    return 0 == in ? 0 : in == pages ? 2 : 1;
}

static int cached(int fd, off_t off, size_t n) { return 2 == residency(fd, off, n); }
static int any_cached(int fd, off_t off, size_t n) { return 0 != residency(fd, off, n); }

/* h2s and s2h against pwrite/pread in the same directory. */
static void bench_storage(strata_context_t *ctx, size_t bytes, int repeats, int checksums, int fsync_on)
{
    strata_block_t *b;
    char spill[4096], ref[4200];
    const strata_tier_t H = STRATA_TIER_PINNED_HOST, S = STRATA_TIER_STORAGE;
    tiers_set_spill_fsync(ctx, fsync_on);
    if (STRATA_OK != strata_block_alloc(ctx, H, bytes, STRATA_TAG_ACTIVATION, &b)) die(ctx, "alloc");
    char *h = strata_block_ptr(b, H);
    memset(h, 0x5a, bytes);
    move_time(b, S, ctx);                           /* creates the spill file and the dataset */
    tiers_spill_path(ctx, spill, sizeof spill);
    snprintf(ref, sizeof ref, "%s.ref", spill);
    int rfd = open(ref, O_RDWR | O_CREAT | O_TRUNC, 0600), sfd = open(spill, O_RDONLY);
    if (rfd < 0 || sfd < 0) { perror("open"); exit(1); }
    pwrite_all(rfd, h, bytes, 0);                   /* allocates the reference's blocks */
    uint64_t off;
    if (STRATA_OK != tiers_storage_offset(b, &off)) die(ctx, "storage offset");
    strata_block_evict(b, S);
    /* at least 16 pairs: the disk is what other processes share most */
    int n = pairs_for(bytes, repeats > 16 ? repeats : 16, storage_budget), uncached = 0, stale = 0;
    double *tw = samples(n), *rw = samples(n), *tr = samples(n), *rr = samples(n);
    char *scratch = malloc(bytes ? bytes : 1);
    if (!scratch) die(NULL, "out of memory");
    for (int i = -2; i < n; i++) {                  /* i < 0: warm-up */
        int engine_first = 0 == (i & 1);
        double te = 0, tref = 0, te2 = 0, tref2 = 0;
        /* write: the host copy is valid; both files' pages are cached and
         * clean, read in the same way (end of the previous round) */
        if (i >= 0 && !(cached(sfd, (off_t)off, bytes) && cached(rfd, 0, bytes))) uncached++;
        for (int k = 0; k < 2; k++) {
            if ((0 == k) == engine_first) {
                te = move_time(b, S, ctx);
            } else {
                double t0 = base_now();
                pwrite_all(rfd, h, bytes, 0);
                if (fsync_on) fdatasync(rfd);
                tref = base_now() - t0;
            }
        }
        /* read: both files written back and dropped from the cache */
        strata_block_evict(b, H);
        drop_cache(sfd);
        drop_cache(rfd);
        if (i >= 0 && (any_cached(sfd, (off_t)off, bytes) || any_cached(rfd, 0, bytes))) stale++;
        for (int k = 0; k < 2; k++) {
            if ((0 == k) == engine_first) {
                te2 = move_time(b, H, ctx);
                if (strata_block_ptr(b, H) != h) die(ctx, "the read landed on another span");
            } else {
                double t0 = base_now();
                pread_all(rfd, h, bytes, 0);
                tref2 = base_now() - t0;
            }
        }
        uint64_t off2;
        if (STRATA_OK != tiers_storage_offset(b, &off2) || off2 != off)
            die(ctx, "the spill landed on another dataset");
        strata_block_evict(b, S);
        /* the next writes start over cached, clean pages that both files
         * got the same way: how the timed reads brought them in (engine
         * and reference differ there) decides the size of the page-cache
         * folios, which the next writes and their write-back would inherit */
        drop_cache(sfd);
        drop_cache(rfd);
        pread_all(sfd, scratch, bytes, (off_t)off);
        pread_all(rfd, scratch, bytes, 0);
        if (i >= 0) { tw[i] = te; rw[i] = tref; tr[i] = te2; rr[i] = tref2; }
    }
    if (uncached)
        fprintf(stderr, "tiers_bench: %s: %d of %d write pairs started with pages of a file not "
                "in the page cache (memory pressure?)\n", strata_format_size(bytes, spill,
                sizeof spill), uncached, n);
    if (stale)
        fprintf(stderr, "tiers_bench: %s: %d of %d read pairs started with pages of a file still "
                "in the page cache\n", strata_format_size(bytes, spill, sizeof spill), stale, n);
    row("h2s", bytes, checksums, fsync_on, tw, rw, n);
    row("s2h", bytes, checksums, fsync_on, tr, rr, n);
    free(tw); free(rw); free(tr); free(rr); free(scratch);
    close(rfd);
    close(sfd);
    unlink(ref);
    strata_block_free(b);
}

/* ---- interference -------------------------------------------------------- */

#ifdef HAVE_CBLAS
struct bg { strata_context_t *ctx; strata_block_t *b; volatile int stop; long copies; };

static void *background(void *arg)
{
    struct bg *g = arg;
    while (!g->stop) {
        move_time(g->b, STRATA_TIER_PINNED_HOST, g->ctx);
        strata_block_evict(g->b, STRATA_TIER_PINNED_HOST);
        g->copies++;
    }
    return NULL;
}

static double sgemm_gflops(double seconds)
{
    enum { N = 384 };
    float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
          *c = malloc(sizeof(float) * N * N);
    for (int i = 0; i < N * N; i++) { a[i] = 1.0f / (float)(i + 1); b[i] = 0.5f; c[i] = 0; }
    long n = 0;
    double t0 = base_now(), t;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
        n++;
    } while ((t = base_now() - t0) < seconds);
    free(a); free(b); free(c);
    return 2.0 * N * N * N * (double)n / t / 1e9;
}

static void bench_interference(strata_context_t *ctx)
{
    struct bg g = { .ctx = ctx };
    if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, 64u << 20, STRATA_TAG_WORKSPACE, &g.b))
        die(ctx, "alloc");
    memset(strata_block_ptr(g.b, STRATA_TIER_DEVICE), 1, 64u << 20);
    sgemm_gflops(0.3);                                   /* warm-up */
    double alone = sgemm_gflops(1.5);
    pthread_t th;
    pthread_create(&th, NULL, background, &g);
    double with = sgemm_gflops(1.5);
    g.stop = 1;
    pthread_join(th, NULL);
    double alone2 = sgemm_gflops(1.5);
    alone = 0.5 * (alone + alone2);
    if (json)
        printf("{\"kind\":\"interference\",\"alone_gflops\":%.2f,\"with_copies_gflops\":%.2f,"
               "\"slowdown\":%.3f,\"copies\":%ld}\n", alone, with, alone / with, g.copies);
    else
        printf("interference: sgemm %.2f GFLOP/s alone, %.2f while %ld x 64 MiB d2h copies streamed "
               "(slowdown %.2fx)\n", alone, with, g.copies, alone / with);
    strata_block_free(g.b);
}
#endif

int main(int argc, char **argv)
{
    int repeats = 7, fsync_both = 0, interference = 1;
    size_t min = 64u << 10, max = 256u << 20;
    const char *dir = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--fsync")) fsync_both = 1;
        else if (!strcmp(argv[i], "--no-interference")) interference = 0;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--min") && i + 1 < argc) strata_parse_size(argv[++i], &min);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) strata_parse_size(argv[++i], &max);
        else if (!strcmp(argv[i], "--storage-budget") && i + 1 < argc)
            strata_parse_size(argv[++i], &storage_budget);
        else { fprintf(stderr, "usage: tiers_bench [--json] [--min SIZE] [--max SIZE] [--repeats N] "
                       "[--fsync] [--dir DIR] [--storage-budget SIZE] [--no-interference]\n"); return 2; }
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (repeats < 1) repeats = 1;
    if (repeats > 254) repeats = 254;
    if (!json) printf("%-4s %10s %9s %5s %9s %9s %7s %5s %s %7s\n", "path", "block", "checksums", "fsync",
                      "GB/s", "ref GB/s", "ratio", "pairs", " q1-q3     ", "med/med");
    for (int cs = 1; cs >= 0; cs--) {
        strata_context_t *ctx = make_ctx(max, dir, cs);
        for (size_t n = min; n <= max; n *= 4) {
            if (cs) bench_copies(ctx, n, repeats);
            for (int f = 0; f <= fsync_both; f++) bench_storage(ctx, n, repeats, cs, f);
        }
#ifdef HAVE_CBLAS
        if (!cs && interference) bench_interference(ctx);
#endif
        strata_finalize(ctx);
    }
    MPI_Finalize();
    return 0;
}
