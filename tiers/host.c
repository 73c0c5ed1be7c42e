/*
 * host.c - the host backend: both memory tiers are ordinary memory, the
 * copies are memcpy on the engine threads, and for a transfer too large
 * to stay in the last-level cache, stores that bypass it.
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
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>      /* SSE2: _mm_stream_si128, part of x86-64 */
#endif
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
    if (STRATA_TIER_PINNED_HOST == tier && capacity > 0 && !ts->host_auto) {
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

/* host_mem=auto: the piece is mlock'd as its pages are first touched,
 * where RLIMIT_MEMLOCK allows (best effort, as for a sized budget) */
static strata_status_t host_region_grow(tiers_state_t *ts, void *base, size_t from, size_t len,
                                        char *msg, size_t msglen)
{
    char s1[32];
    if (0 == mlock2((char *)base + from, len, MLOCK_ONFAULT)) {
        ts->pinned_locked = 1;
    } else if (!ts->pinned_locked && 0 == ts->npin) {
        int e = errno;
        strata_info(ts->ctx, "pinned-host tier: plain memory, not mlock'd (%s; first piece %s)",
                    strerror(e), strata_format_size(len, s1, sizeof s1));
    }
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

/* Transfers above this many bytes cannot stay in the cache: the last
 * level's size (a copy that fits keeps its destination there for the
 * reader that comes next), 32 MiB if unknown, at most 64 MiB: under a
 * hypervisor sysconf can report the whole socket's cache, of which a few
 * cores' share holds far less. */
static size_t stream_min(void)
{
    static size_t min;      /* set once; racing engines store the same value */
    if (0 == __atomic_load_n(&min, __ATOMIC_RELAXED)) {
        long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
        l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
        size_t m = 0 < l3 ? (size_t)l3 : (size_t)32 << 20;
        __atomic_store_n(&min, m < (size_t)64 << 20 ? m : (size_t)64 << 20, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&min, __ATOMIC_RELAXED);
}

/* memcpy with non-temporal stores: the destination's lines are written
 * whole without being read first (a plain store reads each line before
 * it writes it) and do not evict the cache. glibc's memcpy does the same
 * for one call above its threshold (3/4 of the shared cache, 240 MiB on a
 * 32 MiB-L3 Zen 4 through its tunables), but never for the engines' chunks
 * (chunk_size, 4M): measured there, a 256 MiB move in 4 MiB memcpy chunks
 * ran at 0.61x one memcpy of it. */
static void copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    _mm_sfence();           /* the streamed stores visible before the op completes */
#else
    memcpy(dst, src, n);
#endif
}

static strata_status_t host_copy_part(tiers_state_t *ts, int engine, void *data, void *dst,
                                      const void *src, size_t n, size_t total)
{
    if (total > stream_min()) copy_stream(dst, src, n);
    else memcpy(dst, src, n);
    return STRATA_OK;
}

const tiers_backend_t tiers_host_backend = {
    .name           = "host",
    .region_create  = host_region_create,
    .region_destroy = host_region_destroy,
    .region_grow    = host_region_grow,
    .engine_init    = host_engine_init,
    .engine_cleanup = host_engine_cleanup,
    .copy           = host_copy,
    .copy_part      = host_copy_part,
    .any_thread_copy = 1,
};
