/* geometry.c - counter-based init noise (the shard geometry is base/shard.h).
 * Pure functions: tested without MPI (t/unit_fsdp_geometry.t). */
#include "config.h"
#include "fsdp.h"

#include <math.h>

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
