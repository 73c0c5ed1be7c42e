/*
 * host.c - the host backend: both memory tiers are ordinary memory, the
 * copies are memcpy on the engine threads.
 *
 * Each tier reserves its whole budget as address space with MAP_NORESERVE,
 * so a context with a 4 GiB device budget commits only the pages its
 * blocks touch. The pinned-host tier is mlock'd "on fault" (pages lock as
 * they are first touched, so nothing is committed up front) when
 * RLIMIT_MEMLOCK allows the whole budget; otherwise it stays plain memory,
 * and the log says which.
 */
#define _GNU_SOURCE 1   /* mlock2 */
#include "config.h"
#include "tiers/tiers.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static strata_status_t host_region_create(tiers_state_t *ts, strata_tier_t tier,
                                          size_t capacity, void **base_p)
{
    char s1[32], s2[32];
    /* a zero budget still gets a valid base for zero-byte blocks */
    size_t len = capacity ? capacity : TIERS_ALIGN;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == p) {
        return base_error(ts->ctx, STRATA_ERR_NOMEM,
                          "cannot reserve %s of address space for the %s tier: %s "
                          "(lower the %s_mem budget)",
                          strata_format_size(len, s1, sizeof s1), strata_tier_name(tier),
                          strata_strerror(STRATA_ERR_NOMEM),
                          STRATA_TIER_DEVICE == tier ? "device" : "host");
    }
    if (STRATA_TIER_PINNED_HOST == tier && capacity > 0) {
        struct rlimit rl = { 0, 0 };
        getrlimit(RLIMIT_MEMLOCK, &rl);
        if (0 == mlock2(p, len, MLOCK_ONFAULT)) {
            ts->pinned_locked = 1;
            strata_info(ts->ctx, "pinned-host tier: %s mlock'd (pages lock as first touched)",
                        strata_format_size(len, s1, sizeof s1));
        } else {
            int e = errno;
            strata_info(ts->ctx, "pinned-host tier: plain memory, not mlock'd (%s; "
                        "RLIMIT_MEMLOCK %s, budget %s)", strerror(e),
                        RLIM_INFINITY == rl.rlim_cur ? "unlimited"
                            : strata_format_size((size_t)rl.rlim_cur, s1, sizeof s1),
                        strata_format_size(len, s2, sizeof s2));
        }
    }
    *base_p = p;
    return STRATA_OK;
}

static void host_region_destroy(tiers_state_t *ts, strata_tier_t tier, void *base,
                                size_t capacity)
{
    if (base) munmap(base, capacity ? capacity : TIERS_ALIGN);
}

static strata_status_t host_engine_init(tiers_state_t *ts, int engine, void **data_p)
{
    *data_p = NULL;
    return STRATA_OK;
}

static void host_engine_cleanup(tiers_state_t *ts, int engine, void *data) { }

static strata_status_t host_copy(tiers_state_t *ts, int engine, void *data,
                                 void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    return STRATA_OK;
}

const tiers_backend_t tiers_host_backend = {
    .name           = "host",
    .region_create  = host_region_create,
    .region_destroy = host_region_destroy,
    .engine_init    = host_engine_init,
    .engine_cleanup = host_engine_cleanup,
    .copy           = host_copy,
    .any_thread_copy = 1,
};
