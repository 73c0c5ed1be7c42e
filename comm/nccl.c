/*
 * nccl.c - the NCCL collective backend, chosen with the cuda backend.
 * Buffers are device memory. Every collective of a group is enqueued on
 * that group's CUDA stream and a request completes through a cudaEvent
 * recorded after it: test = cudaEventQuery, wait = polling that query
 * together with ncclCommGetAsyncError, so a failed peer ends the wait
 * with an error instead of blocking in cudaEventSynchronize forever.
 *
 * The 16-bit rule is the MPI backend's (comm.c): a bf16/f16 reduction is
 * widened to f32, reduced in f32 on the wire, and rounded once into the
 * caller's buffer. Here the widening and the rounding run on the device
 * (base/dtype_cuda.cu, bit-identical rounding to base/dtype.c) in f32
 * staging, so nothing waits on the host. The staging is the group's
 * (stage_give: a model gives its shard and replica groups a device-tier
 * block of its largest gradient reduction's need, so it counts in
 * device_mem); every use is on the group's one stream, so one area serves
 * the group's reductions in turn. A reduction it does not hold (no area
 * given: a program's own 16-bit allreduce) allocates and frees its
 * staging on the group's stream (cudaMallocAsync / cudaFreeAsync, the
 * device's default pool), outside the device tier's budget: see "Memory
 * outside the tiers" in docs/design.md.
 * reduce16=native (option) skips all that: bf16/f16 reductions run as
 * ncclBfloat16/ncclFloat16, NCCL rounding each partial sum to 16 bits
 * (docs/options.md says how that differs). The communicators' own buffers are
 * measured at their init (the drop of cudaMemGetInfo) into
 * ctx->nccl_dev_bytes, which the device tier reserves.
 * AVG is ncclAvg, which for floats multiplies every contribution by 1/n in
 * f32 and then sums: within (n + 2) f32 ulps (relative to the sum of the
 * magnitudes / n) of the MPI backend's sum/n, and the same bits when n is
 * a power of two and the summation order agrees.
 *
 * Ordering against the caller: the group's stream is a blocking stream,
 * so it waits for work issued on the legacy default stream; a caller that
 * produced a buffer on another stream must synchronise with it first.
 *
 * Device: each rank drives device (node-local rank % devices), set again
 * before every call because the current device is per host thread.
 * Communicators: one per group, bootstrapped with ncclGetUniqueId on the
 * group's rank 0 and MPI_Bcast over the group's MPI communicator, and
 * non-blocking (ncclCommInitRankConfig, blocking = 0): no NCCL call blocks
 * a thread inside the library, so a dead peer is seen by polling. Each
 * collective is one group call (ncclGroupStart/End); its ncclInProgress
 * means "not yet on the stream" (the first collectives set up connections
 * lazily), so the group call is polled until it has settled before
 * anything that must follow it (completion event, rounding, the staging's
 * release) is queued. Init and finalize are polled to the end the same way.
 * comm_nccl_async_error is what the wait loop and the watchdog poll.
 */
#include "config.h"
#include "nccl_backend.h"
#include "stage.h"
#include "base/wait.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    ncclComm_t      comm;
    cudaStream_t    stream;
    int             device;
    float          *barrier_buf;   /* one device float: barrier = allreduce(max) of it */
    float          *stage;         /* the 16-bit reductions' f32 staging, if given */
    size_t          stage_bytes;
    pthread_mutex_t lock;          /* enqueues on one communicator must not interleave */
} nccl_group_t;

/* ------------------------------------------------------------ errors --- */

static strata_status_t cuda_fail(strata_context_t *ctx, cudaError_t e, const char *what)
{
    return base_error(ctx, STRATA_ERR_CUDA, "%s failed: %s (%s)", what,
                      cudaGetErrorString(e), cudaGetErrorName(e));
}

