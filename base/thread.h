/*
 * thread.h - the threads strata starts (progress, copy engines, watchdog)
 * run on the context's device. The current CUDA device is per host thread
 * and a new thread starts on device 0: its first CUDA call on a rank
 * driving another device would create a second context on GPU 0 (about
 * 0.5 GiB each) and record events there. Internal.
 */
#ifndef STRATA_BASE_THREAD_H
#define STRATA_BASE_THREAD_H

#include <pthread.h>

#include "base.h"

/* The calling thread's current CUDA device; -1 when there is none (a build
 * without CUDA, no device, or the runtime cannot say). */
int base_device_current(void);

/* Make ctx->device the calling thread's current device. STRATA_OK without
 * doing anything when the context drives no device (ctx->device < 0). */
strata_status_t base_device_select(strata_context_t *ctx);

/* pthread_create, with fn running after base_device_select(ctx) (a failure
 * there is logged as a warning, and fn's own CUDA calls then report it).
 * 0 or the error number, as pthread_create. Every thread strata starts
 * that may touch CUDA starts here. */
int base_thread_create(strata_context_t *ctx, pthread_t *thread_p, void *(*fn)(void *),
                       void *arg);

#endif
