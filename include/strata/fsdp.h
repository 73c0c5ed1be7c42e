/*
 * strata/fsdp.h - fully sharded models: units, flat sharded parameters,
 * the training step and the sharded optimizer.
 * Included by strata.h; do not include directly.
 *
 * A model is an ordered list of units (e.g. transformer blocks). A unit has
 * named fp32 parameters and two callbacks, forward and backward. The
 * runtime flattens a unit's parameters (registration order) into one flat
 * vector of N elements, pads it to Npad = ceil(N/S)*S for a shard group of
 * S ranks, and rank s of the group keeps elements [s*Npad/S, (s+1)*Npad/S)
 * as its fp32 master shard plus the optimizer state of the same range.
 * Before a unit runs its flat parameter is all-gathered (prefetched
 * the option prefetch units ahead) into a compute copy; after the last backward
 * of a step its gradients are reduce-scattered (averaged over the shard
 * group, then over the W/S replica groups) and the optimizer updates the
 * local shard.
 *
 * One training step with M micro-batches:
 *
 *     strata_model_step_begin(model, M);
 *     for m in 0..M-1:
 *         strata_model_forward(model, x_m, bytes, batch_m, &out, &out_bytes);
 *         ... loss and d(loss)/d(out) from out ...
 *         strata_model_backward(model, dout, out_bytes);
 *     strata_model_step_end(model);          (gradients, clipping, optimizer)
 *
 * Gradients are averaged, not summed: over the M micro-batches and over all
 * W ranks. So each rank's backward should differentiate the MEAN loss of
 * its own micro-batch; the step then equals one process training on the
 * mean loss of all M*W micro-batches.
 *
 * Every buffer a callback touches is allocated by the runtime from the
 * device tier (so the option device_mem bounds them all; exceeding it fails with
 * STRATA_ERR_TIER_FULL and a message naming the need and the use per tag).
 *
 * Threads and progress: Open MPI advances a nonblocking collective only
 * inside MPI calls. With opts.progress_thread (default) each model runs one
 * thread that tests the collectives in flight every 200 us and sleeps on a
 * condition variable when none are; callbacks may also call
 * strata_call_progress between chunks of work, and once one has, the
 * thread stands down for the model's life: the callbacks drive the
 * collectives (call it in every long callback, or in none). Every
 * collective is started by the calling thread in program order (the same
 * on every rank); the progress thread only tests. Waits spin briefly, then
 * sleep in 20 us naps so oversubscribed ranks give their core away instead
 * of spinning.
 * Callbacks run on the thread that called forward/backward.
 *
 * Collective calls: create/commit/destroy, step_begin/forward/backward/
 * step_end and read_param are collective over the context's ranks, in the
 * same order on every rank. A callback that fails on some ranks only leaves
 * the other ranks waiting in the next collective: make failures symmetric
 * (the same bad input fails everywhere) or abort the job.
 */
#ifndef STRATA_FSDP_H
#define STRATA_FSDP_H

#ifndef STRATA_H
#error "include strata.h, not strata/fsdp.h"
#endif

typedef struct strata_model     strata_model_t;
typedef struct strata_unit      strata_unit_t;
typedef struct strata_unit_call strata_unit_call_t;

/* ---- options -------------------------------------------------------------- */

typedef enum {
    STRATA_OPTIM_ADAMW = 0,   /* state "exp_avg", "exp_avg_sq" */
    STRATA_OPTIM_SGD   = 1    /* state "momentum" (none if momentum == 0) */
} strata_optim_kind_t;

/* A growable structure (strata.h): set it up with strata_model_opts_default,
 * then change fields. */
typedef struct strata_model_opts {
    size_t   size;                  /* set by strata_model_opts_default */
    strata_optim_kind_t optimizer;
    float    lr;                    /* default 1e-3 */
    float    beta1, beta2, eps;     /* AdamW: 0.9, 0.999, 1e-8 */
    float    weight_decay;          /* decoupled (AdamW) / L2 (SGD); default 0 */
    float    momentum;              /* SGD: default 0.9 */
    float    clip_norm;             /* global gradient-norm clipping; 0 = off */
    strata_dtype_t compute_dtype;   /* gathered compute copy: F32 or BF16 (default F32) */
    strata_dtype_t reduce_dtype;    /* gradient reduction on the wire: F32, BF16, F16 */
    int      reshard_after_forward; /* free gathered params after forward (default 1);
                                     * the last unit always stays gathered into backward */
    int      optim_on_host;         /* optimizer state in the pinned-host tier (default 0) */
    int      optim_threads;         /* threads of the optimizer step; 0 = the threads option */
    int      progress_thread;       /* a thread drives nonblocking collectives (default 1) */
    uint64_t seed;                  /* parameter initialisation; independent of W and S */
} strata_model_opts_t;

