/* select.c - the collective backend's choice and the rank's device (select.h). */
#include "config.h"
#include "select.h"

#include <stdio.h>

int comm_device_for(int local_rank, int ndevices)
{
    if (local_rank < 0 || ndevices <= 0) return -1;
    return local_rank % ndevices;
}

#define WHY(...) do { if (why) snprintf(why, len, __VA_ARGS__); } while (0)

/* Device memory (backend cuda): NCCL where each rank has a GPU of its
 * own, else staged through pinned host memory and MPI, which here cannot
 * read device pointers. */
static int pick_cuda(const comm_pick_in_t *in, char *why, size_t len)
{
    int shared = in->node_ranks > in->ndev;
    switch (in->want) {
    case COMM_PICK_STAGED:
        WHY("comm_backend=staged");
        return COMM_PICK_STAGED;
    case COMM_PICK_MPI:
        WHY("comm_backend=mpi moves host memory, but backend=cuda keeps tensors in device "
            "memory, which this MPI is not known to read; use comm_backend=staged (device "
            "buffers copied through pinned host memory) or auto");
        return -1;
    case COMM_PICK_NCCL:
        if (!in->have_nccl) {
            WHY("comm_backend=nccl: this build has no NCCL (configure did not find it, or "
                "--without-nccl); use comm_backend=staged or auto");
            return -1;
        }
        if (shared) {
            WHY("comm_backend=nccl: %d ranks on this node share %d CUDA device%s, and NCCL "
                "needs one device per rank; use comm_backend=staged or auto, or fewer ranks "
                "per node", in->node_ranks, in->ndev, 1 == in->ndev ? "" : "s");
            return -1;
        }
        WHY("comm_backend=nccl");
        return COMM_PICK_NCCL;
    case COMM_PICK_AUTO:
    default:
        break;
    }
    if (!in->have_nccl) {
        WHY("backend cuda and this build has no NCCL");
        return COMM_PICK_STAGED;
    }
    if (shared) {
        WHY("%d ranks on this node share %d CUDA device%s (NCCL needs one per rank)",
            in->node_ranks, in->ndev, 1 == in->ndev ? "" : "s");
        return COMM_PICK_STAGED;
    }
    WHY("one CUDA device per rank");
    return COMM_PICK_NCCL;
}

int comm_pick_backend(const comm_pick_in_t *in, char *why, size_t len)
{
    if (!in) return -1;
    if (in->cuda) return pick_cuda(in, why, len);
    switch (in->want) {
    case COMM_PICK_NCCL:
        WHY("comm_backend=nccl needs backend=cuda (NCCL moves device memory); use auto or mpi "
            "with backend=host");
        return -1;
    case COMM_PICK_STAGED:
        /* host "device" memory: the staged path with plain copies, which
         * tests its state machine on a machine without a GPU */
        WHY("comm_backend=staged on the host backend: host copies");
        return COMM_PICK_STAGED;
    default:
        WHY("backend host");
        return COMM_PICK_MPI;
    }
}
