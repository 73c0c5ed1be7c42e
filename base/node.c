/* node.c - what the node offers the ranks on it. */
#define _GNU_SOURCE 1   /* sched_getaffinity, CPU_COUNT */
#include "config.h"
#include "base.h"

#include <sched.h>
#include <unistd.h>

int base_node_oversubscribed(MPI_Comm comm, int *local_p, int *cpus_p)
{
    MPI_Comm node;
    int local = 1, cpus = 0;
    if (MPI_SUCCESS == MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
#ifdef __linux__
    cpu_set_t set;
    if (0 == sched_getaffinity(0, sizeof set, &set)) cpus = CPU_COUNT(&set);
#endif
    if (cpus <= 0) cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (local_p) *local_p = local;
    if (cpus_p) *cpus_p = cpus;
    return cpus > 0 && local > cpus;
}
