/*
 * block.c - blocks, their residency and the moves between tiers.
 *
 * A block keeps two residency sets: `valid`, the tiers readable now, and
 * `lres`, the tiers that will hold it once every queued op has completed.
 * Moves are planned against lres, so a prefetch may be queued behind an
 * offload still in flight. Ops on one block run in issue order (each
 * depends on the block's previous op), and a failed op fails the ops
 * queued behind it on that block; once the block has no op pending, its
 * state is rebuilt from what is really valid, so a failure leaves the block
 * valid where it was.
 *
 * Space in a destination is taken when the move is queued (a full tier
 * fails synchronously). Space that a pending op will release is instead
 * reclaimed by a later op that needs the same tier: the release is
 * cancelled and the later copy becomes a no-op, as the bytes never left.
 */
#include "config.h"
#include "tiers/tiers.h"
#include "base/nvtx.h"

#include <stdlib.h>
#include <string.h>

#define BIT(t) (1u << (t))

/* zero-byte blocks have no space; their pointer is this */
static char zero_block[TIERS_ALIGN] __attribute__((aligned(TIERS_ALIGN)));

/* Take space in a tier for blk (lock held). */
static strata_status_t take_space(strata_block_t *blk, strata_tier_t tier)
{
    tiers_state_t *ts = blk->ts;
    tiers_slot_t *s = &blk->slot[tier];
    char msg[STRATA_ERRMSG_LEN];
    strata_status_t st;
    if (STRATA_TIER_STORAGE == tier) {
        st = tier_acct_reserve(&ts->storage_acct, "storage", blk->bytes, blk->tag,
                               msg, sizeof msg);
        if (STRATA_OK != st) return base_error(ts->ctx, st, "%s", msg);
        s->ds = NULL;
        s->ptr = NULL;
    } else {
        size_t off;
        st = arena_alloc_keyed(&ts->arena[tier], strata_tier_name(tier), blk->bytes, blk->tag,
                               blk->plan_key, &off, &s->span, msg, sizeof msg);
        if (STRATA_OK == st) blk->plan_key = 0;
        if (STRATA_OK == st && STRATA_TIER_PINNED_HOST == tier &&
            STRATA_OK != (st = tiers_pin_reach(ts, off + blk->rounded, msg, sizeof msg)))
            arena_free(&ts->arena[tier], s->span);
        /* a full auto-sized host tier: say what sized it and what to set */
        int why = STRATA_ERR_TIER_FULL == st && STRATA_TIER_PINNED_HOST == tier && ts->host_auto;
        if (STRATA_OK != st)
            return base_error(ts->ctx, st, "%s%s%s", msg, why ? "; " : "", why ? ts->host_why : "");
        s->ptr = blk->bytes ? (char *)ts->base[tier] + off : zero_block;
    }
    s->has_space = 1;
    s->releasing_op = NULL;
    return STRATA_OK;
}

void tiers_block_free_space_locked(strata_block_t *blk, strata_tier_t tier)
{
    tiers_state_t *ts = blk->ts;
    tiers_slot_t *s = &blk->slot[tier];
    if (!s->has_space) return;
    if (STRATA_TIER_STORAGE == tier) {
        tier_acct_sub(&ts->storage_acct, blk->tag, blk->rounded);
        if (s->ds) {            /* the dataset goes back for reuse */
            s->ds->next = ts->ds_free;
            ts->ds_free = s->ds;
        }
    } else {
        arena_free(&ts->arena[tier], s->span);
    }
    memset(s, 0, sizeof *s);
    blk->valid &= ~BIT(tier);
}

strata_status_t strata_block_alloc(strata_context_t *ctx, strata_tier_t tier, size_t bytes,
                                   strata_tag_t tag, strata_block_t **blk_p)
{
    if (!ctx || !ctx->tiers || !blk_p) return STRATA_ERR_INVALID;
    if (STRATA_TIER_DEVICE != tier && STRATA_TIER_PINNED_HOST != tier)
        return base_error(ctx, STRATA_ERR_INVALID,
                          "strata_block_alloc: tier must be DEVICE or PINNED_HOST (got %d); "
                          "storage blocks are made by moving", (int)tier);
    if ((unsigned)tag >= STRATA_TAG_COUNT)
        return base_error(ctx, STRATA_ERR_INVALID, "strata_block_alloc: bad tag %d", (int)tag);
    tiers_state_t *ts = ctx->tiers;
    strata_block_t *blk = calloc(1, sizeof *blk);
    if (!blk) return base_error(ctx, STRATA_ERR_NOMEM, "strata_block_alloc: out of memory");
    blk->ts = ts;
    blk->bytes = bytes;
    blk->tag = tag;
    if (tiers_round(bytes, &blk->rounded)) {
        free(blk);
        return base_error(ctx, STRATA_ERR_OVERFLOW, "strata_block_alloc: %zu bytes overflows",
                          bytes);
    }
    pthread_mutex_lock(&ts->lock);
    strata_status_t st = take_space(blk, tier);
    if (STRATA_OK == st) {
        blk->valid = blk->lres = BIT(tier);
        blk->next_blk = ts->blocks;
        if (ts->blocks) ts->blocks->prev_blk = blk;
        ts->blocks = blk;
    }
    tiers_unlock(ts);
    if (STRATA_OK != st) {
        free(blk);
        return st;
    }
    *blk_p = blk;
    return STRATA_OK;
}

