/*
 * strata.h - public API of libstrata: MPI-distributed FSDP training with
 * memory offload tiers.
 *
 * Conventions (every function in this header and the ones it includes):
 *  - a function that can fail returns strata_status_t: 0 is success,
 *    negative values are errors. The others cannot fail and return their
 *    answer directly: queries and accessors (strata_rank, strata_block_ptr,
 *    the *_name functions, strata_call_batch, ...; each says what it gives
 *    for NULL or an index out of range), releases (the *_destroy and
 *    *_release functions: void, NULL is a no-op), printing and logging,
 *    and the dtype conversions;
 *  - out-parameters end in _p and are written only on success;
 *  - on failure a message a person can act on is kept per context and read
 *    with strata_last_error(); functions without a context log it instead;
 *  - the library never calls exit() or abort() on bad input;
 *  - a pointer a function returns (not through an out-parameter the caller
 *    then owns) is borrowed: its lifetime is stated at the function, and
 *    the caller never frees it. Static strings (strata_strerror, the
 *    *_name functions of enums) live as long as the process;
 *  - structures the library reads or fills (strata_model_opts_t,
 *    strata_model_stats_t, strata_ckpt_save_opts_t, strata_gradcheck_t)
 *    start with `size_t size`, the sizeof the program was compiled with,
 *    set by their initialiser (strata_model_opts_default,
 *    STRATA_MODEL_STATS_INIT, strata_ckpt_save_opts_default,
 *    STRATA_GRADCHECK_INIT). Later versions only append fields
 *    and keep the size a multiple of 8, so the library knows which fields
 *    a program has: it reads only those of an options struct (the others
 *    take their defaults) and fills a statistics struct only as far as its
 *    size reaches. A size never set (0, garbage) fails with
 *    STRATA_ERR_INVALID naming the initialiser; so does a struct from a
 *    newer strata.h that sets a field this library does not have.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <mpi.h>

#include "strata/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef enum {
    STRATA_OK               =   0,
    STRATA_INPROGRESS       =   1,  /* nonblocking operation not finished yet */
    STRATA_ERR_INVALID      =  -1,  /* bad argument (NULL, out of range, ...) */
    STRATA_ERR_NOMEM        =  -2,  /* the C heap could not satisfy a request */
    STRATA_ERR_TIER_FULL    =  -3,  /* a tier's byte budget would be exceeded */
    STRATA_ERR_FRAGMENTED   =  -4,  /* enough bytes free, but not contiguous */
    STRATA_ERR_OVERFLOW     =  -5,  /* sizes or counts overflow their type */
    STRATA_ERR_STATE        =  -6,  /* call not valid in the current state */
    STRATA_ERR_MISMATCH     =  -7,  /* shapes, sizes or dtypes disagree */
    STRATA_ERR_CONFIG       =  -8,  /* unknown option or unparsable value */
    STRATA_ERR_MPI          =  -9,  /* an MPI call failed */
    STRATA_ERR_NCCL         = -10,  /* an NCCL call failed */
    STRATA_ERR_CUDA         = -11,  /* a CUDA runtime call failed */
    STRATA_ERR_HDF5         = -12,  /* an HDF5 call failed */
    STRATA_ERR_IO           = -13,  /* a file system call failed */
    STRATA_ERR_CHECKSUM     = -14,  /* data read back does not match its checksum */
    STRATA_ERR_FORMAT       = -15,  /* a file is not in a format strata reads */
    STRATA_ERR_NOT_FOUND    = -16,  /* a named thing does not exist */
    STRATA_ERR_UNSUPPORTED  = -17,  /* not available in this build or on this machine */
    STRATA_ERR_CANCELLED    = -18,  /* operation cancelled (shutdown) */
    STRATA_ERR_TIMEOUT      = -19,  /* gave up waiting */
    STRATA_ERR_ACCESS       = -20,  /* a file may not be read or written (EACCES, EPERM) */
    STRATA_ERR_LAST         = -21   /* one past the last error in this version */
} strata_status_t;

/*
 * Codes may grow: later versions add errors below STRATA_ERR_LAST (which
 * moves down with them) and never renumber or reuse a code. The range
 * -1 ... -999 is reserved for strata's errors and 2 ... 99 for further
 * non-error states; a caller should treat any unknown negative code as a
 * failure (strata_strerror names it "unknown status").
 */
#define STRATA_ERR_RANGE_MIN (-999)

/* A static, one-line description of a status code; never NULL. */
const char *strata_strerror(strata_status_t status);

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/* The version of the library actually loaded (may differ from the macros in
 * strata/version.h that the caller was compiled against). */
void strata_version(int *major_p, int *minor_p, int *patch_p);
const char *strata_version_string(void);

