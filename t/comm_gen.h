/*
 * comm_gen.h - the values the collective tests (t/comm_coll.c on host
 * buffers, t/comm_nccl.c on device buffers) feed in and check: a function
 * of (world rank, element index), so any rank can compute what any other
 * rank sent. Each program keeps its own check_reduced(), because the
 * rounding rule it checks differs by backend.
 */
#ifndef COMM_GEN_H
#define COMM_GEN_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>

#include "strata.h"
#include "tap.h"

/* Raw patterns for the operations that only move data. */
static inline uint32_t pat32(int wrank, size_t i) { return (uint32_t)wrank * 2654435761u + (uint32_t)i * 40503u + 1u; }
static inline uint16_t pat16(int wrank, size_t i) { return (uint16_t)(pat32(wrank, i) >> 7); }

/* Reduction inputs. f32: small integers, so every sum is exact. 16-bit:
 * values exactly representable in the format whose sums are not, so the
 * final rounding is exercised. */
static inline float red_val(strata_dtype_t dt, int wrank, size_t j)
{
    if (STRATA_F32 == dt) return (float)((wrank * 37 + (int)(j % 1009)) % 211) - 100.0f;
    int k = (wrank * 13 + (int)(j % 101)) % 17;
    return STRATA_BF16 == dt ? 1.0f + (float)k / 128.0f : 1.0f + (float)k / 1024.0f;
}

/* element i of a buffer of dtype dt, written from / read as f32 */
static inline void put(strata_dtype_t dt, void *buf, size_t i, float v)
{
    if (STRATA_F32 == dt) { ((float *)buf)[i] = v; return; }
    uint16_t h;
    if (STRATA_BF16 == dt) strata_f32_to_bf16(&v, &h, 1); else strata_f32_to_f16(&v, &h, 1);
    ((uint16_t *)buf)[i] = h;
}

static inline float get(strata_dtype_t dt, const void *buf, size_t i)
{
    if (STRATA_F32 == dt) return ((const float *)buf)[i];
    float f;
    if (STRATA_BF16 == dt) strata_bf16_to_f32((const uint16_t *)buf + i, &f, 1);
    else strata_f16_to_f32((const uint16_t *)buf + i, &f, 1);
    return f;
}

/* Half an ulp of the 16-bit format at magnitude x (the rounding bound). */
static inline double half_ulp(strata_dtype_t dt, double x)
{
    int e;
    frexp(fabs(x), &e);                        /* |x| in [2^(e-1), 2^e) */
    int mant_bits = STRATA_BF16 == dt ? 8 : 11; /* with the implicit bit */
    return ldexp(1.0, e - mant_bits) / 2.0;
}

/* the world ranks of a group: shard groups are contiguous, replica groups strided */
typedef struct { const char *name; strata_group_t *g; int base, stride; } grp_t;

static inline int member(const grp_t *G, int grank) { return G->base + grank * G->stride; }

static inline void fill_pattern(strata_dtype_t dt, void *buf, int wrank, size_t n)
{
    if (STRATA_F32 == dt) for (size_t i = 0; i < n; i++) ((uint32_t *)buf)[i] = pat32(wrank, i);
    else for (size_t i = 0; i < n; i++) ((uint16_t *)buf)[i] = pat16(wrank, i);
}

/* whether buf[off .. off+n) holds wrank's pattern; says where it does not */
static inline int check_pattern(strata_dtype_t dt, const void *buf, size_t off, int wrank, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int good = STRATA_F32 == dt ? ((const uint32_t *)buf)[off + i] == pat32(wrank, i)
                                    : ((const uint16_t *)buf)[off + i] == pat16(wrank, i);
        if (!good) { diag("pattern mismatch at %zu (rank %d)", off + i, wrank); return 0; }
    }
    return 1;
}

#endif
