/*
 * tiers.c - the tiers of a context: set-up and shutdown (called from
 * strata_init / strata_finalize), names, accounting queries.
 */
#define _GNU_SOURCE 1   /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include "config.h"
#include "tiers/tiers.h"
#include "tiers/spill.h"
#include "base/test_fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Budgets of "inf" reserve this much address space (the arena's capacity). */
#define TIERS_MAX_RESERVE ((size_t)1 << 40)

const char *strata_tier_name(strata_tier_t tier)
{
    static const char *const n[STRATA_TIER_COUNT] = { "device", "host", "storage" };
    return (unsigned)tier < STRATA_TIER_COUNT ? n[tier] : "unknown";
}

const char *strata_tag_name(strata_tag_t tag)
{
    static const char *const n[STRATA_TAG_COUNT] = { "param", "grad", "optim", "activation",
                                                     "workspace" };
    return (unsigned)tag < STRATA_TAG_COUNT ? n[tag] : "unknown";
}

int tiers_device_fit(size_t free_b, size_t total_b, size_t nccl, size_t budget, char *msg,
                     size_t len)
{
    char f[32], t[32], b[32], h[32], n[32], u[32], m[32];
    size_t region = budget > nccl ? budget - nccl : 0;
    size_t init = total_b > free_b ? total_b - free_b : 0;
    if (region > free_b) {
        size_t most = free_b + nccl > TIERS_DEVICE_HEADROOM ? free_b + nccl - TIERS_DEVICE_HEADROOM
                                                            : free_b + nccl;
        snprintf(msg, len, "device_mem %s is more than this device can give: %s of %s free after "
                 "init took %s (the CUDA context, NCCL's communicators %s of it, counted inside "
                 "device_mem, and anyone else on the device); lower device_mem to at most %s "
                 "(device_mem=%zu leaves %s for the CUDA runtime's own needs)",
                 strata_format_size(budget, b, sizeof b), strata_format_size(free_b, f, sizeof f),
                 strata_format_size(total_b, t, sizeof t), strata_format_size(init, u, sizeof u),
                 strata_format_size(nccl, n, sizeof n), strata_format_size(most, m, sizeof m),
                 most, strata_format_size(TIERS_DEVICE_HEADROOM, h, sizeof h));
        return -1;
    }
    size_t left = free_b - region;
    int low = left < TIERS_DEVICE_HEADROOM;
    snprintf(msg, len, "device: %s free of %s after the device tier's %s (init took %s, NCCL's "
             "%s of it counted in the tier)%s%s%s", strata_format_size(left, f, sizeof f),
             strata_format_size(total_b, t, sizeof t), strata_format_size(budget, b, sizeof b),
             strata_format_size(init, u, sizeof u), strata_format_size(nccl, n, sizeof n),
             low ? "; the CUDA runtime's own allocations (kernel modules, library handles) "
                   "live outside the budget and want " : "",
             low ? strata_format_size(TIERS_DEVICE_HEADROOM, h, sizeof h) : "",
             low ? ": lower device_mem, or expect out-of-memory errors outside the tiers" : "");
    return low;
}

/* A host or storage budget above what the machine has is lowered to it,
 * said once (rank 0): the plan is then made, and refused, against what
 * there is, naming the limit, and not found out as an OOM kill or ENOSPC
 * in a step. */
static void limit_budgets(tiers_state_t *ts, size_t budget[2])
{
    const strata_config_t *cfg = &ts->ctx->cfg;
    char what[256], a[32], b[32];
    /* the cuda backend pins the whole host region; the host backend's
     * mlock is best effort (host.c) and not a limit */
    int pinned = ts->be != &tiers_host_backend;
    size_t lim = tiers_host_limit("", pinned, what, sizeof what);
    if (lim && budget[1] > lim) {
        snprintf(ts->host_why, sizeof ts->host_why, "host_mem %s lowered to %s, %s",
                 strata_format_size(budget[1], a, sizeof a),
                 strata_format_size(lim, b, sizeof b), what);
        budget[1] = lim;
        if (0 == ts->ctx->rank) strata_info(ts->ctx, "%s", ts->host_why);
    }
    size_t free_b = tiers_storage_limit(cfg->spill_dir);
    if (free_b && cfg->storage_mem > free_b) {
        snprintf(ts->storage_why, sizeof ts->storage_why, "storage_mem %s lowered to %s, the "
                 "free space of spill_dir '%.200s''s file system",
                 strata_format_size(cfg->storage_mem, a, sizeof a),
                 strata_format_size(free_b, b, sizeof b), cfg->spill_dir);
        ts->storage_acct.budget = free_b;
        if (0 == ts->ctx->rank) strata_info(ts->ctx, "%s", ts->storage_why);
    }
}

