/*
 * fsdp.h - internal interface of the FSDP runtime: the model and unit
 * structs, shard geometry, memory, progress of collectives, what a callback
 * gets, the activation executor's hooks, optimizer kernels, and the
 * enumeration used by checkpoints (io/). Not installed. Who calls whom
 * among the files of fsdp/: see exec_impl.h.
 */
#ifndef STRATA_FSDP_INTERNAL_H
#define STRATA_FSDP_INTERNAL_H

#include "base/base.h"
#include "base/place.h"
#include "base/shard.h"
#include "comm/recorder.h"
#include "sched/sched.h"

#define FSDP_NAME_LEN 64
#define FSDP_MAX_DIMS 4
#define FSDP_GUARD    256          /* guard bytes after callback-writable buffers */
/* workspace blocks a model keeps for reuse (fsdp_ws_cache_drop) */
#define FSDP_WS_CACHE 4
#define FSDP_ALIGN    256

/* ---- geometry (geometry.c; pure) ------------------------------------------ */

/* The shard geometry of flat parameters is base/shard.h's, shared with
 * the checkpoints. */

/* Deterministic N(0,1) for element i of a stream (counter-based). */
float fsdp_normal(uint64_t seed, uint64_t stream, uint64_t i);

/* ---- memory (mem.c) -------------------------------------------------------- */

/* The one door through which the runtime gets memory that callbacks or
 * shards use: a tiers block resident in the given tier, so the tier's
 * budget and per-tag accounting cover every buffer. */
typedef strata_block_t fsdp_mem_t;
typedef struct fsdp_mem_stats {
    size_t budget[STRATA_TIER_COUNT];
    size_t used[STRATA_TIER_COUNT];
    size_t peak[STRATA_TIER_COUNT];
    size_t used_by_tag[STRATA_TIER_COUNT][STRATA_TAG_COUNT];
} fsdp_mem_stats_t;

strata_status_t fsdp_mem_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, void **ptr_p, fsdp_mem_t **h_p);
void fsdp_mem_free(fsdp_mem_t *h);
/* Accounting of the context's tiers (all models of the context). */
void fsdp_mem_stats(strata_context_t *ctx, fsdp_mem_stats_t *st);

typedef struct fsdp_buf {         /* a runtime buffer with its handle */
    void       *ptr;
    size_t      bytes;            /* what the user asked for (guard follows) */
    fsdp_mem_t *h;
} fsdp_buf_t;

/* Allocate a runtime buffer with FSDP_GUARD guard bytes after it. */
strata_status_t fsdp_buf_alloc(strata_context_t *ctx, strata_tier_t tier, strata_tag_t tag,
                               size_t bytes, int zero, fsdp_buf_t *b);
void fsdp_buf_free(fsdp_buf_t *b);
int  fsdp_guard_ok(const fsdp_buf_t *b);

/* Making room. A device buffer of the step that may wait for memory (a
 * callback's output, saves and workspace; a unit's gathered parameters)
 * comes from fsdp_buf_alloc_room: when the device tier is full or
 * fragmented, the kept workspace is dropped, then the model's room hook
 * runs, and the allocation is retried as long as either freed something.
 * Then, on the host backend, a device tier whose free bytes are only in
 * pieces (fragmented) sends the buffer to the pinned-host tier: the device
 * budget holds and the step goes on (m->frag_spills counts them, a warning
 * says so once); a full tier's error stands (the plan did not fit). The
 * hook returns 1 when it freed device memory (the activation executor
 * registers one that waits for the oldest offload in flight), 0 when
 * nothing it could do would help. */
typedef int (*fsdp_room_fn)(strata_model_t *m);
void fsdp_mem_set_room(strata_model_t *m, fsdp_room_fn fn);   /* NULL: none */
strata_status_t fsdp_buf_alloc_room(strata_model_t *m, strata_tag_t tag, size_t bytes,
                                    fsdp_buf_t *b);

/* The static memory plan of the step (mem.c over tiers/mplan.c): begun
 * when a step begins (placing when the program is the one recorded),
 * ended after it (a recording is packed for the next step; a step in
 * which the program changed is not kept), forgotten after a failed step. */
