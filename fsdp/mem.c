/*
 * mem.c - the single allocation door of the FSDP runtime.
 *
 * Every buffer a callback touches and every shard is a tiers block
 * resident in one memory tier (DEVICE or PINNED_HOST), so the tier's hard
 * budget covers it, and a full tier fails with the tiers' message (tier,
 * request, budget, bytes in use per tag). Here too: the guard bytes after
 * every runtime buffer, the workspace blocks kept between calls, and the
 * room-making retry of the step's device buffers (the hook that makes room
 * belongs to whoever holds memory that can go: the activation executor).
 * On the cuda backend the zeroing and the guards of a device buffer are
 * queued on the compute stream, the guards are not read back (a read would
 * wait for the stream; compute-sanitizer's memcheck is the device's check),
 * and a device buffer is freed in stream order (dev.h).
 */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <string.h>

#define GUARD_BYTE 0xA5

/* A busy span of the memory plan (its previous occupant not yet freed)
 * that nothing could free: the buffer goes beside the plan's span, or
 * where there is no room, the rest of the step leaves the plan and it is
 * allocated by best fit. */
static strata_status_t leave_plan(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                                  size_t bytes, strata_block_t **blk_p)
{
    if (STRATA_TIER_DEVICE != tier || !tiers_plan_aside(ctx)) return STRATA_ERR_FRAGMENTED;
    base_clear_error(ctx);
    return strata_block_alloc(ctx, tier, bytes, tag, blk_p);
}

static strata_status_t mem_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                                 size_t bytes, int may_leave_plan, void **ptr_p, fsdp_mem_t **h_p)
{
    if ((int)tier < 0 || tier > STRATA_TIER_PINNED_HOST)
        return base_error(ctx, STRATA_ERR_INVALID, "fsdp_mem_alloc: tier %d is not a memory tier",
                          (int)tier);
    strata_block_t *blk = NULL;
    if (fsdp_dev_on(ctx)) fsdp_dev_reclaim(ctx, 0);   /* releases whose event fired */
    strata_status_t st = strata_block_alloc(ctx, tier, bytes ? bytes : 1, tag, &blk);
    /* a full tier may hold releases still waiting for the compute stream */
    while ((STRATA_ERR_TIER_FULL == st || STRATA_ERR_FRAGMENTED == st) && fsdp_dev_on(ctx) &&
           fsdp_dev_reclaim(ctx, 1))
        st = strata_block_alloc(ctx, tier, bytes ? bytes : 1, tag, &blk);
    if (STRATA_ERR_FRAGMENTED == st && may_leave_plan)
        st = leave_plan(ctx, tier, tag, bytes ? bytes : 1, &blk);
    if (STRATA_OK != st) return st;
    *ptr_p = strata_block_ptr(blk, tier);
    *h_p = blk;
    return STRATA_OK;
}

strata_status_t fsdp_mem_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, void **ptr_p, fsdp_mem_t **h_p)
{
    return mem_alloc(ctx, tier, tag, bytes, 1, ptr_p, h_p);
}

void fsdp_mem_free(fsdp_mem_t *h)
{
    strata_block_free(h);
}

/* Whether b lives on the device of the cuda backend: then it is touched
 * only through the compute stream. */
static int on_device(const fsdp_buf_t *b, strata_context_t **ctx_p)
{
    strata_context_t *ctx = b->h ? b->h->ts->ctx : NULL;
    if (ctx_p) *ctx_p = ctx;
    return fsdp_dev_on(ctx) && b->ptr && b->ptr == strata_block_ptr(b->h, STRATA_TIER_DEVICE);
}

void fsdp_mem_stats(strata_context_t *ctx, fsdp_mem_stats_t *st)
{
    memset(st, 0, sizeof *st);
    if (!ctx) return;
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        strata_tier_usage_t u;
        if (STRATA_OK != strata_tier_usage(ctx, (strata_tier_t)t, &u)) continue;
        st->budget[t] = u.budget;
        st->used[t] = u.used;
        st->peak[t] = u.peak;
        memcpy(st->used_by_tag[t], u.used_by_tag, sizeof u.used_by_tag);
    }
}

/* ---- runtime buffers and their guards ---------------------------------------------- */

static strata_status_t buf_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                                 size_t bytes, int zero, int may_leave_plan, fsdp_buf_t *b)
{
    void *p = NULL;
    fsdp_mem_t *h = NULL;
    size_t total;
    if (strata_add_size(bytes, FSDP_GUARD, &total))
        return base_error(ctx, STRATA_ERR_OVERFLOW, "buffer of %zu bytes overflows", bytes);
    strata_status_t st = mem_alloc(ctx, tier, tag, total, may_leave_plan, &p, &h);
    if (STRATA_OK != st) return st;
    b->ptr = p;
    b->bytes = bytes;
    b->h = h;
    if (zero) st = fsdp_dev_fill(ctx, p, 0, bytes);
    if (STRATA_OK == st) st = fsdp_dev_fill(ctx, (char *)p + bytes, GUARD_BYTE, FSDP_GUARD);
    if (STRATA_OK != st) fsdp_buf_free(b);
    return st;
}