/* Fill *opts, whose size is `size` bytes, with the defaults above (AdamW,
 * lr 1e-3, seed 1234) and set opts->size. Call it through the macro, which
 * passes the size the program was compiled with:
 *     strata_model_opts_t opts;
 *     strata_model_opts_default(&opts);
 *     opts.lr = 3e-4f;
 * STRATA_ERR_INVALID for NULL or a size no version of the struct has. */
strata_status_t strata_model_opts_init(strata_model_opts_t *opts, size_t size);
#define strata_model_opts_default(opts) strata_model_opts_init((opts), sizeof *(opts))

/* ---- parameter initialisers ------------------------------------------------ */

typedef enum {
    STRATA_INIT_ZEROS  = 0,
    STRATA_INIT_ONES   = 1,
    STRATA_INIT_NORMAL = 2,   /* mean 0, standard deviation std */
    STRATA_INIT_USER   = 3    /* fn fills the full tensor */
} strata_init_kind_t;

/* Fill the full tensor (n elements, row-major in dims) deterministically
 * from seed: every rank calls it and keeps its shard. Return 0 on success. */
typedef int (*strata_init_fn)(void *user, const char *unit, const char *param,
                              float *full, size_t n, uint64_t seed);

typedef struct {
    strata_init_kind_t kind;
    float              std;      /* NORMAL */
    strata_init_fn     fn;       /* USER */
    void              *user;     /* USER: passed to fn */
} strata_init_t;

/* Initialisers as expressions, for strata_unit_add_param's argument:
 *     strata_unit_add_param(u, "w", 2, dims, STRATA_F32, STRATA_PARAM_NORMAL(0.02f), NULL); */
#define STRATA_PARAM_ZEROS        ((strata_init_t){ .kind = STRATA_INIT_ZEROS })
#define STRATA_PARAM_ONES         ((strata_init_t){ .kind = STRATA_INIT_ONES })
#define STRATA_PARAM_NORMAL(sd)   ((strata_init_t){ .kind = STRATA_INIT_NORMAL, .std = (sd) })
#define STRATA_PARAM_USER(f, u)   ((strata_init_t){ .kind = STRATA_INIT_USER, .fn = (f), .user = (u) })

/* ---- callbacks ---------------------------------------------------------------- */

/*
 * A unit's forward or backward. `call` is valid only during the callback;
 * everything is reached through it (strata_call_*). Return STRATA_OK, or an
 * error status that the runtime passes on from strata_model_forward/backward.
 */
typedef strata_status_t (*strata_unit_fn)(strata_unit_call_t *call, void *user_data);

/* ---- model registration ------------------------------------------------------- */

/* Create an empty model on ctx; opts may be NULL (defaults). The shard
 * group size is the option shard_size (0 = world size); it must divide the world
 * size (else STRATA_ERR_INVALID). Collective. */
strata_status_t strata_model_create(strata_context_t *ctx, const strata_model_opts_t *opts,
                                    strata_model_t **model_p);
/* Release everything the model owns, waiting for collectives in flight.
 * NULL is a no-op. Collective. */
void strata_model_destroy(strata_model_t *model);

/* Append a unit. name is copied (at most 63 bytes); user_data is passed to
 * both callbacks and stays owned by the caller. backward may be NULL only
 * for a model never trained (eval). After commit: STRATA_ERR_STATE. The
 * unit handle lives as long as the model. */
strata_status_t strata_model_add_unit(strata_model_t *model, const char *name,
                                      strata_unit_fn forward, strata_unit_fn backward,
                                      void *user_data, strata_unit_t **unit_p);

/* Append a parameter to a unit: ndims 1..4, dims copied; dtype is the
 * master dtype and must be STRATA_F32 (the compute copy follows
 * opts.compute_dtype). Names are unique within a unit. After commit:
 * STRATA_ERR_STATE. *index_p (may be NULL) receives the param's index, for
 * strata_call_param/grad. */
strata_status_t strata_unit_add_param(strata_unit_t *unit, const char *name, int ndims,
                                      const size_t *dims, strata_dtype_t dtype,
                                      strata_init_t init, int *index_p);

/* Declare what flows into (output 0) or out of (output 1) a unit: dtype
 * and up to 4 dims, where a dim of 0 is any size (e.g. the batch). Each
 * forward then checks it: the input's bytes, and the bytes the forward
 * asks of strata_call_output, must be a multiple of the fixed dims'
 * product times the dtype's size (exactly that without a 0 dim), else the
 * step fails with STRATA_ERR_MISMATCH naming the unit and both sizes.
 * ndims 0 removes the declaration. Not inside a step. */
