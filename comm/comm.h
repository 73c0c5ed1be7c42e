/*
 * comm.h - internal interface of the collectives layer.
 *
 * The public functions in comm.c check arguments, widen 16-bit reductions
 * to f32 and dispatch to a backend: an ops table like Open MPI's coll
 * components. mpi.c is always built; nccl.c where CUDA and NCCL are found.
 */
#ifndef STRATA_COMM_H
#define STRATA_COMM_H

#include "base/base.h"
#include "comm/recorder.h"

struct strata_group {
    strata_context_t *ctx;
    MPI_Comm          comm;
    int               rank;
    int               size;
    int               is_world;
    void             *backend_data;   /* e.g. the ncclComm_t of the group */
    int               rec_gid;        /* the recorder's index of the group */
    uint64_t          rec_seq;        /* collectives recorded on it */
    uint64_t          rec_op;         /* blocking wrappers: the op being waited for */
    uint32_t          rs_seq;         /* nonblocking reduce-scatters started (their tags) */
};

typedef enum { COLL_ALLGATHER, COLL_REDUCE_SCATTER, COLL_ALLREDUCE,
               COLL_BROADCAST, COLL_BARRIER } coll_kind_t;

struct strata_request {
    strata_group_t  *group;
    const struct comm_backend *be;     /* the backend that runs it (comm_backend_for) */
    coll_kind_t      kind;
    MPI_Request      mpi_req;
    void            *backend_data;
    int              complete;
    strata_status_t  status;         /* a failed test: wait returns it without waiting */
    /* finishing work done once, on completion */
    strata_redop_t   op;
    strata_dtype_t   dtype;            /* the caller's dtype */
    size_t           result_count;     /* elements in the result */
    float           *result_f32;       /* where the backend left an f32 result */
    void            *user_result;      /* caller's result buffer */
    float           *stage;            /* owned f32 staging (16-bit reductions) */
    int              div_pending;      /* backend summed; AVG divides on completion */
    uint64_t         rec;              /* its flight-recorder operation (0 = none) */
    int              blocking;         /* started by a blocking wrapper: a backend
                                        * may run its blocking collective and
                                        * complete before returning */
};

/* A collective backend. Reductions always arrive as f32 (the 16-bit rule);
 * a backend that cannot average natively leaves a sum and sets
 * req->div_pending. Counts above INT_MAX are refused before dispatch. */
/* per-rank bytes from which a blocking wrapper may use the backend's
 * blocking collective (comm.c, start_common) */
#define COMM_BLOCKING_MIN_BYTES ((size_t)1 << 20)

typedef struct comm_backend {
    const char *name;
    strata_status_t (*group_init)(strata_group_t *g);
    void            (*group_cleanup)(strata_group_t *g);
    strata_status_t (*allgather)(strata_group_t *g, const void *send, void *recv,
                                 size_t count, strata_dtype_t dtype, strata_request_t *req);
    strata_status_t (*reduce_scatter)(strata_group_t *g, const float *send, float *recv,
                                      size_t count, strata_redop_t op, strata_request_t *req);
    strata_status_t (*allreduce)(strata_group_t *g, const float *send, float *recv,
                                 size_t count, strata_redop_t op, strata_request_t *req);
    strata_status_t (*broadcast)(strata_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype, int root, strata_request_t *req);
    strata_status_t (*barrier)(strata_group_t *g, strata_request_t *req);
    /* Optional. Backend-specific checks of the buffers (e.g. that they are
     * device memory), run with comm.c's argument checks, before the ranks
     * agree, so a bad buffer on one rank fails the call on all of them. */
    strata_status_t (*check_buffers)(strata_group_t *g, coll_kind_t kind, const void *send,
                                     const void *recv, size_t count, strata_dtype_t dtype);
    /* Optional. A backend whose buffers the host cannot read (device
     * memory) applies the 16-bit rule itself: widen bf16/f16 to f32, reduce
     * in f32, round once into recv. NULL: comm.c stages in host memory and
     * calls reduce_scatter/allreduce with f32. kind is COLL_REDUCE_SCATTER
     * or COLL_ALLREDUCE; dtype is STRATA_BF16 or STRATA_F16. */
    strata_status_t (*reduce_wide)(strata_group_t *g, coll_kind_t kind, const void *send,
                                   void *recv, size_t count, strata_dtype_t dtype,
                                   strata_redop_t op, strata_request_t *req);
    /* Optional. Frees req->backend_data (e.g. a cudaEvent); called once
     * when the request is freed, also after a failed start. */
    void            (*request_release)(strata_request_t *req);
    /* *done_p = 1 when the backend part of req has finished */
    strata_status_t (*test)(strata_request_t *req, int *done_p);
    strata_status_t (*wait)(strata_request_t *req);
    /* Optional. The watchdog's first step before MPI_Abort: abort the
     * group's communicator (ncclCommAbort) so nothing spins on it. */
    void            (*abort)(strata_group_t *g);
    /* Optional (device backends). 1 when neither buffer is device memory:
     * such a collective (a few control words in host memory: costs, norms)
     * runs on the MPI backend instead. */
    int             (*host_buffers)(strata_group_t *g, const void *send, const void *recv);
    /* Optional (device backends). The group's stream waits for the work
     * queued so far on `stream` (a cudaStream_t), by an event. */
    strata_status_t (*stream_wait)(strata_group_t *g, void *stream);
    /* Optional (device backends). `stream` waits for req's completion, by
     * its event; the host does not wait. */
    strata_status_t (*request_order)(strata_request_t *req, void *stream);
    /* Optional (device backends whose reduce_wide stages in device
     * memory). stage_need: the bytes of device staging a 16-bit reduction
     * of kind and count per rank takes on g (0: none, e.g. reduce16=native
     * or f32). stage_give: device memory of `bytes` (NULL, 0: none) that
     * g's reductions use for that staging while it is large enough, instead
     * of allocating it from the device's stream-ordered pool (outside the
     * device tier); the caller keeps it until it takes it back (NULL) with
     * no reduction of g in flight. */
    size_t          (*stage_need)(strata_group_t *g, coll_kind_t kind, size_t count,
                                  strata_dtype_t dtype);
    void            (*stage_give)(strata_group_t *g, void *p, size_t bytes);
} comm_backend_t;

