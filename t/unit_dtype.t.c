/* unit_dtype.t - f32 <-> bf16/f16 conversions (round to nearest even,
 * specials), status strings and the version query. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "strata.h"
#include "tap.h"

static uint16_t bf(float f) { uint16_t h; strata_f32_to_bf16(&f, &h, 1); return h; }
static uint16_t hf(float f) { uint16_t h; strata_f32_to_f16(&f, &h, 1); return h; }
static float from_hf(uint16_t h) { float f; strata_f16_to_f32(&h, &f, 1); return f; }
static float from_bf(uint16_t h) { float f; strata_bf16_to_f32(&h, &f, 1); return f; }

int main(void)
{
    plan(25);
    is_int(bf(1.0f), 0x3f80, "bf16(1)");
    is_int(bf(-2.0f), 0xc000, "bf16(-2)");
    /* 1 + 2^-8 is halfway between 1 and 1+2^-7: ties to even (1) */
    is_int(bf(1.0f + 0x1p-8f), 0x3f80, "bf16 tie rounds to even (down)");
    /* 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6: ties to even (up) */
    is_int(bf(1.0f + 3 * 0x1p-8f), 0x3f82, "bf16 tie rounds to even (up)");
    is_int(bf(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81, "bf16 above the tie rounds up");
    is_int(bf(INFINITY), 0x7f80, "bf16(inf)");
    ok(isnan(from_bf(bf(NAN))), "bf16 NaN stays NaN");
    is_int(bf(3.4e38f), 0x7f80, "bf16 overflow to inf");

    is_int(hf(1.0f), 0x3c00, "f16(1)");
    is_int(hf(65504.0f), 0x7bff, "f16 max");
    is_int(hf(65520.0f), 0x7c00, "f16 overflow to inf");
    is_int(hf(1.0f + 0x1p-11f), 0x3c00, "f16 tie rounds to even");
    is_int(hf(0x1p-24f), 0x0001, "f16 smallest subnormal");
    is_int(hf(0x1p-25f), 0x0000, "f16 half the smallest subnormal ties to zero");
    is_int(hf(3 * 0x1p-25f), 0x0002, "f16 subnormal tie to even");
    is_int(hf(-0.0f), 0x8000, "f16 negative zero");
    ok(isnan(from_hf(hf(NAN))), "f16 NaN stays NaN");

    /* every f16 value converts to f32 and back unchanged */
    int roundtrip = 1;
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t x = (uint16_t)h;
        if (((x >> 10) & 0x1f) == 0x1f && (x & 0x3ff)) continue;  /* NaNs */
        if (hf(from_hf(x)) != x) { roundtrip = 0; diag("f16 0x%04x", x); break; }
    }
    ok(roundtrip, "all 63,488 finite/inf f16 values round-trip through f32");
    int bf_rt = 1;
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t x = (uint16_t)h;
        if (((x >> 7) & 0xff) == 0xff && (x & 0x7f)) continue;
        if (bf(from_bf(x)) != x) { bf_rt = 0; diag("bf16 0x%04x", x); break; }
    }
    ok(bf_rt, "all non-NaN bf16 values round-trip through f32");

    is_int((long long)strata_dtype_size(STRATA_BF16), 2, "bf16 is 2 bytes");
    is_int((long long)strata_dtype_size((strata_dtype_t)7), 0, "invalid dtype has size 0");
    is_string(strata_strerror(STRATA_ERR_TIER_FULL), "tier budget exceeded", "strerror");
    is_string(strata_strerror((strata_status_t)-999), "unknown status", "strerror of garbage");
    int maj, min, pat;
    strata_version(&maj, &min, &pat);
    ok(maj == STRATA_VERSION_MAJOR && min == STRATA_VERSION_MINOR && pat == STRATA_VERSION_PATCH,
       "runtime version matches the header");
    is_string(strata_version_string(), STRATA_VERSION_STRING, "version string");
    return done_testing();
}
