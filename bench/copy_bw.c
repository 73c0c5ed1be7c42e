/*
 * copy_bw.c - the cuda backend's copy engines against plain
 * cudaMemcpyAsync, in the same run, through libstrata's public API.
 *
 *   copy_bw [--json] [--sizes LIST] [--pairs N]
 *
 * d2h: strata_block_move of a device block to the pinned-host tier, h2d
 * the way back, each followed by strata_event_wait (no link model, so no
 * pacing); the reference is one cudaMemcpyAsync of the same bytes on a
 * non-blocking stream between a cudaMalloc'd and a cudaHostAlloc'd buffer,
 * followed by cudaStreamSynchronize. Both sides copy into a destination
 * that was written before (the engine's lands on the same span each time,
 * checked). Two untimed warm-up pairs, then N pairs whose order alternates
 * (engine first, reference first, ...); per size and direction the median
 * of each side in GB/s and, as the ratio, the median of the per-pair
 * ratios (reference time / engine time: 1.0 is as fast as the plain copy).
 *
 * --sizes: comma-separated sizes (default 1M,16M,256M); --pairs: per size
 * (default 20, an even number). Table on stdout; --json: one line per row,
 * {"path","bytes","gbs","ref_gbs","ratio","pairs","chunk_size"}.
 * Without a CUDA device (or a build without CUDA) it says so on stderr,
 * prints {"skip":"..."} with --json, and exits 77 (the skip status).
 */
#include "config.h"
#include "strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SKIP 77

static int json;

static int skip(const char *why)
{
    fprintf(stderr, "copy_bw: skipped: %s\n", why);
    if (json) printf("{\"skip\":\"%s\"}\n", why);
    return SKIP;
}

static int usage(const char *msg)
{
    fprintf(stderr, "copy_bw: %s\nusage: copy_bw [--json] [--sizes 1M,16M,256M] [--pairs N]\n",
            msg);
    return 2;
}

/* The sizes of a comma-separated list into v[0..cap); their count, or -1. */
static int parse_sizes(const char *list, size_t *v, int cap)
{
    char buf[256];
    int n = 0;
    if (strlen(list) >= sizeof buf) return -1;
    strcpy(buf, list);
    for (char *save = NULL, *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        if (n == cap || STRATA_OK != strata_parse_size(s, &v[n]) || 0 == v[n]) return -1;
        n++;
    }
    return n;
}

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#include "stats.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(strata_context_t *ctx, const char *what)
{
    fprintf(stderr, "copy_bw: %s: %s\n", what, ctx ? strata_last_error(ctx) : "");
    exit(1);
}

