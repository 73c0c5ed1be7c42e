/*
 * agree.c - agreement on an error across ranks, and the MPI wait (agree.h).
 */
#include "config.h"
#include "base/agree.h"
#include "base/wait.h"

#include <stdio.h>

static void mpi_lock(strata_context_t *ctx)
{
    if (ctx && ctx->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&ctx->mpi_lock);
}

static void mpi_unlock(strata_context_t *ctx)
{
    if (ctx && ctx->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&ctx->mpi_lock);
}

int base_mpi_wait(strata_context_t *ctx, MPI_Request *reqs, int n, double spin)
{
    if (ctx && spin < ctx->cfg.spin_time) spin = ctx->cfg.spin_time;
    /* a few hundred tests cost microseconds: short collectives finish
     * inside them, as they did in MPI_Wait; then 1 us sleeps doubling to
     * 100 us, so a long wait costs no core */
    base_waiter_t w;
    base_waiter_init(&w, spin, 256, 1000, 100000);
    for (;;) {
        int done = 0;
        mpi_lock(ctx);
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        mpi_unlock(ctx);
        if (MPI_SUCCESS != rc || done) return rc;
        base_waiter_pause(&w);
    }
}

strata_status_t base_agree(strata_context_t *ctx, MPI_Comm comm, strata_status_t st)
{
    struct { int st, rank; } in, out;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    in.st = (int)st;
    in.rank = rank;
    MPI_Request req = MPI_REQUEST_NULL;
    mpi_lock(ctx);
    int rc = MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm, &req);
    mpi_unlock(ctx);
    if (MPI_SUCCESS == rc) rc = base_mpi_wait(ctx, &req, 1, 0);
    if (MPI_SUCCESS != rc) return base_mpi_error(ctx, rc, "MPI_Iallreduce (agreeing on a status)");
    if (out.st >= 0) return STRATA_OK;
    /* the winner's message, to every rank */
    char msg[STRATA_ERRMSG_LEN] = "";
    if (rank == out.rank && ctx) snprintf(msg, sizeof msg, "%s", ctx->errmsg);
    mpi_lock(ctx);
    rc = MPI_Ibcast(msg, (int)sizeof msg, MPI_CHAR, out.rank, comm, &req);
    mpi_unlock(ctx);
    if (MPI_SUCCESS == rc) rc = base_mpi_wait(ctx, &req, 1, 0);
    if (MPI_SUCCESS != rc) return base_mpi_error(ctx, rc, "MPI_Ibcast (the agreed error's message)");
    msg[sizeof msg - 1] = '\0';
    if (rank != out.rank && ctx) base_error(ctx, (strata_status_t)out.st, "%s", msg);
    return (strata_status_t)out.st;
}
