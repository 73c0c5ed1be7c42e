/*
 * mplan.c - the static memory plan of a step: the record of its device
 * buffers and their packing into offsets. Pure (no memory behind the
 * offsets, no locks: the arena's caller holds the tiers' lock), so it is
 * tested on its own (t/tiers_mplan.t).
 *
 * The packing is greedy by size, as TensorFlow Lite's arena planner and
 * XLA's heap simulator do it: the largest buffer first, each into the
 * smallest gap between the buffers already placed that are alive at the
 * same time, else above them. Sizes are multiples of TIERS_ALIGN, so the
 * offsets are too.
 */
#include "config.h"
#include "tiers/tiers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int alive_together(const mplan_buf_t *a, const mplan_buf_t *b)
{
    return a->start < b->end && b->start < a->end;
}

static const mplan_buf_t *sort_base;

static int by_size_desc(const void *x, const void *y)
{
    const mplan_buf_t *a = &sort_base[*(const size_t *)x], *b = &sort_base[*(const size_t *)y];
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

static int by_start(const void *x, const void *y)
{
    const mplan_buf_t *a = &sort_base[*(const size_t *)x], *b = &sort_base[*(const size_t *)y];
    return a->start < b->start ? -1 : a->start > b->start;
}

static int by_off(const void *x, const void *y)
{
    const mplan_buf_t *a = *(const mplan_buf_t *const *)x, *b = *(const mplan_buf_t *const *)y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* The offset for b among the placed buffers alive with it (sorted by
 * offset in near[0..k)): the smallest gap that holds it, else the top. */
static size_t best_gap(const mplan_buf_t *b, const mplan_buf_t **near, size_t k)
{
    size_t at = 0, best = SIZE_MAX, best_room = SIZE_MAX;
    for (size_t j = 0; j < k; j++) {
        if (near[j]->off > at) {
            size_t room = near[j]->off - at;
            if (room >= b->size && room < best_room) {
                best = at;
                best_room = room;
            }
        }
        size_t top = near[j]->off + near[j]->size;
        if (top > at) at = top;
    }
    return SIZE_MAX != best ? best : at;
}

size_t mplan_pack(mplan_buf_t *buf, size_t n, int in_order)
{
    if (0 == n) return 0;
    size_t *order = malloc(n * sizeof *order);
    const mplan_buf_t **placed = malloc(n * sizeof *placed);
    const mplan_buf_t **near = malloc(n * sizeof *near);
    if (!order || !placed || !near) {
        free(order);
        free(placed);
        free(near);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n; i++) order[i] = i;
    sort_base = buf;   /* the tiers' lock is held: one packing at a time */
    qsort(order, n, sizeof *order, in_order ? by_start : by_size_desc);
    size_t extent = 0, np = 0;
    for (size_t i = 0; i < n; i++) {
        mplan_buf_t *b = &buf[order[i]];
        size_t k = 0;
        for (size_t j = 0; j < np; j++)
            if (alive_together(b, placed[j])) near[k++] = placed[j];
        qsort(near, k, sizeof *near, by_off);
        b->off = best_gap(b, near, k);
        if (b->off + b->size > extent) extent = b->off + b->size;
        placed[np++] = b;
    }
    free(order);
    free(placed);
    free(near);
    return extent;
}

size_t mplan_check(const mplan_buf_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (alive_together(&buf[i], &buf[j]) && buf[i].off < buf[j].off + buf[j].size &&
                buf[j].off < buf[i].off + buf[i].size)
                return i + 1;
    return 0;
}

size_t mplan_live_peak(const mplan_buf_t *buf, size_t n)
{
    /* every start is a moment the live bytes may peak */
    size_t peak = 0;
    for (size_t i = 0; i < n; i++) {
        size_t live = 0;
        for (size_t j = 0; j < n; j++)
            if (buf[j].start <= buf[i].start && buf[i].start < buf[j].end) live += buf[j].size;
        if (live > peak) peak = live;
    }
    return peak;
}

int mplan_note_alloc(mplan_t *p, uint64_t key, strata_tag_t tag, size_t size, uint64_t clock,
                     size_t at, size_t *slot_p)
{
    *slot_p = 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        mplan_buf_t *b = realloc(p->buf, cap * sizeof *b);
        if (!b) {
            mplan_abandon(p, "out of host memory for the memory plan's record");
            return -1;
        }
        p->buf = b;
        p->cap = cap;
    }
    mplan_buf_t *b = &p->buf[p->n++];
    memset(b, 0, sizeof *b);
    b->key = key;
    b->tag = tag;
    b->size = size;
    b->start = p->ev++;
    b->end = UINT64_MAX;
    b->clock = clock;
    b->at = at;
    *slot_p = p->n;
    return 0;
}

void mplan_note_free(mplan_t *p, size_t slot)
{
    if (slot && slot <= p->n && UINT64_MAX == p->buf[slot - 1].end) p->buf[slot - 1].end = p->ev++;
}

static int by_key(const void *x, const void *y)
{
    const mplan_buf_t *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int by_pair(const void *x, const void *y)
{
    const size_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* The merged spans the plan's buffers use (p->iv); -1 out of memory. */
static int mplan_union(mplan_t *p)
{
    size_t *iv = realloc(p->iv, (2 * p->n + 2) * sizeof *iv);
    if (!iv) return -1;
    p->iv = iv;
    for (size_t i = 0; i < p->n; i++) {
        iv[2 * i] = p->buf[i].off;
        iv[2 * i + 1] = p->buf[i].off + p->buf[i].size;
    }
    qsort(iv, p->n, 2 * sizeof *iv, by_pair);
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (k > 0 && iv[2 * i] <= iv[2 * k - 1]) {
            if (iv[2 * i + 1] > iv[2 * k - 1]) iv[2 * k - 1] = iv[2 * i + 1];
            continue;
        }
        iv[2 * k] = iv[2 * i];
        iv[2 * k + 1] = iv[2 * i + 1];
        k++;
    }
    p->niv = k;
    p->span_bytes = 0;
    for (size_t i = 0; i < k; i++) p->span_bytes += iv[2 * i + 1] - iv[2 * i];
    return 0;
}

int mplan_finish(mplan_t *p)
{
    p->packed = 0;
    if (p->broken || 0 == p->n) return -1;
    size_t lo = SIZE_MAX, hi = 0;
    int all_at = 1;
    for (size_t i = 0; i < p->n; i++) {
        mplan_buf_t *b = &p->buf[i];
        if (UINT64_MAX == b->end) b->end = p->ev;
        if (SIZE_MAX == b->at) {
            all_at = 0;
            continue;
        }
        if (b->at < lo) lo = b->at;
        if (b->at + b->size > hi) hi = b->at + b->size;
    }
    p->live_peak = mplan_live_peak(p->buf, p->n);
    size_t extent = mplan_pack(p->buf, p->n, 0);
    if ((size_t)-1 == extent) return -1;
    p->extent_packed = extent;
    for (size_t i = 0; i < p->n; i++) p->buf[i].off_packed = p->buf[i].off;
    p->recorded_layout = all_at;
    if (all_at) {
        p->rec_base = lo;
        p->extent = hi - lo;
        for (size_t i = 0; i < p->n; i++) p->buf[i].off = p->buf[i].at - lo;
    } else {
        p->extent = extent;
    }
    qsort(p->buf, p->n, sizeof *p->buf, by_key);
    for (size_t i = 1; i < p->n; i++)   /* a key twice: no identity to place by */
        if (p->buf[i].key == p->buf[i - 1].key) return -1;
    if (mplan_union(p)) return -1;
    p->packed = 1;
    return 0;
}

void mplan_use_packing(mplan_t *p)
{
    for (size_t i = 0; i < p->n; i++) p->buf[i].off = p->buf[i].off_packed;
    p->extent = p->extent_packed;
    p->recorded_layout = 0;
    if (mplan_union(p)) p->packed = 0;
}

const mplan_buf_t *mplan_find(const mplan_t *p, uint64_t key)
{
    size_t lo = 0, hi = p->packed ? p->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->buf[mid].key == key) return &p->buf[mid];
        if (p->buf[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

void mplan_abandon(mplan_t *p, const char *why)
{
    if (MPLAN_OFF == p->mode) return;
    p->mode = MPLAN_OFF;
    p->broken = 1;
    if (!p->why[0]) {
        size_t len = strlen(why);
        if (len >= sizeof p->why) len = sizeof p->why - 1;
        memcpy(p->why, why, len);
        p->why[len] = 0;
    }
}

void mplan_clear(mplan_t *p)
{
    free(p->buf);
    free(p->iv);
    memset(p, 0, sizeof *p);
}