void fsdp_mplan_step_begin(strata_model_t *m);
void fsdp_mplan_step_end(strata_model_t *m);
void fsdp_mplan_forget(strata_model_t *m);
/* A planned span was found held, and nothing else could free it: wait for
 * a collective in flight (its buffers go), else the buffer goes beside the
 * plan's span when tried again (or, without room there, the step leaves
 * the plan). 1: try again (*st_p a collective's failure); 0: nothing
 * changed. */
int  fsdp_mplan_held(strata_model_t *m, strata_status_t *st_p);

/* Workspace kept for reuse. While the activation executor runs
 * (m->exec_active), a callback's workspace blocks are kept for the next
 * call instead of freed: a block that stays put cannot be lost to
 * fragmentation as blocks of every size come and go around it (the plan
 * counts one workspace as always resident). Dropped when a device
 * allocation fails, at every step's begin and end, and with the model. */
/* A kept block of at least bytes into *b (its guard moved to the new end):
 * 1, or 0 when none fits. */
int  fsdp_ws_take(strata_model_t *m, size_t bytes, fsdp_buf_t *b);
/* After a call: keep b's block if the executor runs and there is a place,
 * else free it; b is empty afterwards. */
void fsdp_ws_give(strata_model_t *m, fsdp_buf_t *b);
/* Free every kept block; 1 if there was any. */
int  fsdp_ws_cache_drop(strata_model_t *m);

/* ---- training state on the tiers (state.c) ----------------------------------- */

/* The classes state_place names and the option's text: base/place.h. A
 * unit's state buffers by index, and the class of each. */
enum { FSDP_SB_MASTER = 0, FSDP_SB_GRAD, FSDP_SB_STATE0, FSDP_SB_STATE1, FSDP_NSB };
fsdp_class_t fsdp_sb_class(int k);

struct strata_unit;
/* The model's placements (state_place, and opts.optim_on_host). */
strata_status_t fsdp_state_place(struct strata_model *m, fsdp_place_t p[FSDP_NCLASS]);
/* Buffer k of u (u->master, u->grad_shard, u->state[0..1]). */
fsdp_buf_t *fsdp_sb(struct strata_unit *u, int k);
/* FSDP_SB_STATE0 + the optimizer's states: the buffers a unit has. */
int  fsdp_state_count(const struct strata_model *m);
/* At commit: buffer k in its home tier (a storage home starts on the
 * host; fsdp_state_settle sends it down once it holds its values). */
strata_status_t fsdp_state_alloc(struct strata_model *m, struct strata_unit *u, int k,
                                 strata_tier_t home);
strata_status_t fsdp_state_settle(struct strata_model *m, struct strata_unit *u, int k);
int  fsdp_state_streamed(const struct strata_unit *u, int k);
/* A storage-homed buffer's way up to the host tier, queued (a no-op
 * otherwise, and when it is up or on its way). */
strata_status_t fsdp_state_fetch(struct strata_model *m, struct strata_unit *u, int k);
/* The buffer at b->ptr, waiting for its fetch. */
strata_status_t fsdp_state_ready(struct strata_model *m, struct strata_unit *u, int k);
/* Up, for values that are overwritten whole (a reduced gradient): no read. */
strata_status_t fsdp_state_fresh(struct strata_model *m, struct strata_unit *u, int k);
/* Done with it for now: down again, written when dirty (queued). */
strata_status_t fsdp_state_put(struct strata_model *m, struct strata_unit *u, int k, int dirty);
/* Some buffer of the model lives on storage. */
int  fsdp_state_any_streamed(const struct strata_model *m);
/* Every buffer down again (written where dirty). */
strata_status_t fsdp_state_put_all(struct strata_model *m, int dirty);
/* Between steps, for checkpoints: every buffer that lives on storage
 * mapped where it lies in the spill file (b->ptr; the io layer streams it
 * through the page cache, no copy in a memory tier), writable for a load;
 * and unmapped (written: summed anew). */
strata_status_t fsdp_state_map_all(struct strata_model *m, int writable);
strata_status_t fsdp_state_unmap_all(struct strata_model *m, int written);
/* state_place=auto: buffers leave the device until `want` bytes are
 * freed (the optimizer's moments first, then gradients, then masters;
 * from the first unit; to the host while it has room, else storage).
 * Between steps. *freed_p: what left. */