static strata_status_t nccl_fail(strata_context_t *ctx, ncclResult_t r, ncclComm_t comm,
                                 const char *what)
{
    const char *detail = ncclGetLastError(comm);
    int has = detail && *detail;
    return base_error(ctx, STRATA_ERR_NCCL, "%s failed: %s%s%s", what, ncclGetErrorString(r),
                      has ? ": " : "", has ? detail : "");
}

/* ------------------------------------------------------------ groups --- */

/* The world group asks MPI which ranks share its node; other groups use
 * the world's device. */
static strata_status_t pick_device(strata_group_t *g, int *dev_p)
{
    strata_context_t *ctx = g->ctx;
    if (!g->is_world && ctx->world && ctx->world->backend_data) {
        *dev_p = ((nccl_group_t *)ctx->world->backend_data)->device;
        return STRATA_OK;
    }
    /* the staged backend's choice too (stage_cuda.c): one device per
     * node-local rank, modulo the devices */
    return comm_node_device(ctx, g->comm, g->rank, dev_p);
}

/* What a rank can set up alone: device, stream, barrier word, lock. */
static strata_status_t group_prepare(strata_group_t *g, nccl_group_t *ng)
{
    strata_context_t *ctx = g->ctx;
    strata_status_t st = pick_device(g, &ng->device);
    if (STRATA_OK != st) return st;
    cudaError_t e = cudaSetDevice(ng->device);
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaSetDevice");
    /* collectives gate the compute that waits for them: highest priority */
    int least = 0, greatest = 0;
    e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaDeviceGetStreamPriorityRange");
    e = cudaStreamCreateWithPriority(&ng->stream, cudaStreamDefault, greatest);
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaStreamCreateWithPriority (group stream)");
    e = cudaMalloc((void **)&ng->barrier_buf, sizeof(float));
    if (cudaSuccess == e) e = cudaMemset(ng->barrier_buf, 0, sizeof(float));
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaMalloc/cudaMemset (barrier word)");
    return STRATA_OK;
}

/* Poll a non-blocking communicator until its last operation (init,
 * finalize) is no longer in progress; its final state. */
static ncclResult_t settle(ncclComm_t comm)
{
    ncclResult_t async = ncclInProgress;
    base_waiter_t w;   /* no spinning: 50 us naps */
    base_waiter_init(&w, 0, 0, 50000, 50000);
    while (ncclInProgress == async) {
        ncclResult_t r = ncclCommGetAsyncError(comm, &async);
        if (ncclSuccess != r) return r;
        if (ncclInProgress == async) base_waiter_pause(&w);
    }
    return async;
}

static void group_free(strata_group_t *g, nccl_group_t *ng)
{
    strata_context_t *ctx = g->ctx;
    cudaSetDevice(ng->device);
    if (ng->comm) {
        /* finalize flushes outstanding work, destroy frees the resources */
        ncclResult_t r = ncclCommFinalize(ng->comm);
        if (ncclInProgress == r) r = settle(ng->comm);
        if (ncclSuccess != r) strata_warn(ctx, "ncclCommFinalize: %s", ncclGetErrorString(r));
        r = ncclCommDestroy(ng->comm);
        if (ncclSuccess != r) strata_warn(ctx, "ncclCommDestroy: %s", ncclGetErrorString(r));
    }
    if (ng->stream) {
        cudaStreamSynchronize(ng->stream);
        cudaStreamDestroy(ng->stream);
    }
    cudaFree(ng->barrier_buf);
    (void)cudaGetLastError();
    pthread_mutex_destroy(&ng->lock);
    free(ng);
}

