/*
 * state.c - where a unit's training state lives. Each class of state (the
 * fp32 master shard, the reduced gradient shard, the optimizer's moments)
 * has a home tier per unit, from the state_place option: the device, the
 * pinned-host tier, or the storage tier. A buffer at home on the device or
 * the host is used where it is (the host tier is device-addressable on
 * cuda). A buffer at home on storage is a tiers block that comes up to the
 * pinned-host tier for each use -- fetched ahead of it on the storage
 * engine, at the compute position the step's fetch plan gives (fetch.c:
 * sched_state_fetch decides from the recorded step program's costs and
 * the storage read bandwidth, as late as lets the read end before its use,
 * within a host room; one position ahead while nothing is recorded) -- and
 * goes back after: its host copy dropped when only read, written down when
 * changed. So the host holds the streamed state of a few units at a time,
 * never a class. A fetch is idempotent (a no-op for a buffer up or on its
 * way), so a use always calls fsdp_state_ready, planned or not.
 *
 * A buffer's fetch state: DOWN (storage holds it; a write-back may be in
 * flight, which a fetch queues behind), FETCHING (a copy up is queued,
 * its event in u->sev), UP (b->ptr is the host copy).
 */
#include "config.h"
#include "fsdp/fsdp.h"
#include "fsdp/dev.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SB_DOWN = 0, SB_FETCHING, SB_UP };

fsdp_class_t fsdp_sb_class(int k)
{
    return FSDP_SB_MASTER == k ? FSDP_CLASS_MASTER
         : FSDP_SB_GRAD == k   ? FSDP_CLASS_GRAD : FSDP_CLASS_OPTIM;
}

fsdp_buf_t *fsdp_sb(strata_unit_t *u, int k)
{
    switch (k) {
    case FSDP_SB_MASTER: return &u->master;
    case FSDP_SB_GRAD:   return &u->grad_shard;
    case FSDP_SB_STATE0: return &u->state[0];
    default:             return &u->state[1];
    }
}

static const strata_tag_t sb_tag[FSDP_NSB] = { STRATA_TAG_PARAM, STRATA_TAG_GRAD,
                                               STRATA_TAG_OPTIM, STRATA_TAG_OPTIM };

int fsdp_state_streamed(const strata_unit_t *u, int k)
{
    return STRATA_TIER_STORAGE == u->home[k];
}

strata_status_t fsdp_state_alloc(strata_model_t *m, strata_unit_t *u, int k, strata_tier_t home)
{
    u->home[k] = home;
    u->sup[k] = SB_UP;
    strata_tier_t t = STRATA_TIER_STORAGE == home ? STRATA_TIER_PINNED_HOST : home;
    return fsdp_buf_alloc(m->ctx, t, sb_tag[k], u->shard_len * sizeof(float), 1, fsdp_sb(u, k));
}

/* The event of the buffer's last op: its status is the op's. */
static strata_status_t take_event(strata_unit_t *u, int k)
{
    strata_status_t st = STRATA_OK;
    if (u->sev[k]) {
        st = strata_event_wait(u->sev[k]);
        strata_event_release(u->sev[k]);
        u->sev[k] = NULL;
    }
    return st;
}

static strata_status_t state_fail(strata_model_t *m, strata_unit_t *u, int k, strata_status_t st,
                                  const char *what)
{
    return base_error(m->ctx, st, "unit '%s': %s its %s shard (%zu bytes) %s the storage "
                      "tier failed: %s", u->name, what, fsdp_class_name(fsdp_sb_class(k)),
                      fsdp_sb(u, k)->bytes, 'r' == what[0] ? "from" : "to",
                      strata_last_error(m->ctx));
}

strata_status_t fsdp_state_settle(strata_model_t *m, strata_unit_t *u, int k)
{
    if (!fsdp_state_streamed(u, k) || SB_UP != u->sup[k]) return STRATA_OK;
    return fsdp_state_put(m, u, k, 1);
}

