/* unit_commsel.t - which collective backend a rank picks (comm/select.c)
 * and which CUDA device it drives: pure decisions, no MPI or GPU. */
#include <string.h>

#include "comm/select.h"
#include "tap.h"

static int pick(comm_pick_t want, int cuda, int nccl, int node_ranks, int ndev, char *why)
{
    comm_pick_in_t in = { want, cuda, nccl, node_ranks, ndev };
    return comm_pick_backend(&in, why, 256);
}

int main(void)
{
    char why[256];
    plan(17);
    ok(COMM_PICK_MPI == pick(COMM_PICK_AUTO, 0, 1, 4, 0, why), "host: auto is mpi");
    ok(COMM_PICK_MPI == pick(COMM_PICK_MPI, 0, 0, 4, 0, why), "host: mpi");
    ok(COMM_PICK_STAGED == pick(COMM_PICK_STAGED, 0, 0, 4, 0, why), "host: staged runs with host copies");
    ok(-1 == pick(COMM_PICK_NCCL, 0, 1, 1, 1, why) && strstr(why, "backend=cuda"),
       "host: nccl refused: %s", why);
    ok(COMM_PICK_NCCL == pick(COMM_PICK_AUTO, 1, 1, 2, 2, why), "cuda: a GPU per rank is nccl");
    ok(COMM_PICK_NCCL == pick(COMM_PICK_AUTO, 1, 1, 1, 8, why), "cuda: more GPUs than ranks is nccl");
    ok(COMM_PICK_STAGED == pick(COMM_PICK_AUTO, 1, 1, 2, 1, why) && strstr(why, "share 1 CUDA device"),
       "cuda: 2 ranks on 1 GPU stage: %s", why);
    ok(COMM_PICK_STAGED == pick(COMM_PICK_AUTO, 1, 1, 4, 1, why), "cuda: 4 ranks on 1 GPU stage");
    ok(COMM_PICK_STAGED == pick(COMM_PICK_AUTO, 1, 0, 1, 1, why) && strstr(why, "no NCCL"),
       "cuda without NCCL stages: %s", why);
    ok(COMM_PICK_STAGED == pick(COMM_PICK_STAGED, 1, 1, 1, 1, why), "cuda: staged when asked");
    ok(-1 == pick(COMM_PICK_NCCL, 1, 1, 2, 1, why) && strstr(why, "one device per rank"),
       "cuda: nccl asked with ranks sharing a GPU is refused: %s", why);
    ok(-1 == pick(COMM_PICK_NCCL, 1, 0, 1, 1, why) && strstr(why, "no NCCL"),
       "cuda: nccl asked in a build without it is refused: %s", why);
    ok(-1 == pick(COMM_PICK_MPI, 1, 1, 1, 1, why) && strstr(why, "staged"),
       "cuda: mpi on device memory is refused: %s", why);
    ok(-1 == comm_pick_backend(NULL, why, sizeof why), "NULL input refused");
    /* the device: NCCL's rule, also when ranks share GPUs */
    ok(0 == comm_device_for(0, 1) && 0 == comm_device_for(3, 1), "4 ranks on 1 GPU all drive device 0");
    ok(1 == comm_device_for(1, 2) && 0 == comm_device_for(2, 2), "ranks round-robin over the devices");
    ok(-1 == comm_device_for(0, 0) && -1 == comm_device_for(-1, 2), "no device, or a bad rank: -1");
    return done_testing();
}