static strata_status_t nccl_group_init(strata_group_t *g)
{
    strata_context_t *ctx = g->ctx;
    comm_nccl_boot_t boot;
    if (comm_nccl_boot(g->rank, g->size, &boot)) {
        return base_error(ctx, STRATA_ERR_INVALID, "NCCL group: rank %d of %d is not a "
                          "valid member", g->rank, g->size);
    }
    nccl_group_t *ng = calloc(1, sizeof *ng);
    if (!ng) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate NCCL group state");
    pthread_mutex_init(&ng->lock, NULL);

    /* Every rank takes part in both MPI calls below whatever happened
     * before, so one rank's failure fails the set-up everywhere instead
     * of leaving the others in ncclCommInitRank waiting for it. */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    strata_status_t st = group_prepare(g, ng);
    if (STRATA_OK == st && boot.creates_id) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (ncclSuccess != r) st = nccl_fail(ctx, r, NULL, "ncclGetUniqueId");
    }
    int local_ok = STRATA_OK == st, all_ok = 0;
    comm_lock(ctx);
    int rc = MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
    if (MPI_SUCCESS == rc) rc = MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, g->comm);
    comm_unlock(ctx);
    if (STRATA_OK == st && MPI_SUCCESS != rc)
        st = base_mpi_error(ctx, rc, "MPI_Allreduce/MPI_Bcast (NCCL unique id)");
    if (STRATA_OK == st && !all_ok) {
        st = base_error(ctx, STRATA_ERR_NCCL, "NCCL group of %d ranks: another rank failed "
                        "to set up (see its message)", g->size);
    }
    if (STRATA_OK == st) {
        /* non-blocking: NCCL calls return ncclInProgress instead of
         * blocking inside the library, so a dead peer is seen by polling
         * (comm_nccl_async_error) rather than hanging a thread */
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        /* NCCL's buffers are device memory the tiers did not allocate:
         * measured here, the device tier counts them (tiers.c) */
        size_t free0 = 0, free1 = 0, total = 0;
        int measured = cudaSuccess == cudaMemGetInfo(&free0, &total);
        ncclResult_t r = ncclCommInitRankConfig(&ng->comm, boot.nranks, id, boot.rank, &config);
        if (ncclInProgress == r) r = settle(ng->comm);
        if (ncclSuccess == r && measured && cudaSuccess == cudaMemGetInfo(&free1, &total) &&
            free1 < free0)
            ctx->nccl_dev_bytes += free0 - free1;
        (void)cudaGetLastError();
        if (ncclSuccess != r) {
            st = nccl_fail(ctx, r, ng->comm, "ncclCommInitRankConfig (non-blocking)");
            if (ng->comm) ncclCommAbort(ng->comm);
            ng->comm = NULL;
        }
    }
    if (STRATA_OK != st) {
        group_free(g, ng);
        return st;
    }
    g->backend_data = ng;
    strata_debug(ctx, "NCCL group: rank %d of %d on device %d", boot.rank, boot.nranks, ng->device);
    return STRATA_OK;
}

static void nccl_group_cleanup(strata_group_t *g)
{
    if (!g->backend_data) return;
    group_free(g, g->backend_data);
    g->backend_data = NULL;
}

/* The watchdog's abort: no NCCL kernel keeps spinning on a communicator
 * whose peer is gone, and MPI_Abort follows. Only the watchdog calls it. */
static void nccl_abort(strata_group_t *g)
{
    nccl_group_t *ng = g->backend_data;
    if (ng && ng->comm) ncclCommAbort(ng->comm);
}

/* ---------------------------------------------------------- requests --- */

static const char *const kind_name[] = {
    "allgather", "reduce_scatter", "allreduce", "broadcast", "barrier"
};

static strata_status_t check_one(strata_context_t *ctx, const void *p, coll_kind_t kind,
                                 const char *which)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (cudaSuccess != e) return cuda_fail(ctx, e, "cudaPointerGetAttributes");
    if (cudaMemoryTypeDevice == a.type || cudaMemoryTypeManaged == a.type) return STRATA_OK;
    return base_error(ctx, STRATA_ERR_INVALID, "%s: the %s buffer %p is %s memory, but the "
                      "NCCL collectives (backend cuda) take device memory; allocate it on "
                      "the device or run with backend=host", kind_name[kind], which, p,
                      cudaMemoryTypeHost == a.type ? "pinned host" : "ordinary host");
}

