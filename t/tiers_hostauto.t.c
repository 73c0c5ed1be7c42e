/*
 * tiers_hostauto.t.c - host_mem=auto, the default: the cap read from a
 * fake /proc tree (half of MemTotal over the node's ranks, a lower cgroup
 * limit deciding); strata_init pins nothing and reports the cap as the
 * budget; blocks pin the region piece by piece as they reach it (a
 * workspace below what is pinned), never 8 GiB for a small run; a block
 * beyond the cap fails naming host_mem; a sized host_mem is as before.
 */
#include "strata.h"
#include "tiers/tiers.h"
#include "base/base.h"
#include "base/test_fault.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static char root[256];

/* Write text into root/path, making its folders. */
static void put(const char *path, const char *text) { tap_put_file(root, path, text); }

/* This process's resident set in bytes (VmRSS). */
static size_t rss(void)
{
    char line[256];
    unsigned long long kb = 0;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (1 == sscanf(line, "VmRSS: %llu kB", &kb)) break;
    if (f) fclose(f);
    return (size_t)kb * 1024;
}

static void test_cap(void)
{
    char what[256], cmd[300];
    snprintf(root, sizeof root, "%s/strata-hostauto.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    mkdir(root, 0700);
    put("/proc/meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8000000 kB\n");
    is_int((long long)tiers_host_auto_cap(root, 0, 2, 0, what, sizeof what), 4LL << 30,
           "auto cap: half of 16 GiB over 2 ranks");
    ok(NULL != strstr(what, "MemTotal") && NULL != strstr(what, "2 ranks"), "named: %s", what);
    put("/proc/self/cgroup", "0::/job\n");
    put("/sys/fs/cgroup/job/memory.max", "2147483648\n");
    is_int((long long)tiers_host_auto_cap(root, 0, 1, 0, what, sizeof what), 1LL << 30,
           "a lower cgroup limit decides");
    ok(NULL != strstr(what, "memory.max"), "named: %s", what);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) bail_out("cannot clean %s", root);
}

static strata_context_t *init(const char *host_mem)
{
    strata_config_t *cfg;
    strata_context_t *ctx;
    strata_config_create(&cfg);
    strata_config_set(cfg, "backend", "host", NULL, 0);
    strata_config_set(cfg, "device_mem", "64M", NULL, 0);
    if (host_mem) strata_config_set(cfg, "host_mem", host_mem, NULL, 0);
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    strata_config_destroy(cfg);
    return ctx;
}

static void test_default(void)
{
    strata_config_t *cfg;
    char text[64], what[256];
    strata_config_create(&cfg);
    ok(STRATA_OK == strata_config_get(cfg, "host_mem", text, sizeof text) &&
       0 == strcmp(text, "auto"), "host_mem defaults to auto");
    strata_config_destroy(cfg);

    size_t rss0 = rss();
    strata_context_t *ctx = init(NULL);
    tiers_state_t *ts = ctx->tiers;
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &u);
    size_t cap = tiers_host_auto_cap("", 0, ctx->node_ranks, 0, what, sizeof what);
    ok(ts->host_auto && u.budget > 0 && u.budget <= cap && 0 == ts->pinned,
       "init pins nothing; the budget is the cap or less (%zu of %zu)", u.budget, cap);
    ok(strstr(tiers_limit_why(ctx, STRATA_TIER_PINNED_HOST), "host_mem"),
       "the budget's reason names host_mem: %s", tiers_limit_why(ctx, STRATA_TIER_PINNED_HOST));

    strata_block_t *a, *w, *b;
    strata_status_t st = strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, MiB,
                                            STRATA_TAG_ACTIVATION, &a);
    ok(STRATA_OK == st && TIERS_PIN_GRAIN == ts->pinned, "a 1 MiB block pins one piece (%zu)",
       ts->pinned);
    ok(STRATA_OK == strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, MiB, STRATA_TAG_WORKSPACE, &w) &&
       TIERS_PIN_GRAIN == ts->pinned &&
       (char *)strata_block_ptr(w, STRATA_TIER_PINNED_HOST) <
           (char *)ts->base[STRATA_TIER_PINNED_HOST] + TIERS_PIN_GRAIN,
       "a workspace goes below what is pinned, not to the top of the cap");
    st = strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 100 * MiB, STRATA_TAG_PARAM, &b);
    ok(STRATA_OK == st && ts->pinned >= 102 * MiB && ts->pinned % TIERS_PIN_GRAIN == 0 && 2 == ts->npin,
       "a 100 MiB block pins a second piece (%zu pinned)", ts->pinned);
    memset(strata_block_ptr(b, STRATA_TIER_PINNED_HOST), 1, 100 * MiB);
    size_t grew = rss() > rss0 ? rss() - rss0 : 0;
    ok(grew < 1024 * MiB, "the process grew by %zu MiB, not 8 GiB", grew / MiB);
    strata_block_free(b);
    strata_block_free(w);
    strata_block_free(a);
    strata_finalize(ctx);
}

static void test_sized(void)
{
    strata_context_t *ctx = init("64M");
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &u);
    strata_block_t *a;
    ok(64 * MiB == u.budget && !ctx->tiers->host_auto &&
       STRATA_OK == strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 32 * MiB, STRATA_TAG_PARAM, &a) &&
       0 == ctx->tiers->pinned, "host_mem=64M: that budget, the region as before");
    strata_block_free(a);
    strata_finalize(ctx);
}

/* The cap as if the node had 256 MiB (the host_auto_mem test fault): a
 * block beyond it fails naming host_mem. NCCL's bytes (the nccl_bytes
 * fault on the host backend) are in the device tier from init. */
static void test_over_cap(void)
{
    setenv("STRATA_TEST_FAULT", "host_auto_mem@268435456,nccl_bytes@1048576", 1);
    if (0 == test_fault_arg("host_auto_mem")) {
        skip(2, "needs the test hooks (configure --enable-test-hooks)");
        return;
    }
    strata_context_t *ctx = init(NULL);
    strata_block_t *a;
    strata_status_t st = strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 200 * MiB,
                                            STRATA_TAG_PARAM, &a);
    ok(STRATA_ERR_TIER_FULL == st && strstr(strata_last_error(ctx), "host_mem"),
       "a block beyond the cap fails naming host_mem: %s", strata_last_error(ctx));
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u);
    ok(MiB == u.used && MiB == u.used_by_tag[STRATA_TAG_WORKSPACE],
       "NCCL's bytes are reserved in the device tier at init (%zu used)", u.used);
    strata_finalize(ctx);
}

int main(void)
{
    int prov;
    /* started here, so that each context's finalize leaves it for the next */
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &prov);
    plan(14);
    test_cap();
    test_default();
    test_sized();
    test_over_cap();
    return done_testing();
}