/* ------------------------------------------------------------------------ */
/* Element types and reductions                                              */
/* ------------------------------------------------------------------------ */

typedef enum {
    STRATA_F32  = 0,
    STRATA_BF16 = 1,
    STRATA_F16  = 2,
    STRATA_DTYPE_COUNT
} strata_dtype_t;

typedef enum {
    STRATA_SUM = 0,
    STRATA_AVG = 1,     /* sum divided by the group size */
    STRATA_REDOP_COUNT
} strata_redop_t;

/* Bytes per element (4, 2, 2); 0 for an invalid dtype. */
size_t strata_dtype_size(strata_dtype_t dtype);
const char *strata_dtype_name(strata_dtype_t dtype);

/* Conversions between f32 and the 16-bit formats: round to nearest even,
 * NaN stays NaN, overflow gives infinity. n may be 0; src and dst may not
 * overlap. */
void strata_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
void strata_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
void strata_f32_to_f16(const float *src, uint16_t *dst, size_t n);
void strata_f16_to_f32(const uint16_t *src, float *dst, size_t n);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

typedef enum {
    STRATA_LOG_ERROR = 0,
    STRATA_LOG_WARN  = 1,
    STRATA_LOG_INFO  = 2,
    STRATA_LOG_DEBUG = 3,
    STRATA_LOG_TRACE = 4
} strata_log_level_t;

typedef enum {
    STRATA_BACKEND_AUTO = 0,  /* cuda when a device answers, else host */
    STRATA_BACKEND_HOST = 1,
    STRATA_BACKEND_CUDA = 2
} strata_backend_kind_t;

/*
 * A set of options, opaque: every option is a row of the option table
 * (name, default, doc, parser; `strata config -v` lists them) and is read
 * and written by name, so options can be added without changing the ABI.
 * Names compare case-insensitively with '-' and '_' alike. Sizes are bytes,
 * bandwidths bytes per second (0 = unpaced), times seconds.
 *
 * Lifetime: a handle from strata_config_create or strata_config_dup belongs
 * to the caller until strata_config_destroy. strata_init copies it, so it
 * may be destroyed right after. The one from strata_get_config is borrowed.
 * A handle is not locked: one thread at a time may change it.
 */
typedef struct strata_config strata_config_t;

/* A new set holding the defaults (the environment is not read). */
strata_status_t strata_config_create(strata_config_t **cfg_p);
/* A copy of cfg, to change without touching the original. */
strata_status_t strata_config_dup(const strata_config_t *cfg, strata_config_t **copy_p);
/* NULL is a no-op. */
void strata_config_destroy(strata_config_t *cfg);

/* Apply STRATA_<NAME> environment variables (e.g. STRATA_DEVICE_MEM=512M)
 * on top of cfg's current values. On a bad value returns STRATA_ERR_CONFIG
 * with a message naming the variable in errbuf (may be NULL); cfg then
 * holds every override that parsed, the bad ones left as they were. */
strata_status_t strata_config_read_env(strata_config_t *cfg, char *errbuf, size_t errlen);

/* Set one option from a string, as a user types it: sizes accept k/K, M,
 * G, T suffixes (powers of 1024) and "inf"; booleans 1/0/yes/no/on/off/
 * true/false; options with a fixed set of values (log_level, backend,
 * schedule, ckpt_mpio) only those, and the message lists them.
 * STRATA_ERR_CONFIG for an unknown name or a bad value (the option keeps
 * its value; errbuf, may be NULL, says why). */
strata_status_t strata_config_set(strata_config_t *cfg, const char *name,
                                  const char *value, char *errbuf, size_t errlen);

/* Typed access. _int: integer, boolean (0/1) and fixed-set options (the
 * value's index in the list strata_config_set names, e.g. schedule 0 = lhs,
 * 1 = naive; log_level and backend as strata_log_level_t and
 * strata_backend_kind_t); _size: sizes (SIZE_MAX = inf; STRATA_SIZE_AUTO =
 * "auto", which host_mem alone takes); _double: bandwidths and times. Setters check values as strata_config_set does.
 * Errors: STRATA_ERR_NOT_FOUND (no such option), STRATA_ERR_MISMATCH
 * (the option holds another type), STRATA_ERR_CONFIG (value refused);
 * nothing is changed then. */
#define STRATA_SIZE_AUTO (SIZE_MAX - 1)
strata_status_t strata_config_set_int(strata_config_t *cfg, const char *name, long long value,
                                      char *errbuf, size_t errlen);
strata_status_t strata_config_set_size(strata_config_t *cfg, const char *name, size_t value,
                                       char *errbuf, size_t errlen);
strata_status_t strata_config_set_double(strata_config_t *cfg, const char *name, double value,
                                         char *errbuf, size_t errlen);