strata_status_t fsdp_state_auto_free(struct strata_model *m, size_t want, size_t *freed_p);
/* At commit: every state buffer's home (u->home[k]) from the placements;
 * with state_place=auto, what does not fit half of the device's room
 * leaves it (the order and tiers of fsdp_state_auto_free), said on rank 0. */
void fsdp_state_homes(struct strata_model *m, const fsdp_place_t p[FSDP_NCLASS]);
/* Host bytes the working copies of state streamed from storage may take
 * at once (three units' worth of the largest). */
size_t fsdp_state_stream_reserve(const struct strata_model *m);
/* Where the state lives, e.g. "master=device:4/4,optim=host:2/4,optim=device:2/4". */
const char *fsdp_state_describe(const struct strata_model *m, char *buf, size_t len);
/* Wait for the write-backs in flight; the first failure. */
strata_status_t fsdp_state_drain(struct strata_model *m);
void fsdp_state_free(struct strata_unit *u);

/* ---- when streamed state is read up (fetch.c) ---------------------------------- */

/* A compute position of the step (fetch.c's header numbers them): a
 * unit's forward or backward in the current micro-batch, its update after
 * the backward (clipping), or the step's end. */
typedef enum { FSDP_POS_F = 0, FSDP_POS_B, FSDP_POS_OPT, FSDP_POS_END } fsdp_pos_t;
int  fsdp_fetch_pos(const struct strata_model *m, fsdp_pos_t kind, int unit);
/* At step_begin (n_micro set): the plan of when each read of state on
 * storage is issued, made again when the step program, its plan, the
 * micro-batch count or the placement changed; then position 0's reads. A
 * no-op while nothing lives on storage. */
void fsdp_fetch_step_begin(struct strata_model *m);
/* At the start of a compute position, before its gathers: its reads. */
void fsdp_fetch_at(struct strata_model *m, fsdp_pos_t kind, int unit);
void fsdp_fetch_free(struct strata_model *m);

/* ---- the optimizer beside the backward (optq.c) ------------------------------- */

/* At commit, and after state_place=auto moved state at a plan: the
 * model's optimizer thread, where it is wanted (the option optim_overlap);
 * otherwise updates run inline. Idempotent. */
strata_status_t fsdp_optq_start(struct strata_model *m);
/* Unit u's update (fsdp_unit_update), queued to the thread, or inline. */
strata_status_t fsdp_optq_submit(struct strata_model *m, struct strata_unit *u, float scale);
/* Wait for every queued update; the first failure since the last drain. */
strata_status_t fsdp_optq_drain(struct strata_model *m);
void fsdp_optq_destroy(struct strata_model *m);
/* 1 on the cuda backend when all of unit u's state (master, gradient,
 * moments) lives off the device: then the host updates it (step.c). */
int fsdp_update_on_host(const struct strata_model *m, const struct strata_unit *u);
/* step.c: one unit's update with thr pool threads. */
strata_status_t fsdp_unit_update(struct strata_model *m, struct strata_unit *u, float scale,
                                 int thr);

/* ---- model ------------------------------------------------------------------ */

typedef struct fsdp_param {
    char     name[FSDP_NAME_LEN];
    int      ndims;
    size_t   dims[FSDP_MAX_DIMS];
    size_t   numel;
    size_t   offset;              /* first element in the unit's flat vector */
    strata_init_t init;
} fsdp_param_t;

typedef enum { GATHER_NONE = 0, GATHER_INFLIGHT, GATHER_READY } fsdp_gather_state_t;
typedef enum { GRAD_IDLE = 0, GRAD_RS, GRAD_RS_DONE, GRAD_AR, GRAD_ARRIVED,
               GRAD_STEPPED } fsdp_grad_state_t;

/* The unit's input becomes its last save (SCHED_INPUT_NAME) after its
 * forward, so the policy keeps or moves it like the others; *b keeps its
 * size and loses its block. */
strata_status_t fsdp_save_adopt(strata_unit_t *u, fsdp_buf_t *b);

