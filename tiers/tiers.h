/*
 * tiers.h - internal interface of the memory tiers: the arena allocator
 * (pure, testable without MPI), per-tier accounting, the backend ops table,
 * the copy engines and the block state they change.
 *
 * Locking: one mutex per context (tiers_state.lock) guards every queue,
 * block state, event and accounting record; it is released through
 * tiers_unlock, which sends the wake-ups owed. Threads that wait for events
 * sleep on tiers_state.cond, broadcast on every event completion; each
 * engine sleeps on its own condition variable, signalled only when work is
 * queued on it or, while its head op waits for a dependency, when an event
 * completes, so a completion wakes its waiters and not every engine.
 * Copies run with the lock released.
 *
 * Spinning (config spin_time, off by default; see engine.c): a thread
 * about to sleep first polls, without the lock: an idle engine polls
 * tiers_state.gen, a waiter its event's done flag. Those two words are
 * written under the lock with atomic stores and may be read with atomic
 * loads without it.
 */
#ifndef STRATA_TIERS_INTERNAL_H
#define STRATA_TIERS_INTERNAL_H

#include "base/base.h"

#include <pthread.h>
#include <xxhash.h>

#define TIERS_ALIGN 256u
/* host_mem=auto pins in pieces of at least this, each a quarter more than
 * what is pinned, so a few pieces reach any size */
#define TIERS_PIN_GRAIN ((size_t)64 << 20)
#define TIERS_PIN_PIECES 96

/* ---- accounting (pure) ------------------------------------------------- */

typedef struct {
    size_t budget;
    size_t used;
    size_t peak;
    size_t used_by_tag[STRATA_TAG_COUNT];
    size_t peak_by_tag[STRATA_TAG_COUNT];
} tier_acct_t;

void tier_acct_add(tier_acct_t *a, strata_tag_t tag, size_t bytes);
void tier_acct_sub(tier_acct_t *a, strata_tag_t tag, size_t bytes);
void tier_acct_reset_peaks(tier_acct_t *a);
/* "in use 448 MiB (activation 300 MiB, param 120 MiB, workspace 28 MiB)":
 * tags with bytes in use, largest first. */
void tier_acct_describe(const tier_acct_t *a, char *buf, size_t len);

/* Round up to TIERS_ALIGN; -1 on overflow. */
int tiers_round(size_t bytes, size_t *out);

/* limits.c: what the machine lets the host tier have (the least of the
 * cgroup memory limit, v2 then v1, MemAvailable, and RLIMIT_MEMLOCK when
 * pinned), read under root ("" = this machine); 0 when none is known.
 * *what (len bytes) names the one that decides. */
size_t tiers_host_limit(const char *root, int pinned, char *what, size_t len);
/* The bytes free to an unprivileged writer on dir's file system; 0 when
 * unknown. */
size_t tiers_storage_limit(const char *dir);
/* host_mem=auto's cap: half of the node's memory (node_mem, or MemTotal
 * under root when 0; the cgroup limit when lower) over its node_ranks
 * ranks, and RLIMIT_MEMLOCK when pinned; 0 when unknown. *what names what
 * decided. */
size_t tiers_host_auto_cap(const char *root, int pinned, int node_ranks, size_t node_mem,
                           char *what, size_t len);
/* Why the tier's budget is below its option ("" when it is not). */
const char *tiers_limit_why(const strata_context_t *ctx, strata_tier_t tier);

/* ---- arena (pure: offsets only, no memory behind them) ------------------ */

/* Best fit over an address-ordered list of spans; a freed span merges with
 * free neighbours at once, so free space is always maximal runs. */
typedef struct arena_span arena_span_t;
typedef struct mplan mplan_t;
typedef struct {
    size_t        capacity;      /* multiple of TIERS_ALIGN */
    arena_span_t *first;         /* address order */
    size_t        nspans;
    tier_acct_t   acct;          /* budget = capacity */
    mplan_t      *plan;          /* the step's memory plan, or NULL */
    size_t        top_limit;     /* workspaces take the back of the highest span below
                                  * this (host_mem=auto: what is pinned); 0: capacity */
} arena_t;