strata_status_t fsdp_state_fetch(strata_model_t *m, strata_unit_t *u, int k)
{
    fsdp_buf_t *b = fsdp_sb(u, k);
    if (!fsdp_state_streamed(u, k) || SB_DOWN != u->sup[k] || !b->h) return STRATA_OK;
    /* a write-back still in flight: the fetch queues behind it, and a
     * failure of the write fails the fetch (its event says so) */
    if (u->sev[k]) {
        strata_event_release(u->sev[k]);
        u->sev[k] = NULL;
    }
    strata_status_t st = strata_block_move(b->h, STRATA_TIER_PINNED_HOST, 0, NULL, &u->sev[k]);
    if (STRATA_OK != st) return st;   /* a full host tier: the tier's message */
    u->sup[k] = SB_FETCHING;
    __atomic_add_fetch(&m->state_read, strata_block_size(b->h), __ATOMIC_RELAXED);
    return STRATA_OK;
}

strata_status_t fsdp_state_ready(strata_model_t *m, strata_unit_t *u, int k)
{
    if (!fsdp_state_streamed(u, k) || SB_UP == u->sup[k]) return STRATA_OK;
    strata_status_t st = fsdp_state_fetch(m, u, k);
    if (STRATA_OK != st) return st;
    double t0 = base_now(), s0 = 0, s1 = 0;
    /* its time on the storage engine: the read bandwidth fetch.c plans with */
    if (u->sev[k] && STRATA_OK == strata_event_wait(u->sev[k]))
        tiers_event_times(u->sev[k], &s0, &s1);
    st = take_event(u, k);
    __atomic_add_fetch(&m->state_wait_ns, (uint64_t)((base_now() - t0) * 1e9), __ATOMIC_RELAXED);
    if (STRATA_OK == st && s0 > 0 && s1 > s0) {
        __atomic_add_fetch(&m->fetch_bytes, strata_block_size(fsdp_sb(u, k)->h), __ATOMIC_RELAXED);
        __atomic_add_fetch(&m->fetch_busy_ns, (uint64_t)((s1 - s0) * 1e9), __ATOMIC_RELAXED);
    }
    if (STRATA_OK != st) return state_fail(m, u, k, st, "reading");
    fsdp_buf_t *b = fsdp_sb(u, k);
    b->ptr = strata_block_ptr(b->h, STRATA_TIER_PINNED_HOST);
    if (!b->ptr)
        return base_error(m->ctx, STRATA_ERR_STATE, "unit '%s': its %s shard is not on the "
                          "host after its fetch", u->name, fsdp_class_name(fsdp_sb_class(k)));
    u->sup[k] = SB_UP;
    return STRATA_OK;
}

strata_status_t fsdp_state_fresh(strata_model_t *m, strata_unit_t *u, int k)
{
    if (!fsdp_state_streamed(u, k) || SB_UP == u->sup[k]) return STRATA_OK;
    if (SB_FETCHING == u->sup[k]) return fsdp_state_ready(m, u, k);
    /* its values are overwritten whole: a new host block, no read */
    fsdp_buf_t *b = fsdp_sb(u, k);
    size_t bytes = b->bytes;
    if (u->sev[k]) {
        strata_event_release(u->sev[k]);
        u->sev[k] = NULL;
    }
    fsdp_buf_free(b);
    strata_status_t st = fsdp_buf_alloc(m->ctx, STRATA_TIER_PINNED_HOST, sb_tag[k], bytes, 0, b);
    if (STRATA_OK == st) u->sup[k] = SB_UP;
    return st;
}