strata_status_t strata_unit_set_io(strata_unit_t *unit, int output, strata_dtype_t dtype,
                                   int ndims, const size_t *dims);

/* Commit the registration: lay out and allocate the shards and optimizer
 * state, initialise the parameters. Collective. After it, registration
 * calls fail with STRATA_ERR_STATE. On failure (STRATA_ERR_TIER_FULL,
 * _NOMEM, _OVERFLOW, ...; message on the context) the model may hold part
 * of its buffers and can only be destroyed. */
strata_status_t strata_model_commit(strata_model_t *model);

/* ---- the step ------------------------------------------------------------------- */

/* Start a training step of n_micro micro-batches (>= 1). */
strata_status_t strata_model_step_begin(strata_model_t *model, int n_micro);

/*
 * Forward of the next micro-batch. input (in_bytes) is copied into a
 * device-tier buffer: unit 0's input. batch is an opaque pointer passed to
 * every callback of this micro-batch (strata_call_batch), e.g. the targets.
 * *out_p, *out_bytes_p: the last unit's output, owned by the runtime, valid
 * until the matching strata_model_backward returns. Another forward before
 * that backward fails with STRATA_ERR_STATE.
 */
strata_status_t strata_model_forward(strata_model_t *model, const void *input, size_t in_bytes,
                                     void *batch, const void **out_p, size_t *out_bytes_p);

/* Backward of the micro-batch whose forward came last. grad_out is d(loss)
 * /d(output), exactly the forward's out_bytes (copied); it may be NULL with
 * 0 bytes when the last unit computes its own loss gradient (its backward
 * then sees no grad-output). On the last micro-batch, each unit's gradient
 * reduction starts as soon as its backward returns. */
strata_status_t strata_model_backward(strata_model_t *model, const void *grad_out,
                                      size_t grad_bytes);

/* Finish the step: wait for the gradient reductions, clip, and run the
 * optimizer on every local shard (units whose gradients arrived early may
 * already have been updated during backward when clipping is off). */
strata_status_t strata_model_step_end(strata_model_t *model);

/* Forward without a step (evaluation): saves are discarded after each unit
 * and no backward may follow. *out_p is valid until the next call on the
 * model. */
strata_status_t strata_model_eval(strata_model_t *model, const void *input, size_t in_bytes,
                                  void *batch, const void **out_p, size_t *out_bytes_p);

/* Learning rate for the following steps (schedules). */
strata_status_t strata_model_set_lr(strata_model_t *model, float lr);

/* ---- reading parameters and statistics ------------------------------------------- */

/* Units and their names are owned by the model: borrowed, valid until
 * strata_model_destroy; NULL for an index out of range or a NULL model. */
int strata_model_unit_count(const strata_model_t *model);
strata_unit_t *strata_model_unit(strata_model_t *model, int index);
const char *strata_unit_name(const strata_unit_t *unit);
int strata_unit_param_count(const strata_unit_t *unit);
/* Name, element count and dims (up to 4, may be NULL) of a parameter.
 * *name_p is borrowed from the model: valid until strata_model_destroy.
 * Out-parameters may be NULL; none is written on failure. */
strata_status_t strata_unit_param_info(const strata_unit_t *unit, int index, const char **name_p,
                                       size_t *numel_p, int *ndims_p, size_t dims[4]);
/* Copy the full fp32 master value of a parameter (numel elements) into dst
 * on every rank. Collective over the context's ranks. */
strata_status_t strata_unit_read_param(strata_unit_t *unit, int index, float *dst, size_t numel);

