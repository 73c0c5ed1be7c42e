/*
 * stage_cuda.c - the staged backend's mover on the cuda backend: copies
 * between device memory and pinned host staging by cudaMemcpyAsync on a
 * stream of the group's own (highest priority and blocking, as nccl.c's:
 * it waits for work on the legacy default stream), completion by events.
 * The device is chosen as nccl.c chooses it (comm_node_device), so
 * switching backends never moves a rank to another GPU.
 */
#include "config.h"
#include "stage.h"
#include "select.h"

#include <cuda_runtime.h>
#include <stdlib.h>

typedef struct {
    int          device;
    cudaStream_t stream;
} cuda_mover_t;

static strata_status_t cuda_fail(strata_context_t *ctx, cudaError_t e, const char *what)
{
    return base_error(ctx, STRATA_ERR_CUDA, "%s failed: %s (%s)", what, cudaGetErrorString(e),
                      cudaGetErrorName(e));
}

strata_status_t comm_node_device(strata_context_t *ctx, MPI_Comm comm, int rank, int *dev_p)
{
    MPI_Comm node;
    int local = 0, ndev = 0;
    comm_lock(ctx);
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    if (MPI_SUCCESS == rc) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    comm_unlock(ctx);
    if (MPI_SUCCESS != rc) return base_mpi_error(ctx, rc, "MPI_Comm_split_type (node-local rank)");
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaGetDeviceCount");
    int dev = comm_device_for(local, ndev);
    if (dev < 0) {
        return base_error(ctx, STRATA_ERR_UNSUPPORTED, "collectives: no CUDA device for node-"
                          "local rank %d (%d devices); use backend=host", local, ndev);
    }
    *dev_p = dev;
    return STRATA_OK;
}

/* The world group picks the device and makes it current; the others use
 * the world's (comm_init recorded it in ctx->device). */
static strata_status_t cuda_init(strata_group_t *g, void **state_p)
{
    strata_context_t *ctx = g->ctx;
    cuda_mover_t *cm = calloc(1, sizeof *cm);
    if (!cm) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate staged stream state");
    strata_status_t st = g->is_world ? comm_node_device(ctx, g->comm, g->rank, &cm->device)
                                     : (cm->device = ctx->device, STRATA_OK);
    cudaError_t e = cudaSuccess;
    int least = 0, greatest = 0;
    if (STRATA_OK == st) e = cudaSetDevice(cm->device);
    if (STRATA_OK == st && cudaSuccess == e) e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (STRATA_OK == st && cudaSuccess == e)
        e = cudaStreamCreateWithPriority(&cm->stream, cudaStreamDefault, greatest);
    if (STRATA_OK == st && cudaSuccess != e) st = cuda_fail(ctx, e, "the staged group's stream");
    if (STRATA_OK != st) {
        free(cm);
        return st;
    }
    *state_p = cm;
    return STRATA_OK;
}

static void cuda_cleanup(strata_group_t *g, void *state)
{
    (void)g;
    cuda_mover_t *cm = state;
    cudaSetDevice(cm->device);
    cudaStreamSynchronize(cm->stream);
    cudaStreamDestroy(cm->stream);
    (void)cudaGetLastError();
    free(cm);
}

static strata_status_t cuda_alloc(strata_group_t *g, size_t bytes, void **p)
{
    cudaError_t e = cudaHostAlloc(p, bytes, cudaHostAllocPortable);
    if (cudaSuccess == e) return STRATA_OK;
    return base_error(g->ctx, STRATA_ERR_NOMEM, "cannot allocate %zu bytes of pinned host "
                      "staging for a staged collective: %s", bytes, cudaGetErrorString(e));
}

static void cuda_free(void *p) { cudaFreeHost(p); }

/* cudaMemcpyDefault: device, managed or pinned memory alike (unified
 * addressing); the device is current per host thread, so set it again */
static strata_status_t cuda_copy(strata_group_t *g, void *state, void *dst, const void *src,
                                 size_t bytes)
{
    cuda_mover_t *cm = state;
    cudaError_t e = cudaSetDevice(cm->device);
    if (cudaSuccess == e) e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cm->stream);
    return cudaSuccess == e ? STRATA_OK : cuda_fail(g->ctx, e, "cudaMemcpyAsync (staged collective)");
}

static strata_status_t cuda_mark(strata_group_t *g, void *state, void **mark_p)
{
    cuda_mover_t *cm = state;
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess != e) return cuda_fail(g->ctx, e, "cudaEventCreateWithFlags (staged copy)");
    e = cudaEventRecord(ev, cm->stream);
    if (cudaSuccess != e) {
        cudaEventDestroy(ev);
        return cuda_fail(g->ctx, e, "cudaEventRecord (staged copy)");
    }
    *mark_p = ev;
    return STRATA_OK;
}

static strata_status_t cuda_done(strata_group_t *g, void *state, void *mark, int *done_p)
{
    (void)state;
    cudaError_t e = cudaEventQuery((cudaEvent_t)mark);
    *done_p = cudaSuccess == e;
    if (cudaSuccess == e || cudaErrorNotReady == e) return STRATA_OK;
    return cuda_fail(g->ctx, e, "cudaEventQuery (staged copy)");
}

static void cuda_mark_free(void *mark) { cudaEventDestroy((cudaEvent_t)mark); }

/* The group's stream waits for what `stream` has queued so far. */
static strata_status_t cuda_stream_wait(strata_group_t *g, void *state, void *stream)
{
    cuda_mover_t *cm = state;
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess != e) return cuda_fail(g->ctx, e, "cudaEventCreateWithFlags (ordering)");
    e = cudaEventRecord(ev, (cudaStream_t)stream);
    if (cudaSuccess == e) e = cudaStreamWaitEvent(cm->stream, ev, 0);
    cudaEventDestroy(ev);   /* released once the wait no longer needs it */
    return cudaSuccess == e ? STRATA_OK : cuda_fail(g->ctx, e, "ordering the staged stream");
}

static strata_status_t cuda_order(strata_group_t *g, void *mark, void *stream)
{
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)mark, 0);
    return cudaSuccess == e ? STRATA_OK : cuda_fail(g->ctx, e, "ordering after a staged collective");
}

static int is_host(const void *p)
{
    struct cudaPointerAttributes a;
    if (!p) return 1;
    if (cudaSuccess != cudaPointerGetAttributes(&a, p)) {
        (void)cudaGetLastError();
        return 0;   /* the copy reports it */
    }
    return cudaMemoryTypeDevice != a.type && cudaMemoryTypeManaged != a.type;
}

static int cuda_host_buffers(const void *send, const void *recv)
{
    return is_host(send) && is_host(recv);
}

const comm_mover_t comm_mover_cuda = {
    .name         = "cudaMemcpyAsync",
    .init         = cuda_init,
    .cleanup      = cuda_cleanup,
    .host_alloc   = cuda_alloc,
    .host_free    = cuda_free,
    .copy         = cuda_copy,
    .mark         = cuda_mark,
    .done         = cuda_done,
    .mark_free    = cuda_mark_free,
    .stream_wait  = cuda_stream_wait,
    .order        = cuda_order,
    .host_buffers = cuda_host_buffers,
};

int comm_cuda_devices(void)
{
    int n = 0;
    if (cudaSuccess != cudaGetDeviceCount(&n)) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
