/*
 * plan.h - the planner: from a model file and a hardware file to the
 * step program that sched/ schedules: the units, their named saves with
 * bytes and the FLOPs of the ops that produce them, gathered parameter
 * bytes, costs in seconds, and the per-device memory that is not in the
 * program (shards, optimizer state, workspace). Time is never modelled here: the program
 * goes to the same sched_build and sched_simulate the runtime uses.
 *
 * plan/libplan.a, for strata plan-model, strata calibrate, the benchmarks
 * and the tests; not part of libstrata, whose runtime schedules a program
 * (sched/) but never reads model or hardware files. Internal (not
 * installed); formulas and assumptions in docs/planner.md.
 *
 * Error convention as in sched.h: a status, and a message naming the file,
 * the field and what was expected in (err, errlen).
 */
#ifndef STRATA_PLAN_PLAN_H
#define STRATA_PLAN_PLAN_H

#include <stddef.h>

#include "base/place.h"
#include "sched/sched.h"

#define PLAN_PATH_MAX 1024

/* ------------------------------------------------------------------------ */
/* Model and hardware files                                                  */
/* ------------------------------------------------------------------------ */

typedef enum { PLAN_GPT = 0, PLAN_LLAMA, PLAN_DEEPSEEK_V3 } plan_family_t;

typedef struct {
    char path[PLAN_PATH_MAX], name[64];
    plan_family_t family;
    long layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_seq;
    int  tied;
    /* MoE (moe = 0: every layer dense) */
    int  moe;
    long experts, experts_per_token, shared_experts, expert_ffn, dense_layers;
    /* MLA (deepseek_v3) */
    long q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    long mtp_modules;
    int  mtp_counted;
    /* bytes per element; master 0 = the parameter shard is the master;
     * act_b: the saved activations (dtypes.activations, default the
     * compute dtype); reduce_b: the gradients on the wire of the
     * reduce-scatter and the replicas' all-reduce (dtypes.reduce,
     * default the gradient dtype: the runtime's reduce_dtype) */
    int  param_b, compute_b, grad_b, master_b, optim_b, optim_states, act_b, reduce_b;
} plan_model_t;

typedef struct { long ranks; double bytes, busbw; } plan_bw_point_t;
typedef struct { int n; plan_bw_point_t p[32]; } plan_bw_table_t;
typedef enum { PLAN_AG = 0, PLAN_RS, PLAN_A2A, PLAN_AR, PLAN_COLL_COUNT } plan_coll_t;

typedef struct {
    char path[PLAN_PATH_MAX], name[64];
    double hbm_bytes;          /* usable per device */
    int    hbm_derived;        /* 1: published capacity less 2 GiB */
    double hbm_bw, flops, mfu;
    double d2h_bw, h2d_bw, both_bw, link_latency, host_bytes, storage_bw;
    double host_bw;            /* the host memory's bandwidth per device, for the
                                * optimizer's host loops (0: not in the file) */
    int    cpu;                /* "device": "cpu": the device tier is host memory (no host link) */
    double link_compute;       /* compute seconds a host-link copy costs per second of its own */
    size_t chunk;
    long   domain;             /* ranks in one fast (NVLink) domain */
    double coll_latency;
    double coll_compute;       /* compute seconds a collective costs per second of its own */
    double coll_sync;          /* seconds the compute waits at each collective's start */
    plan_bw_table_t coll[PLAN_COLL_COUNT][2];   /* [0] inside a domain, [1] across */
    /* shared resources (sched_res_t; each 0 or absent: not shared, the
     * predictions as without them): */
    int    hbm_shared;         /* hbm.shared_with_copies: copies take HBM
                                * bandwidth from memory-bound compute */
    double ce_bw;              /* host_link.copy_engine_bw: what the copy
                                * engines carry in all */
    int    coll_on_ce;         /* collectives.on_copy_engines: collectives
                                * run on the copy engines (zero-CTA) */
    double nic_bw;             /* collectives.nic_bw: one device's NIC */
} plan_hw_t;

/* NAME (a shipped file: share/models/NAME.json or share/hw/NAME.json) or a
 * path (anything with a '/' or ending in .json). Search order for a name:
 * $STRATA_DATADIR, the source tree when the program runs from its build
 * tree, the installed data directory. kind is "models" or "hw". */