typedef struct strata_model_stats {
    size_t  size;               /* set by STRATA_MODEL_STATS_INIT */
    int     steps;              /* optimizer steps taken */
    double  step_s;             /* last step, wall time from step_begin to step_end */
    double  compute_s;          /* inside callbacks */
    double  exposed_comm_s;     /* blocked waiting for a collective */
    double  optim_s;            /* clipping and optimizer */
    double  grad_norm;          /* global gradient norm before clipping (last step); -1
                                 * without clipping (clip_norm 0: not computed). When it is
                                 * not finite the step's update is skipped (the parameters
                                 * and optimizer state stay those of the step before) */
    int     grad_nonfinite_unit; /* then the first unit whose gradient is not finite, the
                                 * same on every rank; -1 when none (or not checked) */
    size_t  peak_device_bytes;  /* peaks of the tiers during the last step (every step */
    size_t  peak_host_bytes;    /* starts from the use at step_begin; the context's tiers, */
                                /* so all its models count) */
    /* activation offload (all 0, overlap 1, while every saved name is kept) */
    size_t  peak_storage_bytes;
    double  transfer_s;         /* time the copy engines were busy with this step's
                                 * activation transfers (summed over engines) */
    double  exposed_transfer_s; /* of it, time compute waited for a transfer */
    double  overlap_frac;       /* 1 - exposed/transfer, in [0,1]; 1 without transfers */
    size_t  offload_bytes;      /* bytes moved off the device in the step */
    double  predicted_step_s;   /* the plan's predicted step time (0 without a plan) */
    double  ckpt_wait_s;        /* of the last step, time its optimizer waited for a save in
                                 * the background (ckpt_async) to copy a unit's state */
    /* the static memory plan: the device buffers of a step laid out at
     * offsets fixed when it was made (the first step of a program records
     * them, the next ones place them), so nothing is searched for and
     * nothing fragments */
    int     mem_planned;        /* 1: the last step placed its device buffers by the plan */
    int     mem_plan_pad;
    size_t  mem_plan_buffers;   /* buffers the plan lays out */
    size_t  mem_plan_bytes;     /* the device span it lays them in */
    size_t  mem_plan_waits;     /* of the last step, buffers that found their span still held
                                 * by the previous occupant and waited for it */
    /* training state that lives on the storage tier (the state_place
     * option), in the last step: bytes read up and written back, and the
     * seconds the step waited for reads */
    uint64_t state_read_bytes, state_written_bytes;
    double   state_wait_s;
} strata_model_stats_t;
/* The initialiser: the program's size, every field 0. */
#define STRATA_MODEL_STATS_INIT { .size = sizeof(strata_model_stats_t) }
/* Fill *stats_p as far as stats_p->size reaches (set it with
 * STRATA_MODEL_STATS_INIT: strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;).
 * Local: no communication. */
strata_status_t strata_model_stats(const strata_model_t *model, strata_model_stats_t *stats_p);

/* ---- activation policies, the step program, the trace (fsdp/exec_*.c) ------- */

/*
 * What happens to each saved activation (strata_save) between its forward
 * and its backward is a policy per save name (as JAX's
 * save_and_offload_only_these_names):
 *   keep       stays on the device;
 *   host       moved to the pinned-host tier after the unit's forward and
 *              brought back before its backward;
 *   storage    the same through host to the HDF5 storage tier;
 *   recompute  dropped after the forward; the unit's forward runs again
 *              right before its backward (its other saves are brought back
 *              first and are only overwritten with the same values) and
 *              that re-run keeps its saves on the device.
 * The policy text is "qkv=host, mlp_up=storage, *=keep" ('*' = every other
 * name; keep when absent) or "auto". It comes from the option act_policy
 * (STRATA_ACT_POLICY) unless strata_model_set_act_policy replaced it;
 * the option schedule (STRATA_SCHEDULE) picks lhs (latency-hiding: offloads start
 * as soon as the forward made them, prefetches just early enough, within
 * the device budget) or naive (every transfer waited for where it is
 * issued).
 *
 * The tensors between units are saves too: each unit's input (the output
 * of the unit before it; the step's input for the first unit) is a save
 * of the unit named STRATA_UNIT_INPUT ("unit_input"), so "*=host" or
 * "unit_input=storage" moves them off the device between a unit's forward
 * and its backward, and auto weighs them with the rest. A unit's input is
 * what its recompute starts from, so "*=recompute" keeps it (the classic
 * checkpoint at every unit's input). Naming it recomputes the inputs in
 * pairs: with "unit_input=recompute" the input of every odd unit u is
 * dropped after F(u) and made again right before its backward by running
 * the forward of unit u-1 once more (its parameters are the ones its own
 * backward gathers next; its input, kept, is where it starts): the
 * callback runs as an ordinary forward (strata_call_recompute is 0), its
 * strata_save calls get the buffers kept on the device back (it writes
 * the same values into them) and scratch for the others, freed when it
 * returns, and its output becomes unit u's input. Half the inputs leave
 * the device for one more forward of half the units. Callbacks cannot
 * save under that name.
 *
 * The first step begins with a sizing pass: the first micro-batch's
 * forward runs once with every save freed at the end of its unit (so
 * forward callbacks of that micro-batch run twice), which records the step
 * program (units, save names and sizes, costs); what the device cannot
 * hold while it measures goes to the host tier, so the pass itself never
 * fails for room. Then the plan is made (auto: the fastest that fits,
 * printed on rank 0 with the predicted peaks and step time, and after the
 * step the measured values beside them). A device budget too small for
 * the policy fails there, before any backward or update, with
 * STRATA_ERR_TIER_FULL and a message naming the smallest device_mem this
 * policy fits, the smallest any policy fits and what takes the room
 * (strata_model_admission gives the numbers). Keep is admitted so too;
 * while every name is kept and no trace is asked for, nothing else below
 * happens. After step 1 the plan is made again from
 * step 1's measured costs (mean over ranks). Every later forward is
 * checked against the program: another save name, size, order or count
 * fails at once with STRATA_ERR_MISMATCH naming the unit and the save
 * (make such changes the same on every rank, or the others wait in the
 * next collective); strata_model_replan makes the next step record again.
 */
