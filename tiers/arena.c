/*
 * arena.c - the allocator of the memory tiers and the accounting of every
 * tier. Pure: it hands out offsets into a region it never touches, so it is
 * tested without MPI, threads or memory behind it.
 *
 * Best fit over an address-ordered list of spans (a workspace: the top of
 * the highest span that fits). A freed span merges with
 * its free neighbours at once, so free space is always in maximal runs and
 * "enough bytes free but no run large enough" is true fragmentation, which
 * is reported as such (STRATA_ERR_FRAGMENTED), apart from a full budget
 * (STRATA_ERR_TIER_FULL).
 */
#include "config.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_span {
    arena_span_t *prev, *next;   /* address order */
    size_t        off;
    size_t        size;
    int           free;
    strata_tag_t  tag;
    size_t        slot;      /* the memory plan's record + 1 (recording), or 0 */
};

/* ---- accounting --------------------------------------------------------- */

int tiers_round(size_t bytes, size_t *out)
{
    size_t r;
    if (strata_add_size(bytes, TIERS_ALIGN - 1, &r)) return -1;
    *out = r & ~(size_t)(TIERS_ALIGN - 1);
    return 0;
}

void tier_acct_add(tier_acct_t *a, strata_tag_t tag, size_t bytes)
{
    a->used += bytes;
    a->used_by_tag[tag] += bytes;
    if (a->used > a->peak) a->peak = a->used;
    if (a->used_by_tag[tag] > a->peak_by_tag[tag]) a->peak_by_tag[tag] = a->used_by_tag[tag];
}

void tier_acct_sub(tier_acct_t *a, strata_tag_t tag, size_t bytes)
{
    a->used -= bytes;
    a->used_by_tag[tag] -= bytes;
}

void tier_acct_reset_peaks(tier_acct_t *a)
{
    a->peak = a->used;
    memcpy(a->peak_by_tag, a->used_by_tag, sizeof a->peak_by_tag);
}

void tier_acct_describe(const tier_acct_t *a, char *buf, size_t len)
{
    char s[32];
    int order[STRATA_TAG_COUNT], n = 0;
    /* largest first: the tag a person should look at comes first */
    for (int t = 0; t < STRATA_TAG_COUNT; t++) {
        if (0 == a->used_by_tag[t]) continue;
        int i = n++;
        while (i > 0 && a->used_by_tag[order[i - 1]] < a->used_by_tag[t]) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = t;
    }
    size_t pos = 0;
    int w = snprintf(buf, len, "in use %s", strata_format_size(a->used, s, sizeof s));
    if (w < 0) return;
    pos = (size_t)w < len ? (size_t)w : len;
    for (int i = 0; i < n && pos < len; i++) {
        w = snprintf(buf + pos, len - pos, "%s%s %s", 0 == i ? " (" : ", ",
                     strata_tag_name((strata_tag_t)order[i]),
                     strata_format_size(a->used_by_tag[order[i]], s, sizeof s));
        if (w < 0) return;
        pos += (size_t)w;
    }
    if (n > 0 && pos < len) snprintf(buf + pos, len - pos, ")");
}

static void full_message(const tier_acct_t *a, const char *tier_name, size_t need,
                         char *msg, size_t msglen)
{
    char s1[32], s2[32], use[256];
    tier_acct_describe(a, use, sizeof use);
    snprintf(msg, msglen, "%s tier full: need %s, budget %s, %s", tier_name,
             strata_format_size(need, s1, sizeof s1),
             strata_format_size(a->budget, s2, sizeof s2), use);
}

strata_status_t tier_acct_reserve(tier_acct_t *a, const char *tier_name, size_t bytes,
                                  strata_tag_t tag, char *msg, size_t msglen)
{
    size_t r;
    if (tiers_round(bytes, &r)) return STRATA_ERR_OVERFLOW;
    if (r > a->budget - a->used) {
        full_message(a, tier_name, r, msg, msglen);
        return STRATA_ERR_TIER_FULL;
    }
    tier_acct_add(a, tag, r);
    return STRATA_OK;
}

/* ---- arena -------------------------------------------------------------- */

int arena_init(arena_t *a, size_t capacity)
{
    memset(a, 0, sizeof *a);
    a->capacity = capacity & ~(size_t)(TIERS_ALIGN - 1);
    a->acct.budget = a->capacity;
    if (0 == a->capacity) return 0;
    arena_span_t *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->size = a->capacity;
    s->free = 1;
    a->first = s;
    a->nspans = 1;
    return 0;
}