/* host_mem=auto: the budget is a cap, of which only what the blocks reach
 * is pinned (tiers_pin_reach); said once (rank 0). */
static void host_auto(tiers_state_t *ts, size_t *budget_p)
{
    char what[256], a[32];
    int pinned = ts->be != &tiers_host_backend;
    size_t cap = tiers_host_auto_cap("", pinned, ts->ctx->node_ranks,
                                     (size_t)test_fault_arg("host_auto_mem"), what, sizeof what);
    ts->host_auto = 1;
    *budget_p = cap ? cap : (size_t)8 << 30;    /* no figure known: the old default */
    snprintf(ts->host_why, sizeof ts->host_why, "host_mem auto: up to %s (%.150s), pinned as the "
             "run's blocks first need it; set host_mem to a size for another cap",
             strata_format_size(*budget_p, a, sizeof a), cap ? what : "the node's memory unknown");
    if (0 == ts->ctx->rank) strata_info(ts->ctx, "%s", ts->host_why);
}

/* NCCL's communicators hold device memory the device tier did not
 * allocate: those bytes (measured by comm_init) are taken at the top of
 * the device arena, with no memory behind them (the region is that much
 * shorter, cuda.c), so the budget and the admission count them. */
static strata_status_t reserve_nccl(tiers_state_t *ts)
{
    arena_t *a = &ts->arena[STRATA_TIER_DEVICE];
    char msg[STRATA_ERRMSG_LEN], s1[32], s2[32];
    size_t need;
    if (0 == ts->dev_nccl || tiers_round(ts->dev_nccl, &need)) return STRATA_OK;
    if (need > a->capacity)
        return base_error(ts->ctx, STRATA_ERR_CONFIG, "device_mem %s cannot hold NCCL's %s of "
                          "communicator buffers, which it counts: raise device_mem",
                          strata_format_size(a->capacity, s1, sizeof s1),
                          strata_format_size(need, s2, sizeof s2));
    strata_status_t st = arena_alloc_at(a, "device", a->capacity - need, need,
                                        STRATA_TAG_WORKSPACE, &ts->nccl_span, msg, sizeof msg);
    return STRATA_OK == st ? STRATA_OK : base_error(ts->ctx, st, "%s", msg);
}

strata_status_t tiers_count_nccl(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx ? ctx->tiers : NULL;
    char msg[STRATA_ERRMSG_LEN], s1[32];
    arena_span_t *span;
    size_t off, more;
    if (!ts || ctx->nccl_dev_bytes <= ts->dev_nccl) return STRATA_OK;
    more = ctx->nccl_dev_bytes - ts->dev_nccl;
    pthread_mutex_lock(&ts->lock);
    strata_status_t st = arena_alloc(&ts->arena[STRATA_TIER_DEVICE], "device", more,
                                     STRATA_TAG_WORKSPACE, &off, &span, msg, sizeof msg);
    if (STRATA_OK == st) ts->dev_nccl += more;
    tiers_unlock(ts);
    if (STRATA_OK != st)
        return base_error(ctx, st, "counting the %s of device memory the model's NCCL "
                          "communicators took: %s; raise device_mem",
                          strata_format_size(more, s1, sizeof s1), msg);
    return STRATA_OK;
}

