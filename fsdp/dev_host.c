/*
 * dev_host.c - the device layer on the host backend (dev.h): the step's
 * buffers are host memory, so each call is the host code itself (memset
 * and memcpy split over threads, base/dtype.c's casts, optim.c's loops),
 * done when it returns; nothing waits and a block is freed at once.
 */
#include "config.h"
#include "dev.h"

static strata_status_t host_fill(strata_context_t *ctx, void *p, int c, size_t bytes)
{
    fsdp_host_fill(ctx, p, c, bytes);
    return STRATA_OK;
}

static strata_status_t host_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    fsdp_host_copy(ctx, dst, src, bytes);
    return STRATA_OK;
}

static strata_status_t host_cast(strata_context_t *ctx, const void *src, void *dst, size_t n,
                                 strata_dtype_t dt, int to16)
{
    (void)ctx;
    if (to16 && STRATA_BF16 == dt) strata_f32_to_bf16(src, dst, n);
    else if (to16) strata_f32_to_f16(src, dst, n);
    else if (STRATA_BF16 == dt) strata_bf16_to_f32(src, dst, n);
    else strata_f16_to_f32(src, dst, n);
    return STRATA_OK;
}

static strata_status_t host_scale(strata_context_t *ctx, float *x, size_t n, float s, int threads)
{
    (void)ctx;
    fsdp_scale(x, n, s, threads);
    return STRATA_OK;
}

static strata_status_t host_optim(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                                  float *p, const float *g, float *s0, float *s1, size_t n,
                                  int threads)
{
    (void)ctx;
    fsdp_optim_step(o, t, p, g, s0, s1, n, threads);
    return STRATA_OK;
}

static strata_status_t host_global_sqnorm(strata_model_t *m, float *total_p)
{
    (void)total_p;
    return base_error(m->ctx, STRATA_ERR_UNSUPPORTED,
                      "a device gradient norm needs the cuda backend (this context's is host)");
}

static strata_status_t host_wait(strata_context_t *ctx)
{
    (void)ctx;
    return STRATA_OK;
}

static void host_free_later(strata_context_t *ctx, fsdp_mem_t *h)
{
    (void)ctx;
    strata_block_free(h);
}

static int host_reclaim(strata_context_t *ctx, int wait)
{
    (void)ctx;
    (void)wait;
    return 0;
}

const fsdp_dev_ops_t fsdp_dev_host_ops = {
    .name = "host",
    .fill = host_fill,
    .copy = host_copy,
    .cast = host_cast,
    .scale = host_scale,
    .optim = host_optim,
    .global_sqnorm = host_global_sqnorm,
    .wait = host_wait,
    .free_later = host_free_later,
    .reclaim = host_reclaim,
};