#define STRATA_UNIT_INPUT "unit_input"

/* Set the activation policy ("qkv=host,*=keep", "auto"; NULL = back to
 * the option act_policy). Only between steps. A syntax error fails here; a name
 * the model does not save fails here when the program is known (else at
 * the next step's plan) with a message listing the names it saves. */
strata_status_t strata_model_set_act_policy(strata_model_t *model, const char *policy);
/* Forget the recorded step program: the next step sizes, records and plans
 * again (e.g. after changing the micro-batch shape). Only between steps. */
strata_status_t strata_model_replan(strata_model_t *model);
/* Write a Chrome trace-event file per rank, <prefix>.<rank>.json (opens in
 * Perfetto; strata trace FILES... reports per-step overlap): one track per
 * engine (compute, comm, d2h, h2d, io), an event per op with its unit, save
 * name and bytes, memory counters per tier, a step event per step. Written
 * when the model is destroyed or the prefix is changed; NULL or "" stops
 * tracing. Same as the option trace. In CUDA builds the compute ops are also NVTX
 * ranges. */
strata_status_t strata_model_trace(strata_model_t *model, const char *prefix);
/* The smallest device budget (device_mem) at which `policy` (NULL = the
 * one in force) has a schedule, and at which any plan has one (*any_p),
 * from the recorded program; either pointer may be NULL. Needs a recorded
 * program (after the first step). Local: no communication. */
strata_status_t strata_model_plan_need(strata_model_t *model, const char *policy, size_t *need_p,
                                       size_t *any_p);
/* The admission of the policy in force at the device budget in force, from
 * the recorded program (the first forward records it, also for keep): the
 * smallest device_mem the policy fits and the smallest any policy fits,
 * and what takes the room at the step's peak. need is the sum of the
 * parts held ... scheduled. The caller sets size to sizeof(strata_admission_t);
 * a smaller size (an older caller) gets the members that fit. No program
 * yet: STRATA_ERR_STATE. Local: no communication. */
typedef struct strata_admission {
    size_t size;        /* set by the caller: sizeof(strata_admission_t) */
    int    refused;     /* need > budget: the first forward failed with STRATA_ERR_TIER_FULL */
    size_t budget;      /* device_mem in force */
    size_t need;        /* the smallest device_mem this policy fits */
    size_t any;         /* the smallest device_mem any policy fits (act_policy=auto) */
    size_t held;        /* on the device all step: parameter shards, optimizer state,
                         * gradient shards (and, with micro-batches, their gradients) */
    size_t between;     /* unit inputs and outputs, kept from forward to backward */
    size_t flow;        /* the gradients flowing back (two activations) */
    size_t workspace;   /* the largest forward workspace and an activation more */
    size_t reserve;     /* kept free so that blocks of many sizes still find a span */
    size_t scheduled;   /* the schedule's peak of saves and gathered parameters */
} strata_admission_t;
strata_status_t strata_model_admission(strata_model_t *model, strata_admission_t *a_p);
/* The plan in force (per name: action, bytes; predicted peaks and step
 * time) and its per-engine schedule, readable. */
strata_status_t strata_model_plan_print(const strata_model_t *model, FILE *out);

/* ---- checkpoints (fsdp/ckpt.c, format in docs/checkpoint-format.md) -------- */

/* What a model checkpoint carries besides the model and optimizer state. */
typedef struct strata_model_ckpt {
    uint64_t data_pos;                /* caller's position in its data stream */
    void    *rng;                     /* caller's RNG state, rng_len bytes (may be NULL) */
    size_t   rng_len;
    int      nconfig;                 /* model configuration, saved as attributes */
    const strata_ckpt_kv_t *config;
    strata_dtype_t half_copy;         /* also write bf16/f16 copies (STRATA_F32: none) */
    int      keep;                    /* checkpoints kept; 0 = ckpt_keep option */
} strata_model_ckpt_t;

/* Save the model's shards and optimizer state into dir/step-<8 digits>.h5
 * (the step is the number of completed optimizer steps), atomically, and
 * update dir/latest. Collective; only between steps. dir NULL: the option
 * ckpt_dir (empty: STRATA_ERR_INVALID saying so). path (may be NULL)
 * receives the file written. info may be NULL. */
strata_status_t strata_model_save(strata_model_t *model, const char *dir,
                                  const strata_model_ckpt_t *info, char *path, size_t len);