static strata_status_t nccl_check_buffers(strata_group_t *g, coll_kind_t kind, const void *send,
                                          const void *recv, size_t count, strata_dtype_t dtype)
{
    (void)count; (void)dtype;
    strata_status_t st = check_one(g->ctx, send, kind, "send");
    if (STRATA_OK == st && recv != send) st = check_one(g->ctx, recv, kind, "receive");
    return st;
}

/* Start a request: device current, completion event made, group locked.
 * On success the caller must call finish() exactly once. */
static strata_status_t begin(strata_group_t *g, strata_request_t *req)
{
    nccl_group_t *ng = g->backend_data;
    cudaError_t e = cudaSetDevice(ng->device);
    if (cudaSuccess != e) return cuda_fail(g->ctx, e, "cudaSetDevice");
    cudaEvent_t ev;
    e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess != e) return cuda_fail(g->ctx, e, "cudaEventCreateWithFlags");
    req->backend_data = ev;
    pthread_mutex_lock(&ng->lock);
    return STRATA_OK;
}

/* End a request started by begin(): record its event after st's work. */
static strata_status_t finish(strata_group_t *g, strata_request_t *req, strata_status_t st)
{
    nccl_group_t *ng = g->backend_data;
    if (STRATA_OK == st) {
        cudaError_t e = cudaEventRecord((cudaEvent_t)req->backend_data, ng->stream);
        if (cudaSuccess != e) st = cuda_fail(g->ctx, e, "cudaEventRecord (collective completion)");
    }
    pthread_mutex_unlock(&ng->lock);
    return st;
}

/* GROUPED(ng, call): the NCCL call inside ncclGroupStart/ncclGroupEnd (the
 * comma operator orders them). On a non-blocking communicator either may
 * answer ncclInProgress: the kernel may not be on the stream yet, so the
 * communicator is polled until the call has settled; only then is work
 * queued after it in stream order. */
static ncclResult_t group_end(ncclComm_t comm, ncclResult_t r)
{
    ncclResult_t out, end = ncclGroupEnd();
    return comm_nccl_group_pending(r, end, &out) ? settle(comm) : out;
}
#define GROUPED(ng, call) (ncclGroupStart(), group_end((ng)->comm, call))

static strata_status_t nccl_done(strata_group_t *g, strata_request_t *req, ncclResult_t r,
                                 const char *what)
{
    nccl_group_t *ng = g->backend_data;
    strata_status_t st = ncclSuccess == r ? STRATA_OK : nccl_fail(g->ctx, r, ng->comm, what);
    return finish(g, req, st);
}

static void nccl_request_release(strata_request_t *req)
{
    if (req->backend_data) cudaEventDestroy((cudaEvent_t)req->backend_data);
    req->backend_data = NULL;
}

/* ------------------------------------------------------- collectives --- */

static strata_status_t bad_dtype(strata_group_t *g, coll_kind_t kind, strata_dtype_t dtype)
{
    return base_error(g->ctx, STRATA_ERR_INVALID, "%s: dtype %d has no NCCL type",
                      kind_name[kind], (int)dtype);
}

static strata_status_t nccl_allgather(strata_group_t *g, const void *send, void *recv,
                                      size_t count, strata_dtype_t dtype, strata_request_t *req)
{
    nccl_group_t *ng = g->backend_data;
    ncclDataType_t t;
    if (comm_nccl_dtype(dtype, &t)) return bad_dtype(g, COLL_ALLGATHER, dtype);
    strata_status_t st = begin(g, req);
    if (STRATA_OK != st) return st;
    if (0 == count) return finish(g, req, STRATA_OK);
    ncclResult_t r = GROUPED(ng, ncclAllGather(send, recv, count, t, ng->comm, ng->stream));
    return nccl_done(g, req, r, "ncclAllGather");
}

