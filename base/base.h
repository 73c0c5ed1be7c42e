/*
 * base.h - internal services every folder uses: the context's structure,
 * error recording, logging, checked size arithmetic. Not installed. base/
 * is the bottom layer and includes nothing else of strata: the layers the
 * context points to are only named here (comm_backend, tiers_state), and
 * fsdp/context.c, above them, assembles them in strata_init.
 */
#ifndef STRATA_BASE_H
#define STRATA_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "strata.h"

struct comm_backend;   /* comm/comm.h */
struct strata_group;
struct tiers_state;    /* tiers/tiers.h */
struct comm_recorder;  /* comm/recorder_impl.h: flight recorder and watchdog */

#define STRATA_ERRMSG_LEN 1024

/*
 * The options, one field per row of the option table (config.c), which
 * gives each its name, default, doc and parser. Private: the public
 * strata_config_t is this struct behind a handle, reached by name, so a
 * field added here (with its row) changes no ABI. Sizes are bytes,
 * bandwidths bytes per second (0 = unpaced), times seconds.
 */
struct strata_config {
    strata_log_level_t    log_level;
    strata_backend_kind_t backend;
    int      shard_size;          /* FSDP group size S; 0 = world size */
    size_t   device_mem;          /* device tier budget */
    size_t   host_mem;            /* pinned-host tier budget */
    size_t   storage_mem;         /* storage tier budget */
    char     spill_dir[512];      /* root under which the storage tier lives */
    size_t   chunk_size;          /* copy engines split transfers at this size */
    double   link_d2h_bw;         /* link model: bytes/s, 0 = off */
    double   link_h2d_bw;
    double   link_storage_bw;
    double   link_latency;        /* seconds added per copy when paced */
    double   spin_time;           /* seconds engines and waiters poll before sleeping */
    int      wait_copies;         /* strata_event_wait runs an unstarted copy itself */
    int      checksums;           /* storage tier: verify blocks on read-back */
    int      verify_transfers;    /* saves checksummed leaving the device and back */
    int      mem_plan;            /* the step's device buffers at planned offsets */
    int      prefetch;            /* all-gather lookahead in units */
    char     act_policy[512];     /* e.g. "qkv=host,*=keep" or "auto" */
    char     state_place[256];    /* e.g. "optim=storage,master=host:0.5" */
    int      state_fetch;         /* 0 plan, 1 next */
    int      optim_overlap;       /* 0 auto, 1 on, 2 off */
    int      schedule;            /* 0 = lhs, 1 = naive */
    char     trace[512];          /* per-rank trace files <trace>.<rank>.json; "" = none */
    int      threads;             /* compute threads per rank; 0 = affinity */
    int      comm_backend;        /* comm_pick_t: 0 auto, 1 nccl, 2 staged, 3 mpi */
    int      comm_check;          /* verify ranks agree on each collective */
    int      reduce16;            /* 0 wide (f32, rounded once), 1 native (NCCL in bf16/f16) */
    int      ckpt_keep;           /* checkpoints kept in a directory (newest K) */
    char     ckpt_dir[512];       /* where training writes checkpoints */
    int      ckpt_direct;         /* tensor bytes with pwrite/pread, not H5Dwrite/H5Dread */
    int      ckpt_mpio;           /* 0 independent, 1 collective, 2 individual */
    double   collective_timeout;  /* seconds an operation may take; 0 = no deadline */
    double   ckpt_timeout;        /* seconds a whole checkpoint save or load may take */
    int      ckpt_async;          /* strata_model_save stages and writes in the background */
    int      flight_entries;      /* flight recorder ring per rank; 0 = recorder off */
    char     flight_dir[512];     /* flight records; "" = ckpt_dir if it exists, else cwd */
    int      straggler_every;     /* steps per straggler check; 0 = off */
    double   straggler_ratio;     /* busy time over the others' median that names a rank */
};

/* Fill *cfg with the defaults (config.c; strata_config_create's contents). */
void config_defaults(strata_config_t *cfg);

/* What io/ records through ctx->op_begin: a checkpoint save or load (under
 * ckpt_timeout) or another blocking MPI call (collective_timeout). */
typedef enum { BASE_OP_CKPT_SAVE, BASE_OP_CKPT_LOAD, BASE_OP_MPI } base_op_kind_t;

