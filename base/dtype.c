/* dtype.c - element types and the f32 <-> bf16/f16 conversions used by the
 * 16-bit collectives (reduce in f32, round once). */
#include "config.h"
#include "base.h"

#include <string.h>

size_t strata_dtype_size(strata_dtype_t dtype)
{
    switch (dtype) {
    case STRATA_F32:  return 4;
    case STRATA_BF16: return 2;
    case STRATA_F16:  return 2;
    default:          return 0;
    }
}

const char *strata_dtype_name(strata_dtype_t dtype)
{
    switch (dtype) {
    case STRATA_F32:  return "f32";
    case STRATA_BF16: return "bf16";
    case STRATA_F16:  return "f16";
    default:          return "invalid";
    }
}

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

void strata_f32_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = f32_bits(src[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u) {        /* NaN: keep it quiet NaN */
            dst[i] = (uint16_t)((u >> 16) | 0x0040u);
            continue;
        }
        /* round to nearest even on the 16 dropped bits; overflow carries
         * into the exponent and yields infinity, which is correct */
        uint32_t bias = 0x7fffu + ((u >> 16) & 1u);
        dst[i] = (uint16_t)((u + bias) >> 16);
    }
}

void strata_bf16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = bits_f32((uint32_t)src[i] << 16);
}

static uint16_t f32_to_f16_one(float f)
{
    uint32_t u = f32_bits(f);
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

void strata_f32_to_f16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = f32_to_f16_one(src[i]);
}

static float f16_to_f32_one(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (0 == exp) {
        /* zero or subnormal: mant * 2^-24, exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (31 == exp) return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

void strata_f16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32_one(src[i]);
}