strata_status_t strata_config_get_int(const strata_config_t *cfg, const char *name, long long *value_p);
strata_status_t strata_config_get_size(const strata_config_t *cfg, const char *name, size_t *value_p);
strata_status_t strata_config_get_double(const strata_config_t *cfg, const char *name, double *value_p);
/* Any option as text that strata_config_set reads back to the same value
 * (sizes in bytes or "inf", booleans on/off, fixed sets by name).
 * STRATA_ERR_OVERFLOW when it does not fit in len bytes (buf untouched). */
strata_status_t strata_config_get(const strata_config_t *cfg, const char *name, char *buf, size_t len);

/* Write one "name = value" line per option, with its doc when verbose. */
void strata_config_print(const strata_config_t *cfg, FILE *out, int verbose);

/* Parse "512M", "4G", "1.5k", "4096", "inf" into bytes. */
strata_status_t strata_parse_size(const char *text, size_t *bytes_p);
/* Format bytes as e.g. "512 MiB" into buf; returns buf. */
const char *strata_format_size(size_t bytes, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct strata_context strata_context_t;

/*
 * Create a context over the ranks of comm (duplicated; the caller keeps
 * ownership of comm). If MPI is not initialised yet, strata_init calls
 * MPI_Init_thread asking for MPI_THREAD_MULTIPLE and strata_finalize then
 * calls MPI_Finalize; otherwise MPI is left to the caller. The options are
 * copied from cfg; cfg may be NULL (defaults plus environment; a bad
 * STRATA_* value then fails with STRATA_ERR_CONFIG, logged). Collective
 * over comm.
 */
strata_status_t strata_init(MPI_Comm comm, const strata_config_t *cfg,
                            strata_context_t **ctx_p);
/* Release everything the context owns: the world group, the tiers with
 * their copy engines (queued copies are cancelled), every block still
 * allocated and the spill directory. Groups from strata_group_split,
 * models and events are not: destroy or release them first, as they refer
 * to the context. Every pointer borrowed from ctx is invalid afterwards.
 * A model of the context still alive: STRATA_ERR_STATE saying so, and
 * nothing is released (destroy it and call again). NULL is a no-op.
 * Collective. */
strata_status_t strata_finalize(strata_context_t *ctx);

/* The detailed message of the last failed call on ctx ("" if none; "" for
 * a NULL ctx). Borrowed: it points into ctx, stays valid until
 * strata_finalize(ctx), and its text is overwritten by the next failure of
 * any call on ctx, from any thread; copy it to keep it. */
const char *strata_last_error(const strata_context_t *ctx);
int strata_rank(const strata_context_t *ctx);
int strata_world_size(const strata_context_t *ctx);
/* The options the context runs with (a copy taken by strata_init), for
 * the strata_config_get* functions. Borrowed: valid until
 * strata_finalize(ctx); never changes, never destroy it. NULL for NULL. */
const strata_config_t *strata_get_config(const strata_context_t *ctx);
/* The MPI thread level granted (MPI_THREAD_SINGLE ... MULTIPLE). */
int strata_thread_level(const strata_context_t *ctx);
/* "host" or "cuda": the backend actually in use ("none" for NULL). A static
 * string. */
const char *strata_backend_name(const strata_context_t *ctx);

/* Write this rank's flight record (the last flight_entries operations) to
 * <flight_dir>/flight.<rank>.json now, e.g. before a program aborts on a
 * fatal error; reason is stored in it. STRATA_OK also when the recorder is
 * off (flight_entries = 0: nothing written). Format: docs/flight.md. */
strata_status_t strata_flight_dump(strata_context_t *ctx, const char *reason);

/* Before a program ends its job without strata_finalize (MPI_Abort after a
 * fatal error): remove at once what only this process uses on disk, its
 * spill directory (the next job would reclaim it, but only on this host
 * and only if it shares spill_dir). Not collective; waits for nothing.
 * The storage tier fails from then on: call it only on the way out. */
strata_status_t strata_abandon(strata_context_t *ctx);

/* Log through the context: "[strata r3 INFO] message". Messages above the
 * configured level are not formatted at all. */
void strata_log(const strata_context_t *ctx, strata_log_level_t level,
                const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------ */
/* Collectives                                                               */
/* ------------------------------------------------------------------------ */

/*
 * A group is a set of ranks that run collectives together. The world group
 * covers every rank of the context. strata_group_split makes the two groups
 * of hybrid sharding: with S dividing W, rank r is in shard group r / S
 * (ranks r - r%S ... r - r%S + S-1) and in replica group r % S (ranks with
 * the same r % S). S = W gives one shard group (plain FSDP) and replica
 * groups of one rank; S = 1 gives plain data parallelism.
 */
typedef struct strata_group strata_group_t;
typedef struct strata_request strata_request_t;

/* The group of every rank of the context. Borrowed: owned by ctx, valid
 * until strata_finalize(ctx); strata_group_destroy on it is a no-op. NULL
 * for NULL. */
strata_group_t *strata_world_group(strata_context_t *ctx);
/* The two groups are the caller's, to strata_group_destroy before
 * strata_finalize. On failure neither is written. Collective. */
strata_status_t strata_group_split(strata_context_t *ctx, int shard_size,
                                   strata_group_t **shard_p,
                                   strata_group_t **replica_p);
/* NULL and the world group are no-ops. Collective over the group. */
void strata_group_destroy(strata_group_t *group);
int strata_group_rank(const strata_group_t *group);
int strata_group_size(const strata_group_t *group);

/*
 * Nonblocking collectives. Each starts the operation and returns a request
 * in *req_p; the buffers belong to the operation until strata_request_wait
 * returns (or strata_request_test reports completion). count is elements.
 *
 * 16-bit reductions (bf16, f16): the inputs are widened to f32, reduced in
 * f32 on the wire, and the result rounded once to the 16-bit format. The
 * error against the exact sum is therefore at most half an ulp of the
 * 16-bit result plus the f32 summation error (n-1 additions of 2^-24
 * relative each). This costs twice the bytes of a 16-bit wire format.
 *
 *  allgather:      recv[g*count + i] = send_of_rank_g[i]         (recv: size*count)
 *  reduce_scatter: recv[i] = op_g(send_of_rank_g[rank*count + i]) (send: size*count)
 *  allreduce:      recv[i] = op_g(send_of_rank_g[i])             (in place if send == recv)
 *  broadcast:      buf of every rank = buf of root
 */
strata_status_t strata_allgather_start(strata_group_t *g, const void *send,
                                       void *recv, size_t count,
                                       strata_dtype_t dtype,
                                       strata_request_t **req_p);
strata_status_t strata_reduce_scatter_start(strata_group_t *g, const void *send,
                                            void *recv, size_t count,
                                            strata_dtype_t dtype, strata_redop_t op,
                                            strata_request_t **req_p);
strata_status_t strata_allreduce_start(strata_group_t *g, const void *send,
                                       void *recv, size_t count,
                                       strata_dtype_t dtype, strata_redop_t op,
                                       strata_request_t **req_p);
strata_status_t strata_broadcast_start(strata_group_t *g, void *buf, size_t count,
                                       strata_dtype_t dtype, int root,
                                       strata_request_t **req_p);
strata_status_t strata_barrier_start(strata_group_t *g, strata_request_t **req_p);

/* *done_p = 1 once complete (the request is then still valid until wait).
 * On failure (STRATA_ERR_MPI or _NCCL, message on the context) *done_p is
 * not written, the operation is over and the receive buffer's contents
 * are undefined; the request stays allocated: release it with
 * strata_request_wait, which returns the same error without waiting. */
strata_status_t strata_request_test(strata_request_t *req, int *done_p);
/* Wait for completion and release the request, whatever the outcome: after
 * it returns req is gone, and on failure (STRATA_ERR_MPI or _NCCL) the
 * receive buffer's contents are undefined. NULL is a no-op (STRATA_OK). */
strata_status_t strata_request_wait(strata_request_t *req);

/* Blocking conveniences: start + wait. */
strata_status_t strata_allgather(strata_group_t *g, const void *send, void *recv,
                                 size_t count, strata_dtype_t dtype);
strata_status_t strata_reduce_scatter(strata_group_t *g, const void *send, void *recv,
                                      size_t count, strata_dtype_t dtype,
                                      strata_redop_t op);
strata_status_t strata_allreduce(strata_group_t *g, const void *send, void *recv,
                                 size_t count, strata_dtype_t dtype, strata_redop_t op);
strata_status_t strata_broadcast(strata_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype, int root);
strata_status_t strata_barrier(strata_group_t *g);

/* Name of the collective backend in use: "mpi", "staged" (device buffers
 * through pinned host memory and MPI) or "nccl"; a static string. */
const char *strata_comm_backend_name(const strata_context_t *ctx);

/* ------------------------------------------------------------------------ */
/* Further parts of the API, one header each                                 */
/* ------------------------------------------------------------------------ */
#include "strata/tiers.h"     /* memory tiers, blocks, copy engines, events */
#include "strata/ckpt.h"      /* HDF5 checkpoints: save, load with resharding, verify */
#include "strata/fsdp.h"      /* sharded models: units, the step, the optimizer */

#ifdef __cplusplus
}
#endif

#endif /* STRATA_H */