/* Load a checkpoint written with any world or shard size into the model
 * (same units and parameter shapes), restoring the optimizer state and step
 * count; info->data_pos and info->rng (rng_len bytes, must match the file)
 * are filled when info is not NULL; info->config, when given, must match
 * the file's (strata_ckpt_load: STRATA_ERR_CONFIG naming the differences).
 * Collective; only between steps. On failure the step count and optimizer
 * settings (lr, betas, ...) stay those of before. So do the shards on the
 * cuda backend, which reads the file into host copies and moves them to
 * the device only after a complete read; the host backend reads into the
 * master and optimizer-state shards in place, so a failure part-way can
 * leave some of them holding the file's values. Load again or rebuild the
 * model before training on. */
strata_status_t strata_model_load(strata_model_t *model, const char *path,
                                  strata_model_ckpt_t *info);
/* With the option ckpt_async on, strata_model_save copies the shards into
 * host memory (from the host tier's budget; without room there it saves
 * synchronously, said once), starts writing in the background and
 * returns; path receives the file being written. Training may go on at
 * once. The next save and a load wait for it first. A failure of the
 * background write is returned by the next strata_model_step_begin (on
 * every rank alike), save, load or strata_model_save_wait. This waits
 * for the save in flight, if any, and returns its status; path (may be
 * NULL) receives the file written in the background since the last call
 * (once), or "". It communicates with no rank, but call it on every rank
 * alike (as the saves): while a save is in flight the ranks' next
 * step_begin agree on it, and a rank that waited here no longer has one. */
strata_status_t strata_model_save_wait(strata_model_t *model, char *path, size_t len);

/* ---- checking a unit's backward (fsdp/gradcheck.c) ------------------------------ */

/* What strata_unit_gradcheck found; a growable structure (strata.h). */
typedef struct strata_gradcheck {
    size_t size;              /* set by STRATA_GRADCHECK_INIT */
    int    nprobed;           /* parameter elements probed */
    int    worst_param;       /* where the error was largest: the parameter (its index */
    double max_rel_err;       /* in the unit) and element; the largest error */
    size_t worst_element;
    double worst_analytic;    /* there: d(L)/d(element) from the unit's backward */
    double worst_numeric;     /* and the central difference of L from its forward */
} strata_gradcheck_t;
#define STRATA_GRADCHECK_INIT { .size = sizeof(strata_gradcheck_t) }

/*
 * Check a unit's backward against its forward, as a unit test of a hand-
 * written backward: on the unit's current parameters and `input` (in_bytes,
 * host memory; batch is handed to the callbacks as in strata_model_forward),
 * with L = sum_i r_i * out_i for a fixed pseudo-random r in [-1, 1] over
 * the unit's output (read as f32), the backward's d(L)/d(p) is compared
 * with (L(p + eps) - L(p - eps)) / 2eps for nprobe elements p spread evenly
 * over the unit's flat parameter vector (all of them when it has fewer).
 * report_p->max_rel_err is the largest |analytic - numeric| / max(|analytic|,
 * |numeric|, 1e-6) with where it was. The forward runs in f32, so with eps
 * about 1e-3 a right backward typically gives 1e-4 ... 1e-2 and a wrong one
 * 0.1 or more; a forward that is not smooth at the point (ReLU at 0, max)
 * can give a large error at an element that moves across the kink.
 *
 * The unit runs in a private one-unit model on the model's context (its
 * callbacks and user data, a copy of its parameters, f32 compute, no
 * optimizer update), so its callbacks see unit index 0, n_micro 1, and
 * strata_call_training 0 in the central differences: a forward that
 * behaves differently in training (dropout) cannot be checked. The model
 * and its parameters are not changed. Collective over the context's ranks,
 * every rank with the same input; only between steps; needs device room
 * for a second copy of the unit. Errors: STRATA_ERR_INVALID (bad argument,
 * unit of another model, no backward, report size unset), _STATE, _MISMATCH
 * (output not f32), and whatever the unit's callbacks return.
 */
strata_status_t strata_unit_gradcheck(strata_model_t *model, strata_unit_t *unit,
                                      const void *input, size_t in_bytes, void *batch,
                                      int nprobe, double eps, strata_gradcheck_t *report_p);

/* ---- inside a callback ------------------------------------------------------------ */

