/*
 * ckpt_hash_avx2.c - XXH3 compiled for AVX2, used by ckpt_hash.c when the
 * CPU has it. libxxhash is built for baseline x86-64 (SSE2); this is the
 * same algorithm from the same header, so the values are identical, about
 * twice as fast. Only this file is compiled for AVX2, and nothing here
 * runs unless ckpt_hash.c found AVX2 at run time.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#define XXH_VECTOR 2            /* XXH_AVX2 */
#include <xxhash.h>

/* The states are libxxhash's (same header, same layout). */
void ckpt_xxh3_avx2_reset(void *st);
void ckpt_xxh3_avx2_update(void *st, const void *p, size_t n);
uint64_t ckpt_xxh3_avx2_digest(const void *st);
uint64_t ckpt_xxh3_avx2_64(const void *p, size_t n);

void ckpt_xxh3_avx2_reset(void *st) { XXH3_64bits_reset((XXH3_state_t *)st); }
void ckpt_xxh3_avx2_update(void *st, const void *p, size_t n) { XXH3_64bits_update((XXH3_state_t *)st, p, n); }
uint64_t ckpt_xxh3_avx2_digest(const void *st) { return XXH3_64bits_digest((const XXH3_state_t *)st); }
uint64_t ckpt_xxh3_avx2_64(const void *p, size_t n) { return XXH3_64bits(p, n); }
#endif