strata_status_t tiers_pin_reach(tiers_state_t *ts, size_t end, char *msg, size_t len)
{
    size_t cap = ts->capacity[STRATA_TIER_PINNED_HOST];
    if (!ts->host_auto || end <= ts->pinned) return STRATA_OK;
    size_t want = ts->pinned + ts->pinned / 4;
    if (want < end) want = end;
    want = (want + TIERS_PIN_GRAIN - 1) / TIERS_PIN_GRAIN * TIERS_PIN_GRAIN;
    if (want > cap || TIERS_PIN_PIECES - 1 == ts->npin) want = cap;   /* the last piece */
    strata_status_t st = ts->be->region_grow(ts, ts->base[STRATA_TIER_PINNED_HOST], ts->pinned,
                                             want - ts->pinned, msg, len);
    if (STRATA_OK != st) return st;
    ts->pin_off[ts->npin] = ts->pinned;
    ts->pin_len[ts->npin++] = want - ts->pinned;
    ts->pinned = want;
    ts->arena[STRATA_TIER_PINNED_HOST].top_limit = want;
    return STRATA_OK;
}

const char *tiers_limit_why(const strata_context_t *ctx, strata_tier_t tier)
{
    const tiers_state_t *ts = ctx ? ctx->tiers : NULL;
    if (!ts) return "";
    if (STRATA_TIER_PINNED_HOST == tier) return ts->host_why;
    if (STRATA_TIER_STORAGE == tier) return ts->storage_why;
    return "";
}

strata_status_t tiers_init(strata_context_t *ctx)
{
    const strata_config_t *cfg = &ctx->cfg;
    strata_status_t st;
    char s[32];
    if (0 == cfg->chunk_size)
        return base_error(ctx, STRATA_ERR_CONFIG, "chunk_size must be at least 1 byte");
    tiers_state_t *ts = calloc(1, sizeof *ts);
    if (!ts) return STRATA_ERR_NOMEM;
    ts->ctx = ctx;
    ts->be = &tiers_host_backend;
#ifdef HAVE_CUDA
    if (0 == strcmp(ctx->backend_name, "cuda")) {
        ts->be = &tiers_cuda_backend;
        ts->device = ctx->device;   /* comm_init chose it */
    }
#endif
    /* critical sections are short: a thread that finds the lock taken
     * spins briefly instead of sleeping and needing a wake-up */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
#ifdef PTHREAD_MUTEX_ADAPTIVE_NP
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    pthread_mutex_init(&ts->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&ts->cond, NULL);
    ts->chunk = cfg->chunk_size;
    ts->spin = cfg->spin_time > 0 ? cfg->spin_time : 0;
    ts->wait_copies = cfg->wait_copies;
    ts->checksums = cfg->checksums;
    ts->storage_acct.budget = cfg->storage_mem;

    ts->dev_nccl = ctx->nccl_dev_bytes ? ctx->nccl_dev_bytes
                                       : (size_t)test_fault_arg("nccl_bytes");
    ts->dev_nccl_init = ts->dev_nccl;
    size_t budget[2] = { cfg->device_mem, cfg->host_mem };
    if (STRATA_SIZE_AUTO == cfg->host_mem) host_auto(ts, &budget[1]);
    limit_budgets(ts, budget);
    for (int t = 0; t < 2; t++) {
        size_t cap = budget[t] < TIERS_MAX_RESERVE ? budget[t] : TIERS_MAX_RESERVE;
        cap &= ~(size_t)(TIERS_ALIGN - 1);
        if (cap != budget[t] && budget[t] > TIERS_MAX_RESERVE)
            strata_info(ctx, "%s tier: budget %s capped at %s", strata_tier_name((strata_tier_t)t),
                        strata_format_size(budget[t], s, sizeof s),
                        strata_format_size(cap, s, sizeof s));
        st = ts->be->region_create(ts, (strata_tier_t)t, cap, &ts->base[t]);
        if (STRATA_OK != st) goto err;
        ts->capacity[t] = cap;
        if (arena_init(&ts->arena[t], cap)) {
            st = base_error(ctx, STRATA_ERR_NOMEM, "tiers: out of memory");
            goto err;
        }
    }
    if (ts->host_auto) ts->arena[STRATA_TIER_PINNED_HOST].top_limit = 1;   /* nothing pinned */
    if (STRATA_OK != (st = reserve_nccl(ts))) goto err;
    /* storage ops are pwrite/pread on host memory whatever the backend */
    ts->wait_storage = ts->wait_copies;
    ts->wait_copies = ts->wait_copies && ts->be->any_thread_copy;
    ctx->tiers = ts;
    st = tiers_engines_start(ts);
    if (STRATA_OK != st) {
        ctx->tiers = NULL;
        goto err;
    }
    strata_debug(ctx, "tiers: backend %s, chunk %s, checksums %s", ts->be->name,
                 strata_format_size(ts->chunk, s, sizeof s), ts->checksums ? "on" : "off");
    return STRATA_OK;

err:
    for (int t = 0; t < 2; t++) {
        arena_cleanup(&ts->arena[t]);
        if (ts->base[t]) ts->be->region_destroy(ts, (strata_tier_t)t, ts->base[t], ts->capacity[t]);
    }
    pthread_mutex_destroy(&ts->lock);
    pthread_cond_destroy(&ts->cond);
    free(ts);
    return st;
}