typedef struct fsdp_save {
    char        name[FSDP_NAME_LEN];
    fsdp_buf_t  buf;
    int         dropped;    /* freed after the forward for recompute: a
                             * recompute pass must make it again */
    int         left;       /* went off the device (a D2H issued) this micro-batch */
    int         summed;     /* verify_transfers: sum taken as it left the device */
    uint64_t    sum;
} fsdp_save_t;

struct strata_unit {
    strata_model_t *model;
    int             index;
    char            name[FSDP_NAME_LEN];
    strata_unit_fn  forward, backward;
    void           *user_data;
    int             nparams, cap_params;
    fsdp_param_t   *params;

    /* geometry, fixed at commit */
    size_t          n, npad;      /* flat elements, padded to a multiple of S */
    size_t          shard_off, shard_len;

    /* shards: master fp32 and optimizer state (same range) */
    fsdp_buf_t      master;
    fsdp_buf_t      state[2];     /* AdamW: exp_avg, exp_avg_sq; SGD: momentum */
    fsdp_buf_t      grad_shard;   /* fp32 reduced gradient of the shard */
    /* where these live (state.c), by FSDP_SB_* index: the home tier, and
     * for a storage home whether the host copy is up and its op's event */
    strata_tier_t   home[4];
    int             sup[4];
    strata_event_t *sev[4];
    int             keep_master;  /* the backward's gather keeps it up for the optimizer */

    /* the gathered compute copy */
    fsdp_gather_state_t gstate;
    fsdp_buf_t      gathered;     /* npad elements of compute dtype */
    fsdp_buf_t      gsend;        /* compute-dtype copy of the shard (bf16 only) */
    strata_request_t *greq;

    /* full-size fp32 gradient (accumulated over micro-batches) and its reduction */
    fsdp_buf_t      grad;
    fsdp_buf_t      rs_send;      /* reduce-dtype staging of grad (16-bit only) */
    fsdp_buf_t      rs_recv;      /* reduce-dtype shard (16-bit only) */
    fsdp_grad_state_t rstate;
    strata_request_t *rreq;

    /* strata_unit_set_io: what flows in [0] and out [1]; 0 dims: undeclared */
    int             io_ndims[2];
    strata_dtype_t  io_dtype[2];
    size_t          io_dims[2][4];

    /* saved activations of the current micro-batch */
    int             nsaves, cap_saves;
    fsdp_save_t    *saves;
    int             forward_done; /* forward of the current micro-batch ran */
    /* strata_save_work: the forward's work and each save's (by position),
     * which turn the measured forward into per-save producing costs */
    double          fwd_work;
    double         *save_work;
    int             nsave_work;
    double          t_gstart, t_rstart;   /* when its all-gather / reduction started (trace) */
    uint64_t        nvtx_g, nvtx_r;       /* their NVTX ranges (base/nvtx.h), 0 when none */
    double          t_gdone, t_rdone;     /* when they were seen complete (costs) */
};

/* The straggler check's window (straggler.c): busy-time sums by section,
 * each step's busy time, the ranks already named. */
typedef struct fsdp_straggler {
    int     every, n;         /* window length (straggler_every at the first step); steps in it */
    double  sum[8];
    double *typ;              /* [every]: each step's busy seconds */
    char   *named;            /* [world size]: named once */
    double  t_prev_end;       /* when the previous step ended (0: none yet) */
    double  blocked_prev_end; /* ctx->comm_blocked_s then */
    double  blocked_step0;    /* ctx->comm_blocked_s when this step began */
} fsdp_straggler_t;

typedef enum { MODEL_BUILDING = 0, MODEL_READY, MODEL_BROKEN } fsdp_model_state_t;
typedef enum { PHASE_IDLE = 0, PHASE_STEP, PHASE_FORWARD_DONE } fsdp_phase_t;

struct strata_model {
    strata_context_t   *ctx;
    strata_model_opts_t opts;
    fsdp_model_state_t  state;
    int                 S, W;
    int                 shard_rank, replica_index, n_replicas;
    strata_group_t     *shard, *replica;
    /* cuda: device scratch kept for the model's life, blocks of the device
     * tier (tag workspace) so device_mem counts them (model.c, dev_scratch):
     * the f32 staging of the 16-bit gradient reductions the comm backend
     * asks for, per group (0 shard, 1 replica), and the gradient norm's */
    fsdp_buf_t          comm_stage[2];
    fsdp_buf_t          norm_scratch;
    int                 nunits, cap_units;
    strata_unit_t     **units;

