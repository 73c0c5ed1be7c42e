/* nccl_map.c - the NCCL backend's pure decisions: type and op mapping,
 * which device a rank drives, how a group's communicator is bootstrapped,
 * how much staging a 16-bit reduction needs. No GPU and no MPI needed, so
 * t/unit_nccl.t checks them on any machine where NCCL is installed. */
#include "config.h"
#include "nccl_backend.h"
#include "select.h"

strata_status_t comm_nccl_dtype(strata_dtype_t dtype, ncclDataType_t *type_p)
{
    if (!type_p) return STRATA_ERR_INVALID;
    switch (dtype) {
    case STRATA_F32:  *type_p = ncclFloat32;  return STRATA_OK;
    case STRATA_BF16: *type_p = ncclBfloat16; return STRATA_OK;
    case STRATA_F16:  *type_p = ncclFloat16;  return STRATA_OK;
    default:          return STRATA_ERR_INVALID;
    }
}

strata_status_t comm_nccl_op(strata_redop_t op, ncclRedOp_t *op_p)
{
    if (!op_p) return STRATA_ERR_INVALID;
    switch (op) {
    case STRATA_SUM: *op_p = ncclSum; return STRATA_OK;
    /* ncclAvg on floats multiplies each input by 1/n, then sums (see the
     * rule in nccl.c): within a few f32 ulps of sum/n, not bitwise it */
    case STRATA_AVG: *op_p = ncclAvg; return STRATA_OK;
    default:         return STRATA_ERR_INVALID;
    }
}

int comm_nccl_device(int local_rank, int ndevices)
{
    /* the staged backend drives the same device (select.c) */
    return comm_device_for(local_rank, ndevices);
}

strata_status_t comm_nccl_boot(int group_rank, int group_size, comm_nccl_boot_t *boot_p)
{
    if (!boot_p || group_size < 1 || group_rank < 0 || group_rank >= group_size)
        return STRATA_ERR_INVALID;
    boot_p->nranks = group_size;
    boot_p->rank = group_rank;
    boot_p->creates_id = 0 == group_rank;
    return STRATA_OK;
}

strata_status_t comm_nccl_boot_layout(int world, int shard_size, int world_rank, int replica,
                                      comm_nccl_boot_t *boot_p, int *id_root_p)
{
    comm_layout_t l;
    if (!boot_p || !id_root_p || (0 != replica && 1 != replica)) return STRATA_ERR_INVALID;
    if (comm_group_layout(world, shard_size, world_rank, &l)) return STRATA_ERR_INVALID;
    comm_nccl_boot_t b;
    int root;
    if (replica) {
        /* replica group k = world ranks k, k + S, k + 2S, ... keyed by r / S */
        if (comm_nccl_boot(l.replica_rank, l.n_shard_groups, &b)) return STRATA_ERR_INVALID;
        root = l.replica_group;
    } else {
        /* shard group k = world ranks kS .. kS + S - 1 keyed by r % S */
        if (comm_nccl_boot(l.shard_rank, shard_size, &b)) return STRATA_ERR_INVALID;
        root = l.shard_group * shard_size;
    }
    *boot_p = b;
    *id_root_p = root;
    return STRATA_OK;
}

strata_status_t comm_nccl_stage_bytes(coll_kind_t kind, size_t count, int group_size,
                                      size_t *bytes_p)
{
    size_t elems;
    if (!bytes_p || group_size < 1) return STRATA_ERR_INVALID;
    if (COLL_ALLREDUCE == kind) {
        elems = count;
    } else if (COLL_REDUCE_SCATTER == kind) {
        /* group_size * count inputs, then count outputs behind them */
        if (strata_mul_size(count, (size_t)group_size, &elems) ||
            strata_add_size(elems, count, &elems))
            return STRATA_ERR_OVERFLOW;
    } else {
        return STRATA_ERR_INVALID;
    }
    if (strata_mul_size(elems, sizeof(float), &elems)) return STRATA_ERR_OVERFLOW;
    *bytes_p = elems;
    return STRATA_OK;
}

int comm_nccl_native(strata_dtype_t dtype, int reduce16)
{
    return reduce16 && (STRATA_BF16 == dtype || STRATA_F16 == dtype);
}

strata_status_t comm_nccl_stage_need(coll_kind_t kind, size_t count, int group_size,
                                     strata_dtype_t dtype, int reduce16, size_t *bytes_p)
{
    if (!bytes_p || group_size < 1 || (COLL_ALLREDUCE != kind && COLL_REDUCE_SCATTER != kind))
        return STRATA_ERR_INVALID;
    if (STRATA_F32 == dtype || comm_nccl_native(dtype, reduce16)) {
        *bytes_p = 0;
        return STRATA_OK;
    }
    return comm_nccl_stage_bytes(kind, count, group_size, bytes_p);
}

int comm_nccl_group_pending(ncclResult_t call, ncclResult_t end, ncclResult_t *r_p)
{
    if (ncclSuccess != call && ncclInProgress != call) {
        *r_p = call;
        return 0;
    }
    *r_p = ncclInProgress == call ? call : end;
    return ncclInProgress == *r_p;
}
