/* tiers_link.t - the link model: a paced copy takes bytes/bandwidth +
 * latency (within 10%), a paced engine sleeps instead of using the CPU, and
 * a large paced transfer delays a small urgent one by about one chunk, not
 * by its whole length. */
#include "strata.h"
#include "tiers/tiers.h"
#include "tap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define BW  (256.0 * MiB)
#define LAT 0.02

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds this process's threads have waited on a run queue (ready, not
 * running: a crowded host), from /proc/self/task/N/schedstat; 0 where the
 * kernel does not say. A paced copy cannot be faster than the model, but
 * it can be later by the time its engine thread waited for a core. */
static double runq_wait(void)
{
    DIR *d = opendir("/proc/self/task");
    double w = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[64];
        unsigned long long run, wait;
        if ('.' == e->d_name[0]) continue;
        snprintf(path, sizeof path, "/proc/self/task/%.16s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && 2 == fscanf(f, "%llu %llu", &run, &wait)) w += 1e-9 * (double)wait;
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return w;
}

/* Seconds the hypervisor ran something else on this guest's CPUs (steal,
 * the 8th field of /proc/stat's cpu line, summed over the CPUs: an upper
 * bound for one thread); 0 where the kernel does not say. A virtual CPU
 * taken away mid-copy does not show in schedstat: on a shared host a paced
 * 64 MiB copy was once 42 ms late with 1 ms of run-queue wait, which steal
 * would explain (not seen directly). */
static double steal_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = { 0 };
    long hz = sysconf(_SC_CLK_TCK);
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5], &v[6], &v[7]) : 0;
    if (f) fclose(f);
    return 8 == n && hz > 0 ? (double)v[7] / (double)hz : 0;
}

/* A block whose pages are already touched, so timing sees the link model,
 * not page faults: allocate, touch and free a block of the same size in the
 * destination first (best fit returns the same span). */
static strata_block_t *warm_block(strata_context_t *ctx, strata_tier_t src, strata_tier_t dst, size_t n)
{
    strata_block_t *b;
    strata_block_alloc(ctx, dst, n, STRATA_TAG_WORKSPACE, &b);
    memset(strata_block_ptr(b, dst), 1, n);
    strata_block_free(b);
    if (STRATA_OK != strata_block_alloc(ctx, src, n, STRATA_TAG_WORKSPACE, &b)) bail_out("alloc");
    memset(strata_block_ptr(b, src), 7, n);
    return b;
}

/* This machine's own memcpy of n bytes between touched buffers, median of
 * three: the copy work any paced engine must do, whatever it waits for. */
static double memcpy_time(size_t n)
{
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) bail_out("malloc");
    memset(a, 1, n);
    memset(b, 2, n);
    double ts[3];
    for (int i = 0; i < 3; i++) {
        double t0 = base_now();
        memcpy(b, a, n);
        ts[i] = base_now() - t0;
    }
    free(a);
    free(b);
    return ts[0] + ts[1] + ts[2] - fmin(ts[0], fmin(ts[1], ts[2])) - fmax(ts[0], fmax(ts[1], ts[2]));
}

/* The move's wall time; *cpu_p its CPU time, *wait_p its threads' time
 * waiting for a core, on the run queue or stolen by the hypervisor (either
 * may be NULL). */
static double timed_move(strata_block_t *b, strata_tier_t dst, double *cpu_p, double *wait_p)
{
    strata_event_t *ev;
    double c0 = cpu_now(), w0 = runq_wait() + steal_s(), t0 = base_now();
    strata_block_move(b, dst, 0, NULL, &ev);
    strata_event_wait(ev);
    double t = base_now() - t0;
    if (cpu_p) *cpu_p = cpu_now() - c0;
    if (wait_p) *wait_p = runq_wait() + steal_s() - w0;
    strata_event_release(ev);
    return t;
}