    /* step state */
    fsdp_phase_t        phase;
    int                 n_micro, micro;     /* micro = index of the next forward */
    int                 prefetch;
    fsdp_buf_t         *acts;               /* acts[u] = unit u's input; acts[L] = output */
    fsdp_buf_t         *gacts;              /* gacts[u] = d/d acts[u] */
    void               *batch;
    int                 step_count;         /* optimizer steps (AdamW bias correction) */

    /* progress of collectives: every MPI call of the model is under lock */
    pthread_mutex_t     lock;
    pthread_cond_t      cond;
    pthread_t           progress;
    int                 progress_running, progress_stop, inflight;
    int                 self_progress;      /* a callback called strata_call_progress: no thread polls */

    /* statistics */
    double              t_step0, compute_s, exposed_s, optim_s;
    strata_model_stats_t stats;
    fsdp_straggler_t    strag;

    /* activation policies, the recorded program and its executor (exec_*.c;
     * its state is private to it: exec_impl.h) */
    struct fsdp_exec   *exec;
    int                 exec_active;        /* it runs (set by exec_step.c only) */
    int                 coll_agreed;        /* the step program and plan passed the
                                             * cross-rank check: the executor's
                                             * collectives skip the per-call one */
    /* memory (mem.c): the room hook, workspace kept between calls */
    fsdp_room_fn        room;
    int                 sizing;             /* the sizing pass runs: device overflow goes to host */
    int                 sizing_over;        /* and some did */
    size_t              sizing_ws;          /* the most workspace one call of it held */
    long                frag_spills;        /* buffers a fragmented device sent to the host tier */
    /* the static memory plan (tiers/mplan.c): the program it was recorded
     * for, bumped whenever the step program or its plan changes */
    unsigned            mplan_gen, mplan_seen;
    int                 mplan_nmicro;
    int                 mplan_placing;      /* this step places by the plan */
    long                mplan_left;         /* steps that left it (warned once) */
    fsdp_buf_t          ws_cache[FSDP_WS_CACHE];
    int                 nws_cache;
    /* training state streamed from storage (state.c): bytes fetched and
     * written, and the time the step waited for fetches, since step_begin
     * (atomic: the optimizer's thread adds to them too) */
    uint64_t            state_read, state_written, state_wait_ns;
    /* the reads' time on the storage engine and their bytes, all steps
     * (the read bandwidth a fetch plan uses where link_storage_bw is 0),
     * and the plan (fetch.c) */
    uint64_t            fetch_bytes, fetch_busy_ns;
    struct fsdp_fetch  *fetch;
    /* the optimizer beside the backward (optq.c), NULL: inline */
    struct fsdp_optq   *optq;
    int                 state_auto;         /* state_place=auto */
    /* checkpoints (ckpt.c): the save written in the background, if any */
    struct fsdp_bgsave *bgsave;
};

/* model.c: agree over all ranks (the model's lock held, as for every MPI
 * call of the model): a failure anywhere is the failure everywhere, with
 * the failing rank's message, so no rank walks into a collective that
 * another has left. Collective. */
strata_status_t fsdp_agree(strata_model_t *m, strata_status_t st);

/* ---- checkpoints written in the background (ckpt.c) ---------------------------- */

/* Between steps, while a background save is in flight: the ranks agree
 * whether it failed anywhere (then every rank returns its error) and
 * whether it is done everywhere (then its thread and staging go).
 * Collective; a no-op on every rank when none is in flight. */
strata_status_t fsdp_bgsave_poll(strata_model_t *m);
/* Wait for the save in flight, if any, and free what it held (destroy). */
void fsdp_bgsave_destroy(strata_model_t *m);
/* Before unit ui's master or optimizer state changes: wait until a
 * background save has copied them (a no-op when none is copying). */
void fsdp_bgsave_unit_ready(strata_model_t *m, int ui);

/* context.c: a context for a thread that writes checkpoints beside the
 * training loop: a copy of ctx with a duplicate of its communicator (so
 * its collectives never meet training's), its own messages, and no flight
 * recorder. Collective over ctx's ranks. */
