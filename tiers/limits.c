/*
 * limits.c - what the machine lets the host and storage tiers have, read
 * at start: the cgroup's memory limit (v2 memory.max, v1
 * memory.limit_in_bytes, of this process's own cgroup), MemAvailable,
 * RLIMIT_MEMLOCK where the host tier is pinned, and the free space of
 * spill_dir's file system. A budget above one of them would be found out
 * as an OOM kill or ENOSPC in the middle of a step; the tier's budget is
 * lowered to it instead, so the plan is made (and refused) against what
 * there is, with the limit named.
 *
 * The readers take a root folder ("" in the library, a fake tree in the
 * tests) so that v1 and v2 are both tested on any machine.
 */
#include "config.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

/* The first number of file root/path, or 0 when unreadable or "max". */
static size_t read_number(const char *root, const char *path)
{
    char full[1024];
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    int n = fscanf(f, "%llu", &v);
    fclose(f);
    return 1 == n ? (size_t)v : 0;
}

/* This process's cgroup path for the v2 hierarchy ("0::/x") or for the
 * v1 memory controller ("N:memory:/x" or "N:...,memory,...:/x"). */
static int cgroup_path(const char *root, int v2, char *out, size_t len)
{
    char full[1024], line[1024];
    snprintf(full, sizeof full, "%s/proc/self/cgroup", root);
    FILE *f = fopen(full, "r");
    if (!f) return -1;
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        const char *ctrl = c1 + 1;
        int match = v2 ? 0 == strcmp(line, "0") && '\0' == ctrl[0]
                       : NULL != strstr(ctrl, "memory");
        if (match) {
            snprintf(out, len, "%s", c2 + 1);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* The cgroup limit: v2 first, then v1; 0 when there is none. A v1 "no
 * limit" is a huge number (about 2^63, rounded to pages): not a limit. */
static size_t cgroup_limit(const char *root, char *what, size_t len)
{
    char cg[512], p[1024];
    if (0 == cgroup_path(root, 1, cg, sizeof cg)) {
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.max", strcmp(cg, "/") ? cg : "");
        size_t v = read_number(root, p);
        if (v) {
            snprintf(what, len, "the cgroup memory limit (%.200s)", p);
            return v;
        }
    }
    if (0 == cgroup_path(root, 0, cg, sizeof cg)) {
        snprintf(p, sizeof p, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes",
                 strcmp(cg, "/") ? cg : "");
        size_t v = read_number(root, p);
        if (v && v < ((size_t)1 << 62)) {
            snprintf(what, len, "the cgroup memory limit (%.200s)", p);
            return v;
        }
    }
    return 0;
}

/* A field of /proc/meminfo ("MemAvailable", "MemTotal") in bytes, 0 when
 * unknown. */
static size_t meminfo(const char *root, const char *key)
{
    char full[1024], line[256], fmt[64];
    snprintf(full, sizeof full, "%s/proc/meminfo", root);
    snprintf(fmt, sizeof fmt, "%s: %%llu kB", key);
    FILE *f = fopen(full, "r");
    if (!f) return 0;
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (1 == sscanf(line, fmt, &kb)) break;
    fclose(f);
    return (size_t)kb * 1024;
}

size_t tiers_host_limit(const char *root, int pinned, char *what, size_t len)
{
    char w[256] = "";
    size_t best = 0, v;
    if ((v = cgroup_limit(root, w, sizeof w))) {
        best = v;
        snprintf(what, len, "%s", w);
    }
    if ((v = meminfo(root, "MemAvailable")) && (!best || v < best)) {
        best = v;
        snprintf(what, len, "MemAvailable of %s/proc/meminfo", root);
    }
    struct rlimit rl;
    if (pinned && 0 == getrlimit(RLIMIT_MEMLOCK, &rl) && RLIM_INFINITY != rl.rlim_cur &&
        (!best || (size_t)rl.rlim_cur < best)) {
        best = (size_t)rl.rlim_cur;
        snprintf(what, len, "RLIMIT_MEMLOCK (ulimit -l; the host tier is pinned)");
    }
    return best;
}

size_t tiers_storage_limit(const char *dir)
{
    struct statvfs vs;
    if (!dir || 0 != statvfs(dir, &vs)) return 0;
    return (size_t)vs.f_bavail * vs.f_frsize;
}

size_t tiers_host_auto_cap(const char *root, int pinned, int node_ranks, size_t node_mem,
                           char *what, size_t len)
{
    char w[256] = "MemTotal", cg[256];
    size_t mem = node_mem ? node_mem : meminfo(root, "MemTotal"), v;
    if (node_mem) snprintf(w, sizeof w, "the node's memory as set by the host_auto_mem test fault");
    if ((v = cgroup_limit(root, cg, sizeof cg)) && (!mem || v < mem)) {
        mem = v;
        snprintf(w, sizeof w, "%s", cg);
    }
    if (!mem) return 0;
    if (node_ranks < 1) node_ranks = 1;
    /* half: the rest is the ranks' own heaps, the page cache that the
     * storage tier and checkpoints read through, and everyone else */
    size_t cap = mem / 2 / (size_t)node_ranks;
    snprintf(what, len, "half of %s shared by %d rank%s on this node", w, node_ranks,
             1 == node_ranks ? "" : "s");
    struct rlimit rl;
    if (pinned && 0 == getrlimit(RLIMIT_MEMLOCK, &rl) && RLIM_INFINITY != rl.rlim_cur &&
        (size_t)rl.rlim_cur < cap) {
        cap = (size_t)rl.rlim_cur;
        snprintf(what, len, "RLIMIT_MEMLOCK (ulimit -l; the host tier is pinned)");
    }
    return cap & ~((size_t)TIERS_ALIGN - 1);
}