strata_status_t plan_find_file(const char *kind, const char *name, char *path, size_t len,
                               char *err, size_t errlen);
strata_status_t plan_model_load(const char *name_or_path, plan_model_t *m_p, char *err, size_t errlen);
strata_status_t plan_hw_load(const char *name_or_path, plan_hw_t *hw_p, char *err, size_t errlen);
/* From text (tests); `label` names it in messages. */
strata_status_t plan_model_parse(const char *text, const char *label, plan_model_t *m_p,
                                 char *err, size_t errlen);
strata_status_t plan_hw_parse(const char *text, const char *label, plan_hw_t *hw_p,
                              char *err, size_t errlen);

/* Collective time for a message of `bytes` (the full, gathered size S)
 * over n ranks whose members spread over `span` consecutive ranks:
 * S (n-1)/(n busbw) (all-reduce twice that) + latency, busbw interpolated
 * in log(bytes) from the points of the nearest rank count, from the
 * "intra" table when span <= domain_size, else "inter". 0 when n <= 1. */
double plan_coll_time(const plan_hw_t *hw, plan_coll_t c, long n, long span, double bytes);

/* ------------------------------------------------------------------------ */
/* The model as units                                                        */
/* ------------------------------------------------------------------------ */

#define PLAN_MAX_SAVES 20

typedef struct {
    char   name[SCHED_NAME_MAX];
    double bytes;              /* per micro-batch, on one device */
    double flops;              /* forward FLOPs of the ops that produce it from
                                * the unit's input and its other saves */
    double mem_bytes;          /* HBM traffic of those ops when memory-bound */
    double a2a_bytes;          /* all-to-all bytes on the way to it (EP dispatch) */
} plan_save_t;

typedef struct {
    char   name[SCHED_NAME_MAX];
    int    nsaves;
    plan_save_t saves[PLAN_MAX_SAVES];
    double params;             /* parameters of the unit (all of them) */
    double gathered;           /* of which all-gathered */
    double local_params;       /* of which EP-local experts (not gathered) */
    double fwd_flops;          /* every op of the forward */
    double fwd_mem_bytes;      /* HBM traffic of the memory-bound ops */
    double a2a_bytes;          /* all-to-all bytes of one forward (EP) */
    double model_flops;        /* fwd+bwd FLOPs counted for MFU (no recompute) */
    double bwd_factor;         /* backward FLOPs = this x forward (2; 0 when
                                * the forward computes the gradients too) */
    double workspace;          /* transient bytes while its forward (or a
                                * recompute) runs */
    double bwd_workspace;      /* and while its backward runs */
    double out_bytes;          /* its output: a buffer of the runtime (with
                                * its guard), from F(u) until B(u) ends */
    double gin_bytes;          /* the gradient of its input, likewise; 0 for
                                * the first unit */
} plan_unit_t;

/* Every buffer of the runtime carries FSDP_GUARD (256) guard bytes and
 * takes a multiple of the tiers' 256-byte alignment: what a buffer of
 * `bytes` occupies on the device (fsdp/mem.c, tiers/arena.c). */
#define PLAN_BUF_GUARD 256.0
#define PLAN_BUF_ALIGN 256.0
double plan_buf(double bytes);

typedef struct {
    long fsdp, replicas, ep, micro, seq, accum, prefetch;
    /* --accum > 1: 0 = the runtime's rule (every unit's unsharded
     * gradients held from the first micro-batch's backward, reduced after
     * the last); 1 = reduce-scattered after each micro-batch into the
     * shard, as PyTorch FSDP and ZeRO-3 accumulate (for comparing with
     * their runs; train_gpt does not run it) */
    int accum_sharded;
    /* 1: no reserve against fragmentation in the device budget (--reserve
     * none), to compare with frameworks that hold none; 0: the runtime's */
    int no_reserve;
    double hbm_override;       /* 0 = the hardware file's */
    double moe_imbalance;      /* the busiest rank's routed tokens over the mean (>= 1; 0 = 1) */
    /* the state_place option (base/place.h; all zero: every class on the
     * device); state_auto: placed per row as the runtime's auto does */
    fsdp_place_t place[FSDP_NCLASS];
    int state_auto;
    /* gradient-norm clipping (train_gpt's default, 1.0): the optimizer
     * waits for every unit's gradient, so storage-homed gradients stay on
     * the host from their reduce-scatter to the update and each master is
     * read up once more for it; 0 = no clipping (the update follows each
     * unit's reduce-scatter and reuses the backward gather's master) */
    int no_clip;
} plan_shape_t;

