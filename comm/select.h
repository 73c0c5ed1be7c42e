/*
 * select.h - which collective backend a context runs, and which CUDA
 * device a rank drives: pure decisions (select.c), testable on any
 * machine without MPI or a GPU (t/unit_commsel.t). comm_init (group.c)
 * feeds them what MPI and CUDA report and makes the ranks agree.
 */
#ifndef STRATA_COMM_SELECT_H
#define STRATA_COMM_SELECT_H

#include <stddef.h>

/* The option comm_backend, in the order of its values (base/config.c),
 * and the backends a choice ends in. */
typedef enum { COMM_PICK_AUTO = 0, COMM_PICK_NCCL = 1, COMM_PICK_STAGED = 2,
               COMM_PICK_MPI = 3 } comm_pick_t;

typedef struct {
    comm_pick_t want;    /* the option */
    int cuda;            /* the context's backend is cuda (tensors in device memory) */
    int have_nccl;       /* this build has the NCCL backend */
    int node_ranks;      /* the job's ranks on this rank's node */
    int ndev;            /* CUDA devices this rank sees */
} comm_pick_in_t;

/* The backend for in (COMM_PICK_NCCL, _STAGED or _MPI), with why, a
 * phrase for the log ("3 ranks on this node share 1 CUDA device"); or -1
 * when the wanted one cannot run here, with why a message a person can
 * act on. why may be NULL. */
int comm_pick_backend(const comm_pick_in_t *in, char *why, size_t len);

/* The CUDA device a rank drives, the NCCL and staged backends alike: its
 * rank among the ranks of its node, modulo the devices it sees (one rank
 * per GPU when ranks per node = GPUs per node; several on one GPU when
 * they outnumber them). -1 when local_rank < 0 or ndevices <= 0. */
int comm_device_for(int local_rank, int ndevices);

#endif