void tiers_abandon(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx ? ctx->tiers : NULL;
    if (ts) spill_file_remove_dir(ts->spill);
}

void tiers_cleanup(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx ? ctx->tiers : NULL;
    if (!ts) return;
    /* cancels what is queued; the I/O thread closes the HDF5 file as it exits */
    tiers_engines_stop(ts);
    pthread_mutex_lock(&ts->lock);
    int left = 0;
    while (ts->blocks) {
        tiers_block_destroy_locked(ts->blocks);
        left++;
    }
    tiers_unlock(ts);
    if (left) strata_debug(ctx, "tiers: freed %d blocks still allocated at finalize", left);
    spill_file_remove(ts->spill);
    for (spill_ds_t *d = ts->ds_all, *n; d; d = n) {
        n = d->all_next;
        free(d);
    }
    for (int t = 0; t < 2; t++) {
        arena_cleanup(&ts->arena[t]);
        ts->be->region_destroy(ts, (strata_tier_t)t, ts->base[t], ts->capacity[t]);
    }
    mplan_clear(&ts->mplan);
    pthread_mutex_destroy(&ts->lock);
    pthread_cond_destroy(&ts->cond);
    free(ts);
    ctx->tiers = NULL;
}

/* ---- accounting --------------------------------------------------------- */

static const tier_acct_t *acct_of(const tiers_state_t *ts, strata_tier_t tier)
{
    return STRATA_TIER_STORAGE == tier ? &ts->storage_acct : &ts->arena[tier].acct;
}

strata_status_t strata_tier_usage(const strata_context_t *ctx, strata_tier_t tier,
                                  strata_tier_usage_t *usage_p)
{
    if (!ctx || !ctx->tiers || !usage_p || (unsigned)tier >= STRATA_TIER_COUNT)
        return STRATA_ERR_INVALID;
    tiers_state_t *ts = ctx->tiers;
    strata_tier_usage_t u;
    pthread_mutex_lock(&ts->lock);
    const tier_acct_t *a = acct_of(ts, tier);
    u.budget = a->budget;
    u.used = a->used;
    u.peak = a->peak;
    memcpy(u.used_by_tag, a->used_by_tag, sizeof u.used_by_tag);
    memcpy(u.peak_by_tag, a->peak_by_tag, sizeof u.peak_by_tag);
    u.largest_free = STRATA_TIER_STORAGE == tier ? a->budget - a->used
                                                  : arena_largest_free(&ts->arena[tier]);
    tiers_unlock(ts);
    *usage_p = u;
    return STRATA_OK;
}