int    arena_init(arena_t *a, size_t capacity);    /* -1 on malloc failure */
void   arena_cleanup(arena_t *a);
/*
 * Allocate bytes (rounded to TIERS_ALIGN; 0 allowed and uses no space) for
 * tag. On success *off_p is the offset, *span_p the handle for arena_free.
 * Failure: STRATA_ERR_TIER_FULL when the budget would be exceeded,
 * STRATA_ERR_FRAGMENTED when enough is free in total but no span is large
 * enough; a message naming `tier_name` is written to msg.
 */
strata_status_t arena_alloc(arena_t *a, const char *tier_name, size_t bytes,
                            strata_tag_t tag, size_t *off_p, arena_span_t **span_p,
                            char *msg, size_t msglen);
/* The same with the memory plan's key (see mplan_t; 0 = program order):
 * recorded, or put at its planned offset. */
strata_status_t arena_alloc_keyed(arena_t *a, const char *tier_name, size_t bytes,
                                  strata_tag_t tag, uint64_t key, size_t *off_p,
                                  arena_span_t **span_p, char *msg, size_t msglen);
/* need bytes (a multiple of TIERS_ALIGN) at offset off, if all of it is
 * free; else STRATA_ERR_FRAGMENTED naming what holds it. */
strata_status_t arena_alloc_at(arena_t *a, const char *tier_name, size_t off, size_t need,
                               strata_tag_t tag, arena_span_t **span_p, char *msg, size_t msglen);
/* 1 when [off, off + len) is all free. */
int    arena_range_free(const arena_t *a, size_t off, size_t len);
/* The free span of at least bytes with the least room to spare: 0 and its
 * offset, or -1. */
int    arena_find_free(const arena_t *a, size_t bytes, size_t *off_p);
/* The same among the free bytes outside n sorted [from, to) pairs iv
 * (each shifted by base). */
int    arena_find_outside(const arena_t *a, size_t bytes, const size_t *iv, size_t n,
                          size_t base, size_t *off_p);
void   arena_free(arena_t *a, arena_span_t *span);
size_t arena_largest_free(const arena_t *a);
size_t arena_total_free(const arena_t *a);
/* Check the invariants (ordering, no overlap, no two adjacent free spans,
 * sums match the accounting); 0 when they hold. For tests. */
int    arena_check(const arena_t *a);

/* ---- the static memory plan of a step (mplan.c; pure) ------------------- */

/*
 * The step program is static, so the device buffers of one step come in
 * the same order, with the same sizes, every step. A RECORD step notes
 * each allocation of the arena (its key, tag, size) and the events between
 * which it lived; the packing then gives every buffer an offset such that
 * no two buffers alive at once overlap (greedy by size, best-fit gap), and
 * a PLACE step puts each buffer at its offset from a base chosen at the
 * step's start, so nothing is searched for and nothing fragments.
 *
 * Keys: 0 asks for the next key in program order (1, 2, ...); a restore
 * into the arena, whose time depends on transfers, passes its own key
 * (MPLAN_KEY_ASYNC | ...), the same every step. A buffer whose planned
 * span is still held (its previous occupant freed later than in the
 * recording) is refused with STRATA_ERR_FRAGMENTED until the caller has
 * waited for that occupant, or gives the step up (mplan_abandon): the
 * rest of that step is allocated as before, and the next step records.
 * A restore that comes before the program-order allocations the recording
 * saw before it is refused the same way (its span may still be planned
 * for one of them) until the program has caught up.
 */
#define MPLAN_KEY_ASYNC (1ull << 63)

typedef struct {
    uint64_t     key;
    strata_tag_t tag;
    size_t       size;            /* rounded */
    uint64_t     start, end;      /* alive from event start until event end */
    uint64_t     clock;           /* program-order allocations made before it */
    size_t       at;              /* where the recording step had it (SIZE_MAX: not
                                   * on the device, see tiers_plan_note_elsewhere) */
    size_t       off;             /* the plan's offset from its base */
    size_t       off_packed;      /* the packing's, should the recorded layout not fit */
} mplan_buf_t;

typedef enum { MPLAN_OFF = 0, MPLAN_RECORD, MPLAN_PLACE } mplan_mode_t;