static strata_status_t reduce_f32(strata_group_t *g, coll_kind_t kind, const float *send,
                                  float *recv, size_t count, strata_redop_t op,
                                  strata_request_t *req)
{
    nccl_group_t *ng = g->backend_data;
    ncclRedOp_t o;
    if (comm_nccl_op(op, &o)) {
        return base_error(g->ctx, STRATA_ERR_INVALID, "%s: reduction %d has no NCCL op",
                          kind_name[kind], (int)op);
    }
    strata_status_t st = begin(g, req);
    if (STRATA_OK != st) return st;
    if (0 == count) return finish(g, req, STRATA_OK);
    if (COLL_REDUCE_SCATTER == kind) {
        ncclResult_t r = GROUPED(ng, ncclReduceScatter(send, recv, count, ncclFloat32, o,
                                                       ng->comm, ng->stream));
        return nccl_done(g, req, r, "ncclReduceScatter");
    }
    ncclResult_t r = GROUPED(ng, ncclAllReduce(send, recv, count, ncclFloat32, o, ng->comm,
                                               ng->stream));
    return nccl_done(g, req, r, "ncclAllReduce");
}

static strata_status_t nccl_reduce_scatter(strata_group_t *g, const float *send, float *recv,
                                           size_t count, strata_redop_t op, strata_request_t *req)
{
    return reduce_f32(g, COLL_REDUCE_SCATTER, send, recv, count, op, req);
}

static strata_status_t nccl_allreduce(strata_group_t *g, const float *send, float *recv,
                                      size_t count, strata_redop_t op, strata_request_t *req)
{
    return reduce_f32(g, COLL_ALLREDUCE, send, recv, count, op, req);
}

/* The 16-bit rule on the device: widen -> f32 collective -> round, all on
 * the group's stream, staging allocated and freed in stream order. */
static strata_status_t nccl_reduce_wide(strata_group_t *g, coll_kind_t kind, const void *send,
                                        void *recv, size_t count, strata_dtype_t dtype,
                                        strata_redop_t op, strata_request_t *req)
{
    strata_context_t *ctx = g->ctx;
    nccl_group_t *ng = g->backend_data;
    const char *fn = kind_name[kind];
    ncclRedOp_t o;
    size_t bytes;
    int fmt = STRATA_BF16 == dtype ? BASE_CVT_BF16 : STRATA_F16 == dtype ? BASE_CVT_F16 : 0;
    if (!fmt) return bad_dtype(g, kind, dtype);
    if (comm_nccl_op(op, &o)) {
        return base_error(ctx, STRATA_ERR_INVALID, "%s: reduction %d has no NCCL op", fn, (int)op);
    }
    if (comm_nccl_native(dtype, ctx->cfg.reduce16)) {
        ncclDataType_t t;
        (void)comm_nccl_dtype(dtype, &t);
        strata_status_t st = begin(g, req);
        if (STRATA_OK != st) return st;
        if (0 == count) return finish(g, req, STRATA_OK);
        ncclResult_t r = COLL_REDUCE_SCATTER == kind
            ? GROUPED(ng, ncclReduceScatter(send, recv, count, t, o, ng->comm, ng->stream))
            : GROUPED(ng, ncclAllReduce(send, recv, count, t, o, ng->comm, ng->stream));
        return nccl_done(g, req, r, COLL_REDUCE_SCATTER == kind ? "ncclReduceScatter (16-bit)"
                                                                : "ncclAllReduce (16-bit)");
    }
    strata_status_t st = comm_nccl_stage_bytes(kind, count, g->size, &bytes);
    if (STRATA_OK != st) {
        return base_error(ctx, st, "%s: f32 staging for %zu elements x %d ranks does not fit "
                          "a size_t", fn, count, g->size);
    }
    st = begin(g, req);
    if (STRATA_OK != st) return st;
    if (0 == count) return finish(g, req, STRATA_OK);

    size_t in_count = COLL_REDUCE_SCATTER == kind ? count * (size_t)g->size : count;
    /* the group's area (under its lock, begin's), else the stream's pool */
    float *stage = NULL;
    int own = !ng->stage || bytes > ng->stage_bytes;
    cudaError_t e = own ? cudaMallocAsync((void **)&stage, bytes, ng->stream) : cudaSuccess;
    if (!own) stage = ng->stage;
    if (cudaSuccess != e) {
        base_error(ctx, STRATA_ERR_CUDA, "%s: cannot allocate %zu bytes of f32 device staging "
                   "for a 16-bit reduction: %s", fn, bytes, cudaGetErrorString(e));
        return finish(g, req, STRATA_ERR_CUDA);
    }
    float *out = COLL_REDUCE_SCATTER == kind ? stage + in_count : stage;
    e = base_cuda_widen(send, stage, in_count, fmt, ng->stream);
    if (cudaSuccess != e) {
        st = cuda_fail(ctx, e, "widening kernel (16-bit to f32)");
    } else {
        ncclResult_t r = COLL_REDUCE_SCATTER == kind
            ? GROUPED(ng, ncclReduceScatter(stage, out, count, ncclFloat32, o, ng->comm,
                                            ng->stream))
            : GROUPED(ng, ncclAllReduce(stage, out, count, ncclFloat32, o, ng->comm,
                                        ng->stream));
        if (ncclSuccess != r) {
            st = nccl_fail(ctx, r, ng->comm, COLL_REDUCE_SCATTER == kind ? "ncclReduceScatter"
                                                                          : "ncclAllReduce");
        } else {
            e = base_cuda_round(out, recv, count, fmt, ng->stream);
            if (cudaSuccess != e) st = cuda_fail(ctx, e, "rounding kernel (f32 to 16-bit)");
        }
    }
    /* stream-ordered: released after the work above, whatever its outcome
     * (the group's area: reused by its next reduction, after this one) */
    e = own ? cudaFreeAsync(stage, ng->stream) : cudaSuccess;
    if (STRATA_OK == st && cudaSuccess != e) st = cuda_fail(ctx, e, "cudaFreeAsync (staging)");
    return finish(g, req, st);
}

