/*
 * tiers_util.h - helpers the tiers tests (tiers_move, tiers_storage,
 * tiers_cuda) share: a synchronous move and a residency check.
 */
#ifndef TIERS_UTIL_H
#define TIERS_UTIL_H

#include "strata.h"

/* 1 if b is resident in tier t and in no other */
static inline int only_in(strata_block_t *b, strata_tier_t t)
{
    for (int i = 0; i < STRATA_TIER_COUNT; i++)
        if (strata_block_resident(b, (strata_tier_t)i) != (i == (int)t)) return 0;
    return 1;
}

/* strata_block_move, then wait for its event: the move's status or the wait's */
static inline strata_status_t move_wait(strata_block_t *b, strata_tier_t dst, int release)
{
    strata_event_t *ev = NULL;
    strata_status_t st = strata_block_move(b, dst, release, NULL, &ev);
    if (STRATA_OK != st) return st;
    st = strata_event_wait(ev);
    strata_event_release(ev);
    return st;
}

#endif
