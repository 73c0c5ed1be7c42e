/*
 * mem.c - the single allocation door of the FSDP runtime.
 *
 * Every buffer a callback touches and every shard goes through
 * fsdp_mem_alloc/fsdp_mem_free. For now: posix_memalign (256-byte aligned)
 * with byte accounting per tier and tag and a hard budget per tier taken
 * from the configuration (device_mem, host_mem). When the tiers land, the
 * body becomes strata_block_alloc/strata_block_free; callers do not change.
 */
#include "config.h"
#include "fsdp.h"

#include <stdlib.h>
#include <string.h>

struct fsdp_mem {
    strata_context_t *ctx;
    strata_tier_t     tier;
    strata_tag_t      tag;
    size_t            bytes;
    void             *ptr;
};

/* One ledger per process: the budgets are per rank, and a rank may hold
 * several models (e.g. a test with a reference model). Keyed by nothing:
 * all contexts of a process share it, as they share the memory. */
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t ledger_used[STRATA_TIER_COUNT];
static size_t ledger_peak[STRATA_TIER_COUNT];
static size_t ledger_tag[STRATA_TIER_COUNT][STRATA_TAG_COUNT];

static const char *const tier_names[] = { "device", "host", "storage" };
static const char *const tag_names[] = { "param", "grad", "optim", "activation", "workspace" };

static size_t budget_of(const strata_context_t *ctx, strata_tier_t tier)
{
    switch (tier) {
    case STRATA_TIER_DEVICE:      return ctx->cfg.device_mem;
    case STRATA_TIER_PINNED_HOST: return ctx->cfg.host_mem;
    default:                      return ctx->cfg.storage_mem;
    }
}

static size_t round_up(size_t b)
{
    return (b + FSDP_ALIGN - 1) / FSDP_ALIGN * FSDP_ALIGN;
}

strata_status_t fsdp_mem_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, void **ptr_p, fsdp_mem_t **h_p)
{
    char need[32], bud[32], used[32], t[STRATA_TAG_COUNT][32];
    if ((int)tier < 0 || tier > STRATA_TIER_PINNED_HOST || (int)tag < 0 || tag >= STRATA_TAG_COUNT)
        return strata_error(ctx, STRATA_ERR_INVALID, "fsdp_mem_alloc: bad tier %d or tag %d",
                            (int)tier, (int)tag);
    if (bytes > SIZE_MAX - 2 * FSDP_ALIGN)
        return strata_error(ctx, STRATA_ERR_OVERFLOW, "allocation of %zu bytes overflows", bytes);
    size_t rb = round_up(bytes ? bytes : 1);
    size_t budget = budget_of(ctx, tier);

    pthread_mutex_lock(&ledger_lock);
    if (ledger_used[tier] + rb > budget) {
        size_t u = ledger_used[tier];
        for (int i = 0; i < STRATA_TAG_COUNT; i++)
            strata_format_size(ledger_tag[tier][i], t[i], sizeof t[i]);
        pthread_mutex_unlock(&ledger_lock);
        return strata_error(ctx, STRATA_ERR_TIER_FULL,
                            "%s tier full: need %s for %s, budget %s, in use %s "
                            "(param %s, grad %s, optim %s, activation %s, workspace %s); "
                            "raise %s_mem or shard over more ranks", tier_names[tier],
                            strata_format_size(rb, need, sizeof need), tag_names[tag],
                            strata_format_size(budget, bud, sizeof bud),
                            strata_format_size(u, used, sizeof used), t[0], t[1], t[2], t[3],
                            t[4], STRATA_TIER_DEVICE == tier ? "device" : "host");
    }
    ledger_used[tier] += rb;
    ledger_tag[tier][tag] += rb;
    if (ledger_used[tier] > ledger_peak[tier]) ledger_peak[tier] = ledger_used[tier];
    pthread_mutex_unlock(&ledger_lock);

    fsdp_mem_t *h = calloc(1, sizeof *h);
    void *p = NULL;
    if (!h || posix_memalign(&p, FSDP_ALIGN, rb)) {
        free(h);
        pthread_mutex_lock(&ledger_lock);
        ledger_used[tier] -= rb;
        ledger_tag[tier][tag] -= rb;
        pthread_mutex_unlock(&ledger_lock);
        return strata_error(ctx, STRATA_ERR_NOMEM, "cannot allocate %s of %s memory for %s",
                            strata_format_size(rb, need, sizeof need), tier_names[tier],
                            tag_names[tag]);
    }
    h->ctx = ctx;
    h->tier = tier;
    h->tag = tag;
    h->bytes = rb;
    h->ptr = p;
    *ptr_p = p;
    *h_p = h;
    return STRATA_OK;
}

void fsdp_mem_free(fsdp_mem_t *h)
{
    if (!h) return;
    pthread_mutex_lock(&ledger_lock);
    ledger_used[h->tier] -= h->bytes;
    ledger_tag[h->tier][h->tag] -= h->bytes;
    pthread_mutex_unlock(&ledger_lock);
    free(h->ptr);
    free(h);
}

void fsdp_mem_stats(strata_context_t *ctx, fsdp_mem_stats_t *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&ledger_lock);
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        st->budget[t] = ctx ? budget_of(ctx, (strata_tier_t)t) : 0;
        st->used[t] = ledger_used[t];
        st->peak[t] = ledger_peak[t];
        memcpy(st->used_by_tag[t], ledger_tag[t], sizeof ledger_tag[t]);
    }
    pthread_mutex_unlock(&ledger_lock);
}