static strata_status_t nccl_broadcast(strata_group_t *g, void *buf, size_t count,
                                      strata_dtype_t dtype, int root, strata_request_t *req)
{
    nccl_group_t *ng = g->backend_data;
    ncclDataType_t t;
    if (comm_nccl_dtype(dtype, &t)) return bad_dtype(g, COLL_BROADCAST, dtype);
    strata_status_t st = begin(g, req);
    if (STRATA_OK != st) return st;
    if (0 == count) return finish(g, req, STRATA_OK);
    ncclResult_t r = GROUPED(ng, ncclBroadcast(buf, buf, count, t, root, ng->comm, ng->stream));
    return nccl_done(g, req, r, "ncclBroadcast");
}

static strata_status_t nccl_barrier(strata_group_t *g, strata_request_t *req)
{
    nccl_group_t *ng = g->backend_data;
    strata_status_t st = begin(g, req);
    if (STRATA_OK != st) return st;
    /* max of a word that stays 0: completes once every rank has reached it */
    ncclResult_t r = GROUPED(ng, ncclAllReduce(ng->barrier_buf, ng->barrier_buf, 1, ncclFloat32,
                                               ncclMax, ng->comm, ng->stream));
    return nccl_done(g, req, r, "ncclAllReduce (barrier)");
}

static strata_status_t nccl_test(strata_request_t *req, int *done_p)
{
    strata_group_t *g = req->group;
    cudaError_t e = cudaEventQuery((cudaEvent_t)req->backend_data);
    if (cudaSuccess == e) {
        *done_p = 1;
        return STRATA_OK;
    }
    if (cudaErrorNotReady != e) return cuda_fail(g->ctx, e, "cudaEventQuery (collective completion)");
    *done_p = 0;
    return comm_nccl_async_error(g);
}