typedef struct mplan {
    mplan_mode_t mode;
    mplan_buf_t *buf;             /* recorded; packed: sorted by key */
    size_t       n, cap;
    uint64_t     clock;           /* program-order allocations this step */
    uint64_t     ev;              /* events (allocations, frees) this step */
    int          packed;          /* buf holds a packing to place */
    int          broken;          /* this step went off the recording: record again */
    size_t       extent;          /* bytes the plan spans */
    size_t       extent_packed;   /* bytes the packing by size spans */
    int          recorded_layout; /* offsets as the recording step had them, from rec_base */
    size_t       rec_base;
    size_t      *iv;              /* the spans the plan uses: niv [from, to) pairs from its
                                   * base, sorted, merged */
    size_t       niv, span_bytes; /* and their bytes */
    size_t       live_peak;       /* most bytes alive at once in the recording */
    size_t       base;            /* the packing's place in the arena this step */
    size_t       placed;          /* buffers put at their offset this step */
    size_t       unplanned;       /* allocations of this step outside the plan */
    size_t       waits;           /* planned spans found still held (this step) */
    size_t       aside;           /* buffers put outside the plan's span instead (this step) */
    int          go_aside;        /* the next held buffer goes outside the plan's span */
    int          no_aside;        /* nothing goes there (the mplan_stuck test fault) */
    char         why[256];        /* why the last step left the plan, or "" */
} mplan_t;

/* Give every buffer an offset (greedy, best-fit gap), the largest first,
 * or in_order, in the order of their starts; returns the extent (0 for
 * none), or (size_t)-1 when out of memory. */
size_t mplan_pack(mplan_buf_t *buf, size_t n, int in_order);
/* 0 when no two buffers alive at once overlap; else the first clash's
 * index + 1 (for tests). */
size_t mplan_check(const mplan_buf_t *buf, size_t n);
/* The most bytes alive at once. */
size_t mplan_live_peak(const mplan_buf_t *buf, size_t n);
/* Recording: a buffer allocated / freed (slot is the index + 1 of the
 * record, kept on the span). 0, or -1 out of memory (the plan breaks). */
int  mplan_note_alloc(mplan_t *p, uint64_t key, strata_tag_t tag, size_t size, uint64_t clock,
                      size_t at, size_t *slot_p);
void mplan_note_free(mplan_t *p, size_t slot);
/* End of a recorded step: buffers never freed live to its end; the plan
 * is where the recording step had each buffer (as its best-fit allocator
 * laid them out: the spans a step frees are the next it fills, so its
 * buffers stay in the caches), with a packing by size beside it for when
 * that layout does not fit (mplan_use_packing) or a buffer of the
 * recording was not on the device; sorted by key. 0, or -1 (nothing to
 * place next step). */
int  mplan_finish(mplan_t *p);
/* From now on the packing by size. */
void mplan_use_packing(mplan_t *p);
/* The record of key in a packed plan, or NULL. */
const mplan_buf_t *mplan_find(const mplan_t *p, uint64_t key);
/* Leave the plan for the rest of this step; the next step records. */
void mplan_abandon(mplan_t *p, const char *why);
void mplan_clear(mplan_t *p);

/* Storage budget check with the same wording as the arenas. */
strata_status_t tier_acct_reserve(tier_acct_t *a, const char *tier_name, size_t bytes,
                                  strata_tag_t tag, char *msg, size_t msglen);

/* ---- backend ------------------------------------------------------------ */

typedef enum { ENG_D2H = 0, ENG_H2D = 1, ENG_IO = 2, ENG_COUNT } tiers_engine_kind_t;

struct tiers_state;

/* A backend provides the memory of the two memory tiers and the copies
 * between them (Open MPI style ops table). */
