/*
 * dev.h - where the runtime's own arithmetic and copies on step buffers
 * run, behind an ops table chosen once when the context is made (like
 * tiers/' backends and comm/'s collectives): dev_host.c runs exactly the
 * host code of before (memset, memcpy, base/dtype.c's casts, optim.c's
 * loops); dev_cuda.c queues the same work on the compute stream
 * (ctx->compute_stream) and never waits for it, except in fsdp_dev_wait
 * at a step's end and where a result must reach the host.
 *
 * Freeing in stream order: a device buffer that work queued on the
 * compute stream may still read or write cannot go back to the tier at
 * once (the next allocation could be written by a copy engine or a
 * collective first). fsdp_buf_free therefore hands device blocks to
 * fsdp_dev_free_later, which records an event on the compute stream and
 * frees the block once it has fired; allocations reclaim the fired ones
 * first and, when the tier is full, wait for the oldest. The pending
 * releases are the context's (dev_cuda.c's state), so contexts are
 * independent.
 *
 * Calls: mem.c and the files above it call this layer; it calls only
 * tiers/ (strata_block_free), comm/ and optim.c, never mem.c.
 */
#ifndef STRATA_FSDP_DEV_H
#define STRATA_FSDP_DEV_H

#include "fsdp.h"

/* One backend of the device layer. Every function but init gets a context
 * whose init succeeded; init and cleanup may be NULL. */
typedef struct fsdp_dev_ops {
    const char *name;
    /* Devices that answer (NULL: none to count). */
    int             (*devices)(void);
    /* The compute stream (ctx->compute_stream) and the backend's state
     * (ctx->dev_state); cleanup after the tiers' (blocks still pending
     * went with them). */
    strata_status_t (*init)(strata_context_t *ctx);
    void            (*cleanup)(strata_context_t *ctx);
    strata_status_t (*fill)(strata_context_t *ctx, void *p, int c, size_t bytes);
    strata_status_t (*copy)(strata_context_t *ctx, void *dst, const void *src, size_t bytes);
    /* f32 <-> 16-bit dt (BF16 or F16): to16 rounds, else widens */
    strata_status_t (*cast)(strata_context_t *ctx, const void *src, void *dst, size_t n,
                            strata_dtype_t dt, int to16);
    strata_status_t (*scale)(strata_context_t *ctx, float *x, size_t n, float s, int threads);
    strata_status_t (*optim)(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                             float *p, const float *g, float *s0, float *s1, size_t n,
                             int threads);
    strata_status_t (*global_sqnorm)(strata_model_t *m, float *total_p);
    strata_status_t (*wait)(strata_context_t *ctx);
    /* the host may read and write what the compute stream's work queued
     * so far touches: waits for that work only, from any thread (NULL:
     * nothing to wait for) */
    strata_status_t (*host_sync)(strata_context_t *ctx);
    void            (*free_later)(strata_context_t *ctx, fsdp_mem_t *h);
    int             (*reclaim)(strata_context_t *ctx, int wait);
    /* device time of the callbacks (NULL: timed on the host) */
    int             (*time_begin)(strata_context_t *ctx);
    void            (*time_end)(strata_context_t *ctx, int slot);
    double          (*time_take)(strata_context_t *ctx, int read);
} fsdp_dev_ops_t;

extern const fsdp_dev_ops_t fsdp_dev_host_ops;
extern const fsdp_dev_ops_t fsdp_dev_cuda_ops;   /* defined in CUDA builds only */

/* 1 when this build has the backend called name ("host", "cuda"); the
 * devices of that backend that answer here (0 without one). */
int fsdp_dev_has(const char *name);
int fsdp_dev_devices(const char *name);

/* Choose the backend for ctx->backend_name ("cuda": dev_cuda.c, else the
 * host's) and set it up; fsdp_dev_cleanup undoes it (NULL-safe, once). */
strata_status_t fsdp_dev_init(strata_context_t *ctx);
void fsdp_dev_cleanup(strata_context_t *ctx);

/* 1 on the cuda backend (the compute stream exists). */
/* cuda: the bytes of the gradient norm's device scratch for m's units
 * (an accumulator, its float, one partial per 4096 elements of the
 * largest shard). */
size_t fsdp_norm_scratch_bytes(const strata_model_t *m);

static inline int fsdp_dev_on(const strata_context_t *ctx)
{
    return ctx && NULL != ctx->compute_stream;
}

/* bytes at p set to the byte value c / copied (any direction; the host
 * source of an upload may be reused when the call returns). */
strata_status_t fsdp_dev_fill(strata_context_t *ctx, void *p, int c, size_t bytes);
strata_status_t fsdp_dev_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes);
/* The host may touch what the device work queued so far touches (see
 * fsdp_dev_ops_t.host_sync; a no-op on the host backend). */
strata_status_t fsdp_dev_host_sync(strata_context_t *ctx);
/* f32 -> 16-bit (dt BF16 or F16) and back, base/dtype.c's rounding. */
strata_status_t fsdp_dev_round(strata_context_t *ctx, const float *src, void *dst, size_t n,
                               strata_dtype_t dt);
strata_status_t fsdp_dev_widen(strata_context_t *ctx, const void *src, float *dst, size_t n,
                               strata_dtype_t dt);
/* optim.c's operations where the shard lives. */
strata_status_t fsdp_dev_scale(strata_context_t *ctx, float *x, size_t n, float s, int threads);
strata_status_t fsdp_dev_optim(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                               float *p, const float *g, float *s0, float *s1, size_t n,
                               int threads);
/* The model's local squared gradient norm summed over the shard group
 * (every unit's grad_shard), into *total_p on the host. Collective over
 * the shard group. The cuda backend's only (the host backend's step sums
 * its norms itself). */
strata_status_t fsdp_dev_global_sqnorm(strata_model_t *m, float *total_p);
/* The host waits (by event, polled) for everything queued on the compute
 * stream, then frees every block whose release was pending. */
strata_status_t fsdp_dev_wait(strata_context_t *ctx);

/* Stream-ordered release of a device block (see above); h is freed now on
 * the host backend. */
void fsdp_dev_free_later(strata_context_t *ctx, fsdp_mem_t *h);
/* Free the blocks whose event has fired; with wait, wait for the oldest
 * first. 1 when something was freed. */
int  fsdp_dev_reclaim(strata_context_t *ctx, int wait);

/* The callbacks' time on the device. A callback's host time on the cuda
 * backend is its launches, not its work: time_begin and time_end bracket
 * one callback's queued work with events on the compute stream (the slot
 * time_begin returns goes to time_end; -1 on the host, where the host
 * clock is the compute time). time_take, after fsdp_dev_wait, returns the
 * seconds the bracketed work took on the device since the last take and
 * forgets it (read 0: forgets without reading, for work not waited for);
 * -1 on the host or when the events cannot be read. */
int    fsdp_dev_time_begin(strata_context_t *ctx);
void   fsdp_dev_time_end(strata_context_t *ctx, int slot);
double fsdp_dev_time_take(strata_context_t *ctx, int read);

#endif