void arena_cleanup(arena_t *a)
{
    arena_span_t *s = a->first;
    while (s) {
        arena_span_t *n = s->next;
        free(s);
        s = n;
    }
    memset(a, 0, sizeof *a);
}

size_t arena_largest_free(const arena_t *a)
{
    size_t m = 0;
    for (const arena_span_t *s = a->first; s; s = s->next)
        if (s->free && s->size > m) m = s->size;
    return m;
}

size_t arena_total_free(const arena_t *a)
{
    return a->capacity - a->acct.used;
}

/* A zero-byte allocation uses no space; its handle is this marker (only
 * its address is used: never written, so shared by every context). */
static arena_span_t zero_span;

/* Split free span s so that [off, off + need) is a span of its own;
 * returns it, or NULL out of memory. */
static arena_span_t *carve(arena_t *a, arena_span_t *s, size_t off, size_t need)
{
    arena_span_t *before = NULL, *after = NULL;
    if (off > s->off && !(before = calloc(1, sizeof *before))) return NULL;
    if (off + need < s->off + s->size && !(after = calloc(1, sizeof *after))) {
        free(before);
        return NULL;
    }
    if (before) {
        before->free = 1;
        before->off = s->off;
        before->size = off - s->off;
        before->prev = s->prev;
        before->next = s;
        if (s->prev) s->prev->next = before;
        else a->first = before;
        s->prev = before;
        a->nspans++;
    }
    if (after) {
        after->free = 1;
        after->off = off + need;
        after->size = s->off + s->size - after->off;
        after->prev = s;
        after->next = s->next;
        if (s->next) s->next->prev = after;
        s->next = after;
        a->nspans++;
    }
    s->off = off;
    s->size = need;
    return s;
}

/* Free span s (already carved to need bytes) becomes tag's. */
static void take_span(arena_t *a, arena_span_t *s, strata_tag_t tag, size_t need)
{
    s->free = 0;
    s->tag = tag;
    s->slot = 0;
    tier_acct_add(&a->acct, tag, need);
}

/* A workspace's span: the highest free one whose part below top_limit
 * holds need (*end_p: where that part ends), or NULL. */
static arena_span_t *top_span(const arena_t *a, size_t need, size_t *end_p)
{
    size_t lim = a->top_limit ? a->top_limit : a->capacity;
    arena_span_t *best = NULL;
    for (arena_span_t *s = a->first; s && s->off < lim; s = s->next) {
        size_t end = s->off + s->size < lim ? s->off + s->size : lim;
        if (s->free && end - s->off >= need) {
            best = s;
            *end_p = end;
        }
    }
    return best;
}

strata_status_t arena_alloc(arena_t *a, const char *tier_name, size_t bytes,
                            strata_tag_t tag, size_t *off_p, arena_span_t **span_p,
                            char *msg, size_t msglen)
{
    size_t need;
    if (tiers_round(bytes, &need)) {
        snprintf(msg, msglen, "%s tier: a request of %zu bytes overflows", tier_name, bytes);
        return STRATA_ERR_OVERFLOW;
    }
    if (0 == need) {
        *off_p = 0;
        *span_p = &zero_span;
        return STRATA_OK;
    }
    if (need > a->capacity - a->acct.used) {
        full_message(&a->acct, tier_name, need, msg, msglen);
        return STRATA_ERR_TIER_FULL;
    }
    /* a workspace lives for one op and comes back at once: it takes the
     * back of the highest span that fits, so it never punches a hole
     * among the blocks that live across ops (activations, gradients),
     * whose order of coming and going varies with transfer timing */
    int top = STRATA_TAG_WORKSPACE == tag;
    size_t top_end = 0;
    arena_span_t *best = top ? top_span(a, need, &top_end) : NULL;
    top = NULL != best;
    for (arena_span_t *s = a->first; !top && s; s = s->next) {
        if (!s->free || s->size < need) continue;
        if (!best || s->size < best->size) {
            best = s;
            if (s->size == need) break;
        }
    }
    if (!best) {
        char s1[32], s2[32], s3[32], s4[32], use[256];
        tier_acct_describe(&a->acct, use, sizeof use);
        snprintf(msg, msglen,
                 "%s tier fragmented: need %s, %s free in total but the largest contiguous "
                 "span is %s (budget %s, %s)", tier_name,
                 strata_format_size(need, s1, sizeof s1),
                 strata_format_size(arena_total_free(a), s2, sizeof s2),
                 strata_format_size(arena_largest_free(a), s3, sizeof s3),
                 strata_format_size(a->acct.budget, s4, sizeof s4), use);
        return STRATA_ERR_FRAGMENTED;
    }
    /* the allocation takes the front of the span (a workspace the back),
     * the rest stays free */
    if (!carve(a, best, top ? top_end - need : best->off, need)) {
        snprintf(msg, msglen, "%s tier: out of host memory for allocator bookkeeping", tier_name);
        return STRATA_ERR_NOMEM;
    }
    take_span(a, best, tag, need);
    *off_p = best->off;
    *span_p = best;
    return STRATA_OK;
}