strata_status_t fsdp_ctx_writer_create(strata_context_t *ctx, strata_context_t **w_p);
void fsdp_ctx_writer_destroy(strata_context_t *w);

/* ---- stragglers (straggler.c) ---------------------------------------------------- */

/* After a step's stats are set: add it to the window; every straggler_every
 * steps exchange the windows over the world and name a slow rank once. */
strata_status_t fsdp_straggler_step(strata_model_t *m);
void fsdp_straggler_free(fsdp_straggler_t *s);
/* Pure: slow[r] = 1 when rank r's busy[r] (summed over `steps` steps) and
 * typical[r] (its median step) are both above ratio times the median of
 * the other ranks' and above it by a floor (2 ms a step); median[r] = that
 * median of busy. 0 for every rank when W < 2. Returns how many are slow. */
int fsdp_straggler_find(const double *busy, const double *typical, int W, int steps,
                        double ratio, int *slow, double *median);

/* ---- progress (progress.c) ------------------------------------------------------- */

strata_status_t fsdp_progress_start(strata_model_t *m);
void fsdp_progress_stop(strata_model_t *m);
/* Test everything in flight once; called with m->lock held. */
strata_status_t fsdp_poll_locked(strata_model_t *m);
/* Start the all-gather of unit u unless it is gathered or in flight. */
strata_status_t fsdp_gather_start(strata_model_t *m, strata_unit_t *u);
/* Block until unit u is gathered (time counted as exposed communication). */
strata_status_t fsdp_gather_wait(strata_model_t *m, strata_unit_t *u);
void fsdp_gather_release(strata_unit_t *u);
/* Complete every all-gather still in flight (cuda: those the compute
 * stream was ordered after); the first error. */
strata_status_t fsdp_gather_settle(strata_model_t *m);
/* Wait for one collective in flight to complete (its buffers are then
 * freed): 1 when there was one (*st_p its status), else 0. */
int fsdp_progress_settle(strata_model_t *m, strata_status_t *st_p);
/* Start the reduction of unit u's gradient (last micro-batch). */
strata_status_t fsdp_reduce_start(strata_model_t *m, strata_unit_t *u);
/* Hybrid sharding: wait for u's reduce-scatter and start its allreduce
 * over the replica group (main thread, program order). No-op otherwise. */
strata_status_t fsdp_reduce_replicas(strata_model_t *m, strata_unit_t *u);
/* cuda with a 16-bit reduction: widen u's arrived shard into grad_shard
 * on the compute stream (main thread); a no-op otherwise. */
strata_status_t fsdp_grad_widen(strata_model_t *m, strata_unit_t *u);
/* Block until unit u's gradient has arrived in grad_shard. */
strata_status_t fsdp_reduce_wait(strata_model_t *m, strata_unit_t *u);
/* Wait for everything in flight (error paths, destroy). */
void fsdp_drain(strata_model_t *m);

/* ---- call (call.c) -------------------------------------------------------------- */

/* What a training forward's strata_save calls are checked against: the
 * unit's saves in the recorded step program and the bytes each asked for
 * (fsdp_exec_recorded; unit NULL while no plan is followed). */
typedef struct fsdp_recorded {
    const sched_unit_t *unit;
    const size_t       *bytes;    /* bytes[i]: what save #i of the unit asked for */
} fsdp_recorded_t;

struct strata_unit_call {
    strata_unit_t *unit;
    int            backward;      /* 0 forward, 1 backward */
    int            training;
    const fsdp_buf_t *in, *out_ro, *gout;
    fsdp_buf_t    *out;           /* forward: where strata_call_output allocates */
    fsdp_buf_t    *gin;
    int            out_calls;
    int            mode;          /* CALL_RUN, CALL_SIZING, CALL_RECOMPUTE or CALL_REGEN */
    fsdp_recorded_t rec;          /* what the saves must match */
    int            save_calls;    /* strata_save calls so far (recorded order) */
    int            nwork, cap_work;
    fsdp_buf_t    *work;
    int            nscratch, cap_scratch;
    fsdp_buf_t    *scratch;       /* CALL_REGEN: where its saves go, freed after */
    strata_status_t err;          /* first misuse seen inside the callback */
};