/* Per-device bytes that are not activations, and the totals. */
typedef struct {
    double param_shard, grad_shard, master, optim;
    double expert_local, expert_grads;   /* EP: local experts, not gathered */
    double tokens;             /* the step's input: n int32 token ids */
    double workspace;          /* the largest unit's (for the breakdown) */
    double ws_cached;          /* the runtime's kept workspace blocks (any
                                * policy but all-keep): the sizes that did
                                * not fit a block kept before, in call order */
    double comm_buffers, transfer_buffers;
    double accum_grads;        /* --accum > 1: every unit's unsharded
                                * gradients, held from the first micro-batch */
    double resident;           /* the above but the workspace, which
                                * plan_evaluate adds per policy */
    double reserve;            /* kept free against fragmentation, as the
                                * runtime's admission counts it (fsdp/
                                * exec_plan.c held_parts): in the budget a
                                * plan must fit, not in its predicted peak */
    /* in the step program (the schedule places them), for the breakdown: */
    double unit_outputs;       /* every unit's output (all live when the
                                * backward begins) */
    double input_grads;        /* the most a backward holds: its input's
                                * gradient and its output's */
    double gathered_max;       /* largest unit's gathered bytes */
    double grads_max;          /* largest unit's unsharded gradients */
    double params_total, params_active;
} plan_memory_t;

/* Where the training state is (the classes of base/place.h, per device)
 * and what streaming it costs per step (plan/state.c; docs/planner.md). */
typedef struct {
    double cls[FSDP_NCLASS][STRATA_TIER_COUNT];   /* each class's buffers per tier */
    double tier[STRATA_TIER_COUNT];      /* the classes' buffers on each tier */
    double host_work;          /* working copies of storage-homed state on
                                * the host: 3 x the most one unit streams */
    double storage_read, storage_written;   /* bytes per step */
    double storage_s;          /* (read + written) / storage_bw */
    /* a GPU's host link, for state off the device: */
    double link_read, link_written;         /* bytes per step, all of it */
    double link_optim_s;       /* the optimizer kernel's (reads master, grad
                                * and moments, writes master and moments):
                                * in the program's optimizer time */
    double link_stream_s;      /* the gathers' and reduce-scatter's copies
                                * of it: beside the compute */
    double optim_host_s;       /* the optimizer's time on the host: a CPU's
                                * over the state off the device (its memory
                                * is the host's); a GPU's over the units
                                * whose state is all off the device, which
                                * the host updates (2 x their bytes /
                                * host_bw; after the backward with clipping,
                                * in the program's optimizer time, else
                                * beside it) */
    double exposed_s;          /* per row: max(0, max(storage_s,
                                * link_stream_s) - compute_s), in step_s */
    char   where[256];         /* fsdp_place_describe */
} plan_state_t;

typedef struct {
    plan_model_t model;
    plan_hw_t    hw;
    plan_shape_t shape;
    int          nunits;
    plan_unit_t *units;
    plan_memory_t mem;
    double model_flops_step;   /* per device per micro-batch */
    sched_program_t *prog;
    sched_opts_t opts;
    unsigned char (*home)[FSDP_NCLASS];  /* each unit's tier per class */
    plan_state_t state;        /* from home (plan_state_apply) */
    double resident_all, optim_all_s;    /* with every class on the device */
} plan_t;

/* Checks the shape against the model (ep divides experts and fsdp, ...). */
strata_status_t plan_create(const plan_model_t *m, const plan_hw_t *hw, const plan_shape_t *sh,
                            plan_t **plan_p, char *err, size_t errlen);
void plan_destroy(plan_t *p);   /* NULL-safe */

/* The units alone (no program); *n_p units into a malloc'd array. */
strata_status_t plan_units(const plan_model_t *m, const plan_shape_t *sh, plan_unit_t **units_p,
                           int *n_p, char *err, size_t errlen);
/* Parameters of unit u gathered on one device while it runs: the
 * non-expert ones, plus with --ep E < --fsdp N the rank's E-th of the
 * routed experts (each sharded over the N/E ranks that hold it, and
 * gathered among them only). */