int arena_find_free(const arena_t *a, size_t bytes, size_t *off_p)
{
    const arena_span_t *best = NULL;
    for (const arena_span_t *s = a->first; s; s = s->next)
        if (s->free && s->size >= bytes && (!best || s->size < best->size)) best = s;
    if (!best) return -1;
    *off_p = best->off;
    return 0;
}

int arena_range_free(const arena_t *a, size_t off, size_t len)
{
    const arena_span_t *s = a->first;
    while (s && s->off + s->size <= off) s = s->next;
    return s && s->free && off + len <= s->off + s->size;
}

int arena_find_outside(const arena_t *a, size_t bytes, const size_t *iv, size_t n,
                       size_t base, size_t *off_p)
{
    size_t best_off = 0, best_room = SIZE_MAX;
    for (const arena_span_t *s = a->first; s; s = s->next) {
        if (!s->free) continue;
        /* the pieces of the free span between the forbidden intervals */
        size_t at = s->off, end = s->off + s->size;
        for (size_t k = 0; k <= n && at < end; k++) {
            size_t from = k < n ? base + iv[2 * k] : end, to = k < n ? base + iv[2 * k + 1] : end;
            if (to <= at) continue;
            size_t stop = from < end ? from : end;
            if (stop > at && stop - at >= bytes && stop - at < best_room) {
                best_room = stop - at;
                best_off = at;
            }
            if (to > at) at = to;
        }
    }
    if (SIZE_MAX == best_room) return -1;
    *off_p = best_off;
    return 0;
}

/* "a" or "an" before a tag's name */
static const char *article(const char *word)
{
    return word[0] && strchr("aeiou", word[0]) ? "an" : "a";
}

strata_status_t arena_alloc_at(arena_t *a, const char *tier_name, size_t off, size_t need,
                                strata_tag_t tag, arena_span_t **span_p, char *msg, size_t msglen)
{
    arena_span_t *s = a->first;
    while (s && s->off + s->size <= off) s = s->next;
    if (!s || !s->free || off + need > s->off + s->size) {
        char s1[32], s2[32], by[96] = "";
        const arena_span_t *held = s && !s->free ? s : s ? s->next : NULL;
        if (held)
            snprintf(by, sizeof by, " by %s %s buffer of %s",
                     article(strata_tag_name(held->tag)), strata_tag_name(held->tag),
                     strata_format_size(held->size, s2, sizeof s2));
        snprintf(msg, msglen, "%s tier: the span the memory plan gives this %s buffer (%s at "
                 "offset %zu) is still held%s", tier_name, strata_tag_name(tag),
                 strata_format_size(need, s1, sizeof s1), off, by);
        return STRATA_ERR_FRAGMENTED;
    }
    if (!carve(a, s, off, need)) {
        snprintf(msg, msglen, "%s tier: out of host memory for allocator bookkeeping", tier_name);
        return STRATA_ERR_NOMEM;
    }
    take_span(a, s, tag, need);
    *span_p = s;
    return STRATA_OK;
}

