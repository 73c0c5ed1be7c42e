/*
 * strata/tiers.h - memory tiers, blocks, copy engines and events.
 * Included by strata.h; do not include directly.
 *
 * Three tiers form one hierarchy: DEVICE (HBM, or on the host backend an
 * arena of ordinary memory under a hard budget), PINNED_HOST and STORAGE
 * (an HDF5 spill file per rank). Each tier has a byte budget enforced at
 * allocation, and accounting per owner tag (current and peak bytes).
 *
 * A block is a span of bytes with an owner tag and a residency: the set of
 * tiers that hold a valid copy. Blocks move only through asynchronous
 * copies queued on copy engines (d2h, h2d, storage I/O), in FIFO order per
 * engine; each copy completes an event. A copy into a tier makes that
 * copy readable only once its event has completed.
 *
 * Engine order: FIFO, with one exception so that a large transfer never
 * holds back an urgent small one for its whole length: between two chunks
 * (config chunk_size) of a started copy, one copy of at most one chunk
 * queued behind it, whose dependencies are met, may run first.
 * Ops on the same block always run in issue order, across engines.
 *
 * Blocks and events belong to the context: strata_finalize cancels queued
 * copies, frees the blocks still allocated, and events must not be used
 * after it.
 */
#ifndef STRATA_TIERS_H
#define STRATA_TIERS_H

#ifndef STRATA_H
#error "include strata.h, not strata/tiers.h"
#endif

typedef enum {
    STRATA_TIER_DEVICE      = 0,
    STRATA_TIER_PINNED_HOST = 1,
    STRATA_TIER_STORAGE     = 2,
    STRATA_TIER_COUNT
} strata_tier_t;

typedef enum {
    STRATA_TAG_PARAM      = 0,
    STRATA_TAG_GRAD       = 1,
    STRATA_TAG_OPTIM      = 2,
    STRATA_TAG_ACTIVATION = 3,
    STRATA_TAG_WORKSPACE  = 4,
    STRATA_TAG_COUNT
} strata_tag_t;

/* Static strings ("unknown" for a value out of range). */
const char *strata_tier_name(strata_tier_t tier);   /* "device", "host", "storage" */
const char *strata_tag_name(strata_tag_t tag);      /* "param", "grad", ... */

typedef struct strata_block strata_block_t;
typedef struct strata_event strata_event_t;

/* Per tier accounting, in bytes. */
typedef struct {
    size_t budget;
    size_t used;                       /* allocated now (rounded to alignment) */
    size_t peak;                       /* highest 'used' since init or reset */
    size_t used_by_tag[STRATA_TAG_COUNT];
    size_t peak_by_tag[STRATA_TAG_COUNT];
    size_t largest_free;               /* largest contiguous free span */
} strata_tier_usage_t;

/* ---- blocks ------------------------------------------------------------ */

/*
 * Allocate a block of `bytes` resident in `tier` (DEVICE or PINNED_HOST;
 * STORAGE-only blocks are created by moving). 256-byte aligned. Fails with
 * STRATA_ERR_TIER_FULL (message names the tier, the request, the budget and
 * the bytes in use per tag) or STRATA_ERR_FRAGMENTED; nothing resident is
 * moved or lost by a failed allocation. bytes may be 0.
 */
strata_status_t strata_block_alloc(strata_context_t *ctx, strata_tier_t tier, size_t bytes,
                                   strata_tag_t tag, strata_block_t **blk_p);

/* Release every copy of the block, waiting for copies in flight first.
 * Always succeeds (STRATA_OK): a copy in flight that fails still completes
 * its event with its error, which strata_event_wait on that event reports;
 * the block and its pointers are gone either way. Events of the block's
 * copies stay valid until released. NULL is a no-op. */
strata_status_t strata_block_free(strata_block_t *blk);

size_t strata_block_size(const strata_block_t *blk);

/* Address of the block's copy in a memory tier (DEVICE or PINNED_HOST), or
 * NULL if that tier holds no valid copy, or a copy into it is in flight.
 * Borrowed: valid until that copy is released (a move with release_src
 * completes, strata_block_evict of the tier, strata_block_free). */
void *strata_block_ptr(const strata_block_t *blk, strata_tier_t tier);

/* Whether `tier` holds a valid copy (in-flight copies do not count). */
int strata_block_resident(const strata_block_t *blk, strata_tier_t tier);

