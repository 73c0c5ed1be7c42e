/*
 * sched_impl.h - what the files of sched/ share beyond sched.h: the
 * schedule's layout and the error helper. Not for other folders.
 */
#ifndef STRATA_SCHED_IMPL_H
#define STRATA_SCHED_IMPL_H

#include "sched/sched.h"

struct sched {
    const sched_program_t *prog;   /* not owned: must outlive the schedule */
    sched_mode_t mode;
    int          tail_kept;
    int          nops, capops;
    sched_op_t  *ops;
    int         *deps;             /* all ops' dependency lists, back to back */
    int          ndeps;
    int         *order[SCHED_ENGINE_COUNT];
    int          norder[SCHED_ENGINE_COUNT];
    size_t       device_bound;
    int         *save_off;         /* first global save index of unit u */
    sched_action_t *save_act;      /* effective action per global save */
};

/* Schedules (lhs variants) within this fraction of the fastest count as
 * ties, won by the one that moves the fewest bytes; plans (auto) pay this
 * much per second of transfer. */
#define SCHED_TIE 0.02
/* lhs schedules are chosen to hide their transfers also where compute runs
 * this much faster than measured (ranks differ; costs are averages) */
#define SCHED_FAST 0.7

/* Write a message into err (may be NULL) and return st. */
strata_status_t sched_fail(char *err, size_t errlen, strata_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Memory changes of a simulated run in time order (frees before
 * allocations at equal times); delta in bytes, tier a strata_tier_t. */
typedef struct { double t; int tier; long long delta; } sched_mem_event_t;
int sched_mem_events(const sched_t *s, const double *start, const double *end,
                     sched_mem_event_t **ev_p, int *n_p);

#endif