enum {
    CALL_RUN = 0,                 /* an ordinary forward or backward */
    CALL_SIZING,                  /* the first step's forward-only sizing pass */
    CALL_RECOMPUTE,               /* a forward re-run before the unit's backward */
    CALL_REGEN                    /* a forward re-run for its output only (the next
                                   * unit's input, recomputed): saves to scratch */
};

/* Run one callback with the guards checked afterwards. */
strata_status_t fsdp_run_callback(strata_unit_call_t *call);
void fsdp_free_saves(strata_unit_t *u);

/* ---- activation executor (exec_step.c, exec_plan.c, exec_costs.c, exec_run.c) -------
 *
 * Inactive (every hook a no-op) while every saved name is kept and no trace
 * is asked for: the step then runs exactly as without it. Otherwise the
 * first step begins with a sizing pass, the program is planned, and every
 * later forward/backward follows the schedule. Its state and what its files
 * share are in exec_impl.h, for them alone; these are its hooks.
 */
strata_status_t fsdp_exec_create(strata_model_t *m);
void fsdp_exec_destroy(strata_model_t *m);
strata_status_t fsdp_exec_step_begin(strata_model_t *m);
/* Before a training forward: the sizing pass and the plan on the first
 * step, then the state of a new micro-batch. */
strata_status_t fsdp_exec_forward_begin(strata_model_t *m, const void *input, size_t in_bytes);
/* Around each compute op: before waits for the transfers it needs (and
 * refreshes the unit's save pointers), after marks it done and issues the
 * transfers that became ready. kind: SCHED_OP_F, _RECOMPUTE, _REGEN or _B. */
strata_status_t fsdp_exec_before(strata_model_t *m, int kind, int unit);
strata_status_t fsdp_exec_after(strata_model_t *m, int kind, int unit, double t0, double t1);
strata_status_t fsdp_exec_forward_end(strata_model_t *m);
/* Recompute unit u's forward before its backward, if the plan says so. */
strata_status_t fsdp_exec_recompute(strata_model_t *m, strata_unit_t *u);
/* 1 when the plan runs unit u's forward again before B(u+1), to make the
 * next unit's input (its input recomputed); then fsdp_exec_regen does,
 * with u's parameters gathered: its saves go to scratch, its output to
 * acts[u+1]. */
int fsdp_exec_regens(const strata_model_t *m, int unit);
/* 1 when the plan keeps save `save` of unit `unit` on the device to its
 * backward (then a REGEN may write it again in place). */
int fsdp_exec_save_kept(const strata_model_t *m, int unit, int save);
strata_status_t fsdp_exec_regen(strata_model_t *m, strata_unit_t *u);
strata_status_t fsdp_exec_micro_end(strata_model_t *m);
void fsdp_exec_abort(strata_model_t *m);
strata_status_t fsdp_exec_step_end(strata_model_t *m);
/* What unit's forward saves are checked against (a call's rec): the
 * recorded program's while a schedule is followed, else empty. */
fsdp_recorded_t fsdp_exec_recorded(const strata_model_t *m, int unit);
/* The recorded step program with its costs (from step 1's sizing pass on,
 * whether or not a schedule is followed), NULL before it. */
const sched_program_t *fsdp_exec_program(const strata_model_t *m);
/* exec_check.c: every rank registered the same parameters / recorded the
 * same step program and built the same plan; else STRATA_ERR_MISMATCH on
 * every rank, naming the first unit or save that differs and the ranks. */
strata_status_t fsdp_check_registration(strata_model_t *m);
strata_status_t fsdp_check_program(strata_model_t *m);
/* Wait for schedule op id's transfer event through the flight recorder
 * (a transfer wait is an operation with a deadline). exec_rec.c. */
strata_status_t fsdp_xfer_wait(strata_model_t *m, strata_event_t *ev, int id);
/* Collective ops for the trace (comm track). */
void fsdp_exec_trace_comm(strata_model_t *m, const char *name, int unit, double t0, double t1,
                          size_t bytes);

/* ---- optimizer (optim.c) --------------------------------------------------------- */