typedef struct tiers_backend {
    const char *name;
    /* Reserve capacity bytes for a memory tier; *base_p never NULL on OK. */
    strata_status_t (*region_create)(struct tiers_state *ts, strata_tier_t tier,
                                     size_t capacity, void **base_p);
    void            (*region_destroy)(struct tiers_state *ts, strata_tier_t tier,
                                      void *base, size_t capacity);
    /* host_mem=auto: the pinned-host region is address space from
     * region_create; this pins [base + from, base + from + len) as the
     * blocks first reach it (tiers_pin_reach). A message in msg on failure. */
    strata_status_t (*region_grow)(struct tiers_state *ts, void *base, size_t from, size_t len,
                                   char *msg, size_t msglen);
    /* Per engine thread set-up (cuda: a stream). */
    strata_status_t (*engine_init)(struct tiers_state *ts, int engine, void **data_p);
    void            (*engine_cleanup)(struct tiers_state *ts, int engine, void *data);
    /* One chunk between DEVICE and PINNED_HOST, on the engine's thread. */
    strata_status_t (*copy)(struct tiers_state *ts, int engine, void *data,
                            void *dst, const void *src, size_t n);
    /* When not NULL: copy only queues its chunk (ordered on the engine's
     * stream by an event), and drain returns once every chunk queued on
     * this engine has landed; the engine calls it before an op completes. */
    strata_status_t (*drain)(struct tiers_state *ts, int engine, void *data);
    /* copy may run on any thread: strata_event_wait may then run an
     * unstarted copy itself (config wait_copies) */
    int              any_thread_copy;
    /* Optional (cuda). Stream-ordered producers: mark records an event on a
     * producer's stream (*mark_p, NULL when there is nothing to order);
     * order makes the engine's stream wait for it before an op's first
     * chunk; forget releases a mark (after order, or an op never run). */
    strata_status_t (*mark)(struct tiers_state *ts, void *stream, void **mark_p);
    strata_status_t (*order)(struct tiers_state *ts, int engine, void *data, void *mark);
    void             (*forget)(void *mark);
    /* Optional: copy for one chunk of a transfer of total bytes (the host
     * backend stores past the cache when total cannot stay in it, as
     * memcpy does for one large call); NULL: copy. */
    strata_status_t (*copy_part)(struct tiers_state *ts, int engine, void *data, void *dst,
                                 const void *src, size_t n, size_t total);
} tiers_backend_t;

extern const tiers_backend_t tiers_host_backend;

/* What lives on the device outside the device tier's budget once NCCL,
 * cuBLAS's workspace and the f32 staging are inside it: the CUDA
 * runtime's own allocations (kernel modules, library handles, the small
 * stream-ordered scratch of the gradient norm), which want this much left
 * free once the tier is reserved. */
#define TIERS_DEVICE_HEADROOM ((size_t)1 << 30)

/* cuda init, before the device tier's region: free_b of total_b bytes are
 * free (the context and NCCL's nccl bytes taken). The region is budget
 * less nccl (the arena reserves NCCL's bytes, tiers.c). -1 when it does
 * not fit, with a message naming the figures and the device_mem to use;
 * 1 when it fits leaving less than TIERS_DEVICE_HEADROOM (a warning);
 * else 0. msg holds the figures either way. */
int tiers_device_fit(size_t free_b, size_t total_b, size_t nccl, size_t budget, char *msg,
                     size_t len);
#ifdef HAVE_CUDA
extern const tiers_backend_t tiers_cuda_backend;
/* cudaMemGetInfo's total - free on the context's device (cuda.c). */
strata_status_t tiers_cuda_used(struct tiers_state *ts, size_t *used_p);
/* The block's next move starts on its copy engine only after the work
 * queued so far on `stream` (cuda: a cudaStream_t producing the block's
 * data), ordered by an event, not by a host wait. No-op on the host
 * backend and with a NULL stream. */
strata_status_t tiers_block_after(strata_block_t *blk, void *stream);

#endif

/* ---- the step's memory plan (tiers.c; see mplan_t) --------------------- */

/* Step `step` (1-based) of model `owner` begins (a plan recorded for
 * another model of the context is dropped): place by the packing when there is one and a free span
 * of the arena holds it, else record. *placing_p: 1 when placing. */
void tiers_plan_step_begin(strata_context_t *ctx, const void *owner, int step, int *placing_p);
/* The step ended: a recording is packed for the next step. */
void tiers_plan_step_end(strata_context_t *ctx);
/* The step program changed (or the step failed): nothing to place, and
 * the next step records. */
