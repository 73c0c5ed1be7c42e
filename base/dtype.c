/* dtype.c - element types and the f32 <-> bf16/f16 conversions used by the
 * 16-bit collectives (reduce in f32, round once). */
#include "config.h"
#include "base.h"
#include "strata/elem.h"

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

/* The per-element rounding is strata/elem.h's, shared with the CUDA kernels
 * (base/dtype_cuda.cu), so a value is the same bits on either side. */
void strata_f32_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = strata_elem_f32_to_bf16(src[i]);
}

void strata_bf16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = strata_elem_bf16_to_f32(src[i]);
}

void strata_f32_to_f16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = strata_elem_f32_to_f16(src[i]);
}

void strata_f16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = strata_elem_f16_to_f32(src[i]);
}
