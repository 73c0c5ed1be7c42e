/*
 * base_agree.c - the one agreement on an error (base/agree.h): every rank
 * leaves with the winning failure's status and message (the lowest
 * status, then the lowest rank), or STRATA_OK when none failed. Run on 3
 * ranks by t/agree-np3.t.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/agree.h"
#include "tap.h"

static strata_context_t ctx;
static int R;

/* This rank fails with st (message "rank R: what") or passes (0), then
 * all agree; 1 when this rank got want and, for a failure, want_msg. */
static int agree_case(strata_status_t mine, const char *what, strata_status_t want,
                      const char *want_msg)
{
    snprintf(ctx.errmsg, sizeof ctx.errmsg, "untouched");
    if (mine < 0) base_error(&ctx, mine, "rank %d: %s", R, what);
    strata_status_t got = base_agree(&ctx, MPI_COMM_WORLD, mine);
    const char *msg = STRATA_OK == want ? "untouched" : want_msg;
    if (got != want || strcmp(ctx.errmsg, msg)) {
        diag("rank %d: got %d '%s', want %d '%s'", R, (int)got, ctx.errmsg, (int)want, msg);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    int W;
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    if (3 != W) bail_out("run on 3 ranks (got %d)", W);
    plan(7);
    ctx.comm = MPI_COMM_WORLD;
    ctx.rank = R;
    ctx.size = W;
    ctx.thread_level = provided;
    pthread_mutex_init(&ctx.mpi_lock, NULL);
    pthread_mutex_init(&ctx.err_lock, NULL);

    ok(agree_case(STRATA_OK, "", STRATA_OK, NULL),
       "no rank fails: STRATA_OK everywhere, messages untouched");
    ok(agree_case(1 == R ? STRATA_ERR_NOMEM : STRATA_OK, "out of memory", STRATA_ERR_NOMEM,
                  "rank 1: out of memory"),
       "one rank fails: its status and message on every rank");
    ok(agree_case(0 == R ? STRATA_ERR_NOMEM : 2 == R ? STRATA_ERR_IO : STRATA_OK, "failed",
                  STRATA_ERR_IO, "rank 2: failed"),
       "two ranks fail differently: the lower status wins, on every rank");
    ok(agree_case(0 == R ? STRATA_OK : STRATA_ERR_IO, "write failed", STRATA_ERR_IO,
                  "rank 1: write failed"),
       "two ranks fail alike: the lower rank's message wins");
    ok(agree_case(2 == R ? (strata_status_t)1 : STRATA_OK, "", STRATA_OK, NULL),
       "a positive status is no failure");
    ok(STRATA_ERR_NOMEM == base_agree(NULL, MPI_COMM_WORLD,
                                      2 == R ? STRATA_ERR_NOMEM : STRATA_OK),
       "without a context the status is still agreed");

    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    ok(MPI_SUCCESS == base_mpi_wait(&ctx, &req, 1, 0) && MPI_REQUEST_NULL == req,
       "base_mpi_wait completes a request");

    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