void tiers_plan_forget(strata_context_t *ctx);
/* A planned span stays held by what could not be waited for: the buffer
 * that asked for it goes outside the plan's span (where the device has
 * room; else the rest of the step leaves the plan). 1 when placing (try
 * the allocation again). */
int  tiers_plan_aside(strata_context_t *ctx);
/* 1 while this step places by the plan. */
int  tiers_plan_placing(const strata_context_t *ctx);
/* Recording: a buffer of the step went elsewhere than the device (the
 * pinned-host tier, the device being fragmented); it keeps its place in
 * program order, and the plan is a packing. */
void tiers_plan_note_elsewhere(strata_context_t *ctx, strata_tag_t tag, size_t bytes);
/* The key of blk's next device space (a restore whose time varies). */
void tiers_block_plan_key(strata_block_t *blk, uint64_t key);
typedef struct {
    int    packed;
    size_t buffers, extent, live_peak, placed, unplanned, waits, aside;   /* extent: the
                                   * bytes of the spans the plan uses */
    int    recorded_layout;
    char   why[256];
} tiers_plan_stats_t;
void tiers_plan_stats(const strata_context_t *ctx, tiers_plan_stats_t *st);

/* ---- events, ops, engines ---------------------------------------------- */

struct strata_event {
    struct tiers_state *ts;
    int              refs;
    int              done;            /* atomic store under the lock */
    struct tiers_op *op;              /* the queued op that completes it, until it does */
    strata_status_t  status;
    double           t_start, t_end;  /* base_now() when its op started / completed */
};

typedef struct tiers_op {
    struct tiers_op  *next;
    strata_block_t   *blk;
    strata_tier_t     src, dst;
    unsigned          release_mask;   /* tiers freed when this op succeeds */
    int               nocopy;         /* dst already holds the data */
    strata_event_t   *prev;           /* the block's previous op: a failure propagates */
    strata_event_t   *wait_for;       /* ordering only */
    strata_event_t   *ev;             /* completed with this op */
    void             *after;          /* backend mark its first chunk waits for (cuda) */
    size_t            done;           /* bytes copied so far */
    int               started;
    uint64_t          nvtx;           /* its NVTX range while it runs (base/nvtx.h) */
    int               helped;         /* run by a thread in strata_event_wait, not the engine */
    double            t_queued;       /* base_now() when enqueued */
    XXH3_state_t     *hash;
    size_t            piece;          /* storage read: size of the next pread (0: first) */
    struct spill_ds  *ds;             /* storage write: the dataset chosen */
} tiers_op_t;

typedef struct tiers_engine {
    struct tiers_state *ts;
    int              kind;            /* tiers_engine_kind_t */
    const char      *name;
    pthread_t        thread;
    pthread_cond_t   cond;            /* the engine sleeps here */
    int              asleep;
    int              running;
    tiers_op_t      *head, *tail;
    double           bw;              /* link model: bytes/s, 0 = unpaced */
    double           latency;
    double           link_free;       /* monotonic time the modelled link is idle again */
    int              overtook;        /* last chunk went to a small op behind the head */
    void            *backend_data;
} tiers_engine_t;

/* ---- storage tier (policy here, format in io/) ------------------------- */

/* A dataset of the spill file, reused by any block that fits. */
typedef struct spill_ds {
    struct spill_ds *next;            /* free list */
    struct spill_ds *all_next;        /* every dataset of the file */
    size_t           capacity;
    uint64_t         offset;          /* byte offset of its raw data in the file */
    uint64_t         checksum;        /* of the block last written into it */
    int              summed;          /* checksum is set */
} spill_ds_t;

struct spill_file;

/* ---- blocks ------------------------------------------------------------- */

typedef struct {
    int            has_space;
    arena_span_t  *span;              /* memory tiers */
    void          *ptr;
    spill_ds_t    *ds;                /* storage: dataset once written */
    tiers_op_t    *releasing_op;      /* pending op that frees this space */
} tiers_slot_t;