int main(void)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx;
    char bw[32];
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create");
    snprintf(bw, sizeof bw, "%.0f", BW);
    strata_config_set(cfg, "device_mem", "256M", NULL, 0);
    strata_config_set(cfg, "host_mem", "256M", NULL, 0);
    strata_config_set(cfg, "chunk_size", "1M", NULL, 0);
    strata_config_set(cfg, "link_d2h_bw", bw, NULL, 0);
    strata_config_set(cfg, "link_h2d_bw", bw, NULL, 0);
    strata_config_set(cfg, "link_latency", "0.02", NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init");
    plan(6);

    /* 64 MiB d2h: 0.25 s + 20 ms */
    strata_block_t *big = warm_block(ctx, STRATA_TIER_DEVICE, STRATA_TIER_PINNED_HOST, 64 * MiB);
    double cpu, wait, want = tiers_link_time(64.0 * MiB, BW, LAT);
    double copy = memcpy_time(64 * MiB);
    double t = timed_move(big, STRATA_TIER_PINNED_HOST, &cpu, &wait);
    if (copy > 0.3 * want) {
        /* memory this slow (a crowded host) leaves no idle time to see */
        skip(2, "this machine's memcpy of 64 MiB takes %.3f s, over 30%% of the %.3f s link "
             "model: pacing cannot be told from copying here", copy, want);
    } else {
        ok(t >= 0.9 * want && t <= 1.1 * want + wait, "paced 64 MiB d2h took %.3f s, model "
           "%.3f s (within 10%%, plus the %.3f s its threads waited for a core or the host stole)", t, want, wait);
        /* An engine that spins while it paces uses all of t; one that sleeps
         * uses the copy work plus wake-ups.  Half of t tells the two apart on
         * any machine: chunk copies after a sleep start cold, and a shared
         * host adds scheduler noise (0.033-0.057 s seen against a 0.011-0.016 s
         * memcpy on a 0.27 s copy). */
        ok(cpu < 0.5 * t + copy, "the process used %.3f s of CPU during the %.3f s paced copy "
           "(a spinning engine uses all of it; < half of it beyond the %.3f s a memcpy "
           "takes)", cpu, t, copy);
    }

    /* small copy: latency dominates */
    strata_block_t *small = warm_block(ctx, STRATA_TIER_PINNED_HOST, STRATA_TIER_DEVICE, 1 * MiB);
    want = tiers_link_time(1.0 * MiB, BW, LAT);
    double ts[3], late = INFINITY;
    for (int i = 0; i < 3; i++) {       /* median of three: the machine is shared */
        ts[i] = timed_move(small, STRATA_TIER_DEVICE, NULL, &wait);
        late = fmin(late, ts[i] - 1.1 * want - wait);   /* the run least late beyond its wait */
        strata_block_evict(small, STRATA_TIER_DEVICE);
    }
    t = ts[0] + ts[1] + ts[2] - fmin(ts[0], fmin(ts[1], ts[2])) - fmax(ts[0], fmax(ts[1], ts[2]));
    ok(t >= 0.9 * want && (t <= 1.1 * want || late <= 0), "paced 1 MiB h2d took %.4f s (median "
       "of 3), model %.4f s (within 10%%, or one run within it plus its wait for a core)", t, want);

    /* a small urgent copy queued behind a large one on the same engine */
    strata_block_evict(big, STRATA_TIER_PINNED_HOST);
    strata_block_t *urgent = warm_block(ctx, STRATA_TIER_DEVICE, STRATA_TIER_PINNED_HOST, 64 * KiB);
    strata_event_t *eb, *eu;
    double t0 = base_now();
    strata_block_move(big, STRATA_TIER_PINNED_HOST, 0, NULL, &eb);
    strata_block_move(urgent, STRATA_TIER_PINNED_HOST, 0, NULL, &eu);
    strata_event_wait(eu);
    double tu = base_now() - t0;
    int big_done = 1;
    strata_event_query(eb, &big_done);
    strata_event_wait(eb);
    double tb = base_now() - t0;
    ok(!big_done, "the small copy completed while the large one was still running");
    ok(tu < 0.3 * tb, "small copy done after %.3f s, the 64 MiB one after %.3f s", tu, tb);
    strata_event_release(eb);
    strata_event_release(eu);
    ok(0 == memcmp(strata_block_ptr(big, STRATA_TIER_PINNED_HOST), strata_block_ptr(big, STRATA_TIER_DEVICE),
                   64 * MiB), "interleaved copies are intact");
    strata_block_free(big);
    strata_block_free(small);
    strata_block_free(urgent);
    strata_finalize(ctx);
    return done_testing();
}
