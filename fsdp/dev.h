/*
 * dev.h - where the runtime's own arithmetic and copies on step buffers
 * run: on the host backend exactly the host code of before (memset, memcpy,
 * base/dtype.c's casts, optim.c's loops), on the cuda backend queued on the
 * compute stream (ctx->compute_stream) and never waited for, except by
 * fsdp_dev_wait at a step's end and where a result must reach the host.
 *
 * Freeing in stream order: a device buffer that work queued on the
 * compute stream may still read or write cannot go back to the tier at
 * once (the next allocation could be written by a copy engine or a
 * collective first). fsdp_buf_free therefore hands device blocks to
 * fsdp_dev_free_later, which records an event on the compute stream and
 * frees the block once it has fired; allocations reclaim the fired ones
 * first and, when the tier is full, wait for the oldest.
 */
#ifndef STRATA_FSDP_DEV_H
#define STRATA_FSDP_DEV_H

#include "fsdp.h"

/* 1 on the cuda backend (the compute stream exists). */
static inline int fsdp_dev_on(const strata_context_t *ctx)
{
    return ctx && NULL != ctx->compute_stream;
}

/* bytes at p set to the byte value c / copied (any direction; the host
 * source of an upload may be reused when the call returns). */
strata_status_t fsdp_dev_fill(strata_context_t *ctx, void *p, int c, size_t bytes);
strata_status_t fsdp_dev_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes);
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
 * the shard group. */
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

#endif