double plan_unit_gathered(const plan_unit_t *u, const plan_shape_t *sh);
/* The elements of unit i's shard, of n units: a slice of the padded unit
 * (the tied matrix counted once, with the embedding). */
double plan_unit_shard(const plan_model_t *m, const plan_shape_t *sh, const plan_unit_t *u, int i, int n);
/* The memory outside the program, for units from plan_units. */
void plan_memory(const plan_model_t *m, const plan_shape_t *sh, const plan_unit_t *u, int n,
                 plan_memory_t *mem);
/* Seconds of compute on one device: FLOPs / (dense_flops * mfu) for the
 * matrix products plus bytes / hbm bandwidth for the memory-bound ops. */
double plan_compute_time(const plan_hw_t *hw, double flops, double mem_bytes);

/* What recomputing save s costs (seconds): its producing FLOPs and memory
 * traffic, plus its all-to-all; RECOMPUTE(u) is the sum over u's
 * recompute-action saves (sched_recompute_seconds). */
double plan_save_cost(const plan_t *p, const plan_save_t *s);

/* One evaluated policy. */
typedef struct {
    sched_actions_t acts;
    sched_mode_t mode;
    int    fits, fits_device, fits_host;
    double device_bytes, device_capacity, host_bytes, host_capacity;
    double device_reserve;     /* of the budget, kept free against
                                * fragmentation (plan_memory_t reserve) */
    double step_s, tokens_per_s, tflops_per_device;
    double recompute_flops;    /* per device and step: the producing FLOPs of
                                * the recompute-action saves, and the whole
                                * forward of a unit that makes the next
                                * unit's input again */
    double kept_by_name[SCHED_MAX_NAMES];   /* bytes per step kept on device */
    double offloaded_by_name[SCHED_MAX_NAMES];
    double exposed_s, comm_wait_s;
    double compute_s;          /* the compute engine's busy time in the step */
    int    tail_kept;          /* lhs kept the last N units' offloads on device */
    double need_bytes;         /* when it does not fit: the device bytes it
                                * needs, the admission's bound or the peak */
    plan_state_t state;        /* where the training state was for this row */
} plan_row_t;

/* Build and simulate the step for acts in `mode`: first within the
 * device and host capacities; when no schedule fits, the unlimited one
 * gives the step time and device_bytes is the smallest budget that fits. */
strata_status_t plan_evaluate(plan_t *p, const sched_actions_t *acts, sched_mode_t mode,
                              plan_row_t *row_p, char *err, size_t errlen);
/* sched_plan_auto within the capacities, then plan_evaluate. */
strata_status_t plan_auto(plan_t *p, sched_mode_t mode, plan_row_t *row_p, char *err, size_t errlen);

/* A policy text (as --policy: a name=action list or "auto") in `mode`;
 * with shape.state_auto, state leaves the device as the runtime's
 * state_place=auto moves it (plan_state_free) until the row fits. */
strata_status_t plan_policy(plan_t *p, const char *policy, sched_mode_t mode, plan_row_t *row_p,
                            char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Training state on the tiers (plan/state.c)                                */
/* ------------------------------------------------------------------------ */

/* Unit ui's bytes of class c: as buffers on a tier (bufs = 1), or as
 * values moved (bufs = 0). */
double plan_state_bytes(const plan_t *p, int ui, fsdp_class_t c, int bufs);
/* The host memory's bandwidth for the optimizer's host loops: the
 * hardware file's host_bw, else a CPU's hbm bandwidth or a GPU's d2h_bw. */
double plan_host_bw(const plan_hw_t *hw);
/* home from the shape's placement (all on the device for state_auto),
 * then plan_state_apply and plan_state_check. */
strata_status_t plan_state_reset(plan_t *p, char *err, size_t errlen);
/* p->state, the program's resident bytes and optimizer time from home. */
void plan_state_apply(plan_t *p);
/* state_place=auto's move: buffers of `want` bytes or more leave the
 * device -- the moments, then the gradients, then the masters, each from
 * the first unit -- each to the host while it keeps room for twice the
 * buffer (a quarter of its room reserved for the step), else to storage.
 * The bytes freed (0: nothing left on the device); then plan_state_apply. */
double plan_state_free(plan_t *p, double want);
/* Refused, saying what to add, when state is on storage and the hardware
 * file has no storage_bw. */
strata_status_t plan_state_check(const plan_t *p, char *err, size_t errlen);

#endif
