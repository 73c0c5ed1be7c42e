/*
 * stage.h - the staged collective backend (staged.c) and the data movers
 * under it. A staged collective copies the device send buffer into host
 * staging, runs the MPI backend's collective on host memory, and copies
 * the result back; the request completes once the copy back has landed.
 * The device copies go through a mover, so the same state machine runs
 * on a GPU (stage_cuda.c: cudaMemcpyAsync on a stream of the group's
 * own, events) and on the host (stage_host.c: memcpy, deferred until a
 * marker is asked about, as a stream would), which is how the CPU-only
 * test suite exercises it (comm_backend=staged with backend=host).
 */
#ifndef STRATA_COMM_STAGE_H
#define STRATA_COMM_STAGE_H

#include "comm/comm.h"

typedef struct comm_mover {
    const char *name;
    /* Per group: *state_p is the mover's (a stream; a copy queue). The
     * world group's init makes the rank's device current. */
    strata_status_t (*init)(strata_group_t *g, void **state_p);
    void            (*cleanup)(strata_group_t *g, void *state);
    /* host staging the copies reach (pinned on cuda); never 0 bytes */
    strata_status_t (*host_alloc)(strata_group_t *g, size_t bytes, void **p);
    void            (*host_free)(void *p);
    /* Queue a copy of bytes from src to dst after what is queued on the
     * group's stream; nothing may be read from dst before a marker
     * queued after it is done. */
    strata_status_t (*copy)(strata_group_t *g, void *state, void *dst, const void *src,
                            size_t bytes);
    /* A marker after everything queued so far (*mark_p, never NULL). */
    strata_status_t (*mark)(strata_group_t *g, void *state, void **mark_p);
    /* *done_p = 1 once everything queued before mark has landed. */
    strata_status_t (*done)(strata_group_t *g, void *state, void *mark, int *done_p);
    void            (*mark_free)(void *mark);
    /* Optional (cuda): the group's stream waits for what `stream` has
     * queued so far; `stream` waits for mark; whether neither buffer is
     * device memory (then the collective runs on the MPI backend). */
    strata_status_t (*stream_wait)(strata_group_t *g, void *state, void *stream);
    strata_status_t (*order)(strata_group_t *g, void *mark, void *stream);
    int             (*host_buffers)(const void *send, const void *recv);
} comm_mover_t;

extern const comm_mover_t comm_mover_host;
#ifdef HAVE_CUDA
extern const comm_mover_t comm_mover_cuda;
/* The rank's CUDA device as the NCCL backend chooses it: node-local rank
 * (MPI_COMM_TYPE_SHARED over comm) modulo the visible devices. */
strata_status_t comm_node_device(strata_context_t *ctx, MPI_Comm comm, int rank, int *dev_p);
/* CUDA devices this rank sees (0 when none answers). */
int comm_cuda_devices(void);
#endif


#endif