/* fn(arg, lo, hi) over [0, n) in pieces that start on multiples of
 * `chunk`, on the calling thread and up to threads - 1 of the runtime's
 * worker threads (pool.c), every element exactly once; returns when all
 * are done. Shared by several threads, a piece is one chunk (the last may
 * be shorter); the caller alone (threads 1, n <= chunk, or the pool in use
 * by another caller) runs [0, n) as one piece. The caller starts at once
 * and waits only for chunks a worker took, so with the workers busy or
 * late it runs (nearly) all of it alone. */
void fsdp_pool_run(void (*fn)(void *arg, size_t lo, size_t hi), void *arg, size_t n, size_t chunk,
                   int threads);

/* Squared L2 norm of x, summed in fixed chunks so the result does not
 * depend on the thread count. */
double fsdp_sqnorm(const float *x, size_t n, int threads);
void fsdp_scale(float *x, size_t n, float s, int threads);
/* AdamW's per-step constants for strata_elem_adamw (strata/elem.h), computed
 * once for the host loops and the device kernel alike: step = lr/(1-b1^t),
 * rbc2 = 1/sqrt(1-b2^t), decay = 1 - lr*wd. */
typedef struct { float step, rbc2, decay; } fsdp_adamw_k;
void fsdp_adamw_consts(const strata_model_opts_t *o, int t, fsdp_adamw_k *k);
/* One optimizer step on a shard; scalars from opts, t = step number (1-based). */
void fsdp_optim_step(const strata_model_opts_t *o, int t, float *param, const float *grad,
                     float *s0, float *s1, size_t n, int threads);
int fsdp_optim_nstate(const strata_model_opts_t *o);
const char *fsdp_optim_state_name(const strata_model_opts_t *o, int i);
int fsdp_optim_threads(const strata_model_t *m);
/* The host's threads for the runtime's own loops: cfg.threads, 0 = the
 * cores this rank may run on. */
int fsdp_host_threads(const strata_context_t *ctx);
/* memcpy / memset, split over fsdp_host_threads from 1 MiB up. */
void fsdp_host_copy(const strata_context_t *ctx, void *dst, const void *src, size_t bytes);
void fsdp_host_fill(const strata_context_t *ctx, void *p, int byte, size_t bytes);

/* ---- enumeration for checkpoints (io/) --------------------------------------------- */

/*
 * Everything a checkpoint needs, read straight from the structs above:
 *   units:        m->nunits, m->units[u]->name
 *   params:       u->params[i].name / ndims / dims / numel / offset (in the flat vector)
 *   geometry:     u->n, u->npad, m->S, m->shard_rank, u->shard_off, u->shard_len,
 *                 m->replica_index (shard group index), m->n_replicas, m->shard, m->replica
 *   master shard: u->master.ptr (float[shard_len])
 *   optim state:  fsdp_optim_nstate(&m->opts) buffers u->state[i].ptr (float[shard_len]),
 *                 named fsdp_optim_state_name(&m->opts, i)
 *   scalars:      fsdp_model_scalars / fsdp_model_set_scalars
 * The functions below give the same through a stable interface.
 */
typedef struct fsdp_scalars {
    int   step;                   /* optimizer steps taken */
    float lr, beta1, beta2, eps, weight_decay, momentum;
    int   optimizer;              /* strata_optim_kind_t */
} fsdp_scalars_t;

typedef struct fsdp_geom {
    int S, W, shard_rank, replica_index, n_replicas;
    strata_group_t *shard, *replica;
} fsdp_geom_t;

void fsdp_model_geom(const strata_model_t *m, fsdp_geom_t *g);
void fsdp_model_scalars(const strata_model_t *m, fsdp_scalars_t *s);
/* Set the step count and hyper-parameters (resume). Only between steps. */
strata_status_t fsdp_model_set_scalars(strata_model_t *m, const fsdp_scalars_t *s);
/* Master shard and optimizer-state shards of unit u (float[shard_len]);
 * writable between steps (a checkpoint load writes them). */
float *fsdp_unit_master(strata_unit_t *u);
/* Parameter i's reduced gradient as the last step's optimizer used it
 * (the grad shards of every rank), numel elements. Collective. */
strata_status_t fsdp_unit_read_grad(strata_unit_t *u, int i, float *dst, size_t numel);
float *fsdp_unit_state(strata_unit_t *u, int i);     /* NULL if i out of range */

#endif
