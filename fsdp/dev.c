/*
 * dev.c - the device layer's front (dev.h): the backend chosen once per
 * context, and each call handed to it.
 */
#include "config.h"
#include "dev.h"

#include <string.h>

/* The backends this build has, matched by the context's backend name. */
static const fsdp_dev_ops_t *const backends[] = {
#ifdef HAVE_CUDA
    &fsdp_dev_cuda_ops,
#endif
    &fsdp_dev_host_ops,
};

static const fsdp_dev_ops_t *find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (0 == strcmp(backends[i]->name, name)) return backends[i];
    return NULL;
}

int fsdp_dev_has(const char *name)
{
    return NULL != find(name);
}

int fsdp_dev_devices(const char *name)
{
    const fsdp_dev_ops_t *ops = find(name);
    return ops && ops->devices ? ops->devices() : 0;
}

strata_status_t fsdp_dev_init(strata_context_t *ctx)
{
    const fsdp_dev_ops_t *ops = find(ctx->backend_name);
    if (!ops)
        return base_error(ctx, STRATA_ERR_UNSUPPORTED, "backend %s: this build has no device "
                          "layer for it (configure --with-cuda)", ctx->backend_name);
    ctx->compute_stream = NULL;
    ctx->dev_state = NULL;
    strata_status_t st = ops->init ? ops->init(ctx) : STRATA_OK;
    if (STRATA_OK == st) ctx->dev_ops = ops;
    return st;
}

void fsdp_dev_cleanup(strata_context_t *ctx)
{
    if (!ctx || !ctx->dev_ops) return;
    if (ctx->dev_ops->cleanup) ctx->dev_ops->cleanup(ctx);
    ctx->dev_ops = NULL;
}

strata_status_t fsdp_dev_fill(strata_context_t *ctx, void *p, int c, size_t bytes)
{
    return ctx->dev_ops->fill(ctx, p, c, bytes);
}

strata_status_t fsdp_dev_copy(strata_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    return ctx->dev_ops->copy(ctx, dst, src, bytes);
}

strata_status_t fsdp_dev_round(strata_context_t *ctx, const float *src, void *dst, size_t n,
                               strata_dtype_t dt)
{
    /* f32 "rounds" to itself: a staging copy (state off the device) */
    if (STRATA_F32 == dt) return fsdp_dev_copy(ctx, dst, src, n * sizeof(float));
    return ctx->dev_ops->cast(ctx, src, dst, n, dt, 1);
}

strata_status_t fsdp_dev_widen(strata_context_t *ctx, const void *src, float *dst, size_t n,
                               strata_dtype_t dt)
{
    if (STRATA_F32 == dt) return fsdp_dev_copy(ctx, dst, src, n * sizeof(float));
    return ctx->dev_ops->cast(ctx, src, dst, n, dt, 0);
}

strata_status_t fsdp_dev_scale(strata_context_t *ctx, float *x, size_t n, float s, int threads)
{
    return ctx->dev_ops->scale(ctx, x, n, s, threads);
}

strata_status_t fsdp_dev_optim(strata_context_t *ctx, const strata_model_opts_t *o, int t,
                               float *p, const float *g, float *s0, float *s1, size_t n,
                               int threads)
{
    return ctx->dev_ops->optim(ctx, o, t, p, g, s0, s1, n, threads);
}

strata_status_t fsdp_dev_global_sqnorm(strata_model_t *m, float *total_p)
{
    return m->ctx->dev_ops->global_sqnorm(m, total_p);
}

strata_status_t fsdp_dev_host_sync(strata_context_t *ctx)
{
    return ctx->dev_ops->host_sync ? ctx->dev_ops->host_sync(ctx) : STRATA_OK;
}

strata_status_t fsdp_dev_wait(strata_context_t *ctx)
{
    return ctx->dev_ops->wait(ctx);
}

void fsdp_dev_free_later(strata_context_t *ctx, fsdp_mem_t *h)
{
    if (h) ctx->dev_ops->free_later(ctx, h);
}

int fsdp_dev_time_begin(strata_context_t *ctx)
{
    return ctx->dev_ops->time_begin ? ctx->dev_ops->time_begin(ctx) : -1;
}

void fsdp_dev_time_end(strata_context_t *ctx, int slot)
{
    if (slot >= 0 && ctx->dev_ops->time_end) ctx->dev_ops->time_end(ctx, slot);
}

double fsdp_dev_time_take(strata_context_t *ctx, int read)
{
    return ctx->dev_ops->time_take ? ctx->dev_ops->time_take(ctx, read) : -1;
}

int fsdp_dev_reclaim(strata_context_t *ctx, int wait)
{
    return ctx->dev_ops->reclaim(ctx, wait);
}