static void cuda_check(cudaError_t e, const char *what)
{
    if (cudaSuccess == e) return;
    fprintf(stderr, "copy_bw: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}

static double engine_time(strata_context_t *ctx, strata_block_t *b, strata_tier_t dst)
{
    strata_event_t *ev;
    double t0 = now();
    if (STRATA_OK != strata_block_move(b, dst, 0, NULL, &ev)) die(ctx, "strata_block_move");
    if (STRATA_OK != strata_event_wait(ev)) die(ctx, "strata_event_wait");
    double t = now() - t0;
    strata_event_release(ev);
    return t;
}

static double ref_time(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    double t0 = now();
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return now() - t0;
}

static void row(const char *path, size_t bytes, size_t chunk, double *t, double *r, int n)
{
    double q[n];
    for (int i = 0; i < n; i++) q[i] = r[i] / t[i];
    double ratio = median(q, n);
    double gbs = (double)bytes / median(t, n) / 1e9, ref = (double)bytes / median(r, n) / 1e9;
    char s[32], c[32];
    if (json)
        printf("{\"path\":\"%s\",\"bytes\":%zu,\"gbs\":%.3f,\"ref_gbs\":%.3f,\"ratio\":%.3f,"
               "\"pairs\":%d,\"chunk_size\":%zu}\n", path, bytes, gbs, ref, ratio, n, chunk);
    else
        printf("%-4s %9s %9.2f %9.2f %7.3f %5d %9s\n", path, strata_format_size(bytes, s, sizeof s),
               gbs, ref, ratio, n, strata_format_size(chunk, c, sizeof c));
    fflush(stdout);
}

/* One size, both directions: the engine between its tiers, the reference
 * between its own device and pinned buffers. */
static void bench_size(strata_context_t *ctx, size_t bytes, size_t chunk, int n, cudaStream_t s)
{
    double t[n], r[n];
    void *dref, *href;
    cuda_check(cudaMalloc(&dref, bytes), "cudaMalloc");
    cuda_check(cudaHostAlloc(&href, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    cuda_check(cudaMemset(dref, 0x3c, bytes), "cudaMemset");
    memset(href, 0x3c, bytes);
    strata_block_t *b;
    if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, bytes, STRATA_TAG_WORKSPACE, &b))
        die(ctx, "strata_block_alloc");
    cuda_check(cudaMemset(strata_block_ptr(b, STRATA_TIER_DEVICE), 0x3c, bytes), "cudaMemset");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    engine_time(ctx, b, STRATA_TIER_PINNED_HOST);   /* the host copy, written once */
    void *hspan = strata_block_ptr(b, STRATA_TIER_PINNED_HOST);
    void *dspan = strata_block_ptr(b, STRATA_TIER_DEVICE);
    for (int dir = 0; dir < 2; dir++) {
        /* d2h: the device copy stays, the host one is evicted before each
         * move; h2d the other way round */
        strata_tier_t dst = dir ? STRATA_TIER_DEVICE : STRATA_TIER_PINNED_HOST;
        void *span = dir ? dspan : hspan;
        for (int i = -2; i < n; i++) {               /* i < 0: warm-up */
            double te = 0, tr = 0;
            for (int k = 0; k < 2; k++) {
                if ((0 == k) == (0 == (i & 1))) {
                    if (STRATA_OK != strata_block_evict(b, dst)) die(ctx, "strata_block_evict");
                    te = engine_time(ctx, b, dst);
                    if (strata_block_ptr(b, dst) != span) die(ctx, "the move landed on another span");
                } else {
                    tr = dir ? ref_time(dref, href, bytes, s) : ref_time(href, dref, bytes, s);
                }
            }
            if (i >= 0) { t[i] = te; r[i] = tr; }
        }
        row(dir ? "h2d" : "d2h", bytes, chunk, t, r, n);
    }
    strata_block_free(b);
    cudaFree(dref);
    cudaFreeHost(href);
}

static int run(const size_t *sizes, int nsizes, int pairs)
{
    int ndev = 0;
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        (void)cudaGetLastError();
        return skip("no CUDA device");
    }
    size_t max = 0;
    for (int i = 0; i < nsizes; i++) max = sizes[i] > max ? sizes[i] : max;
    strata_config_t *cfg = NULL;
    strata_context_t *ctx;
    if (STRATA_OK != strata_config_create(&cfg)) die(NULL, "strata_config_create");
    strata_config_read_env(cfg, NULL, 0);           /* STRATA_CHUNK_SIZE=... to try others */
    strata_config_set(cfg, "backend", "cuda", NULL, 0);
    strata_config_set_size(cfg, "device_mem", max + (64u << 20), NULL, 0);
    strata_config_set_size(cfg, "host_mem", max + (64u << 20), NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) die(NULL, "strata_init");
    size_t chunk = 0;
    if (STRATA_OK != strata_config_get_size(strata_get_config(ctx), "chunk_size", &chunk)) chunk = 0;
    cudaStream_t s;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    if (!json)
        printf("%-4s %9s %9s %9s %7s %5s %9s\n", "path", "size", "GB/s", "ref_GB/s", "ratio",
               "pairs", "chunk");
    for (int i = 0; i < nsizes; i++) bench_size(ctx, sizes[i], chunk, pairs, s);
    cudaStreamDestroy(s);
    strata_finalize(ctx);
    return 0;
}
#else
static int run(const size_t *sizes, int nsizes, int pairs)
{
    (void)sizes; (void)nsizes; (void)pairs;
    return skip("built without CUDA");
}
#endif

int main(int argc, char **argv)
{
    size_t sizes[16] = { (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20 };
    int nsizes = 3, pairs = 20;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--json")) json = 1;
        else if (0 == strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if ((nsizes = parse_sizes(argv[++i], sizes, 16)) <= 0)
                return usage("--sizes: a comma-separated list of 1..16 sizes > 0 (1M,16M,...)");
        } else if (0 == strcmp(argv[i], "--pairs") && i + 1 < argc) {
            char *end;
            long p = strtol(argv[++i], &end, 10);
            if (*end || p < 2 || p > 1000 || (p & 1)) return usage("--pairs: an even number in 2..1000");
            pairs = (int)p;
        } else return usage("unknown option");
    }
    return run(sizes, nsizes, pairs);
}