struct strata_block {
    struct tiers_state *ts;
    strata_block_t *prev_blk, *next_blk;    /* every live block of the context */
    size_t          bytes;
    size_t          rounded;
    strata_tag_t    tag;
    unsigned        valid;            /* tiers holding a readable copy now */
    unsigned        lres;             /* tiers holding it once every queued op is done */
    tiers_slot_t    slot[STRATA_TIER_COUNT];
    strata_event_t *last_ev;          /* the block's latest queued op */
    void           *after;            /* mark the next queued op takes (tiers_block_after) */
    uint64_t        plan_key;         /* the memory plan's key of its next device space */
    int             pending;          /* queued ops not yet completed */
    int             failed;           /* an op of the current chain failed */
};

/* ---- the context's tiers ------------------------------------------------ */

typedef struct tiers_state {
    strata_context_t       *ctx;
    const tiers_backend_t  *be;
    int                     device;           /* cuda: the rank's device (engine threads set it) */
    pthread_mutex_t         lock;
    pthread_cond_t          cond;             /* event waiters */
    int                     wake_waiters;     /* wake-ups owed once the lock is released */
    unsigned                wake_engines;     /* bit per engine */
    unsigned                gen;              /* bumped by every enqueue and completion */
    double                  spin;             /* seconds to poll before sleeping */
    int                     wait_copies;      /* waiters run unstarted copies themselves */
    int                     wait_storage;     /* ... and storage ops that need no HDF5 call */
    unsigned long           helped_storage;   /* storage ops run by waiters (for tests) */
    size_t                  chunk;
    int                     checksums;
    int                     spill_fsync;
    /* memory tiers */
    void                   *base[2];
    size_t                  capacity[2];
    arena_t                 arena[2];
    mplan_t                 mplan;             /* the device arena's step plan */
    const void             *mplan_owner;       /* the model it was recorded for */
    arena_span_t           *mplan_hold;        /* the mplan_hold test fault's span */
    int                     pinned_locked;
    /* host_mem=auto: the region is pinned in pieces up to `pinned` bytes */
    int                     host_auto;
    size_t                  pinned;
    size_t                  pin_off[TIERS_PIN_PIECES], pin_len[TIERS_PIN_PIECES];
    int                     npin;
    /* cuda: the device as init found it (tiers_init, before the device
     * tier): bytes in use (the context, NCCL, anyone else), NCCL's share
     * (measured around its communicators' init), total */
    size_t                  dev_init_used, dev_nccl, dev_total;
    size_t                  dev_nccl_init, dev_region;   /* NCCL's at init; the region */
    arena_span_t           *nccl_span;         /* NCCL's bytes, reserved in the device arena */
    char                    host_why[320];     /* what lowered the host budget, or "" */
    char                    storage_why[320];  /* the same for storage */
    /* storage */
    tier_acct_t             storage_acct;
    struct spill_file      *spill;            /* NULL until the first spill */
    int                     spill_error_said; /* a failed spill write was logged (once) */
    spill_ds_t             *ds_free;          /* free datasets */
    spill_ds_t             *ds_all;
    int                     spill_open;       /* the HDF5 file is created and open */
    int                     warned_unlinked;
    /* engines */
    tiers_engine_t          eng[ENG_COUNT];
    int                     shutdown;
    size_t                  outstanding;      /* ops queued and not completed */
    strata_block_t         *blocks;
    char                    summary[512];
} tiers_state_t;

/* host_mem=auto: pin the pinned-host region as far as end (lock held);
 * a message naming host_mem when the machine refuses. */
strata_status_t tiers_pin_reach(tiers_state_t *ts, size_t end, char *msg, size_t len);

/* Communicators made after init (a model's shard and replica groups)
 * took ctx->nccl_dev_bytes beyond what the device arena reserves: those
 * bytes are taken from it too (a workspace span kept to finalize), so the
 * budget and the admission (the bytes in use when a program is recorded)
 * count them. The region was sized at init: this memory is real on top
 * of it, which the device-check's slack names. */
strata_status_t tiers_count_nccl(strata_context_t *ctx);

/* Context hooks (fsdp/context.c). */
strata_status_t tiers_init(strata_context_t *ctx);
void tiers_cleanup(strata_context_t *ctx);
/* strata_abandon: the spill directory removed at once, nothing waited for. */
void tiers_abandon(strata_context_t *ctx);