struct strata_context {
    MPI_Comm         comm;           /* private duplicate of the user's comm */
    int              rank;
    int              size;
    int              thread_level;   /* MPI level granted */
    int              owns_mpi;       /* we called MPI_Init_thread */
    strata_config_t  cfg;
    const char      *backend_name;   /* "host" or "cuda" */
    const struct comm_backend *comm_ops;
    struct strata_group *world;
    int              oversubscribed; /* more ranks on this node than CPUs it may use */
    int              node_ranks, node_cpus; /* ranks of the job on this node; CPUs this rank may use */
    double           comm_blocked_s; /* seconds the caller's threads waited in collectives
                                      * (strata_request_wait, comm_check): not busy */
    struct tiers_state *tiers;       /* memory tiers and copy engines */
    struct comm_recorder *rec;       /* flight recorder; NULL when off */
    /* set by comm/ with the recorder (NULL when off): how io/, below comm,
     * makes a whole checkpoint save or load one recorded operation */
    uint64_t (*op_begin)(strata_context_t *ctx, base_op_kind_t kind);
    void     (*op_end)(strata_context_t *ctx, uint64_t op, strata_status_t st);
    int              device;         /* cuda backend: the rank's CUDA device; else -1 */
    size_t           nccl_dev_bytes; /* cuda: device bytes NCCL's communicators took at their
                                      * init (the drop of cudaMemGetInfo), which the device
                                      * tier reserves; the nccl_bytes test fault on the host */
    void            *compute_stream; /* cuda backend: the callbacks' cudaStream_t; else NULL */
    const struct fsdp_dev_ops *dev_ops; /* where fsdp/ runs its arithmetic (fsdp/dev.h) */
    void            *dev_state;      /* that backend's own (cuda: releases pending on the stream) */
    pthread_mutex_t  mpi_lock;       /* serialises MPI below THREAD_MULTIPLE */
    pthread_mutex_t  err_lock;
    char             errmsg[STRATA_ERRMSG_LEN];
    int              live_models;    /* created and not destroyed: finalize refuses */
};

/* Record a detailed message on ctx (may be NULL: then it is only logged)
 * and return status, so call sites read: return base_error(ctx, ST, ...). */
strata_status_t base_error(strata_context_t *ctx, strata_status_t status,
                           const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void base_clear_error(strata_context_t *ctx);

/* Logging without a context (before init, or in pure code paths): rank is
 * taken from MPI when initialised. Level from STRATA_LOG_LEVEL. */
void base_log_raw(int rank, strata_log_level_t level, const char *fmt, va_list ap);
int  base_log_enabled(const strata_context_t *ctx, strata_log_level_t level);

#define STRATA_LOG(ctx, lvl, ...) \
    do { if (base_log_enabled((ctx), (lvl))) strata_log((ctx), (lvl), __VA_ARGS__); } while (0)
#define strata_warn(ctx, ...)  STRATA_LOG(ctx, STRATA_LOG_WARN, __VA_ARGS__)
#define strata_info(ctx, ...)  STRATA_LOG(ctx, STRATA_LOG_INFO, __VA_ARGS__)
#define strata_debug(ctx, ...) STRATA_LOG(ctx, STRATA_LOG_DEBUG, __VA_ARGS__)

/* Set one option (by table name) from its STRATA_* variable, or to its
 * default when unset or unparsable: for code that runs without a context
 * (config.c; every STRATA_* variable is read through the table). */
void config_option_from_env(strata_config_t *cfg, const char *name);

/* Checked arithmetic: 0 on success, -1 on overflow (result untouched). */
static inline int strata_mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return -1;
    *out = r;
    return 0;
}
static inline int strata_add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return -1;
    *out = r;
    return 0;
}

/* Convert an MPI error code to a status with MPI's own message. */
strata_status_t base_mpi_error(strata_context_t *ctx, int mpi_rc, const char *what);

/* Monotonic seconds. */
double base_now(void);

/* More ranks of comm on this node than CPUs this process may run on:
 * then a rank that spins while it waits takes the core a late peer needs.
 * *local_p (may be NULL): comm's ranks on this node; *cpus_p: the CPUs
 * this process may run on. Collective over comm. */
int base_node_oversubscribed(MPI_Comm comm, int *local_p, int *cpus_p);
/* How long a wait for peers spins before it sleeps where the node is not
 * oversubscribed: the check before each collective (comm.c, agree), and
 * strata calibrate's rounds that measure it. */
#define BASE_CHECK_SPIN_S 1e-3

/* The process-wide HDF5 lock (h5lock.c), recursive: Debian's HDF5 is not
 * thread-safe, so every HDF5 call of the library holds it (io/io.h says who
 * takes it where). trylock: 1 when taken (for tests). */
void base_h5_lock(void);
void base_h5_unlock(void);
int base_h5_trylock(void);

#endif