/*
 * Queue a copy of the block into `dst` from the nearest valid copy:
 * DEVICE <-> PINNED_HOST on the d2h/h2d engines, PINNED_HOST <-> STORAGE on
 * the storage engine; DEVICE <-> STORAGE goes through PINNED_HOST (both
 * legs queued, the second after the first). Space in dst is allocated now:
 * a full tier fails here, synchronously, and leaves the block as it was.
 * With release_src every other copy of the block is freed once the copy
 * has completed (a move: only dst holds it then); otherwise all copies
 * stay valid (a copy). Moves are planned against the queued state, so a
 * prefetch may be queued right behind an offload; when dst already holds
 * (or is about to hold) the block, nothing is queued and *ev_p is the
 * event of the block's latest op (release_src is then ignored).
 * If wait_for is not NULL the copy starts only after that event completes
 * (cross-engine order; wait_for's status does not matter). A failed op
 * also fails the ops queued behind it on the same block (with its status)
 * and the block stays valid where it was.
 * *ev_p (may be NULL) receives an event completed with the copy; release
 * it with strata_event_release.
 *
 * Storage failures complete the event with: STRATA_ERR_IO (spill
 * directory not writable -- returned synchronously by the first move to
 * STORAGE --, spill file removed underneath, file system full),
 * STRATA_ERR_HDF5, STRATA_ERR_CHECKSUM (with config checksums, on
 * read-back). A spill file removed underneath refuses new spills; blocks
 * already spilled still read back through the open handle.
 */
strata_status_t strata_block_move(strata_block_t *blk, strata_tier_t dst, int release_src,
                                  strata_event_t *wait_for, strata_event_t **ev_p);

/* Drop the copy in `tier` (another valid copy must remain). Waits for
 * the block's queued ops first. */
strata_status_t strata_block_evict(strata_block_t *blk, strata_tier_t tier);

/* ---- events ------------------------------------------------------------ */

/* An event that user code completes (e.g. "compute has finished with this
 * buffer"), for wait_for above. */
strata_status_t strata_event_create(strata_context_t *ctx, strata_event_t **ev_p);
strata_status_t strata_event_complete(strata_event_t *ev);
/* *done_p = 1 when complete. */
strata_status_t strata_event_query(strata_event_t *ev, int *done_p);
/* Block until complete; returns the status of the operation (a failed copy
 * returns its error, e.g. STRATA_ERR_CHECKSUM, and the block keeps its
 * source copy). The event stays valid (and may be waited on again, with
 * the same result) until released. NULL: STRATA_ERR_INVALID. */
strata_status_t strata_event_wait(strata_event_t *ev);
/* Drop the caller's reference. It cancels nothing: a copy still in flight
 * runs to the end (its failure is then seen by no one but the copies
 * queued behind it on the same block, which fail too). The event must not
 * be used afterwards. A user event that copies wait for must be completed
 * before it is released, or they wait forever. NULL is a no-op. */
void strata_event_release(strata_event_t *ev);

/* Wait until every queued copy of every engine has completed (a copy
 * waiting on a user event that is never completed waits forever). */
strata_status_t strata_tiers_drain(strata_context_t *ctx);

/* ---- accounting -------------------------------------------------------- */

strata_status_t strata_tier_usage(const strata_context_t *ctx, strata_tier_t tier,
                                  strata_tier_usage_t *usage_p);
/* One line into buf, returned: "device 1.2 GiB/4 GiB (peak 3.1 GiB; param
 * 1 GiB, activation 200 MiB) | host ..." (truncated to len). */
const char *strata_tiers_summary(const strata_context_t *ctx, char *buf, size_t len);
/* Reset the peaks to the current use. */
void strata_tiers_reset_peaks(strata_context_t *ctx);

/* The device's memory beside the tiers (backend cuda), in bytes. The device
 * tier's region is reserved whole at strata_init, so what the device holds
 * for strata is init_used + region + nccl_after_init, and used less that
 * is memory outside every budget (the CUDA runtime's lazily loaded kernels,
 * library handles, a program's own allocations, other processes). */
typedef struct {
    size_t total;            /* the device's memory */
    size_t init_used;        /* in use when the device tier was made: the CUDA context,
                              * the world's NCCL communicator, anything else on the device */
    size_t nccl;             /* NCCL communicators' bytes, every group (in device_mem) */
    size_t nccl_after_init;  /* of those, the groups made after init (a model's shard and
                              * replica groups): reserved in the budget, real beside the region */
    size_t region;           /* the device tier's memory: device_mem less NCCL's at init */
    size_t used;             /* in use now (cudaMemGetInfo's total - free) */
} strata_device_memory_t;
/* STRATA_ERR_UNSUPPORTED on the host backend (no device to measure). */
strata_status_t strata_device_memory(const strata_context_t *ctx, strata_device_memory_t *out);

#endif
