/*
 * tiers_limits.t.c - what the machine lets the host and storage tiers
 * have (tiers/limits.c), read from fake /proc and /sys trees: the cgroup
 * v2 memory.max, the v1 memory.limit_in_bytes (and its "no limit"), and
 * MemAvailable, the least deciding and named; then strata_init with a
 * storage budget above spill_dir's free space lowers it and says why.
 */
#include "strata.h"
#include "tiers/tiers.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

/* Write text into root/path, making its folders. */
static void put(const char *path, const char *text) { tap_put_file(root, path, text); }

static void fresh(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (root[0] && system(cmd)) bail_out("cannot clean %s", root);
    mkdir(root, 0700);
}

int main(void)
{
    plan(9);
    snprintf(root, sizeof root, "%s/strata-limits.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    char what[256];

    fresh();   /* cgroup v2: the job's own memory.max */
    put("/proc/self/cgroup", "0::/job.slice/run\n");
    put("/sys/fs/cgroup/job.slice/run/memory.max", "1073741824\n");
    put("/proc/meminfo", "MemTotal: 16000000 kB\nMemAvailable: 8000000 kB\n");
    is_int((long long)tiers_host_limit(root, 0, what, sizeof what), 1073741824LL, "cgroup v2 memory.max");
    ok(NULL != strstr(what, "cgroup memory limit") && NULL != strstr(what, "memory.max"), "named: %s", what);

    put("/sys/fs/cgroup/job.slice/run/memory.max", "max\n");   /* v2 without a limit */
    is_int((long long)tiers_host_limit(root, 0, what, sizeof what), 8000000LL * 1024,
           "v2 'max': MemAvailable decides");
    ok(NULL != strstr(what, "MemAvailable"), "named: %s", what);

    fresh();   /* cgroup v1: the memory controller's line */
    put("/proc/self/cgroup", "5:devices:/x\n4:memory:/job\n0::/\n");
    put("/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "2147483648\n");
    put("/proc/meminfo", "MemAvailable: 8000000 kB\n");
    is_int((long long)tiers_host_limit(root, 0, what, sizeof what), 2147483648LL, "cgroup v1 limit_in_bytes");
    ok(NULL != strstr(what, "memory.limit_in_bytes"), "named: %s", what);

    put("/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "9223372036854771712\n");
    is_int((long long)tiers_host_limit(root, 0, what, sizeof what), 8000000LL * 1024,
           "v1 without a limit (2^63 in pages) is none: MemAvailable decides");

    fresh();   /* nothing known: no limit */
    is_int((long long)tiers_host_limit(root, 0, what, sizeof what), 0, "no files: no limit");
    fresh();
    rmdir(root);

    /* strata_init: a storage budget above spill_dir's free space */
    strata_config_t *cfg;
    strata_context_t *ctx;
    strata_config_create(&cfg);
    strata_config_set(cfg, "storage_mem", "1000000G", NULL, 0);
    strata_config_set(cfg, "spill_dir", "/tmp", NULL, 0);
    if (STRATA_OK != strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    strata_config_destroy(cfg);
    strata_tier_usage_t u;
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &u);
    size_t free_b = tiers_storage_limit("/tmp");
    ok(free_b > 0 && u.budget <= free_b + (free_b >> 4) && u.budget >= free_b - (free_b >> 4) &&
       strstr(tiers_limit_why(ctx, STRATA_TIER_STORAGE), "free space of spill_dir"),
       "storage_mem above spill_dir's free space is lowered to it (%zu of %zu free): %s",
       u.budget, free_b, tiers_limit_why(ctx, STRATA_TIER_STORAGE));
    strata_finalize(ctx);
    return done_testing();
}