strata_status_t fsdp_buf_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, int zero, fsdp_buf_t *b)
{
    return buf_alloc(ctx, tier, tag, bytes, zero, 1, b);
}

/* Whether freeing b waits for the compute stream (cuda): any buffer whose
 * pointer was handed out, on either memory tier, as kernels may still use
 * a host buffer that stood in for a device one (frag_to_host, the sizing
 * pass). */
static int stream_freed(const fsdp_buf_t *b, strata_context_t **ctx_p)
{
    strata_context_t *ctx = b->h ? b->h->ts->ctx : NULL;
    *ctx_p = ctx;
    return fsdp_dev_on(ctx) && b->ptr;
}

void fsdp_buf_free(fsdp_buf_t *b)
{
    if (!b) return;
    strata_context_t *ctx;
    /* placing by the memory plan, a device span goes back at once: its
     * next occupant is the compute stream's, a gather's or reduction's
     * (their streams wait for the compute stream's work so far) or a
     * restore's, whose copy waits for it too (exec_run.c) -- stream order,
     * not a host wait for this free's event */
    if (stream_freed(b, &ctx) && !(on_device(b, NULL) && tiers_plan_placing(ctx)))
        fsdp_dev_free_later(ctx, b->h);
    else fsdp_mem_free(b->h);
    b->ptr = NULL;
    b->h = NULL;
    b->bytes = 0;
}

int fsdp_guard_ok(const fsdp_buf_t *b)
{
    if (!b || !b->ptr || on_device(b, NULL)) return 1;
    const unsigned char *g = (const unsigned char *)b->ptr + b->bytes;
    for (size_t i = 0; i < FSDP_GUARD; i++)
        if (GUARD_BYTE != g[i]) return 0;
    return 1;
}

/* ---- making room -------------------------------------------------------------------- */

void fsdp_mem_set_room(strata_model_t *m, fsdp_room_fn fn)
{
    m->room = fn;
}

/* Nothing can free device memory and the tier said st. Fragmented (the
 * bytes are free, in pieces): the buffer goes to the pinned-host tier,
 * where a callback reads and writes it the same (on cuda the pinned tier
 * is device-addressable, and the buffer is freed in stream order), so a
 * plan the admission let in does not fail inside a step for want of one
 * span. This is the path of a step that records the memory plan; a step
 * that places by it does not fragment. */
static strata_status_t frag_to_host(strata_model_t *m, strata_status_t st, strata_tag_t tag,
                                    size_t bytes, fsdp_buf_t *b)
{
    if (STRATA_ERR_FRAGMENTED != st) return st;
    char dev[512];
    snprintf(dev, sizeof dev, "%s", strata_last_error(m->ctx));
    base_clear_error(m->ctx);
    strata_status_t hs = fsdp_buf_alloc(m->ctx, STRATA_TIER_PINNED_HOST, tag, bytes, 0, b);
    if (STRATA_OK != hs)
        return base_error(m->ctx, st, "%s; nor could the pinned-host tier take it: %s", dev,
                          strata_last_error(m->ctx));
    tiers_plan_note_elsewhere(m->ctx, tag, bytes + FSDP_GUARD);
    if (0 == m->frag_spills++)
        strata_warn(m->ctx, "%s: this buffer and any more like it go to the pinned-host tier "
                    "(the device budget holds; the step goes on)", dev);
    return STRATA_OK;
}

strata_status_t fsdp_buf_alloc_room(strata_model_t *m, strata_tag_t tag, size_t bytes,
                                    fsdp_buf_t *b)
{
    for (;;) {
        strata_status_t st = buf_alloc(m->ctx, STRATA_TIER_DEVICE, tag, bytes, 0, 0, b);
        if (STRATA_ERR_TIER_FULL != st && STRATA_ERR_FRAGMENTED != st) return st;
        /* placing by the plan, the span is held by what the recording had
         * freed by now (an offload or a collective running late): wait
         * for the transfers, then a collective, and only then go beside
         * the plan; the kept workspace stays, as dropping it would change
         * what the step allocates next */
        if (m->mplan_placing && STRATA_ERR_FRAGMENTED == st) {
            if (m->room && m->room(m)) continue;
            strata_status_t cs;
            if (fsdp_mplan_held(m, &cs)) {
                if (STRATA_OK != cs) return cs;
                continue;
            }
        }
        /* the kept workspace goes first: freeing it costs no wait */
        if (fsdp_ws_cache_drop(m) || (m->room && m->room(m))) continue;
        if (!m->sizing) return frag_to_host(m, st, tag, bytes, b);
        /* the sizing pass only measures: what the device cannot hold now
         * goes to the pinned-host tier (device-addressable on cuda), so a
         * budget too small is found by the plan, with the budget that
         * fits, not by this allocation. The bytes still count as the
         * device's in the sizes the pass records. */
        base_clear_error(m->ctx);
        st = fsdp_buf_alloc(m->ctx, STRATA_TIER_PINNED_HOST, tag, bytes, 0, b);
        if (STRATA_OK == st) m->sizing_over = 1;
        return st;
    }
}