/*
 * Ownership and lifetime of what a callback is handed. All memory belongs
 * to the runtime; a callback never frees it and must not keep a pointer
 * past the lifetime given here.
 *
 *  strata_call_param    gathered compute copy (opts.compute_dtype: float*
 *                       or uint16_t* bf16), numel elements; read-only;
 *                       valid until the callback returns.
 *  strata_call_grad     the parameter's fp32 gradient, numel elements, full
 *                       size; zero at the first micro-batch of a step;
 *                       backward ADDS its contribution (accumulation over
 *                       micro-batches); valid until the callback returns.
 *  strata_call_input    forward and backward: the unit's input (unit 0: the
 *                       copy of strata_model_forward's input; unit u: unit
 *                       u-1's output). Read-only; valid until the callback
 *                       returns (the same bytes in forward and backward).
 *  strata_call_output   forward: allocate the unit's output of `bytes`
 *                       (call exactly once; it becomes the next unit's
 *                       input); valid until the unit's backward returns.
 *  strata_call_forward_output  backward: that same output, read-only.
 *  strata_call_grad_output  backward: d(loss)/d(output), read-only; NULL
 *                       with 0 bytes for the last unit when backward got
 *                       no grad_out.
 *  strata_call_grad_input   backward: buffer for d(loss)/d(input), same
 *                       bytes as the input, zero-filled; the callback
 *                       overwrites or adds. NULL with 0 bytes for unit 0
 *                       (no one consumes it).
 *  strata_call_workspace  scratch of `bytes`, uninitialised, valid until the
 *                       callback returns; may be called several times.
 *  strata_save          forward: a named buffer of `bytes` kept from this
 *                       forward to the same unit's backward of the same
 *                       micro-batch; between them the activation policy of
 *                       its name may move it off the device or drop it for
 *                       recompute (see "activation policies" above). Write
 *                       it only inside this forward.
 *  strata_saved         backward: the buffer saved under that name, read-
 *                       write; freed when the backward returns.
 *
 * Size checks: every buffer the callback may write (output, grad_input,
 * grads, saves, workspace) is followed by guard bytes; a callback that
 * writes past its end fails the call with STRATA_ERR_MISMATCH naming the
 * unit and the buffer (detection is best effort: writes far beyond the end
 * may corrupt memory before they can be seen). A forward that never calls
 * strata_call_output, or calls it twice, fails with STRATA_ERR_STATE.
 */
strata_status_t strata_call_param(strata_unit_call_t *call, int index, void **ptr_p,
                                  size_t *numel_p);
/* strata_call_param, saying which dtype the callback reads: another dtype
 * than the model's compute_dtype fails the call with STRATA_ERR_MISMATCH
 * (naming both), even if the callback ignores the status. */
strata_status_t strata_call_param_as(strata_unit_call_t *call, int index, strata_dtype_t dtype,
                                     void **ptr_p, size_t *numel_p);
strata_status_t strata_call_grad(strata_unit_call_t *call, int index, float **ptr_p,
                                 size_t *numel_p);
strata_status_t strata_call_input(strata_unit_call_t *call, const void **ptr_p, size_t *bytes_p);
strata_status_t strata_call_output(strata_unit_call_t *call, size_t bytes, void **ptr_p);
strata_status_t strata_call_forward_output(strata_unit_call_t *call, const void **ptr_p,
                                           size_t *bytes_p);
strata_status_t strata_call_grad_output(strata_unit_call_t *call, const void **ptr_p,
                                        size_t *bytes_p);
strata_status_t strata_call_grad_input(strata_unit_call_t *call, void **ptr_p, size_t *bytes_p);
strata_status_t strata_call_workspace(strata_unit_call_t *call, size_t bytes, void **ptr_p);
strata_status_t strata_save(strata_unit_call_t *call, const char *name, size_t bytes,
                            void **ptr_p);
strata_status_t strata_saved(strata_unit_call_t *call, const char *name, void **ptr_p,
                             size_t *bytes_p);

/*
 * Recompute at name granularity. A unit with a save whose policy is
 * recompute runs its forward callback again before its backward (a
 * recompute pass); the saves it still holds are on the device again by
 * then (kept, or brought back from host or storage), and only the dropped
 * ones need making. The callback may skip the work whose outputs it still
 * holds, as JAX's save_and_offload_only_these_names does:
 *
 *  strata_call_recompute  1 inside a recompute pass, else 0 (NULL: 0).
 *                       strata_call_output then hands back the forward's
 *                       output, which already holds its values (the
 *                       callback need not write it again).
 *  strata_call_save_held  1 inside a recompute pass when the save `name`
 *                       still holds what this unit's forward wrote into it
 *                       for this micro-batch: strata_save(name) returns
 *                       that buffer, which the callback may read and need
 *                       not write (if it writes, only the same values).
 *                       0 for a save dropped for recompute (strata_save
 *                       returns a new, uninitialised buffer the callback
 *                       must fill), outside a recompute pass, for a name
 *                       the unit did not save, and for NULL arguments.
 *                       The answer holds for the whole callback, before or
 *                       after strata_save(name); name is only read and
 *                       may be freed after the call.
 * Every save must still be asked for with strata_save in the recorded
 * order, held or not, and the pass must leave every save with the values
 * the forward made (the backward reads them).
 */