strata_status_t comm_nccl_async_error(strata_group_t *g)
{
    nccl_group_t *ng = g ? g->backend_data : NULL;
    if (!ng || !ng->comm) return STRATA_OK;
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(ng->comm, &async);
    if (ncclSuccess != r) return nccl_fail(g->ctx, r, ng->comm, "ncclCommGetAsyncError");
    if (ncclSuccess != async && ncclInProgress != async) {
        return nccl_fail(g->ctx, async, ng->comm, "a collective of this group (asynchronous "
                         "error; the group's communicator cannot be used any more)");
    }
    return STRATA_OK;
}

/* As the MPI waits (comm_wait_all): spin, then sleep with back-off, so a
 * rank waiting on a long collective gives its core away. */
static strata_status_t nccl_wait(strata_request_t *req)
{
    base_waiter_t w;
    base_waiter_init(&w, req->group->ctx->cfg.spin_time, 256, 1000, 100000);
    for (;;) {
        int done = 0;
        strata_status_t st = nccl_test(req, &done);
        if (STRATA_OK != st || done) return st;
        base_waiter_pause(&w);
    }
}

static size_t nccl_stage_need(strata_group_t *g, coll_kind_t kind, size_t count,
                              strata_dtype_t dtype)
{
    size_t bytes = 0;
    if (STRATA_OK != comm_nccl_stage_need(kind, count, g->size, dtype, g->ctx->cfg.reduce16,
                                          &bytes))
        return 0;
    return bytes;
}

static void nccl_stage_give(strata_group_t *g, void *p, size_t bytes)
{
    nccl_group_t *ng = g->backend_data;
    if (!ng) return;
    pthread_mutex_lock(&ng->lock);
    ng->stage = p;
    ng->stage_bytes = p ? bytes : 0;
    pthread_mutex_unlock(&ng->lock);
}

/* ------------------------------------------------- stream ordering --- */

static int nccl_host_buffers(strata_group_t *g, const void *send, const void *recv)
{
    (void)g;
    /* the staged backend's test of the same (stage_cuda.c) */
    return comm_mover_cuda.host_buffers(send, recv);
}

/* The group's stream waits for what `stream` has queued so far. */
static strata_status_t nccl_stream_wait(strata_group_t *g, void *stream)
{
    nccl_group_t *ng = g->backend_data;
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess != e) return cuda_fail(g->ctx, e, "cudaEventCreateWithFlags (ordering)");
    e = cudaEventRecord(ev, (cudaStream_t)stream);
    pthread_mutex_lock(&ng->lock);
    if (cudaSuccess == e) e = cudaStreamWaitEvent(ng->stream, ev, 0);
    pthread_mutex_unlock(&ng->lock);
    cudaEventDestroy(ev);   /* released once the wait no longer needs it */
    return cudaSuccess == e ? STRATA_OK : cuda_fail(g->ctx, e, "ordering the comm stream");
}

/* `stream` waits for the collective's completion event. */
static strata_status_t nccl_request_order(strata_request_t *req, void *stream)
{
    if (!req->backend_data) return STRATA_OK;
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)req->backend_data, 0);
    return cudaSuccess == e ? STRATA_OK
                            : cuda_fail(req->group->ctx, e, "ordering after a collective");
}

const comm_backend_t comm_nccl_backend = {
    .name            = "nccl",
    .group_init      = nccl_group_init,
    .group_cleanup   = nccl_group_cleanup,
    .allgather       = nccl_allgather,
    .reduce_scatter  = nccl_reduce_scatter,
    .allreduce       = nccl_allreduce,
    .broadcast       = nccl_broadcast,
    .barrier         = nccl_barrier,
    .check_buffers   = nccl_check_buffers,
    .reduce_wide     = nccl_reduce_wide,
    .request_release = nccl_request_release,
    .test            = nccl_test,
    .wait            = nccl_wait,
    .abort           = nccl_abort,
    .host_buffers    = nccl_host_buffers,
    .stream_wait     = nccl_stream_wait,
    .request_order   = nccl_request_order,
    .stage_need      = nccl_stage_need,
    .stage_give      = nccl_stage_give,
};
