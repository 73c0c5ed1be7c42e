/*
 * ckpt_geom.c - pure geometry of checkpoints: which elements a shard holds,
 * and how a flat range of a row-major tensor splits into hyperslab boxes.
 */
#include "config.h"
#include "io/io.h"
#include "base/shard.h"

#include <string.h>

int ckpt_numel(int ndims, const uint64_t *dims, uint64_t *numel)
{
    if (ndims < 1 || ndims > STRATA_CKPT_MAX_DIMS || !dims || !numel) return -1;
    uint64_t n = 1;
    for (int i = 0; i < ndims; i++)
        if (__builtin_mul_overflow(n, dims[i], &n)) return -1;
    *numel = n;
    return 0;
}

/*
 * Range [a, b) inside a tensor of dims[0..n-1]; prefix[] holds the fixed
 * leading coordinates (depth of them) set by the callers above. The range
 * splits along dim 0 into a partial head slice, whole slices and a partial
 * tail slice; the head (a suffix of its slice) and the tail (a prefix)
 * recurse into the inner dims. A suffix or prefix of an m-d slice needs at
 * most m boxes, so the total is at most 2n-1.
 */
static int boxes_rec(int total, int depth, const uint64_t *dims, const uint64_t *prefix,
                     uint64_t a, uint64_t b, ckpt_box_t *out, int nout)
{
    if (a >= b) return nout;
    int n = total - depth;            /* dims left */
    const uint64_t *d = dims + depth;
    uint64_t inner = 1;
    for (int i = 1; i < n; i++) inner *= d[i];

    ckpt_box_t box;
    uint64_t fixed[STRATA_CKPT_MAX_DIMS];
    memcpy(fixed, prefix, sizeof(uint64_t) * (size_t)depth);

    if (1 == n) {
        for (int i = 0; i < depth; i++) { box.start[i] = prefix[i]; box.count[i] = 1; }
        box.start[depth] = a;
        box.count[depth] = b - a;
        out[nout] = box;
        return nout + 1;
    }
    uint64_t first = a / inner, last = (b - 1) / inner;   /* slices touched */
    if (first == last && (a % inner || b % inner)) {
        /* inside one slice and not the whole of it */
        fixed[depth] = first;
        return boxes_rec(total, depth + 1, dims, fixed, a - first * inner,
                         b - first * inner, out, nout);
    }
    uint64_t whole_lo = first, whole_hi = last + 1;       /* whole slices [lo, hi) */
    if (a % inner) {
        fixed[depth] = first;
        nout = boxes_rec(total, depth + 1, dims, fixed, a % inner, inner, out, nout);
        whole_lo = first + 1;
    }
    if (b % inner) whole_hi = last;
    if (whole_lo < whole_hi) {
        for (int i = 0; i < depth; i++) { box.start[i] = prefix[i]; box.count[i] = 1; }
        box.start[depth] = whole_lo;
        box.count[depth] = whole_hi - whole_lo;
        for (int i = 1; i < n; i++) { box.start[depth + i] = 0; box.count[depth + i] = d[i]; }
        out[nout++] = box;
    }
    if (b % inner) {
        fixed[depth] = last;
        nout = boxes_rec(total, depth + 1, dims, fixed, 0, b % inner, out, nout);
    }
    return nout;
}

int ckpt_range_boxes(int ndims, const uint64_t *dims, uint64_t a, uint64_t b,
                     ckpt_box_t *boxes)
{
    uint64_t numel;
    if (!boxes || ckpt_numel(ndims, dims, &numel) || a > b || b > numel) return -1;
    if (a == b) return 0;
    uint64_t prefix[STRATA_CKPT_MAX_DIMS] = { 0 };
    return boxes_rec(ndims, 0, dims, prefix, a, b, boxes, 0);
}

strata_status_t strata_ckpt_shard_range(uint64_t npad, int shard_size, int shard_rank,
                                        uint64_t *begin_p, uint64_t *end_p)
{
    size_t off, len;
    if (!begin_p || !end_p || (uint64_t)(size_t)npad != npad ||
        base_shard_range((size_t)npad, shard_size, shard_rank, &off, &len))
        return STRATA_ERR_INVALID;
    *begin_p = off;
    *end_p = (uint64_t)off + len;
    return STRATA_OK;
}
