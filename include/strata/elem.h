/*
 * strata/elem.h - the per-element arithmetic of strata's 16-bit formats and
 * optimizers, written once as static inline functions that a C compiler and
 * nvcc (as __host__ __device__) both compile. The library's host loops
 * (strata_f32_to_bf16 and its siblings, the sharded optimizer) and its
 * CUDA kernels call these, so a value is the same bits whichever side
 * computed it; a program's own kernels may call them for the same reason.
 *
 * Plain C arithmetic only: no library call, no allocation, nothing from
 * strata.h (nvcc compiles this header without MPI). Not included by
 * strata.h, whose functions are the exported ones (these are inline, in
 * the caller): include it where it is used.
 */
#ifndef STRATA_ELEM_H
#define STRATA_ELEM_H

#include <math.h>      /* sqrtf */
#include <stdint.h>
#include <string.h>    /* memcpy: the bits of a float, on the host */

#ifndef STRATA_HD
#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif
#endif

/* ---- the bits of an f32 ------------------------------------------------------------------ */

static inline STRATA_HD uint32_t strata_elem_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

static inline STRATA_HD float strata_elem_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* ---- f32 <-> bf16 and f16: round to nearest even, NaN stays NaN, overflow to infinity ---- */

static inline STRATA_HD uint16_t strata_elem_f32_to_bf16(float f)
{
    uint32_t u = strata_elem_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)                /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* nearest even on the 16 dropped bits; an overflow carries into the
     * exponent and gives infinity, which is right */
    uint32_t bias = 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)((u + bias) >> 16);
}

static inline STRATA_HD float strata_elem_bf16_to_f32(uint16_t h)
{
    return strata_elem_bits_f32((uint32_t)h << 16);
}

static inline STRATA_HD uint16_t strata_elem_f32_to_f16(float f)
{
    uint32_t u = strata_elem_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;

    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);      /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);     /* rounds to >= 65520: inf */
    if (absu >= 0x38800000u) {                                       /* normal f16 */
        uint32_t mant_round = absu + 0xfffu + ((absu >> 13) & 1u);
        return (uint16_t)(sign | ((mant_round - 0x38000000u) >> 13));
    }
    if (absu < 0x33000000u) return (uint16_t)sign;                   /* < half the smallest subnormal */
    /* subnormal f16: value = m * 2^-24, m in [1, 1023] */
    uint32_t exp = absu >> 23;
    uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp;          /* 14..24 */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

static inline STRATA_HD float strata_elem_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (0 == exp) {
        /* zero or subnormal: mant * 2^-24, exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (31 == exp) return strata_elem_bits_f32(sign | 0x7f800000u | (mant << 13));
    return strata_elem_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* ---- one element of the optimizer steps ------------------------------------------------ */

/* Each product and sum rounded on its own: nvcc contracts a * b + c into
 * one fused multiply-add by default (a C compiler for a target without
 * FMA, the default x86-64 one, does not), which would give the device's
 * update other bits than the host's. The _rn intrinsics are never fused. */
#if defined(__CUDA_ARCH__)
#define STRATA_ELEM_MUL(a, b) __fmul_rn((a), (b))
#define STRATA_ELEM_ADD(a, b) __fadd_rn((a), (b))
#define STRATA_ELEM_SUB(a, b) __fsub_rn((a), (b))
#else
#define STRATA_ELEM_MUL(a, b) ((a) * (b))
#define STRATA_ELEM_ADD(a, b) ((a) + (b))
#define STRATA_ELEM_SUB(a, b) ((a) - (b))
#endif

/* AdamW with decoupled weight decay, given the step's constants:
 * step = lr / (1 - b1^t), rbc2 = 1 / sqrt(1 - b2^t), decay = 1 - lr * wd. */
static inline STRATA_HD void strata_elem_adamw(float *p, float g, float *m, float *v,
                                               float b1, float b2, float step, float rbc2,
                                               float eps, float decay)
{
    float mi = STRATA_ELEM_ADD(STRATA_ELEM_MUL(b1, *m), STRATA_ELEM_MUL(1.0f - b1, g));
    float vi = STRATA_ELEM_ADD(STRATA_ELEM_MUL(b2, *v),
                               STRATA_ELEM_MUL(STRATA_ELEM_MUL(1.0f - b2, g), g));
    *m = mi;
    *v = vi;
    float den = STRATA_ELEM_ADD(STRATA_ELEM_MUL(sqrtf(vi), rbc2), eps);
    *p = STRATA_ELEM_SUB(STRATA_ELEM_MUL(*p, decay), STRATA_ELEM_MUL(step, mi) / den);
}

/* SGD with L2 weight decay wd folded into the gradient, no momentum. */
static inline STRATA_HD void strata_elem_sgd(float *p, float g, float lr, float wd)
{
    *p = STRATA_ELEM_SUB(*p, STRATA_ELEM_MUL(lr, STRATA_ELEM_ADD(g, STRATA_ELEM_MUL(wd, *p))));
}

/* SGD with momentum mu: the buffer keeps the decayed gradient's running sum. */
static inline STRATA_HD void strata_elem_sgd_momentum(float *p, float g, float *buf, float lr,
                                                      float wd, float mu)
{
    float gi = STRATA_ELEM_ADD(g, STRATA_ELEM_MUL(wd, *p));
    float bi = STRATA_ELEM_ADD(STRATA_ELEM_MUL(mu, *buf), gi);
    *buf = bi;
    *p = STRATA_ELEM_SUB(*p, STRATA_ELEM_MUL(lr, bi));
}

#endif
