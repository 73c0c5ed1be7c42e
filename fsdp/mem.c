/*
 * mem.c - the single allocation door of the FSDP runtime.
 *
 * Every buffer a callback touches and every shard is a tiers block
 * resident in one memory tier (DEVICE or PINNED_HOST), so the tier's hard
 * budget covers it, and a full tier fails with the tiers' message (tier,
 * request, budget, bytes in use per tag).
 */
#include "config.h"
#include "fsdp.h"

#include <string.h>

strata_status_t fsdp_mem_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, void **ptr_p, fsdp_mem_t **h_p)
{
    if ((int)tier < 0 || tier > STRATA_TIER_PINNED_HOST)
        return strata_error(ctx, STRATA_ERR_INVALID, "fsdp_mem_alloc: tier %d is not a memory tier",
                            (int)tier);
    strata_block_t *blk = NULL;
    strata_status_t st = strata_block_alloc(ctx, tier, bytes ? bytes : 1, tag, &blk);
    if (STRATA_OK != st) return st;
    *ptr_p = strata_block_ptr(blk, tier);
    *h_p = blk;
    return STRATA_OK;
}

void fsdp_mem_free(fsdp_mem_t *h)
{
    strata_block_free(h);
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
