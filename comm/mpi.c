/* mpi.c - the MPI collective backend: MPI-3 nonblocking collectives on the
 * group's communicator. Runs over any PML, UCX included. */
#include "config.h"
#include "comm.h"

#include <sched.h>

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

static strata_status_t mpi_reduce_scatter(strata_group_t *g, const float *send, float *recv,
                                          size_t count, strata_redop_t op, strata_request_t *req)
{
    if (req->blocking)
        MPI_CALL(g, "MPI_Reduce_scatter_block",
                 MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm));
    else
        MPI_CALL(g, "MPI_Ireduce_scatter_block",
                 MPI_Ireduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm,
                                           &req->mpi_req));
    req->div_pending = STRATA_AVG == op;
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

static strata_status_t mpi_test(strata_request_t *req, int *done_p)
{
    int flag = 0;
    MPI_CALL(req->group, "MPI_Test", MPI_Test(&req->mpi_req, &flag, MPI_STATUS_IGNORE));
    *done_p = flag;
    return STRATA_OK;
}

static strata_status_t mpi_wait(strata_request_t *req)
{
    strata_group_t *g = req->group;
    if (g->ctx->thread_level >= MPI_THREAD_MULTIPLE) {
        int rc = MPI_Wait(&req->mpi_req, MPI_STATUS_IGNORE);
        if (MPI_SUCCESS != rc) return base_mpi_error(g->ctx, rc, "MPI_Wait");
        return STRATA_OK;
    }
    /* below THREAD_MULTIPLE a blocking wait would hold the lock and starve
     * other threads' MPI calls; poll with the lock taken per test instead */
    for (;;) {
        int done = 0;
        strata_status_t st = mpi_test(req, &done);
        if (STRATA_OK != st || done) return st;
        sched_yield();
    }
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
    .test           = mpi_test,
    .wait           = mpi_wait,
};
