/*
 * shard.c - shard geometry (shard.h).
 */
#include "config.h"
#include "base/shard.h"
#include "base/base.h"

int base_shard_padded(size_t n, int parts, size_t *npad_p)
{
    if (parts <= 0 || !npad_p) return -1;
    size_t q = n / (size_t)parts + (0 != n % (size_t)parts);
    size_t np;
    if (strata_mul_size(q, (size_t)parts, &np)) return -1;
    *npad_p = np;
    return 0;
}

int base_shard_range(size_t npad, int parts, int s, size_t *offset_p, size_t *len_p)
{
    if (parts <= 0 || s < 0 || s >= parts || !offset_p || !len_p) return -1;
    if (npad % (size_t)parts) return -1;
    size_t len = npad / (size_t)parts;
    *offset_p = (size_t)s * len;
    *len_p = len;
    return 0;
}

void base_shard_intersect(size_t a_off, size_t a_len, size_t b_off, size_t b_len,
                          size_t *lo_p, size_t *hi_p)
{
    size_t lo = a_off > b_off ? a_off : b_off;
    size_t a = a_off + a_len, b = b_off + b_len;
    size_t hi = a < b ? a : b;
    if (hi < lo) hi = lo;
    *lo_p = lo;
    *hi_p = hi;
}
