/*
 * shard.h - the geometry of a sharded flat vector, the one convention of
 * the runtime (fsdp/) and the checkpoints (io/): a flat vector of n
 * elements is padded to npad, the next multiple of the shard count S, and
 * shard s holds [s * npad/S, (s+1) * npad/S), the same length on every
 * shard. Pure functions (t/unit_fsdp_geometry.t, t/unit_ckpt_geom.t).
 */
#ifndef STRATA_BASE_SHARD_H
#define STRATA_BASE_SHARD_H

#include <stddef.h>

/* *npad_p = ceil(n / parts) * parts. -1 on parts <= 0, a NULL out or
 * overflow (*npad_p untouched). */
int base_shard_padded(size_t n, int parts, size_t *npad_p);

/* Shard s of parts of a padded vector of npad elements: *offset_p and
 * *len_p (len = npad / parts). -1 on s outside [0, parts), npad not a
 * multiple of parts or a NULL out (outs untouched). */
int base_shard_range(size_t npad, int parts, int s, size_t *offset_p, size_t *len_p);

/* The part of [a_off, a_off + a_len) inside [b_off, b_off + b_len):
 * *lo_p, *hi_p in the same coordinates (lo == hi when they are disjoint). */
void base_shard_intersect(size_t a_off, size_t a_len, size_t b_off, size_t b_len,
                          size_t *lo_p, size_t *hi_p);

#endif