strata_status_t fsdp_state_put(strata_model_t *m, strata_unit_t *u, int k, int dirty)
{
    if (!fsdp_state_streamed(u, k) || SB_DOWN == u->sup[k]) return STRATA_OK;
    strata_status_t st = STRATA_OK;
    if (SB_FETCHING == u->sup[k]) st = fsdp_state_ready(m, u, k);
    if (STRATA_OK != st) return st;
    fsdp_buf_t *b = fsdp_sb(u, k);
    if (!b->h) return STRATA_OK;
    int stored = strata_block_resident(b->h, STRATA_TIER_STORAGE);
    if (!dirty && stored) {
        /* read only: the copy on storage is current. cuda: the device's
         * reads of the host copy (queued on the compute stream) end first */
        if (fsdp_dev_on(m->ctx)) st = fsdp_dev_wait(m->ctx);
        if (STRATA_OK == st) st = strata_block_evict(b->h, STRATA_TIER_PINNED_HOST);
    } else {
        if (stored) st = strata_block_evict(b->h, STRATA_TIER_STORAGE);   /* stale */
        /* cuda: after the kernels that wrote it, by an event */
        if (STRATA_OK == st) st = tiers_block_after(b->h, m->ctx->compute_stream);
        if (STRATA_OK == st) st = strata_block_move(b->h, STRATA_TIER_STORAGE, 1, NULL, &u->sev[k]);
        if (STRATA_OK == st)
            __atomic_add_fetch(&m->state_written, strata_block_size(b->h), __ATOMIC_RELAXED);
        else st = state_fail(m, u, k, st, "writing");
    }
    if (STRATA_OK != st) return st;
    b->ptr = NULL;
    u->sup[k] = SB_DOWN;
    return STRATA_OK;
}

void fsdp_state_free(strata_unit_t *u)
{
    for (int k = 0; k < FSDP_NSB; k++) {
        if (u->sev[k]) strata_event_release(u->sev[k]);
        u->sev[k] = NULL;
        fsdp_buf_free(fsdp_sb(u, k));
    }
}

int fsdp_state_count(const strata_model_t *m)
{
    return FSDP_SB_STATE0 + fsdp_optim_nstate(&m->opts);
}

int fsdp_state_any_streamed(const strata_model_t *m)
{
    for (int ui = 0; ui < m->nunits; ui++)
        for (int k = 0; k < fsdp_state_count(m); k++)
            if (fsdp_state_streamed(m->units[ui], k)) return 1;
    return 0;
}

strata_status_t fsdp_state_put_all(strata_model_t *m, int dirty)
{
    strata_status_t st = STRATA_OK;
    int n = fsdp_state_count(m);
    for (int ui = 0; ui < m->nunits; ui++)
        for (int k = 0; k < n; k++) {
            strata_status_t s = fsdp_state_put(m, m->units[ui], k, dirty);
            if (STRATA_OK == st) st = s;
        }
    return st;
}

strata_status_t fsdp_state_drain(strata_model_t *m)
{
    strata_status_t st = STRATA_OK;
    for (int ui = 0; ui < m->nunits; ui++)
        for (int k = 0; k < FSDP_NSB; k++) {
            strata_unit_t *u = m->units[ui];
            if (SB_DOWN != u->sup[k]) continue;
            strata_status_t s = take_event(u, k);
            if (STRATA_OK != s && STRATA_OK == st) st = state_fail(m, u, k, s, "writing");
        }
    return st;
}

strata_status_t fsdp_state_map_all(strata_model_t *m, int writable)
{
    /* a copy up from the last step goes down first; then nothing in flight */
    strata_status_t st = fsdp_state_put_all(m, 1);
    if (STRATA_OK == st) st = fsdp_state_drain(m);
    int n = fsdp_state_count(m);
    for (int ui = 0; STRATA_OK == st && ui < m->nunits; ui++)
        for (int k = 0; STRATA_OK == st && k < n; k++) {
            strata_unit_t *u = m->units[ui];
            fsdp_buf_t *b = fsdp_sb(u, k);
            if (!fsdp_state_streamed(u, k) || !b->h || !b->bytes) continue;
            st = tiers_storage_map(b->h, writable, &b->ptr);
        }
    if (STRATA_OK != st) fsdp_state_unmap_all(m, 0);
    return st;
}