static void wait_idle_locked(strata_block_t *blk)
{
    while (blk->pending > 0) tiers_cond_wait(blk->ts, &blk->ts->cond);
}

/* Free a block whose ops are all done (lock held). */
void tiers_block_destroy_locked(strata_block_t *blk)
{
    tiers_state_t *ts = blk->ts;
    for (int t = 0; t < STRATA_TIER_COUNT; t++) tiers_block_free_space_locked(blk, (strata_tier_t)t);
    if (blk->prev_blk) blk->prev_blk->next_blk = blk->next_blk;
    else ts->blocks = blk->next_blk;
    if (blk->next_blk) blk->next_blk->prev_blk = blk->prev_blk;
    tiers_event_unref_locked(blk->last_ev);
    if (blk->after && ts->be->forget) ts->be->forget(blk->after);
    free(blk);
}

strata_status_t strata_block_free(strata_block_t *blk)
{
    if (!blk) return STRATA_OK;
    tiers_state_t *ts = blk->ts;
    pthread_mutex_lock(&ts->lock);
    wait_idle_locked(blk);
    tiers_block_destroy_locked(blk);
    tiers_unlock(ts);
    return STRATA_OK;
}

size_t strata_block_size(const strata_block_t *blk) { return blk ? blk->bytes : 0; }

void *strata_block_ptr(const strata_block_t *blk, strata_tier_t tier)
{
    if (!blk || (STRATA_TIER_DEVICE != tier && STRATA_TIER_PINNED_HOST != tier)) return NULL;
    tiers_state_t *ts = blk->ts;
    pthread_mutex_lock(&ts->lock);
    void *p = (blk->valid & BIT(tier)) ? blk->slot[tier].ptr : NULL;
    tiers_unlock(ts);
    return p;
}

int strata_block_resident(const strata_block_t *blk, strata_tier_t tier)
{
    if (!blk || (unsigned)tier >= STRATA_TIER_COUNT) return 0;
    pthread_mutex_lock(&blk->ts->lock);
    int r = !!(blk->valid & BIT(tier));
    tiers_unlock(blk->ts);
    return r;
}

strata_status_t strata_block_evict(strata_block_t *blk, strata_tier_t tier)
{
    if (!blk || (unsigned)tier >= STRATA_TIER_COUNT) return STRATA_ERR_INVALID;
    tiers_state_t *ts = blk->ts;
    strata_status_t st = STRATA_OK;
    pthread_mutex_lock(&ts->lock);
    wait_idle_locked(blk);
    if (!(blk->valid & BIT(tier))) {
        st = base_error(ts->ctx, STRATA_ERR_STATE, "strata_block_evict: the block has no copy "
                        "in the %s tier", strata_tier_name(tier));
    } else if (0 == (blk->valid & ~BIT(tier))) {
        st = base_error(ts->ctx, STRATA_ERR_STATE, "strata_block_evict: the %s tier holds the "
                        "only copy of the block; move it first", strata_tier_name(tier));
    } else {
        tiers_block_free_space_locked(blk, tier);
        blk->lres = blk->valid;
    }
    tiers_unlock(ts);
    return st;
}

/* ---- moves -------------------------------------------------------------- */

static int engine_for(strata_tier_t src, strata_tier_t dst)
{
    if (STRATA_TIER_STORAGE == src || STRATA_TIER_STORAGE == dst) return ENG_IO;
    return STRATA_TIER_DEVICE == src ? ENG_D2H : ENG_H2D;
}

/* Queue one leg (lock held). Takes a reference to wait_for. */
static tiers_op_t *new_leg(strata_block_t *blk, strata_tier_t src, strata_tier_t dst,
                           strata_event_t *wait_for)
{
    tiers_op_t *op = calloc(1, sizeof *op);
    if (!op) return NULL;
    op->ev = tiers_event_new(blk->ts);
    if (!op->ev) {
        free(op);
        return NULL;
    }
    op->ev->op = op;
    op->blk = blk;
    op->src = src;
    op->dst = dst;
    op->wait_for = wait_for;
    if (wait_for) wait_for->refs++;
    op->after = blk->after;         /* the first leg orders after the producer */
    blk->after = NULL;
    return op;
}