strata_status_t strata_device_memory(const strata_context_t *ctx, strata_device_memory_t *out)
{
    if (!ctx || !ctx->tiers || !out) return STRATA_ERR_INVALID;
    tiers_state_t *ts = ctx->tiers;
#ifdef HAVE_CUDA
    if (ts->be == &tiers_cuda_backend) {
        strata_device_memory_t d;
        memset(&d, 0, sizeof d);
        strata_status_t st = tiers_cuda_used(ts, &d.used);
        if (STRATA_OK != st) return st;
        pthread_mutex_lock(&ts->lock);
        d.total = ts->dev_total;
        d.init_used = ts->dev_init_used;
        d.nccl = ts->dev_nccl;
        d.nccl_after_init = ts->dev_nccl - ts->dev_nccl_init;
        d.region = ts->dev_region;
        tiers_unlock(ts);
        *out = d;
        return STRATA_OK;
    }
#endif
    return STRATA_ERR_UNSUPPORTED;
}

const char *strata_tiers_summary(const strata_context_t *ctx, char *buf, size_t len)
{
    if (!buf || 0 == len) return "";
    buf[0] = '\0';
    if (!ctx || !ctx->tiers) return buf;
    size_t pos = 0;
    for (int t = 0; t < STRATA_TIER_COUNT && pos < len; t++) {
        strata_tier_usage_t u;
        char s1[32], s2[32], s3[32], s4[32];
        strata_tier_usage(ctx, (strata_tier_t)t, &u);
        int w = snprintf(buf + pos, len - pos, "%s%s %s/%s (peak %s", t ? " | " : "",
                         strata_tier_name((strata_tier_t)t),
                         strata_format_size(u.used, s1, sizeof s1),
                         strata_format_size(u.budget, s2, sizeof s2),
                         strata_format_size(u.peak, s3, sizeof s3));
        if (w < 0) break;
        pos += (size_t)w;
        int first = 1;
        for (int g = 0; g < STRATA_TAG_COUNT && pos < len; g++) {
            if (0 == u.used_by_tag[g]) continue;
            w = snprintf(buf + pos, len - pos, "%s%s %s", first ? "; " : ", ",
                         strata_tag_name((strata_tag_t)g),
                         strata_format_size(u.used_by_tag[g], s4, sizeof s4));
            if (w < 0) break;
            pos += (size_t)w;
            first = 0;
        }
        if (pos < len) {
            w = snprintf(buf + pos, len - pos, ")");
            if (w > 0) pos += (size_t)w;
        }
    }
    return buf;
}

void strata_tiers_reset_peaks(strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    tier_acct_reset_peaks(&ts->arena[0].acct);
    tier_acct_reset_peaks(&ts->arena[1].acct);
    tier_acct_reset_peaks(&ts->storage_acct);
    tiers_unlock(ts);
}

/* ---- the step's memory plan ----------------------------------------------------------- */

/* The mplan_hold and mplan_stuck test faults: at step N, 256 bytes at
 * the base of the plan's span are taken before the step places, as a
 * buffer freed later than the recording had it would be, and kept to the
 * step's end; stuck: as if the device had no room beside the plan's span
 * either. */
static void hold_fault(tiers_state_t *ts, int step)
{
    uint64_t hold = test_fault_arg("mplan_hold"), stuck = test_fault_arg("mplan_stuck");
    char msg[256];
    if ((hold && hold == (uint64_t)step) || (stuck && stuck == (uint64_t)step))
        arena_alloc_at(&ts->arena[STRATA_TIER_DEVICE], "device", ts->mplan.base, TIERS_ALIGN,
                       STRATA_TAG_WORKSPACE, &ts->mplan_hold, msg, sizeof msg);
    ts->mplan.no_aside = stuck && stuck == (uint64_t)step;
}

/* The end of the test faults' hold (lock held). */
static void release_hold(tiers_state_t *ts)
{
    arena_free(&ts->arena[STRATA_TIER_DEVICE], ts->mplan_hold);
    ts->mplan_hold = NULL;
}

/* Whether every buffer of a plan laid out as recorded finds its span
 * free (then its base is the recording's). */
static int recorded_layout_fits(tiers_state_t *ts)
{
    mplan_t *p = &ts->mplan;
    if (!p->recorded_layout) return 0;
    for (size_t i = 0; i < p->n; i++)
        if (!arena_range_free(&ts->arena[STRATA_TIER_DEVICE], p->rec_base + p->buf[i].off,
                              p->buf[i].size))
            return 0;
    p->base = p->rec_base;
    return 1;
}