strata_status_t fsdp_state_unmap_all(strata_model_t *m, int written)
{
    strata_status_t st = STRATA_OK;
    int n = fsdp_state_count(m);
    for (int ui = 0; ui < m->nunits; ui++)
        for (int k = 0; k < n; k++) {
            strata_unit_t *u = m->units[ui];
            fsdp_buf_t *b = fsdp_sb(u, k);
            if (!fsdp_state_streamed(u, k) || SB_DOWN != u->sup[k] || !b->ptr) continue;
            strata_status_t s = tiers_storage_unmap(b->h, b->ptr, written);
            if (STRATA_OK == st) st = s;
            b->ptr = NULL;
        }
    return st;
}

/* ---- state_place=auto ------------------------------------------------------ */

/* Buffer k of u leaves the device for tier (between steps). */
static strata_status_t rehome(strata_model_t *m, strata_unit_t *u, int k, strata_tier_t tier)
{
    fsdp_buf_t *b = fsdp_sb(u, k);
    strata_event_t *ev = NULL;
    strata_status_t st = fsdp_dev_wait(m->ctx);   /* cuda: the step's work on it is done */
    if (STRATA_OK == st) st = strata_block_move(b->h, tier, 1, NULL, &ev);
    if (STRATA_OK == st) st = strata_event_wait(ev);
    strata_event_release(ev);
    if (STRATA_OK != st) return st;
    u->home[k] = tier;
    u->sup[k] = STRATA_TIER_STORAGE == tier ? SB_DOWN : SB_UP;
    b->ptr = STRATA_TIER_STORAGE == tier ? NULL : strata_block_ptr(b->h, tier);
    return STRATA_OK;
}

/* The host tier's free bytes. */
static size_t host_free(strata_context_t *ctx)
{
    strata_tier_usage_t h;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &h);
    return h.budget > h.used ? h.budget - h.used : 0;
}

size_t fsdp_state_stream_reserve(const strata_model_t *m)
{
    size_t most = 0;
    for (int ui = 0; ui < m->nunits; ui++) {
        size_t sum = 0;
        for (int k = 0; k < fsdp_state_count(m); k++)
            if (fsdp_state_streamed(m->units[ui], k))
                sum += strata_block_size(fsdp_sb(m->units[ui], k)->h);
        if (sum > most) most = sum;
    }
    /* a unit's working copies, the next unit's on their way, and a
     * prefetched master beside them */
    return 3 * most;
}

strata_status_t fsdp_state_auto_free(strata_model_t *m, size_t want, size_t *freed_p)
{
    strata_status_t st = STRATA_OK;
    size_t freed = 0;
    int n = fsdp_state_count(m);
    for (int c = 0; c < FSDP_NCLASS && freed < want; c++)
        for (int ui = 0; STRATA_OK == st && ui < m->nunits && freed < want; ui++)
            for (int k = 0; STRATA_OK == st && k < n; k++) {
                strata_unit_t *u = m->units[ui];
                fsdp_buf_t *b = fsdp_sb(u, k);
                if (fsdp_sb_class(k) != fsdp_place_auto_order[c] ||
                    STRATA_TIER_DEVICE != u->home[k] || !b->h)
                    continue;
                size_t bytes = strata_block_size(b->h);
                st = rehome(m, u, k, fsdp_place_auto_tier((double)host_free(m->ctx), (double)bytes));
                if (STRATA_OK == st) freed += bytes;
            }
    *freed_p = freed;
    return st;
}

/* What a state buffer of u takes in a memory tier (fsdp_buf_alloc's). */
static size_t buf_bytes(const strata_unit_t *u)
{
    return (u->shard_len * sizeof(float) + FSDP_GUARD + 255) / 256 * 256;
}

