/*
 * thread.c - threads started on the context's device (thread.h).
 */
#include "config.h"
#include "thread.h"

#include <errno.h>
#include <stdlib.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int base_device_current(void)
{
#ifdef HAVE_CUDA
    int dev = -1;
    if (cudaSuccess == cudaGetDevice(&dev)) return dev;
    (void)cudaGetLastError();
#endif
    return -1;
}

strata_status_t base_device_select(strata_context_t *ctx)
{
    if (!ctx || ctx->device < 0) return STRATA_OK;
#ifdef HAVE_CUDA
    cudaError_t e = cudaSetDevice(ctx->device);
    if (cudaSuccess == e) return STRATA_OK;
    (void)cudaGetLastError();
    return base_error(ctx, STRATA_ERR_CUDA, "cudaSetDevice(%d) on a strata thread failed: %s; "
                      "check that the device is visible (CUDA_VISIBLE_DEVICES) and healthy "
                      "(nvidia-smi)", ctx->device, cudaGetErrorString(e));
#else
    return base_error(ctx, STRATA_ERR_UNSUPPORTED, "device %d selected in a build without "
                      "CUDA", ctx->device);
#endif
}

typedef struct {
    strata_context_t *ctx;
    void *(*fn)(void *);
    void *arg;
} start_t;

static void *thread_main(void *p)
{
    start_t s = *(start_t *)p;
    free(p);
    if (STRATA_OK != base_device_select(s.ctx))
        strata_warn(s.ctx, "starting a thread: %s", strata_last_error(s.ctx));
    return s.fn(s.arg);
}

int base_thread_create(strata_context_t *ctx, pthread_t *thread_p, void *(*fn)(void *),
                       void *arg)
{
    start_t *s = malloc(sizeof *s);
    if (!s) return ENOMEM;
    *s = (start_t){ ctx, fn, arg };
    int rc = pthread_create(thread_p, NULL, thread_main, s);
    if (rc) free(s);
    return rc;
}
