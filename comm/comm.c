/*
 * comm.c - the public collectives: argument checks, the cross-rank
 * agreement check, the 16-bit rule (widen to f32, reduce, round once) and
 * request completion. Backends only move bytes and sum f32, except that
 * a backend whose buffers the host cannot read (NCCL: device memory)
 * applies the same 16-bit rule itself through its reduce_wide op.
 */
#include "config.h"
#include "comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_name[] = {
    "allgather", "reduce_scatter", "allreduce", "broadcast", "barrier"
};

/* Local argument checks. Returns STRATA_OK or an error recorded on ctx. */
static strata_status_t check_args(strata_group_t *g, coll_kind_t kind, const void *send,
                                  const void *recv, size_t count, strata_dtype_t dtype,
                                  strata_redop_t op, int root)
{
    strata_context_t *ctx = g->ctx;
    const char *fn = coll_name[kind];
    size_t esz = strata_dtype_size(dtype);
    size_t total;

    if (COLL_BARRIER == kind) return STRATA_OK;
    if (0 == esz) {
        return base_error(ctx, STRATA_ERR_INVALID, "%s: invalid dtype %d (use STRATA_F32, "
                          "STRATA_BF16 or STRATA_F16)", fn, (int)dtype);
    }
    if ((COLL_REDUCE_SCATTER == kind || COLL_ALLREDUCE == kind) &&
        ((int)op < 0 || op >= STRATA_REDOP_COUNT)) {
        return base_error(ctx, STRATA_ERR_INVALID, "%s: invalid reduction %d (use STRATA_SUM "
                          "or STRATA_AVG)", fn, (int)op);
    }
    if (COLL_BROADCAST == kind && (root < 0 || root >= g->size)) {
        return base_error(ctx, STRATA_ERR_INVALID, "broadcast: root %d outside the group "
                          "of %d ranks", root, g->size);
    }
    /* every buffer's byte size must be representable, and each count must
     * fit MPI's int; the larger of the two buffers is size*count elements */
    if (strata_mul_size(count, (size_t)g->size, &total) || strata_mul_size(total, esz, &total)) {
        return base_error(ctx, STRATA_ERR_OVERFLOW, "%s: %zu elements x %d ranks x %zu bytes "
                          "overflows size_t", fn, count, g->size, esz);
    }
    if (count > INT_MAX) {
        return base_error(ctx, STRATA_ERR_OVERFLOW, "%s: count %zu exceeds the MPI limit of "
                          "%d elements per rank; split the buffer into smaller collectives",
                          fn, count, INT_MAX);
    }
    if (count > 0 && (!send || !recv)) {
        return base_error(ctx, STRATA_ERR_INVALID, "%s: %s buffer is NULL with count %zu",
                          fn, !send ? "send" : "receive", count);
    }
    return STRATA_OK;
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/*
 * With comm_check on, every rank contributes its signature (operation,
 * dtype, count, op, root) and whether its own arguments were valid to one
 * small allreduce, so a rank with bad arguments, or ranks that disagree,
 * make every rank return an error instead of some entering a collective
 * that would never complete.
 */
/* BASE_CHECK_SPIN_S: how long the check before a collective spins before
 * it sleeps. The
 * peers of a check arrive up to a few hundred microseconds apart; a
 * sleeping checker wakes up to 100 us late, and its peer, which needs it
 * for the next round of the all-reduce, goes to sleep meanwhile. That
 * made 2-rank all-gathers of 4-16 MiB 10-23% slower than MPI_Allgather
 * (bench/run comm), and, before the nonblocking starts of a training
 * step spun too, 2-rank train_gpt steps 2-10% longer (8 layers, dim 256)
 * and 25-35% longer (the 4-layer example at seq 16). A stalled peer
 * still leaves the checker asleep after this. With more ranks on the
 * node than CPUs it does not spin: there the spinning rank would hold
 * the core its late peer needs. */

static strata_status_t agree(strata_group_t *g, coll_kind_t kind, size_t count,
                             strata_dtype_t dtype, strata_redop_t op, int root,
                             strata_status_t local)
{
    strata_context_t *ctx = g->ctx;
    if (!ctx->cfg.comm_check) return local;
    uint64_t sig = mix64(mix64(mix64(mix64(mix64(0, kind), dtype), count),
                               COLL_ALLGATHER == kind || COLL_BROADCAST == kind ? 0 : op),
                         COLL_BROADCAST == kind ? (uint64_t)root : 0);
    long long v[3] = { (long long)(sig >> 1), -(long long)(sig >> 1), STRATA_OK != local };
    long long r[3];
    MPI_Request mr = MPI_REQUEST_NULL;
    rec_op_t rop = comm_rec_begin(ctx, g, REC_CHECK, sizeof v, STRATA_F32);
    comm_lock(ctx);
    int rc = MPI_Iallreduce(v, r, 3, MPI_LONG_LONG, MPI_MAX, g->comm, &mr);
    comm_unlock(ctx);
    comm_rec_waiting(ctx, rop);
    double t0 = base_now();
    strata_status_t cst = MPI_SUCCESS == rc
        ? comm_wait_spin(ctx, &mr, "MPI_Wait (collective check)",
                         !ctx->oversubscribed ? BASE_CHECK_SPIN_S : 0)
        : base_mpi_error(ctx, rc, "MPI_Iallreduce (collective check)");
    ctx->comm_blocked_s += base_now() - t0;
    comm_rec_end(ctx, rop, cst);
    if (STRATA_OK != cst) return cst;
    if (STRATA_OK != local) return local;
    if (r[2]) {
        return base_error(ctx, STRATA_ERR_INVALID, "%s: another rank of the group passed "
                          "invalid arguments (see its message); no data moved", coll_name[kind]);
    }
    if (r[0] != -r[1]) {
        return base_error(ctx, STRATA_ERR_MISMATCH, "%s: ranks disagree on the operation, "
                          "dtype, count, reduction or root (this rank: %s, %zu elements); "
                          "no data moved", coll_name[kind], strata_dtype_name(dtype), count);
    }
    return STRATA_OK;
}

static strata_request_t *request_new(strata_group_t *g, coll_kind_t kind, strata_dtype_t dtype,
                                     strata_redop_t op)
{
    strata_request_t *req = calloc(1, sizeof *req);
    if (!req) return NULL;
    req->group = g;
    req->kind = kind;
    req->dtype = dtype;
    req->op = op;
    req->mpi_req = MPI_REQUEST_NULL;
    req->be = g->ctx->comm_ops;
    return req;
}

static void request_free(strata_request_t *req)
{
    const comm_backend_t *be = req->be;
    if (be->request_release) be->request_release(req);
    free(req->stage);
    free(req);
}

void comm_divide(float *x, size_t len, int size)
{
    /* blocks of 16: -O2 vectorises a fixed inner loop (a loop of
     * unknown length it leaves scalar: 1.6% of a 2-rank step) */
    float n = (float)size;
    size_t i = 0;
    for (; i + 16 <= len; i += 16)
        for (int k = 0; k < 16; k++) x[i + k] /= n;
    for (; i < len; i++) x[i] /= n;
}

/* Work done once when the backend part completes: averaging, rounding. */
static void request_finish(strata_request_t *req)
{
    if (req->complete) return;
    req->complete = 1;
    if (req->div_pending) comm_divide(req->result_f32, req->result_count, req->group->size);
    if (req->stage) {
        if (STRATA_BF16 == req->dtype)
            strata_f32_to_bf16(req->result_f32, req->user_result, req->result_count);
        else if (STRATA_F16 == req->dtype)
            strata_f32_to_f16(req->result_f32, req->user_result, req->result_count);
    }
}

static void widen(const void *src, float *dst, size_t n, strata_dtype_t dtype)
{
    if (STRATA_BF16 == dtype) strata_bf16_to_f32(src, dst, n);
    else strata_f16_to_f32(src, dst, n);
}

/* A reduction (allreduce or reduce-scatter) handed to the backend: a
 * 16-bit one it cannot reduce itself goes through f32 staging, widened
 * here and narrowed into recv when it completes. */
static strata_status_t start_reduction(strata_group_t *g, coll_kind_t kind, const comm_backend_t *be,
                                       const void *send, void *recv, size_t count, strata_dtype_t dtype,
                                       strata_redop_t op, strata_request_t *req)
{
    size_t in_count = COLL_REDUCE_SCATTER == kind ? (size_t)g->size * count : count;
    const float *in = send;
    float *out = recv;
    int wide = STRATA_F32 != dtype;
    if (wide && be->reduce_wide) return be->reduce_wide(g, kind, send, recv, count, dtype, op, req);
    if (wide) {
        /* in_count + count floats; sizes were checked in check_args */
        req->stage = malloc((in_count + count) * sizeof(float) + 1);
        if (!req->stage)
            return base_error(g->ctx, STRATA_ERR_NOMEM, "%s: cannot allocate %zu bytes of "
                              "f32 staging for a 16-bit reduction", coll_name[kind],
                              (in_count + count) * sizeof(float));
        widen(send, req->stage, in_count, dtype);
        in = req->stage;
        out = req->stage + in_count;
    }
    req->result_f32 = out;
    req->result_count = count;
    req->user_result = recv;
    if (COLL_REDUCE_SCATTER == kind) return be->reduce_scatter(g, in, out, count, op, req);
    return be->allreduce(g, in, out, count, op, req);
}

/* The collective handed to the backend that carries it. */
static strata_status_t start_on_backend(strata_group_t *g, coll_kind_t kind, const comm_backend_t *be,
                                        const void *send, void *recv, size_t count, strata_dtype_t dtype,
                                        strata_redop_t op, int root, strata_request_t *req)
{
    switch (kind) {
    case COLL_ALLGATHER: return be->allgather(g, send, recv, count, dtype, req);
    case COLL_BROADCAST: return be->broadcast(g, recv, count, dtype, root, req);
    case COLL_BARRIER: return be->barrier(g, req);
    case COLL_REDUCE_SCATTER:
    case COLL_ALLREDUCE: return start_reduction(g, kind, be, send, recv, count, dtype, op, req);
    }
    return STRATA_OK;
}

static strata_status_t start_common(strata_group_t *g, coll_kind_t kind, const void *send,
                                    void *recv, size_t count, strata_dtype_t dtype,
                                    strata_redop_t op, int root, int blocking, int agreed,
                                    strata_request_t **req_p)
{
    if (!g) return STRATA_ERR_INVALID;
    strata_context_t *ctx = g->ctx;
    if (!req_p) return base_error(ctx, STRATA_ERR_INVALID, "%s: req_p is NULL", coll_name[kind]);

    /* control words in host memory travel over MPI with a device backend */
    const comm_backend_t *be = ctx->comm_ops;
    if (be->host_buffers && COLL_BARRIER != kind && count > 0 && be->host_buffers(g, send, recv))
        be = &comm_mpi_backend;
    strata_status_t st = check_args(g, kind, send, recv, count, dtype, op, root);
    if (STRATA_OK == st && COLL_BARRIER != kind && count > 0 && be->check_buffers)
        st = be->check_buffers(g, kind, send, recv, count, dtype);
    /* A blocking MPI collective spins its core for as long as a peer is
     * late. It pays for that only where Open MPI's tuned blocking
     * algorithms beat the nonblocking ones (large messages, bench/run
     * comm); a small blocking call runs the nonblocking collective and
     * the back-off wait, so a rank kept waiting sleeps. */
    blocking = blocking && count * strata_dtype_size(dtype) >= COMM_BLOCKING_MIN_BYTES;
    if (!agreed) st = agree(g, kind, count, dtype, op, root, st);
    if (STRATA_OK != st) return st;

    strata_request_t *req = request_new(g, kind, dtype, op);
    if (!req) return base_error(ctx, STRATA_ERR_NOMEM, "%s: cannot allocate a request",
                                coll_name[kind]);
    req->blocking = blocking;
    req->be = be;
    size_t moved = count * strata_dtype_size(dtype) * (COLL_BARRIER == kind ? 0 : 1);
    if (COLL_ALLGATHER == kind || COLL_REDUCE_SCATTER == kind) moved *= (size_t)g->size;
    req->rec = comm_rec_begin(ctx, g, (rec_kind_t)kind, moved, dtype);
    if (req->blocking) comm_rec_waiting(ctx, req->rec);   /* the backend may block in it */

    st = start_on_backend(g, kind, be, send, recv, count, dtype, op, root, req);
    if (STRATA_OK != st) {
        comm_rec_end(ctx, req->rec, st);
        request_free(req);
        return st;
    }
    comm_rec_started(ctx, req->rec);
    *req_p = req;
    return STRATA_OK;
}

strata_status_t strata_allgather_start(strata_group_t *g, const void *send, void *recv,
                                       size_t count, strata_dtype_t dtype,
                                       strata_request_t **req_p)
{
    return start_common(g, COLL_ALLGATHER, send, recv, count, dtype, STRATA_SUM, 0, 0, 0, req_p);
}

strata_status_t strata_reduce_scatter_start(strata_group_t *g, const void *send, void *recv,
                                            size_t count, strata_dtype_t dtype,
                                            strata_redop_t op, strata_request_t **req_p)
{
    return start_common(g, COLL_REDUCE_SCATTER, send, recv, count, dtype, op, 0, 0, 0, req_p);
}

strata_status_t strata_allreduce_start(strata_group_t *g, const void *send, void *recv,
                                       size_t count, strata_dtype_t dtype, strata_redop_t op,
                                       strata_request_t **req_p)
{
    return start_common(g, COLL_ALLREDUCE, send, recv, count, dtype, op, 0, 0, 0, req_p);
}

strata_status_t strata_broadcast_start(strata_group_t *g, void *buf, size_t count,
                                       strata_dtype_t dtype, int root, strata_request_t **req_p)
{
    return start_common(g, COLL_BROADCAST, buf, buf, count, dtype, STRATA_SUM, root, 0, 0, req_p);
}

strata_status_t strata_barrier_start(strata_group_t *g, strata_request_t **req_p)
{
    return start_common(g, COLL_BARRIER, NULL, NULL, 0, STRATA_F32, STRATA_SUM, 0, 0, 0, req_p);
}

strata_status_t comm_start(strata_group_t *g, coll_kind_t kind, const void *send, void *recv,
                           size_t count, strata_dtype_t dtype, strata_redop_t op, int agreed,
                           strata_request_t **req_p)
{
    return start_common(g, kind, send, recv, count, dtype, op, 0, 0, agreed, req_p);
}

strata_status_t strata_request_test(strata_request_t *req, int *done_p)
{
    if (!req || !done_p) return STRATA_ERR_INVALID;
    if (STRATA_OK != req->status) return req->status;
    if (!req->complete) {
        int done = 0;
        strata_status_t st = req->be->test(req, &done);
        if (STRATA_OK != st) return req->status = st;   /* wait ends its record */
        if (done) {
            request_finish(req);
            comm_rec_end(req->group->ctx, req->rec, STRATA_OK);
            req->rec = 0;
        }
    }
    *done_p = req->complete;
    return STRATA_OK;
}

strata_status_t strata_request_wait(strata_request_t *req)
{
    if (!req) return STRATA_OK;
    strata_status_t st = req->status;       /* a failed test: the operation is over */
    if (STRATA_OK == st && !req->complete) {
        strata_context_t *ctx = req->group->ctx;
        double t0 = base_now();
        comm_rec_waiting(ctx, req->rec);
        st = req->be->wait(req);
        if (STRATA_OK == st) request_finish(req);
        ctx->comm_blocked_s += base_now() - t0;
    }
    comm_rec_end(req->group->ctx, req->rec, st);
    request_free(req);
    return st;
}

/* The blocking calls go through the same checks and staging, but tell the
 * backend it may use its blocking collective: Open MPI tunes those (coll
 * tuned) separately from the nonblocking ones (libnbc), and the blocking
 * reduce-scatter is markedly faster here. */
#define BLOCKING(kind, send, recv, count, dtype, op, root)                         \
    do {                                                                           \
        strata_request_t *req_ = NULL;                                             \
        strata_status_t st_ = start_common(g, kind, send, recv, count, dtype, op,  \
                                           root, 1, 0, &req_);                     \
        if (STRATA_OK != st_) return st_;                                          \
        return strata_request_wait(req_);                                          \
    } while (0)

strata_status_t strata_allgather(strata_group_t *g, const void *send, void *recv,
                                 size_t count, strata_dtype_t dtype)
{
    BLOCKING(COLL_ALLGATHER, send, recv, count, dtype, STRATA_SUM, 0);
}

strata_status_t strata_reduce_scatter(strata_group_t *g, const void *send, void *recv,
                                      size_t count, strata_dtype_t dtype, strata_redop_t op)
{
    BLOCKING(COLL_REDUCE_SCATTER, send, recv, count, dtype, op, 0);
}

strata_status_t strata_allreduce(strata_group_t *g, const void *send, void *recv,
                                 size_t count, strata_dtype_t dtype, strata_redop_t op)
{
    BLOCKING(COLL_ALLREDUCE, send, recv, count, dtype, op, 0);
}

strata_status_t strata_broadcast(strata_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype, int root)
{
    BLOCKING(COLL_BROADCAST, buf, buf, count, dtype, STRATA_SUM, root);
}

strata_status_t strata_barrier(strata_group_t *g)
{
    BLOCKING(COLL_BARRIER, NULL, NULL, 0, STRATA_F32, STRATA_SUM, 0);
}

strata_status_t comm_stream_wait(strata_group_t *g, void *stream)
{
    if (!g || !stream || !g->ctx->comm_ops->stream_wait) return STRATA_OK;
    return g->ctx->comm_ops->stream_wait(g, stream);
}

size_t comm_stage_need(strata_group_t *g, coll_kind_t kind, size_t count, strata_dtype_t dtype)
{
    if (!g || STRATA_F32 == dtype || !g->ctx->comm_ops->stage_need) return 0;
    return g->ctx->comm_ops->stage_need(g, kind, count, dtype);
}

void comm_stage_give(strata_group_t *g, void *p, size_t bytes)
{
    if (g && g->ctx->comm_ops->stage_give) g->ctx->comm_ops->stage_give(g, p, bytes);
}

strata_status_t comm_request_order(strata_request_t *req, void *stream)
{
    if (!req || !stream || !req->be->request_order) return STRATA_OK;
    return req->be->request_order(req, stream);
}