extern const comm_backend_t comm_mpi_backend;
extern const comm_backend_t comm_staged_backend;   /* stage.h */
#ifdef HAVE_NCCL
extern const comm_backend_t comm_nccl_backend;
#endif

/* The average's division of a sum of size ranks (AVG, a backend that left
 * a sum), in place: comm.c's and the staged backend's, so both round alike. */
void comm_divide(float *x, size_t len, int size);

/* Stream ordering with the device backend (no-ops on the MPI backend and
 * with a NULL stream): the group's next collectives run after the work
 * queued on stream so far; stream's next work runs after req completes. */
/* A nonblocking start of a collective of kind (not broadcast or barrier),
 * with comm_check's per-call agreement unless agreed: a caller whose
 * collectives the ranks have agreed as a whole already (the FSDP executor
 * once its step program and plan passed their cross-rank check) skips it.
 * The agreement is a synchronous allreduce, and at every start it made
 * each rank wait for the others, which the nonblocking collective would
 * otherwise absorb. Arguments are still checked locally. */
strata_status_t comm_start(strata_group_t *g, coll_kind_t kind, const void *send, void *recv,
                           size_t count, strata_dtype_t dtype, strata_redop_t op, int agreed,
                           strata_request_t **req_p);
strata_status_t comm_stream_wait(strata_group_t *g, void *stream);
/* The device staging of g's 16-bit reductions (the backend's stage_need
 * and stage_give; 0 and a no-op where the backend has none): a caller
 * that knows its reductions' sizes (a model: its units' gradients) gives
 * g a device-tier block of the largest need, so that staging is inside
 * device_mem. */
size_t comm_stage_need(strata_group_t *g, coll_kind_t kind, size_t count, strata_dtype_t dtype);
void comm_stage_give(strata_group_t *g, void *p, size_t bytes);
strata_status_t comm_request_order(strata_request_t *req, void *stream);

/* Context set-up: pick the backend, make the world group. */
strata_status_t comm_init(strata_context_t *ctx);
void comm_cleanup(strata_context_t *ctx);

/* Pure geometry of hybrid sharding (testable without MPI): for world size
 * W and shard size S, rank r's shard group index/rank and replica group
 * index/rank. Returns -1 when S does not divide W or arguments are bad. */
typedef struct {
    int shard_group;    /* which shard group: r / S */
    int shard_rank;     /* rank inside it: r % S */
    int replica_group;  /* which replica group: r % S */
    int replica_rank;   /* rank inside it: r / S */
    int n_shard_groups; /* W / S */
} comm_layout_t;
int comm_group_layout(int world, int shard_size, int rank, comm_layout_t *out);

/* agree.c: whether every rank of g holds the same n entries (hashes h,
 * descriptions desc for the message). STRATA_OK, or on every rank
 * STRATA_ERR_MISMATCH with a message naming what, the first entry that
 * differs and the ranks on each side. Collective over g. */
strata_status_t comm_agree_entries(strata_group_t *g, const char *what, const uint64_t *h,
                                   int n, const char *const *desc);
uint64_t comm_hash_text(const char *s);
/* agree.c: base_agree over g (every rank returns the winning failure's
 * status and message, or STRATA_OK), recorded as one check of g for the
 * flight recorder. Collective over g. */
strata_status_t comm_agree_status(strata_group_t *g, strata_status_t st);

/* Whether mine is true on every rank of g: *all_p = 1 then, else 0.
 * Collective, recorded; one small allreduce. */
strata_status_t comm_agree_all(strata_group_t *g, int mine, int *all_p);

/* rs.c: a nonblocking reduce-scatter (f32 sum, then / div unless div is
 * 0) of p blocks of count floats over comm, by point-to-point messages:
 * the MPI backend's (mpi.c) and strata calibrate's (rs.c says why not
 * MPI_Ireduce_scatter_block; its results are bit for bit the same). No
 * locking: callers below MPI_THREAD_MULTIPLE serialise start and test.
 * start returns an MPI error code (MPI_ERR_NO_MEM without memory);
 * test sets *done_p once every message has arrived, and then the caller
 * runs finish (the sum, outside any MPI lock) once; release always. */
typedef struct {
    MPI_Request  *reqs;
    int           nreq, p, rank, finished;
    float        *tmp;          /* the peers' blocks, (p-1) x count */
    const float **v;            /* the sum tree's operands */
    const float  *send;
    float        *recv;
    size_t        count;
    float         div;
} comm_rs_t;
int comm_rs_start(comm_rs_t *rs, MPI_Comm comm, int tag, const float *send, float *recv,
                  size_t count, float div);
int comm_rs_test(comm_rs_t *rs, int *done_p);
void comm_rs_finish(comm_rs_t *rs);
int comm_rs_done(const comm_rs_t *rs);
void comm_rs_release(comm_rs_t *rs);

/* Serialise MPI calls when the granted level is below THREAD_MULTIPLE. */
static inline void comm_lock(strata_context_t *ctx)
{
    if (ctx->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_lock(&ctx->mpi_lock);
}
static inline void comm_unlock(strata_context_t *ctx)
{
    if (ctx->thread_level < MPI_THREAD_MULTIPLE) pthread_mutex_unlock(&ctx->mpi_lock);
}

#endif