/* ---- workspace kept between calls ------------------------------------------------------ */

int fsdp_ws_cache_drop(strata_model_t *m)
{
    int n = m->nws_cache;
    for (int i = 0; i < n; i++) fsdp_buf_free(&m->ws_cache[i]);
    m->nws_cache = 0;
    return n > 0;
}

/* The smallest kept block that holds bytes (and the guard), or -1. */
static int ws_find(const strata_model_t *m, size_t bytes)
{
    int best = -1;
    for (int i = 0; i < m->nws_cache; i++) {
        size_t cap = strata_block_size(m->ws_cache[i].h);
        if (cap >= bytes + FSDP_GUARD &&
            (best < 0 || cap < strata_block_size(m->ws_cache[best].h))) best = i;
    }
    return best;
}

int fsdp_ws_take(strata_model_t *m, size_t bytes, fsdp_buf_t *b)
{
    int k = ws_find(m, bytes);
    if (k < 0) return 0;
    *b = m->ws_cache[k];
    m->ws_cache[k] = m->ws_cache[--m->nws_cache];
    b->bytes = bytes;
    fsdp_dev_fill(m->ctx, (char *)b->ptr + bytes, GUARD_BYTE, FSDP_GUARD);
    return 1;
}

void fsdp_ws_give(strata_model_t *m, fsdp_buf_t *b)
{
    if (!b->h) return;
    if (m->exec_active && m->nws_cache < FSDP_WS_CACHE) {
        m->ws_cache[m->nws_cache++] = *b;
        b->h = NULL;
        b->ptr = NULL;
        b->bytes = 0;
        return;
    }
    fsdp_buf_free(b);
}

/* ---- the static memory plan of the step ------------------------------------------------ */

void fsdp_mplan_step_begin(strata_model_t *m)
{
    /* a plan recorded for another program, or another number of
     * micro-batches, has nothing to place */
    if (m->mplan_seen != m->mplan_gen || m->mplan_nmicro != m->n_micro) tiers_plan_forget(m->ctx);
    m->mplan_seen = m->mplan_gen;
    m->mplan_nmicro = m->n_micro;
    m->mplan_placing = 0;
    if (m->ctx->cfg.mem_plan) tiers_plan_step_begin(m->ctx, m, m->step_count + 1, &m->mplan_placing);
}

void fsdp_mplan_step_end(strata_model_t *m)
{
    tiers_plan_step_end(m->ctx);
    /* the program changed inside the step (step 1's sizing pass and plan,
     * a replan on measured costs): its record is of no one program */
    if (m->mplan_seen != m->mplan_gen) tiers_plan_forget(m->ctx);
    tiers_plan_stats_t ps;
    tiers_plan_stats(m->ctx, &ps);
    m->stats.mem_planned = m->mplan_placing && !ps.why[0];
    m->stats.mem_plan_buffers = ps.buffers;
    m->stats.mem_plan_bytes = ps.extent;
    m->stats.mem_plan_waits = ps.waits;
    strata_debug(m->ctx, "memory plan after step %d: %s, %zu buffers in %zu bytes (live peak "
                 "%zu), placed %zu, unplanned %zu, waits %zu, aside %zu%s%s", m->step_count,
                 m->mplan_placing ? "placed" : "recorded", ps.buffers, ps.extent, ps.live_peak,
                 ps.placed, ps.unplanned, ps.waits, ps.aside, ps.why[0] ? ": " : "", ps.why);
    /* benign (the budget holds, the step went on), and often one rank's
     * timing: a warning once from rank 0, the others' at info level */
    if (m->mplan_placing && ps.why[0] && 0 == m->mplan_left++)
        strata_log(m->ctx, 0 == m->ctx->rank ? STRATA_LOG_WARN : STRATA_LOG_INFO,
                   "memory plan: step %d left the plan: %s (the next step records it again; the "
                   "device budget still holds)", m->step_count, ps.why);
    if (!m->mplan_placing && ps.packed && 0 == m->ctx->rank) {
        char s1[32], s2[32];
        strata_info(m->ctx, "memory plan: the step's %zu device buffers at fixed offsets, %s, "
                    "spans of %s (the most alive at once: %s); placed from the next step",
                    ps.buffers, ps.recorded_layout ? "where this step's allocator put them"
                                                   : "packed by size",
                    strata_format_size(ps.extent, s1, sizeof s1),
                    strata_format_size(ps.live_peak, s2, sizeof s2));
    }
    m->mplan_placing = 0;
}

int fsdp_mplan_held(strata_model_t *m, strata_status_t *st_p)
{
    *st_p = STRATA_OK;
    if (fsdp_progress_settle(m, st_p)) return 1;
    if (!tiers_plan_aside(m->ctx)) return 0;
    base_clear_error(m->ctx);
    return 1;
}

void fsdp_mplan_forget(strata_model_t *m)
{
    tiers_plan_forget(m->ctx);
    m->mplan_placing = 0;
}
