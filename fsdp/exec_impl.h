/*
 * exec_impl.h - what the files of the activation executor share beyond
 * fsdp.h: its state and what one of its files offers the others. For
 * exec_step.c, exec_plan.c, exec_costs.c and exec_run.c only; the rest of fsdp/
 * sees the executor through the hooks in fsdp.h.
 *
 * Who calls whom in fsdp/: each file only files below it, so no circle.
 *
 *   context.c                 strata_init: the layers assembled, the device backend chosen
 *   ckpt.c                    checkpoint glue (model.c, progress.c)
 *   step.c model.c            the step; the model's life
 *   exec_step.c               the policy, planning at a step's begin and end, API
 *   exec_plan.c               the sizing pass and the plan
 *   exec_run.c exec_costs.c   following a schedule; the costs a step measures
 *   exec_check.c exec_rec.c   the cross-rank checks; transfer waits as recorded ops
 *   call.c                    what a callback sees
 *   progress.c                the collectives and what drives them
 *   mem.c                     the one door for memory; reaches up only through
 *                             the room hook exec_step.c registers (m->room)
 *   dev.c                     the device layer (dev.h): calls go to the context's backend,
 *   dev_host.c dev_cuda.c     which frees blocks through tiers/, never through mem.c
 *   geometry.c optim.c        shard geometry (pure); the optimizer's loops
 *   pool.c                    the threads those loops run on
 */
#ifndef STRATA_FSDP_EXEC_IMPL_H
#define STRATA_FSDP_EXEC_IMPL_H

#include "fsdp.h"
#include "sched/sched.h"

/* steps whose measured costs the predictions take the median of */
#define EXEC_HIST 32

typedef struct fsdp_exec {
    char              policy[512];     /* text in force (config or API) */
    sched_policy_t    pol;
    char              trace_prefix[512];
    /* active: m->exec_active (mem.c reads it too) */

    sched_program_t  *prog;            /* NULL until the sizing pass */
    size_t           *ubytes;          /* per global save: bytes the callback asked for */
    int              *soff;            /* first global save of unit u (L+1 entries) */
    size_t            base_dev, base_host, base_storage;   /* in use when step 1 began */
    size_t            acts_bytes, max_act, ws_bytes, grads_bytes, max_ag, max_save, max_gsend;
    size_t            inputs_bytes;     /* of acts_bytes, the units' inputs: saves in the program */
    int               planned_micro;
    int               costs_measured;  /* step-1 costs replaced the estimates */
    double           *fwd_s, *bwd_s;   /* per unit, summed over this step's micro-batches */
    double           *ag_s, *rs_s;     /* per unit: collective times this step (comm_costs) */
    float            *cost_v, *cost_all;   /* a step's costs, in exchange (costs_post) */
    strata_request_t *cost_req;
    int              *ag_n, *rs_n;     /* and their counts */
    struct comm_span { double t0, t1; int unit, ag; } *spans;   /* this step's collectives */
    double            prev_end, prev_comm, prev_xfer;   /* at the last compute op's end */
    int               have_prev;
    int               nspans, cap_spans;
    float            *hist;            /* costs of the last EXEC_HIST steps after step 1,
                                        * 4L+1 each (ring) */
    int               hist_steps;

    sched_opts_t      opts;
    sched_actions_t   acts;
    sched_t          *sched;
    sched_result_t    pred;
    strata_admission_t adm;            /* the last refusal's */
    int               print_after;     /* rank 0 prints measured beside predicted */
    int               said_kept;       /* rank 0 said that lhs keeps every offload */
    int               state_tried;     /* state_place=auto moved state for this program */

    /* per micro-batch */
    int               nops;
    unsigned char    *issued, *done;
    strata_event_t  **ev;
    int               next[SCHED_ENGINE_COUNT];
    int              *fid, *bid, *rid, *gid; /* compute op per unit (-1 none):
                                              * F, B, RECOMPUTE, REGEN */
    strata_status_t   blocked;         /* last move refused for memory */

    /* this step */
    double            t_plan0;         /* step time without the sizing pass starts here */
    double            transfer_s, exposed_s;
    double            verify_s;        /* verify_transfers: hashing, this step */
    size_t            moved_bytes;
    sched_trace_t    *trace;
    int               step;
} fsdp_exec_t;

/* The one guard of the hooks: the executor's state while it follows a
 * schedule (active and planned), else NULL and the hook has nothing to do. */
static inline fsdp_exec_t *exec_following(const strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    return x && m->exec_active && x->sched ? x : NULL;
}

/* ---- exec_run.c: following the schedule ------------------------------------------- */

/* The schedule s becomes the executor's (the old one is destroyed), with
 * fresh per micro-batch state. */
strata_status_t fsdp_exec_install(strata_model_t *m, sched_t *s);
/* Destroy the schedule and its per micro-batch state (sched becomes NULL). */
void fsdp_exec_uninstall(strata_model_t *m);
/* Every op of the schedule not issued again: a new micro-batch. */
void fsdp_exec_micro_reset(strata_model_t *m);
/* The room hook (fsdp_room_fn): wait for the oldest offload still in
 * flight (its completion frees its device copy) and return 1 so the
 * allocation is retried; 0 when nothing in flight can free device memory.
 * The wait counts as exposed transfer time. */
int fsdp_exec_make_room(strata_model_t *m);
/* The tiers' use now, on the trace's memory track. */
void fsdp_exec_trace_memory(strata_model_t *m);

/* ---- exec_costs.c: the costs each step measures ------------------------------------ */

/* Complete the pending exchange of a step's costs; r (may be NULL)
 * receives the costs. */
strata_status_t fsdp_exec_costs_take(strata_model_t *m, float *r);
/* After step 1: its costs, combined over the ranks, replace the sizing
 * pass's estimates in the program (the caller plans again). */
strata_status_t fsdp_exec_costs_first(strata_model_t *m);
/* After every later step: the plan in force predicts again with each
 * cost's median over the last EXEC_HIST steps. */
strata_status_t fsdp_exec_costs_repredict(strata_model_t *m);

/* ---- exec_plan.c: the sizing pass and the plan --------------------------------------- */

/* Resolve the policy (or choose one) and build the schedule for n_micro. */
strata_status_t fsdp_exec_plan(strata_model_t *m, int n_micro, int print);
/* The sizing pass: record the step program on the first micro-batch. */
strata_status_t fsdp_exec_sizing(strata_model_t *m, const void *input, size_t in_bytes);
/* Its costs made the same on every rank (the slowest's). Collective. */
strata_status_t fsdp_exec_sizing_agree(strata_model_t *m);

#endif