/* engine.c */
/* Release ts->lock, then send the wake-ups decided while it was held: a
 * thread woken while the lock is still held blocks on it at once and needs
 * a second wake-up (measured: a hand-off costs 3.6 us this way, 8 us the
 * other). Every unlock of ts->lock goes through here. */
void tiers_unlock(tiers_state_t *ts);
/* pthread_cond_wait on ts->lock, after sending owed wake-ups (in which
 * case it returns at once, as a spurious wake-up: callers loop). */
void tiers_cond_wait(tiers_state_t *ts, pthread_cond_t *cond);
strata_status_t tiers_engines_start(tiers_state_t *ts);
void tiers_engines_stop(tiers_state_t *ts);          /* cancel queued ops, join */
void tiers_enqueue(tiers_state_t *ts, int engine, tiers_op_t *op);   /* lock held */
strata_event_t *tiers_event_new(tiers_state_t *ts);                  /* refs = 1 */
void tiers_event_complete_locked(strata_event_t *ev, strata_status_t st);
void tiers_event_unref_locked(strata_event_t *ev);
double tiers_link_time(double bytes, double bw, double latency);     /* pure */
/* When the event's op started and completed (base_now(); 0 when not yet):
 * the busy time of a copy, for the runtime's transfer statistics. */
void tiers_event_times(strata_event_t *ev, double *start_p, double *end_p);

/* block.c: op completion under the lock (engine.c calls it). */
void tiers_op_finish_locked(tiers_state_t *ts, tiers_op_t *op, strata_status_t st);
void tiers_block_free_space_locked(strata_block_t *blk, strata_tier_t tier);
void tiers_block_destroy_locked(strata_block_t *blk);

/*
 * storage.c: a storage op is start, chunks, finish. start may call HDF5
 * (create the file, a dataset: io_spill_open/_dataset, which take the
 * process's HDF5 lock, see io/io.h) and runs on the I/O thread. An op for which
 * tiers_storage_no_hdf5_locked says 1 (the file is open and the block has
 * a dataset, or a free one was just given to it) needs no HDF5 call: any
 * thread may run it with begin instead of start, then chunks and finish,
 * which are pwrite/pread at the dataset's offset, XXH3 and fdatasync.
 */
strata_status_t tiers_storage_start(tiers_state_t *ts, tiers_op_t *op);
int tiers_storage_no_hdf5_locked(tiers_state_t *ts, tiers_op_t *op);
strata_status_t tiers_storage_begin(tiers_state_t *ts, tiers_op_t *op);
strata_status_t tiers_storage_chunk(tiers_state_t *ts, tiers_op_t *op, size_t off, size_t n);
strata_status_t tiers_storage_finish(tiers_state_t *ts, tiers_op_t *op);
strata_status_t tiers_storage_prepare(tiers_state_t *ts);  /* caller thread: private dir */
void tiers_storage_cleanup(tiers_state_t *ts);             /* after the engines stopped */

/* For tests and the benchmark: the spill file's path ("" before the first
 * spill) and the file offset of a block's storage copy. */
strata_status_t tiers_spill_path(strata_context_t *ctx, char *buf, size_t len);
strata_status_t tiers_storage_offset(strata_block_t *blk, uint64_t *offset_p);

/* A block whose only copy is on the storage tier, its bytes mapped into
 * memory where they lie in the spill file (mmap, shared): reading them
 * streams from the file through the page cache, with no copy in a memory
 * tier (checkpoints of state that lives on storage). Writable: what is
 * written lands in the spill file, and the unmap sums the block anew
 * (checksums). Between the two no op may be queued on the block. */
strata_status_t tiers_storage_map(strata_block_t *blk, int writable, void **ptr_p);
strata_status_t tiers_storage_unmap(strata_block_t *blk, void *ptr, int written);
/* fdatasync the spill file after every spill (default off: the storage
 * tier is scratch space; the benchmark measures both). */
void tiers_set_spill_fsync(strata_context_t *ctx, int on);

/* The block's next move starts on its copy engine only after the work
 * queued so far on `stream` (cuda: a cudaStream_t producing the block's
 * data), ordered by an event, not by a host wait. No-op on the host
 * backend and with a NULL stream. */
strata_status_t tiers_block_after(strata_block_t *blk, void *stream);

#endif
