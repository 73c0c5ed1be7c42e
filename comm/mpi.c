/* mpi.c - the MPI collective backend: MPI-3 nonblocking collectives on the
 * group's communicator. Runs over any PML, UCX included. */
#include "config.h"
#include "comm.h"

#include <stdlib.h>


static MPI_Datatype mpi_type(strata_dtype_t dtype)
{
    /* 16-bit values only travel (allgather, broadcast); reductions are f32 */
    return STRATA_F32 == dtype ? MPI_FLOAT : MPI_UINT16_T;
}

static strata_status_t mpi_group_init(strata_group_t *g) { (void)g; return STRATA_OK; }
static void mpi_group_cleanup(strata_group_t *g) { (void)g; }

#define MPI_CALL(g, what, call)                                        \
    do {                                                               \
        comm_lock((g)->ctx);                                           \
        int rc_ = (call);                                              \
        comm_unlock((g)->ctx);                                         \
        if (MPI_SUCCESS != rc_) return base_mpi_error((g)->ctx, rc_, what); \
    } while (0)

static strata_status_t mpi_allgather(strata_group_t *g, const void *send, void *recv,
                                     size_t count, strata_dtype_t dtype, strata_request_t *req)
{
    MPI_Datatype t = mpi_type(dtype);
    if (req->blocking)
        MPI_CALL(g, "MPI_Allgather", MPI_Allgather(send, (int)count, t, recv, (int)count, t, g->comm));
    else
        MPI_CALL(g, "MPI_Iallgather", MPI_Iallgather(send, (int)count, t, recv, (int)count, t,
                                                     g->comm, &req->mpi_req));
    return STRATA_OK;
}

/* Nonblocking: comm/rs.c's point-to-point reduce-scatter (it says why not
 * MPI_Ireduce_scatter_block), which also averages in its summing pass.
 * Blocking (large messages, comm.c): Open MPI's tuned blocking one. */
static strata_status_t mpi_reduce_scatter(strata_group_t *g, const float *send, float *recv,
                                          size_t count, strata_redop_t op, strata_request_t *req)
{
    if (req->blocking) {
        MPI_CALL(g, "MPI_Reduce_scatter_block",
                 MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm));
        req->div_pending = STRATA_AVG == op;
        return STRATA_OK;
    }
    comm_rs_t *rs = malloc(sizeof *rs);
    if (!rs) return base_error(g->ctx, STRATA_ERR_NOMEM, "reduce-scatter: cannot allocate its state");
    /* tags 1..32000 in turn: MPI guarantees tags up to 32767 */
    int tag = 1 + (int)(g->rs_seq++ % 32000u);
    comm_lock(g->ctx);
    int rc = comm_rs_start(rs, g->comm, tag, send, recv, count,
                           STRATA_AVG == op ? (float)g->size : 0.0f);
    comm_unlock(g->ctx);
    req->backend_data = rs;   /* released with the request, also after a failed start */
    if (MPI_ERR_NO_MEM == rc)
        return base_error(g->ctx, STRATA_ERR_NOMEM, "reduce-scatter: cannot allocate %zu bytes "
                          "for the %d peers' blocks", (size_t)(g->size - 1) * count * sizeof(float),
                          g->size - 1);
    if (MPI_SUCCESS != rc) return base_mpi_error(g->ctx, rc, "MPI_Isend/MPI_Irecv (reduce-scatter)");
    return STRATA_OK;
}

static strata_status_t mpi_allreduce(strata_group_t *g, const float *send, float *recv,
                                     size_t count, strata_redop_t op, strata_request_t *req)
{
    const void *in = (send == recv) ? MPI_IN_PLACE : (const void *)send;
    if (req->blocking)
        MPI_CALL(g, "MPI_Allreduce", MPI_Allreduce(in, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm));
    else
        MPI_CALL(g, "MPI_Iallreduce",
                 MPI_Iallreduce(in, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm, &req->mpi_req));
    req->div_pending = STRATA_AVG == op;
    return STRATA_OK;
}

static strata_status_t mpi_broadcast(strata_group_t *g, void *buf, size_t count,
                                     strata_dtype_t dtype, int root, strata_request_t *req)
{
    if (req->blocking)
        MPI_CALL(g, "MPI_Bcast", MPI_Bcast(buf, (int)count, mpi_type(dtype), root, g->comm));
    else
        MPI_CALL(g, "MPI_Ibcast",
                 MPI_Ibcast(buf, (int)count, mpi_type(dtype), root, g->comm, &req->mpi_req));
    return STRATA_OK;
}

static strata_status_t mpi_barrier(strata_group_t *g, strata_request_t *req)
{
    if (req->blocking) MPI_CALL(g, "MPI_Barrier", MPI_Barrier(g->comm));
    else MPI_CALL(g, "MPI_Ibarrier", MPI_Ibarrier(g->comm, &req->mpi_req));
    return STRATA_OK;
}

static comm_rs_t *rs_of(strata_request_t *req)
{
    return COLL_REDUCE_SCATTER == req->kind ? req->backend_data : NULL;
}

static strata_status_t mpi_test(strata_request_t *req, int *done_p)
{
    int flag = 0, rc;
    comm_rs_t *rs = rs_of(req);
    comm_lock(req->group->ctx);
    rc = rs ? comm_rs_test(rs, &flag) : MPI_Test(&req->mpi_req, &flag, MPI_STATUS_IGNORE);
    comm_unlock(req->group->ctx);
    if (MPI_SUCCESS != rc) return base_mpi_error(req->group->ctx, rc, "MPI_Test");
    if (flag && rs) comm_rs_finish(rs);      /* the sum, with the MPI lock free */
    *done_p = flag;
    return STRATA_OK;
}

/* Not MPI_Wait, which spins a core for as long as a peer is late: the
 * recorder's back-off tests, then sleeps up to 100 us between tests. It
 * also takes the lock per test below THREAD_MULTIPLE, so other threads'
 * MPI calls are not starved. */
static strata_status_t mpi_wait(strata_request_t *req)
{
    comm_rs_t *rs = rs_of(req);
    strata_context_t *ctx = req->group->ctx;
    if (!rs) return comm_wait_backoff(ctx, &req->mpi_req, "MPI_Wait");
    strata_status_t st = rs->finished || 0 == rs->nreq ? STRATA_OK
        : comm_wait_all(ctx, rs->reqs, rs->nreq, "MPI_Waitall (reduce-scatter)", ctx->cfg.spin_time);
    if (STRATA_OK == st) comm_rs_finish(rs);
    return st;
}

static void mpi_request_release(strata_request_t *req)
{
    comm_rs_t *rs = rs_of(req);
    if (!rs) return;
    comm_rs_release(rs);
    free(rs);
    req->backend_data = NULL;
}

const comm_backend_t comm_mpi_backend = {
    .name           = "mpi",
    .group_init     = mpi_group_init,
    .group_cleanup  = mpi_group_cleanup,
    .allgather      = mpi_allgather,
    .reduce_scatter = mpi_reduce_scatter,
    .allreduce      = mpi_allreduce,
    .broadcast      = mpi_broadcast,
    .barrier        = mpi_barrier,
    .request_release = mpi_request_release,
    .test           = mpi_test,
    .wait           = mpi_wait,
};
