/*
 * place.h - the text of the state_place option: where each class of
 * training state (the fp32 master shard, the reduced gradient shard, the
 * optimizer's moments) lives, per unit. Pure functions, shared by the
 * runtime (fsdp/state.c puts the state there) and the planner (plan/state.c
 * predicts what that costs), so both read the option the same way.
 * Not installed.
 */
#ifndef STRATA_BASE_PLACE_H
#define STRATA_BASE_PLACE_H

#include <stddef.h>

#include "strata.h"   /* strata_tier_t */

typedef enum { FSDP_CLASS_MASTER = 0, FSDP_CLASS_GRAD, FSDP_CLASS_OPTIM,
               FSDP_NCLASS } fsdp_class_t;
/* A class's placement: the first round(frac * L) units on `first`, the rest on `rest`. */
typedef struct { strata_tier_t first, rest; double frac; } fsdp_place_t;

/* state_place's text into p (a class not named stays on the device; '*'
 * names every class not named on its own). 0, or -1 with why. NULL text:
 * every class on the device. The text "auto" is the caller's to handle. */
int fsdp_place_parse(const char *text, fsdp_place_t p[FSDP_NCLASS], char *why, size_t len);
/* How many units (of L) go to p->first; the tier of unit ui. */
int fsdp_place_split(const fsdp_place_t *p, int L);
strata_tier_t fsdp_place_tier(const fsdp_place_t *p, int ui, int L);
const char *fsdp_class_name(fsdp_class_t c);
/* state_place=auto's rule, the runtime's and the planner's: classes leave
 * the device in this order (the moments first: one read and one write a
 * step; the masters last: read by two gathers a step), each from its first
 * unit; a buffer of `bytes` goes to the host while three quarters of the
 * host's free bytes (a quarter kept for the step's own use) hold twice it
 * (a move to storage passes through the host), else to storage. */
extern const fsdp_class_t fsdp_place_auto_order[FSDP_NCLASS];
strata_tier_t fsdp_place_auto_tier(double host_free, double bytes);
/* Where the state is, as "CLASS=TIER:UNITS/L,...", from how many of the L
 * units hold each class on each tier (classes and tiers with none left
 * out): the runtime's and the planner's way of saying what auto chose. */
const char *fsdp_place_describe(const int count[FSDP_NCLASS][STRATA_TIER_COUNT], int L,
                                char *buf, size_t len);

#endif