static void chain_and_enqueue(strata_block_t *blk, tiers_op_t *op)
{
    op->prev = blk->last_ev;        /* the block's reference moves to the op */
    op->ev->refs++;                 /* the block's new last_ev */
    blk->last_ev = op->ev;
    blk->pending++;
    tiers_enqueue(blk->ts, engine_for(op->src, op->dst), op);
}

/* A move to where the block already is (or is going) completes with the
 * block's last op; with none, at once. NULL when out of memory. */
static strata_event_t *event_of_last_op_locked(strata_block_t *blk)
{
    strata_event_t *ev = blk->last_ev;
    if (ev) {
        ev->refs++;
    } else {
        ev = tiers_event_new(blk->ts);
        if (ev) tiers_event_complete_locked(ev, STRATA_OK);
    }
    return ev;
}

/* The route: one leg from the nearest copy (*mid_p = STRATA_TIER_COUNT),
 * or two through the host. */
static void route_of(const strata_block_t *blk, strata_tier_t dst, strata_tier_t *src_p, strata_tier_t *mid_p)
{
    const strata_tier_t H = STRATA_TIER_PINNED_HOST;
    *mid_p = STRATA_TIER_COUNT;
    if (H == dst) {
        *src_p = (blk->lres & BIT(STRATA_TIER_DEVICE)) ? STRATA_TIER_DEVICE : STRATA_TIER_STORAGE;
    } else if (blk->lres & BIT(H)) {
        *src_p = H;
    } else {
        *src_p = STRATA_TIER_DEVICE == dst ? STRATA_TIER_STORAGE : STRATA_TIER_DEVICE;
        *mid_p = H;
    }
}

/* The space a move writes into: the destination's, then the host's on a
 * two-leg route. Each is taken fresh, or reclaimed from an op queued to
 * release it. */
typedef struct {
    strata_tier_t need[2];
    int nneed;
    int fresh[2], reclaim[2];
} move_space_t;

static void free_fresh_space_locked(strata_block_t *blk, const move_space_t *sp, int n)
{
    for (int j = 0; j < n; j++)
        if (sp->fresh[j]) tiers_block_free_space_locked(blk, sp->need[j]);
}

/* Fresh allocations now (they can fail: nothing is then left taken);
 * reclaims are only marked, and made once the legs exist. */
static strata_status_t take_move_space_locked(strata_block_t *blk, move_space_t *sp)
{
    for (int i = 0; i < sp->nneed; i++) {
        tiers_slot_t *s = &blk->slot[sp->need[i]];
        if (s->has_space) {
            sp->reclaim[i] = NULL != s->releasing_op;
            continue;
        }
        strata_status_t st = take_space(blk, sp->need[i]);
        if (STRATA_OK != st) {
            free_fresh_space_locked(blk, sp, i);
            return st;
        }
        sp->fresh[i] = 1;
    }
    return STRATA_OK;
}

/* The legs' releases: reclaimed space is taken back from the op that was
 * to release it (a leg into it then needs no copy); the last leg frees
 * every other copy on a move (release_src) and always the intermediate
 * host copy. */
static void set_releases_locked(strata_block_t *blk, const move_space_t *sp, tiers_op_t *a, tiers_op_t *b,
                                strata_tier_t dst, strata_tier_t mid, int release_src)
{
    tiers_op_t *last = b ? b : a;
    for (int i = 0; i < sp->nneed; i++) {
        if (!sp->reclaim[i]) continue;
        tiers_slot_t *s = &blk->slot[sp->need[i]];
        s->releasing_op->release_mask &= ~BIT(sp->need[i]);
        s->releasing_op = NULL;
        (0 == i ? last : a)->nocopy = 1;
    }
    unsigned rel = release_src ? (blk->lres & ~BIT(dst)) : 0;
    if (b) rel |= BIT(mid);
    last->release_mask = rel;
    for (int t = 0; t < STRATA_TIER_COUNT; t++)
        if (rel & BIT(t)) blk->slot[t].releasing_op = last;
    blk->lres = (blk->lres | BIT(dst)) & ~(release_src ? rel : 0);
}

