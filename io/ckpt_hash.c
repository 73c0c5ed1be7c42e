/*
 * ckpt_hash.c - the checkpoint hash, XXH3-64 (seed 0), on the widest
 * vector unit the CPU has. Every tensor byte a save writes or a load reads
 * is hashed, and with the bytes moved at disk speed the hash is the one
 * cost a direct transfer adds; libxxhash's baseline build (SSE2) hashes at
 * ~20 GB/s here, the AVX2 build (ckpt_hash_avx2.c) about twice that, and
 * less time hashing is more CPU for the other ranks' I/O. The values are
 * the same either way. The test hook STRATA_TEST_CKPT_HASH=generic (io.h)
 * forces libxxhash.
 */
#include "config.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_AVX2_BUILD 1
void ckpt_xxh3_avx2_reset(void *st);
void ckpt_xxh3_avx2_update(void *st, const void *p, size_t n);
uint64_t ckpt_xxh3_avx2_digest(const void *st);
uint64_t ckpt_xxh3_avx2_64(const void *p, size_t n);
#else
#define HAVE_AVX2_BUILD 0
#endif

/* 1 when the AVX2 build is used; decided once per process (the same in
 * every call, so a hash started one way is finished the same way). The one
 * process-global of io/: a fact of the CPU and the environment, not of a
 * context; threads that race to decide it decide the same. */
static int avx2(void)
{
    static int decided = -1;
    int v = __atomic_load_n(&decided, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv(CKPT_HASH_TEST_ENV);
        int want = !e || strcmp(e, "generic");
#if HAVE_AVX2_BUILD
        __builtin_cpu_init();
        v = want && __builtin_cpu_supports("avx2");
#else
        v = 0 * want;
#endif
        __atomic_store_n(&decided, v, __ATOMIC_RELAXED);
    }
    return v;
}

ckpt_hash_t *ckpt_hash_new(void) { return (ckpt_hash_t *)XXH3_createState(); }
void ckpt_hash_free(ckpt_hash_t *h) { if (h) XXH3_freeState((XXH3_state_t *)h); }

void ckpt_hash_reset(ckpt_hash_t *h)
{
#if HAVE_AVX2_BUILD
    if (avx2()) { ckpt_xxh3_avx2_reset(h); return; }
#endif
    XXH3_64bits_reset((XXH3_state_t *)h);
}

void ckpt_hash_update(ckpt_hash_t *h, const void *p, size_t n)
{
#if HAVE_AVX2_BUILD
    if (avx2()) { ckpt_xxh3_avx2_update(h, p, n); return; }
#endif
    XXH3_64bits_update((XXH3_state_t *)h, p, n);
}

uint64_t ckpt_hash_digest(const ckpt_hash_t *h)
{
#if HAVE_AVX2_BUILD
    if (avx2()) return ckpt_xxh3_avx2_digest(h);
#endif
    return XXH3_64bits_digest((const XXH3_state_t *)h);
}

uint64_t ckpt_hash64(const void *p, size_t n)
{
#if HAVE_AVX2_BUILD
    if (avx2()) return ckpt_xxh3_avx2_64(p, n);
#endif
    return XXH3_64bits(p, n);
}
