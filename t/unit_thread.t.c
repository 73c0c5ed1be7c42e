/*
 * unit_thread.t.c - threads strata starts run on the context's device
 * (base/thread.h): the function runs with its argument and its result
 * comes back through pthread_join; a context without a device selects
 * nothing; with a device, the new thread's current device is the
 * context's (on a machine with GPUs), or selecting it fails with a
 * message that says what to check (a CUDA build without a GPU).
 */
#include "config.h"
#include "base/base.h"
#include "base/thread.h"
#include "fsdp/dev.h"
#include "t/tap.h"

#include <stdlib.h>
#include <string.h>

static void *echo(void *arg)
{
    return arg;
}

static void *device_seen(void *arg)
{
    *(int *)arg = base_device_current();
    return NULL;
}

static strata_context_t *context(int device)
{
    strata_context_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) bail_out("calloc");
    pthread_mutex_init(&ctx->err_lock, NULL);
    ctx->device = device;
    return ctx;
}

static void test_runs(void)
{
    strata_context_t *ctx = context(-1);
    int token = 42;
    pthread_t t;
    void *ret = NULL;
    ok(0 == base_thread_create(ctx, &t, echo, &token) && 0 == pthread_join(t, &ret) &&
       &token == ret, "the thread runs fn(arg) and its result comes back through join");
    ok(STRATA_OK == base_device_select(ctx) && '\0' == ctx->errmsg[0],
       "no device: selecting is a no-op");
    free(ctx);
}

static void test_device(void)
{
    int ndev = fsdp_dev_has("cuda") ? fsdp_dev_devices("cuda") : 0;
    strata_context_t *ctx = context(ndev > 0 ? ndev - 1 : 0);
    if (ndev > 0) {
        int seen = -2;
        pthread_t t;
        ok(0 == base_thread_create(ctx, &t, device_seen, &seen) && 0 == pthread_join(t, NULL) &&
           ndev - 1 == seen, "a new thread's current device is the context's (%d of %d)",
           ndev - 1, ndev);
        ok(STRATA_OK == base_device_select(ctx) && ndev - 1 == base_device_current(),
           "selecting on this thread makes it current");
    } else {
        strata_status_t st = base_device_select(ctx);
        ok(STRATA_OK != st, "no CUDA device: selecting device 0 fails (%s)",
           strata_strerror(st));
        ok(fsdp_dev_has("cuda") ? NULL != strstr(ctx->errmsg, "nvidia-smi")
                                : NULL != strstr(ctx->errmsg, "without CUDA"),
           "the message says what to check: %s", ctx->errmsg);
    }
    free(ctx);
}

int main(void)
{
    plan(4);
    test_runs();
    test_device();
    return done_testing();
}