strata_status_t strata_block_move(strata_block_t *blk, strata_tier_t dst, int release_src,
                                  strata_event_t *wait_for, strata_event_t **ev_p)
{
    if (!blk || (unsigned)dst >= STRATA_TIER_COUNT) return STRATA_ERR_INVALID;
    tiers_state_t *ts = blk->ts;
    strata_context_t *ctx = ts->ctx;
    strata_status_t st = STRATA_OK;

    if (STRATA_TIER_STORAGE == dst && !ts->spill) {
        st = tiers_storage_prepare(ts);
        if (STRATA_OK != st) return st;
    }
    pthread_mutex_lock(&ts->lock);
    if (ts->shutdown) {
        tiers_unlock(ts);
        return base_error(ctx, STRATA_ERR_CANCELLED, "strata_block_move: tiers shut down");
    }
    if (blk->lres & BIT(dst)) {
        strata_event_t *ev = event_of_last_op_locked(blk);
        tiers_unlock(ts);
        if (!ev) return base_error(ctx, STRATA_ERR_NOMEM, "strata_block_move: out of memory");
        if (ev_p) *ev_p = ev;
        else strata_event_release(ev);
        return STRATA_OK;
    }

    strata_tier_t src, mid;
    route_of(blk, dst, &src, &mid);
    if (!(blk->lres & BIT(src))) {
        tiers_unlock(ts);
        return base_error(ctx, STRATA_ERR_STATE, "strata_block_move: the block has no copy "
                          "to move from (an earlier failed op is still unwinding)");
    }
    move_space_t sp = { { dst, mid }, STRATA_TIER_COUNT == mid ? 1 : 2, { 0, 0 }, { 0, 0 } };
    st = take_move_space_locked(blk, &sp);
    if (STRATA_OK != st) {
        tiers_unlock(ts);
        return st;
    }

    tiers_op_t *a = NULL, *b = NULL;
    if (STRATA_TIER_COUNT == mid) {
        a = new_leg(blk, src, dst, wait_for);
    } else {
        a = new_leg(blk, src, mid, wait_for);
        b = new_leg(blk, mid, dst, NULL);
    }
    if (!a || (STRATA_TIER_COUNT != mid && !b)) {
        free_fresh_space_locked(blk, &sp, sp.nneed);
        if (a) { tiers_event_unref_locked(a->ev); tiers_event_unref_locked(a->wait_for); free(a); }
        if (b) { tiers_event_unref_locked(b->ev); free(b); }
        tiers_unlock(ts);
        return base_error(ctx, STRATA_ERR_NOMEM, "strata_block_move: out of memory");
    }
    set_releases_locked(blk, &sp, a, b, dst, mid, release_src);
    chain_and_enqueue(blk, a);
    if (b) chain_and_enqueue(blk, b);
    strata_event_t *ev = (b ? b : a)->ev;
    if (ev_p) ev->refs++;
    tiers_unlock(ts);
    if (ev_p) *ev_p = ev;
    return STRATA_OK;
}

/* Completion of an op (lock held): apply or unwind, complete its event. */
void tiers_op_finish_locked(tiers_state_t *ts, tiers_op_t *op, strata_status_t st)
{
    strata_block_t *blk = op->blk;
    base_nvtx_end(op->nvtx);
    op->nvtx = 0;
    if (STRATA_OK == st) {
        blk->valid |= BIT(op->dst);
        for (int t = 0; t < STRATA_TIER_COUNT; t++) {
            if (!(op->release_mask & BIT(t))) continue;
            if (blk->slot[t].releasing_op == op) blk->slot[t].releasing_op = NULL;
            tiers_block_free_space_locked(blk, (strata_tier_t)t);
        }
    } else {
        blk->failed = 1;
        for (int t = 0; t < STRATA_TIER_COUNT; t++)
            if (blk->slot[t].releasing_op == op) blk->slot[t].releasing_op = NULL;
    }
    if (0 == --blk->pending && blk->failed) {
        /* unwind: keep exactly what is valid */
        for (int t = 0; t < STRATA_TIER_COUNT; t++)
            if (!(blk->valid & BIT(t))) tiers_block_free_space_locked(blk, (strata_tier_t)t);
        blk->lres = blk->valid;
        blk->failed = 0;
        /* the failure stops here: later ops must not inherit it */
        tiers_event_unref_locked(blk->last_ev);
        blk->last_ev = NULL;
    }
    op->ev->op = NULL;
    tiers_event_complete_locked(op->ev, st);
    tiers_event_unref_locked(op->ev);
    tiers_event_unref_locked(op->prev);
    tiers_event_unref_locked(op->wait_for);
    if (op->hash) XXH3_freeState(op->hash);
    if (op->after && ts->be->forget) ts->be->forget(op->after);
    ts->outstanding--;
    free(op);
}

strata_status_t tiers_block_after(strata_block_t *blk, void *stream)
{
    if (!blk || !stream || !blk->ts->be->mark) return STRATA_OK;
    tiers_state_t *ts = blk->ts;
    void *mk = NULL;
    strata_status_t st = ts->be->mark(ts, stream, &mk);
    if (STRATA_OK != st) return st;
    pthread_mutex_lock(&ts->lock);
    void *old = blk->after;
    blk->after = mk;
    pthread_mutex_unlock(&ts->lock);
    if (old && ts->be->forget) ts->be->forget(old);
    return STRATA_OK;
}