void tiers_plan_step_begin(strata_context_t *ctx, const void *owner, int step, int *placing_p)
{
    *placing_p = 0;
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    mplan_t *p = &ts->mplan;
    pthread_mutex_lock(&ts->lock);
    if (owner != ts->mplan_owner) p->packed = 0;   /* another model's steps */
    ts->mplan_owner = owner;
    ts->arena[STRATA_TIER_DEVICE].plan = p;
    p->clock = p->ev = 0;
    p->placed = p->unplanned = p->waits = p->aside = 0;
    p->go_aside = p->no_aside = 0;
    p->broken = 0;
    p->why[0] = 0;
    if (p->packed && !recorded_layout_fits(ts)) mplan_use_packing(p);
    if (p->packed && (p->recorded_layout ||
                      0 == arena_find_free(&ts->arena[STRATA_TIER_DEVICE], p->extent, &p->base))) {
        p->mode = MPLAN_PLACE;
        *placing_p = 1;
        hold_fault(ts, step);
    } else {
        if (p->packed) {
            char s1[32];
            snprintf(p->why, sizeof p->why, "no free span of the device tier holds the plan's "
                     "%s", strata_format_size(p->extent, s1, sizeof s1));
        }
        p->packed = 0;
        p->n = 0;
        p->mode = MPLAN_RECORD;
    }
    tiers_unlock(ts);
}

void tiers_plan_step_end(strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    mplan_t *p = &ts->mplan;
    pthread_mutex_lock(&ts->lock);
    if (MPLAN_RECORD == p->mode) mplan_finish(p);
    else if (p->broken) p->packed = 0;   /* record again */
    p->mode = MPLAN_OFF;
    release_hold(ts);
    tiers_unlock(ts);
}

void tiers_plan_forget(strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    ts->mplan.mode = MPLAN_OFF;
    ts->mplan.packed = 0;
    ts->mplan.n = 0;
    ts->mplan_owner = NULL;
    release_hold(ts);
    tiers_unlock(ts);
}

int tiers_plan_aside(strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return 0;
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    int placing = MPLAN_PLACE == ts->mplan.mode;
    if (placing) ts->mplan.go_aside = 1;
    tiers_unlock(ts);
    return placing;
}

void tiers_plan_note_elsewhere(strata_context_t *ctx, strata_tag_t tag, size_t bytes)
{
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    mplan_t *p = &ts->mplan;
    size_t need, slot;
    pthread_mutex_lock(&ts->lock);
    if (MPLAN_RECORD == p->mode && 0 == tiers_round(bytes, &need) && need > 0) {
        mplan_note_alloc(p, p->clock + 1, tag, need, p->clock, SIZE_MAX, &slot);
        p->clock++;
    }
    tiers_unlock(ts);
}

int tiers_plan_placing(const strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return 0;
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    int placing = MPLAN_PLACE == ts->mplan.mode;
    tiers_unlock(ts);
    return placing;
}

void tiers_block_plan_key(strata_block_t *blk, uint64_t key)
{
    if (!blk) return;
    pthread_mutex_lock(&blk->ts->lock);
    blk->plan_key = key;
    tiers_unlock(blk->ts);
}

void tiers_plan_stats(const strata_context_t *ctx, tiers_plan_stats_t *st)
{
    memset(st, 0, sizeof *st);
    if (!ctx || !ctx->tiers) return;
    tiers_state_t *ts = ctx->tiers;
    const mplan_t *p = &ts->mplan;
    pthread_mutex_lock(&ts->lock);
    st->packed = p->packed;
    st->buffers = p->packed ? p->n : 0;
    st->extent = p->packed ? p->span_bytes : 0;
    st->recorded_layout = p->packed && p->recorded_layout;
    st->live_peak = p->packed ? p->live_peak : 0;
    st->placed = p->placed;
    st->unplanned = p->unplanned;
    st->waits = p->waits;
    st->aside = p->aside;
    snprintf(st->why, sizeof st->why, "%s", p->why);
    tiers_unlock(ts);
}