strata_status_t arena_alloc_keyed(arena_t *a, const char *tier_name, size_t bytes,
                                  strata_tag_t tag, uint64_t key, size_t *off_p,
                                  arena_span_t **span_p, char *msg, size_t msglen)
{
    mplan_t *p = a->plan;
    size_t need;
    if (!p || MPLAN_OFF == p->mode || tiers_round(bytes, &need) || 0 == need)
        return arena_alloc(a, tier_name, bytes, tag, off_p, span_p, msg, msglen);
    uint64_t k = key ? key : p->clock + 1;
    if (MPLAN_RECORD == p->mode) {
        strata_status_t st = arena_alloc(a, tier_name, bytes, tag, off_p, span_p, msg, msglen);
        if (STRATA_OK != st) return st;
        uint64_t clock = p->clock;
        if (!key) p->clock++;
        size_t slot;
        if (0 == mplan_note_alloc(p, k, tag, need, clock, *off_p, &slot)) (*span_p)->slot = slot;
        return st;
    }
    const mplan_buf_t *b = mplan_find(p, k);
    if (!b || b->tag != tag || b->size != need) {
        if (!key) {   /* the program went another way: the rest of the step as before */
            char why[200], s1[32];
            snprintf(why, sizeof why, "allocation %llu of the step (%s %s of %s) is not the "
                     "recorded one", (unsigned long long)k, article(strata_tag_name(tag)),
                     strata_tag_name(tag),
                     strata_format_size(need, s1, sizeof s1));
            mplan_abandon(p, why);
        }
        p->unplanned++;
        return arena_alloc(a, tier_name, bytes, tag, off_p, span_p, msg, msglen);
    }
    strata_status_t st;
    if (key && b->clock > p->clock) {   /* early: its span may be another's until then */
        snprintf(msg, msglen, "%s tier: a %s buffer the memory plan places after allocation "
                 "%llu of the step comes at %llu: it waits", tier_name, strata_tag_name(tag),
                 (unsigned long long)b->clock, (unsigned long long)p->clock);
        st = STRATA_ERR_FRAGMENTED;
    } else {
        st = arena_alloc_at(a, tier_name, p->base + b->off, need, tag, span_p, msg, msglen);
    }
    if (STRATA_ERR_FRAGMENTED == st && p->go_aside) {
        /* nothing frees its span in time: this buffer outside the plan's
         * span, the others still at theirs; no room there, no plan */
        size_t off;
        p->go_aside = 0;
        if (!p->no_aside && 0 == arena_find_outside(a, need, p->iv, p->niv, p->base, &off) &&
            STRATA_OK == (st = arena_alloc_at(a, tier_name, off, need, tag, span_p, msg, msglen))) {
            if (!key) p->clock++;
            p->aside++;
            *off_p = off;
            return STRATA_OK;
        }
        mplan_abandon(p, msg);
        return arena_alloc(a, tier_name, bytes, tag, off_p, span_p, msg, msglen);
    }
    if (STRATA_ERR_FRAGMENTED == st) p->waits++;
    if (STRATA_OK != st) return st;
    if (!key) p->clock++;
    p->placed++;
    *off_p = p->base + b->off;
    return STRATA_OK;
}

static void merge_next(arena_t *a, arena_span_t *s)
{
    arena_span_t *n = s->next;
    s->size += n->size;
    s->next = n->next;
    if (n->next) n->next->prev = s;
    free(n);
    a->nspans--;
}

void arena_free(arena_t *a, arena_span_t *s)
{
    if (!s || &zero_span == s) return;
    if (a->plan && MPLAN_RECORD == a->plan->mode) mplan_note_free(a->plan, s->slot);
    s->slot = 0;
    tier_acct_sub(&a->acct, s->tag, s->size);
    s->free = 1;
    if (s->next && s->next->free) merge_next(a, s);
    if (s->prev && s->prev->free) merge_next(a, s->prev);
}

int arena_check(const arena_t *a)
{
    size_t off = 0, used = 0, by_tag[STRATA_TAG_COUNT] = { 0 }, n = 0;
    const arena_span_t *prev = NULL;
    for (const arena_span_t *s = a->first; s; prev = s, s = s->next) {
        if (s->off != off || 0 == s->size || s->prev != prev) return -1;
        if (s->off % TIERS_ALIGN || s->size % TIERS_ALIGN) return -2;
        if (s->free && prev && prev->free) return -3;      /* not coalesced */
        if (!s->free) {
            used += s->size;
            by_tag[s->tag] += s->size;
        }
        off += s->size;
        n++;
    }
    if (off != a->capacity || n != a->nspans) return -4;
    if (used != a->acct.used) return -5;
    for (int t = 0; t < STRATA_TAG_COUNT; t++)
        if (by_tag[t] != a->acct.used_by_tag[t]) return -6;
    return 0;
}
