/* geometry.c - shard geometry of flat parameters and counter-based init
 * noise. Pure functions: tested without MPI (t/unit_fsdp_geometry.t). */
#include "config.h"
#include "fsdp.h"

#include <math.h>

int fsdp_padded(size_t n, int s, size_t *npad_p)
{
    if (s <= 0 || !npad_p) return -1;
    size_t q = n / (size_t)s + (0 != n % (size_t)s);
    size_t np;
    if (strata_mul_size(q, (size_t)s, &np)) return -1;
    *npad_p = np;
    return 0;
}

int fsdp_shard_range(size_t n, int s_count, int s, size_t *offset_p, size_t *len_p)
{
    size_t npad;
    if (s < 0 || s >= s_count || !offset_p || !len_p) return -1;
    if (fsdp_padded(n, s_count, &npad)) return -1;
    size_t len = npad / (size_t)s_count;
    *offset_p = (size_t)s * len;
    *len_p = len;
    return 0;
}

void fsdp_intersect(size_t p_off, size_t p_len, size_t sh_off, size_t sh_len,
                    size_t *lo_p, size_t *hi_p)
{
    size_t lo = p_off > sh_off ? p_off : sh_off;
    size_t a = p_off + p_len, b = sh_off + sh_len;
    size_t hi = a < b ? a : b;
    if (hi < lo) hi = lo;
    *lo_p = lo;
    *hi_p = hi;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Box-Muller on two uniforms drawn from (seed, stream, i): each element
 * depends only on its own coordinates, so any rank can produce exactly
 * the elements of its shard and the result is independent of W and S. */
float fsdp_normal(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t h = splitmix(splitmix(seed ^ splitmix(stream)) ^ i);
    uint64_t h2 = splitmix(h);
    double u1 = ((h >> 11) + 1.0) * (1.0 / 9007199254740994.0);   /* (0, 1] */
    double u2 = (h2 >> 11) * (1.0 / 9007199254740992.0);           /* [0, 1) */
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