int strata_call_recompute(const strata_unit_call_t *call);
int strata_call_save_held(const strata_unit_call_t *call, const char *name);

/* Forward (optional): the work that makes save `name` from the unit's input
 * and its other saves, and with name NULL the work of the whole forward,
 * in one unit the callback picks (FLOPs, say). Call it after
 * strata_save(name); the last value given counts. The runtime turns it into
 * the save's producing cost, the measured forward time x work(name) /
 * work(NULL), and predicts a recompute pass as the sum of those costs over
 * the saves it makes again (the policy's recompute names); without it a
 * recompute is predicted to take the whole forward. work < 0, a backward
 * or a name not saved yet: STRATA_ERR_INVALID / _NOT_FOUND. A no-op in
 * strata_model_eval. */
strata_status_t strata_save_work(strata_unit_call_t *call, const char *name, double work);

/* The batch pointer given to strata_model_forward, the micro-batch index
 * (0..M-1), M, whether this is a training forward (0 in strata_model_eval),
 * the unit's index and the context. */
void *strata_call_batch(const strata_unit_call_t *call);
int strata_call_micro(const strata_unit_call_t *call);
int strata_call_n_micro(const strata_unit_call_t *call);
int strata_call_training(const strata_unit_call_t *call);
int strata_call_unit_index(const strata_unit_call_t *call);
strata_context_t *strata_call_context(const strata_unit_call_t *call);
strata_dtype_t strata_call_compute_dtype(const strata_unit_call_t *call);

/*
 * Streams (the cuda backend). strata_call_stream returns the compute stream,
 * a cudaStream_t as void * (NULL on the host backend, where callbacks run
 * synchronously on the host as before). The contract:
 *
 *  - The runtime owns every stream and event: the compute stream (created at
 *    strata_init, non-blocking, destroyed at strata_finalize), the comm
 *    stream (NCCL all-gathers and reduce-scatters), and one stream per copy
 *    direction (d2h, h2d). A callback never creates, synchronises or
 *    destroys them.
 *  - A callback queues all its device work on strata_call_stream(call) and
 *    returns without waiting (no cudaStreamSynchronize, no
 *    cudaDeviceSynchronize, no work on the legacy default stream). It may
 *    use its own libraries (cuBLAS, ...) by setting their stream to this one.
 *  - The runtime orders everything else by events, never by host waits: a
 *    unit's all-gather on the comm stream, then an event the compute stream
 *    waits on before the callback's work; a saved activation's D2H on the
 *    d2h stream after the event recorded when the producing callback
 *    returned; its H2D before the event its consumer waits on; the reduce-
 *    scatter after backward's event; the optimizer on the device shards (or
 *    on the host when the optimizer state lives there, after the D2H of the
 *    gradient shard).
 *  - The host waits only at strata_model_step_end (the step's end) and where
 *    the schedule says (a buffer whose tier is reused, a checkpoint).
 *  - Buffers the callback is handed (strata_call_*) stay valid, as listed
 *    above, in stream order: until the work the callback queued has run,
 *    which the runtime sees by its event, not when the callback returns.
 *
 * On the cuda backend every pointer a callback is handed (params, grads,
 * input, output, grad_input/output, workspace, saves) is device memory, and
 * strata_model_forward's *out_p is a device pointer too (copy it down on
 * the compute stream, or read a loss the last unit left there, after the
 * step: strata_model_step_end returns once the stream's work has run). The
 * runtime frees a device buffer only once the compute stream has passed
 * the point where it was released. On the device the guard bytes are not
 * read back (that would wait for the stream): run compute-sanitizer's
 * memcheck to catch overruns there. strata_model_save/load stage the
 * device shards through host memory (the same file as the host backend's;
 * they wait for the compute stream and need host memory for this rank's
 * master and optimizer-state shards while they run).
 */
void *strata_call_stream(const strata_unit_call_t *call);

/* Let the runtime advance collectives in flight (prefetched all-gathers,
 * gradient reductions). Long callbacks may call it between chunks of work
 * so communication overlaps compute even without a progress thread. Cheap
 * when nothing is in flight. The first call that finds something in flight
 * stands the model's progress thread down for good: its wake-ups share
 * the cores the callbacks compute on (they made a 2-rank step of the
 * example GPT 5-10% longer), and the callbacks that call this need it no
 * more. Call it in every long callback, or in none. */
void strata_call_progress(strata_unit_call_t *call);

#endif
