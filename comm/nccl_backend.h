/*
 * nccl_backend.h - internal interface of the NCCL backend (nccl.c):
 * its pure mappings and bookkeeping (nccl_map.c, testable without a GPU)
 * and the f32 conversion kernels it launches (base/dtype_cuda.cu).
 * Compiled only where configure found CUDA, NCCL and nvcc (HAVE_NCCL).
 */
#ifndef STRATA_COMM_NCCL_BACKEND_H
#define STRATA_COMM_NCCL_BACKEND_H

/* nccl.h declares a few functions as f() rather than f(void) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "comm/comm.h"
#include "base/dtype_cuda.h"

/* strata element type -> NCCL type. bf16/f16 only travel as themselves
 * (allgather, broadcast), and reduce with reduce16=native; otherwise
 * reductions run on ncclFloat32.
 * STRATA_ERR_INVALID (nothing written) for a dtype strata does not have. */
strata_status_t comm_nccl_dtype(strata_dtype_t dtype, ncclDataType_t *type_p);

/* strata reduction -> NCCL op: SUM -> ncclSum, AVG -> ncclAvg.
 * STRATA_ERR_INVALID (nothing written) for an unknown reduction. */
strata_status_t comm_nccl_op(strata_redop_t op, ncclRedOp_t *op_p);

/* The CUDA device a rank drives: its rank among the ranks of its node,
 * modulo the devices it sees (so one rank per GPU when ranks per node =
 * GPUs per node). -1 when local_rank < 0 or ndevices <= 0. */
int comm_nccl_device(int local_rank, int ndevices);

/* How a group's NCCL communicator is bootstrapped. The NCCL rank of a
 * member is its rank in the group's MPI communicator; the member with
 * rank 0 calls ncclGetUniqueId and broadcasts it over that communicator. */
typedef struct {
    int nranks;        /* ranks in the NCCL communicator (= MPI group size) */
    int rank;          /* this rank's NCCL rank */
    int creates_id;    /* 1 on the one member that calls ncclGetUniqueId */
} comm_nccl_boot_t;

/* From a rank and size in a group. STRATA_ERR_INVALID on bad input. */
strata_status_t comm_nccl_boot(int group_rank, int group_size, comm_nccl_boot_t *boot_p);

/* The same for the shard (replica = 0) or replica (replica = 1) group of
 * world rank world_rank under shard size S, following comm_group_layout
 * (the color and key group.c passes to MPI_Comm_split). *id_root_p is
 * the world rank that creates that group's unique id.
 * STRATA_ERR_INVALID when S does not divide the world or input is bad. */
strata_status_t comm_nccl_boot_layout(int world, int shard_size, int world_rank, int replica,
                                      comm_nccl_boot_t *boot_p, int *id_root_p);

/* Bytes of f32 device staging a 16-bit reduction of count elements per
 * rank needs: reduce-scatter widens group_size * count inputs and
 * receives count outputs; allreduce works in place on count. 0 bytes for
 * count 0. STRATA_ERR_INVALID for another kind or group_size < 1,
 * STRATA_ERR_OVERFLOW when the size does not fit a size_t. */
strata_status_t comm_nccl_stage_bytes(coll_kind_t kind, size_t count, int group_size,
                                      size_t *bytes_p);

/* Whether a bf16/f16 reduction runs natively (ncclBfloat16/ncclFloat16,
 * the option reduce16=native: reduce16 1) rather than widened to f32:
 * 1 for a 16-bit dtype with reduce16 set, else 0 (f32 is never "native":
 * it needs no choice). */
int comm_nccl_native(strata_dtype_t dtype, int reduce16);

/* The f32 device staging a reduction of dtype takes (0 for f32 and for a
 * native 16-bit one), else comm_nccl_stage_bytes's; its errors. */
strata_status_t comm_nccl_stage_need(coll_kind_t kind, size_t count, int group_size,
                                     strata_dtype_t dtype, int reduce16, size_t *bytes_p);

/* What a group call's two answers (the collective inside it, then
 * ncclGroupEnd) mean on a non-blocking communicator: 1 when it has not
 * settled (either said ncclInProgress and the call did not fail): the
 * communicator must be polled before any work is queued after it; else 0
 * with *r_p the call's outcome (the collective's own error first). */
int comm_nccl_group_pending(ncclResult_t call, ncclResult_t end, ncclResult_t *r_p);

/* The group's NCCL communicator's asynchronous error, polled without
 * blocking (ncclCommGetAsyncError): STRATA_OK while healthy or in
 * progress, else STRATA_ERR_NCCL with the message recorded. The one entry
 * the watchdog polls; it then aborts the communicator itself. */
strata_status_t comm_nccl_async_error(strata_group_t *g);

#endif
