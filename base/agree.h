/*
 * agree.h - the one way ranks agree on an error, and the one way a rank
 * waits for MPI requests. Below comm/, so that io/ (which may include only
 * base/) uses the same agreement as fsdp/ (through comm_agree_status,
 * which records it for the flight recorder). Internal.
 */
#ifndef STRATA_BASE_AGREE_H
#define STRATA_BASE_AGREE_H

#include "base/base.h"

/* Every rank of comm passes its status st, and when st failed, its message
 * as ctx's last error. Every rank returns the same: STRATA_OK when no rank
 * failed, else the status of the failing rank that wins (the lowest status,
 * then the lowest rank) with that rank's message, which becomes every
 * rank's last error. Collective over comm; waits as base_mpi_wait does.
 * ctx may be NULL (then only the status is agreed). It records nothing for
 * the flight recorder: its callers do (io/ inside a checkpoint's recorded
 * operation or the lock's, comm_agree_status as a check of its group). */
strata_status_t base_agree(strata_context_t *ctx, MPI_Comm comm, strata_status_t st);

/* Wait for n MPI requests: MPI_Testall under ctx's MPI lock (below
 * MPI_THREAD_MULTIPLE), spinning for at least spin seconds (and ctx's
 * spin_time) and 256 tests, then sleeping 1 us doubling to 100 us (the
 * waiter of base/wait.h). An MPI error code, or MPI_SUCCESS. */
int base_mpi_wait(strata_context_t *ctx, MPI_Request *reqs, int n, double spin);

#endif