void fsdp_state_homes(strata_model_t *m, const fsdp_place_t p[FSDP_NCLASS])
{
    int n = fsdp_state_count(m);
    size_t on_dev = 0;
    for (int ui = 0; ui < m->nunits; ui++)
        for (int k = 0; k < n; k++) {
            strata_unit_t *u = m->units[ui];
            u->home[k] = fsdp_place_tier(&p[fsdp_sb_class(k)], ui, m->nunits);
            if (STRATA_TIER_DEVICE == u->home[k]) on_dev += buf_bytes(u);
        }
    if (!m->state_auto) return;
    /* auto: the state may take half of the device room at commit, the
     * rest is the step's; the step's plan moves more if it lacks room */
    strata_tier_usage_t d;
    strata_tier_usage(m->ctx, STRATA_TIER_DEVICE, &d);
    size_t room = (d.budget > d.used ? d.budget - d.used : 0) / 2, hfree = host_free(m->ctx);
    size_t moved = 0;
    for (int c = 0; c < FSDP_NCLASS && on_dev > room; c++)
        for (int ui = 0; ui < m->nunits && on_dev > room; ui++)
            for (int k = 0; k < n && on_dev > room; k++) {
                strata_unit_t *u = m->units[ui];
                size_t b = buf_bytes(u);
                if (fsdp_sb_class(k) != fsdp_place_auto_order[c]) continue;
                u->home[k] = fsdp_place_auto_tier((double)hfree, (double)b);
                if (STRATA_TIER_PINNED_HOST == u->home[k]) hfree -= b;
                on_dev -= b;
                moved += b;
            }
    char d1[32], d2[32], buf[512];
    if (moved && 0 == m->ctx->rank)
        fprintf(stderr, "strata: state_place auto: %s of training state starts off the device "
                "(the state may take half of device_mem %s; the step's plan has the rest): %s\n",
                strata_format_size(moved, d1, sizeof d1), strata_format_size(d.budget, d2, sizeof d2),
                fsdp_state_describe(m, buf, sizeof buf));
}

const char *fsdp_state_describe(const strata_model_t *m, char *buf, size_t len)
{
    int cnt[FSDP_NCLASS][STRATA_TIER_COUNT] = { { 0 } };
    for (int c = 0; c < FSDP_NCLASS; c++)
        for (int ui = 0; ui < m->nunits; ui++) {
            int k = FSDP_CLASS_MASTER == c ? FSDP_SB_MASTER
                  : FSDP_CLASS_GRAD == c ? FSDP_SB_GRAD : FSDP_SB_STATE0;
            if (k < fsdp_state_count(m)) cnt[c][m->units[ui]->home[k]]++;
        }
    return fsdp_place_describe(cnt, m->nunits, buf, len);
}

strata_status_t fsdp_state_place(strata_model_t *m, fsdp_place_t p[FSDP_NCLASS])
{
    char why[256];
    m->state_auto = 0 == strcmp(m->ctx->cfg.state_place, "auto");
    if (m->state_auto) {   /* on the device until the step's plan needs the room */
        fsdp_place_parse(NULL, p, why, sizeof why);
        return STRATA_OK;
    }
    if (fsdp_place_parse(m->ctx->cfg.state_place, p, why, sizeof why))
        return base_error(m->ctx, STRATA_ERR_INVALID, "%s", why);
    /* the older switch: the moments on the host unless state_place names them */
    fsdp_place_t dflt = { STRATA_TIER_DEVICE, STRATA_TIER_DEVICE, 1.0 };
    if (m->opts.optim_on_host && 0 == memcmp(&p[FSDP_CLASS_OPTIM], &dflt, sizeof dflt))
        p[FSDP_CLASS_OPTIM].first = p[FSDP_CLASS_OPTIM].rest = STRATA_TIER_PINNED_HOST;
    return STRATA_OK;
}
