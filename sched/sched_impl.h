/*
 * sched_impl.h - what the files of sched/ share beyond sched.h: the
 * schedule's layout, the error helper and what the parts of the schedule
 * (schedule.c, schedule_layout.c, schedule_ops.c) share. Not for other
 * folders.
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
    double       share_bw[SCHED_RES_COUNT];   /* the opts' shared resources */
};

/* Schedules (lhs variants) within this fraction of the fastest count as
 * ties, won by the one that moves the fewest bytes; plans (auto) pay this
 * much per second of transfer. */
#define SCHED_TIE 0.02
/* lhs schedules are chosen to hide their transfers also where compute runs
 * this much faster than measured (ranks differ; costs are averages) */
#define SCHED_FAST 0.7

/* Memory changes of a simulated run in time order (frees before
 * allocations at equal times); delta in bytes, tier a strata_tier_t. */
typedef struct { double time_s; int tier; long long delta; } sched_mem_event_t;
int sched_mem_events(const sched_t *s, const double *start, const double *end,
                     sched_mem_event_t **ev_p, int *n_p);

/* ---- the schedule's parts (schedule.c, schedule_layout.c, schedule_ops.c) ---- */

/* A program laid out over compute positions (schedule_layout.c). Units
 * u = 0..nunits-1; compute positions 0..npos-1 (F(0)..F(nunits-1), then per
 * unit from the last [REGEN(u-1)] [RECOMPUTE(u)] B(u), then OPTIM); parameter uses
 * j = 0..nuses-1 (the forward of unit j, then the backward of unit
 * nuses-1-j); saves numbered globally, unit by unit (i); the chunks of the
 * offloaded saves numbered globally, save by save (ci). */
typedef struct {
    const sched_program_t *prog;
    const sched_opts_t *opts;
    sched_mode_t mode;
    int nunits;          /* units in the program */
    int npos;            /* compute positions, OPTIM's included */
    int nuses;           /* parameter uses: 2 * nunits */
    int prefetch;        /* all-gathers issued ahead of their use */
    /* per unit */
    int *fwd_pos;        /* position of F(u) */
    int *recompute_pos;  /* position of RECOMPUTE(u), -1 if none */
    int *regen_pos;      /* position of REGEN(u) (before B(u+1)), -1 if none */
    int *bwd_pos;        /* position of B(u) */
    int *consume_pos;    /* the op that reads u's saves: RECOMPUTE(u), else B(u) */
    int *recomputes;     /* 1 if a save of u other than its input is recomputed */
    int *save_off;       /* first global save of unit u; [nunits] = nsaves */
    /* per parameter use */
    int *use_first, *use_last;   /* first and last position using them (a
                                  * backward use from REGEN(u) where it runs) */
    int *use_unit;               /* whose parameters */
    int nsaves;          /* saves of all units */
    int nchunks;         /* chunks of all offloaded saves */
    /* per global save */
    int *save_unit;              /* its unit */
    int *save_index;             /* its index among its unit's saves */
    sched_action_t *save_act;    /* effective action (the tail kept on device) */
    int *save_nchunks;           /* chunks it moves in; 0 if not offloaded */
    int *save_chunk_off;         /* its first global chunk */
    /* per global chunk */
    size_t *chunk_bytes, *chunk_offset;   /* its size and offset within the save */
    size_t budget;       /* device budget; SIZE_MAX when none */
} sched_layout_t;

/* Decisions: per offloaded save its drain, the position whose compute op
 * waits for its D2H (its device copy counts until then); per chunk its H2D
 * and S2H gates, the first position in which the transfer may run. */
typedef struct {
    int *drain_pos;      /* per save */
    int *h2d_gate;       /* per chunk */
    int *s2h_gate;       /* per chunk: storage read-back */
} sched_decide_t;

/* schedule_layout.c */
int  sched_offloaded(sched_action_t a);
int  sched_layout_init(sched_layout_t *l, const sched_program_t *prog,
                       const sched_actions_t *acts, const sched_opts_t *opts, sched_mode_t mode,
                       int chunked, int tail);
void sched_layout_free(sched_layout_t *l);
size_t sched_max_of(const size_t *use, int n);
/* The scratch REGEN(u) gives its forward's saves (those not kept). */
size_t sched_regen_scratch(const sched_layout_t *l, int u);
int  sched_decide_alloc(sched_decide_t *d, const sched_layout_t *l);
void sched_decide_free(sched_decide_t *d);
/* The minimum: drain into the next op, prefetch only when needed. */
void sched_decide_min(const sched_layout_t *l, sched_decide_t *d);
/* Base plus the device copies that offloaded saves keep until drained. */
void sched_usage_drains(const sched_layout_t *l, const sched_decide_t *d, size_t *use);
/* That plus the prefetched chunks: the device use per position. */
void sched_usage_of(const sched_layout_t *l, const sched_decide_t *d, size_t *use);
/* Pull drains in where the budget is exceeded. */
void sched_tighten_drains(const sched_layout_t *l, sched_decide_t *d, size_t *use);
/* Gate every prefetch chunk as early as memory and the lookahead allow;
 * -1 if one does not fit even right before its use. */
int  sched_place_gates(const sched_layout_t *l, sched_decide_t *d, size_t *use);
/* schedule_ops.c: the ops, dependencies and engine orders of s; -1 when
 * out of memory. */
int  sched_build_ops(const sched_layout_t *l, const sched_decide_t *d, sched_t *s);

#endif
