/*
 * unit_ckpt_geom.t.c - the pure geometry of checkpoints: shard ranges, and
 * the decomposition of a flat range of a row-major tensor into hyperslab
 * boxes, checked exhaustively on small shapes against a brute-force map.
 */
#include "config.h"
#include "io/io.h"
#include "t/tap.h"

#include <stdlib.h>
#include <string.h>

/* Flat index of a coordinate. */
static uint64_t flat(int n, const uint64_t *dims, const uint64_t *c)
{
    uint64_t f = 0;
    for (int i = 0; i < n; i++) f = f * dims[i] + c[i];
    return f;
}

/* Mark every element of a box in hit[]; return -1 if a box leaves the
 * tensor or hits an element twice. */
static int mark(int n, const uint64_t *dims, const ckpt_box_t *b, unsigned char *hit)
{
    uint64_t c[STRATA_CKPT_MAX_DIMS], total = 1;
    for (int i = 0; i < n; i++) {
        if (0 == b->count[i] || b->start[i] + b->count[i] > dims[i]) return -1;
        total *= b->count[i];
    }
    for (uint64_t k = 0; k < total; k++) {
        uint64_t r = k;
        for (int i = n - 1; i >= 0; i--) {
            c[i] = b->start[i] + r % b->count[i];
            r /= b->count[i];
        }
        uint64_t f = flat(n, dims, c);
        if (hit[f]) return -1;
        hit[f] = 1;
    }
    return 0;
}

/* Every range [a, b) of the shape: exact cover, disjoint, <= 2n-1 boxes,
 * boxes in flat order. Returns the number of failing ranges. */
static int check_shape(int n, const uint64_t *dims, int *max_boxes)
{
    uint64_t numel = 1;
    for (int i = 0; i < n; i++) numel *= dims[i];
    unsigned char *hit = malloc(numel ? numel : 1);
    int bad = 0;
    *max_boxes = 0;
    for (uint64_t a = 0; a <= numel; a++) {
        for (uint64_t b = a; b <= numel; b++) {
            ckpt_box_t boxes[CKPT_MAX_BOXES];
            int nb = ckpt_range_boxes(n, dims, a, b, boxes);
            if (nb < 0 || nb > 2 * n - 1 || (a == b) != (0 == nb)) { bad++; continue; }
            if (nb > *max_boxes) *max_boxes = nb;
            memset(hit, 0, numel ? numel : 1);
            uint64_t prev_first = 0;
            for (int k = 0; k < nb; k++) {
                if (mark(n, dims, &boxes[k], hit)) { bad++; goto next; }
                uint64_t first = flat(n, dims, boxes[k].start);
                if (k && first <= prev_first) { bad++; goto next; }
                prev_first = first;
            }
            for (uint64_t f = 0; f < numel; f++)
                if (hit[f] != (f >= a && f < b)) { bad++; break; }
        next:;
        }
    }
    free(hit);
    return bad;
}

int main(void)
{
    static const struct { int n; uint64_t dims[4]; int most; } shapes[] = {
        { 1, { 7 }, 1 },
        { 2, { 3, 5 }, 3 },
        { 2, { 1, 4 }, 1 },
        { 2, { 4, 1 }, 1 },
        { 3, { 2, 3, 4 }, 5 },
        { 3, { 3, 1, 2 }, 3 },     /* a size-1 dim merges levels */
        { 4, { 2, 2, 3, 2 }, 7 },
        { 0, { 0 }, 0 }
    };
    plan(2 * 7 + 14);

    for (int i = 0; shapes[i].n; i++) {
        int most = 0;
        int bad = check_shape(shapes[i].n, shapes[i].dims, &most);
        is_int(bad, 0, "every range of a %d-d shape (%llu x ...) decomposes exactly", shapes[i].n,
               (unsigned long long)shapes[i].dims[0]);
        ok(most <= shapes[i].most, "at most %d boxes needed (saw %d)", shapes[i].most, most);
    }

    /* a matrix: partial first row, whole rows, partial last row */
    uint64_t m[2] = { 4, 10 };
    ckpt_box_t b[CKPT_MAX_BOXES];
    int nb = ckpt_range_boxes(2, m, 7, 33, b);
    is_int(nb, 3, "[7,33) of 4x10 is three boxes");
    ok(3 == nb && 0 == b[0].start[0] && 7 == b[0].start[1] && 1 == b[0].count[0] && 3 == b[0].count[1],
       "head: row 0, columns 7..9");
    ok(3 == nb && 1 == b[1].start[0] && 2 == b[1].count[0] && 0 == b[1].start[1] && 10 == b[1].count[1],
       "middle: rows 1..2 whole");
    ok(3 == nb && 3 == b[2].start[0] && 0 == b[2].start[1] && 3 == b[2].count[1], "tail: row 3, columns 0..2");
    is_int(ckpt_range_boxes(2, m, 10, 30, b), 1, "whole rows only: one box");

    /* bad arguments */
    is_int(ckpt_range_boxes(2, m, 5, 41, b), -1, "range past the end is refused");
    is_int(ckpt_range_boxes(2, m, 6, 5, b), -1, "a > b is refused");
    is_int(ckpt_range_boxes(0, m, 0, 1, b), -1, "ndims 0 is refused");
    is_int(ckpt_range_boxes(STRATA_CKPT_MAX_DIMS + 1, m, 0, 1, b), -1, "ndims above the limit is refused");
    uint64_t huge[3] = { 1ull << 40, 1ull << 40, 1ull << 40 }, numel;
    is_int(ckpt_numel(3, huge, &numel), -1, "numel overflow is detected");

    /* shard ranges */
    uint64_t lo, hi;
    ok(STRATA_OK == strata_ckpt_shard_range(76, 4, 3, &lo, &hi) && 57 == lo && 76 == hi,
       "shard 3 of 4 over 76 elements is [57, 76)");
    is_int(strata_ckpt_shard_range(75, 4, 0, &lo, &hi), STRATA_ERR_INVALID, "npad not a multiple of S is refused");
    is_int(strata_ckpt_shard_range(76, 4, 4, &lo, &hi), STRATA_ERR_INVALID, "shard rank out of range is refused");
    uint64_t x0, x1;
    ok(!ckpt_overlap(0, 5, 5, 9, &x0, &x1) && ckpt_overlap(0, 6, 5, 9, &x0, &x1) && 5 == x0 && 6 == x1,
       "overlap of half-open ranges");
    return done_testing();
}
