/*
 * strata/ckpt.h - HDF5 checkpoints of sharded models.
 * Included by strata.h; do not include directly.
 *
 * A checkpoint is one HDF5 file that holds every tensor in its full logical
 * shape (the file format is in docs/checkpoint-format.md). It is written by
 * all ranks together, each writing the part its shard covers, and read back
 * by any number of ranks with any shard size: each rank reads exactly the
 * elements of its new shard.
 *
 * The caller describes its sharded state with a layout (strata_ckpt_layout_t),
 * a plain struct of arrays that the caller owns. The shard geometry is:
 *   - a unit's parameters are concatenated, in the order given, into one flat
 *     fp32 vector; param.offset is where a parameter starts in it; the
 *     parameters may not overlap and must lie inside [0, npad);
 *   - the flat vector is padded to npad, a multiple of the shard size S;
 *   - shard rank s of a shard group holds elements [s*npad/S, (s+1)*npad/S);
 *   - with hybrid sharding (world size W = S * R) the R replica groups hold
 *     identical shards; only replica 0 writes, every replica reads;
 *   - optimizer state shards ("exp_avg", "momentum", ...) have the same
 *     geometry as the parameter shard.
 * A shard may span several parameters and partial rows.
 *
 * Every function but strata_ckpt_lock_holder (a query) returns a
 * strata_status_t; the detailed message (naming the file and dataset) is
 * kept on the context (strata_last_error). Collective functions return the
 * same status and message on every rank.
 */
#ifndef STRATA_CKPT_H
#define STRATA_CKPT_H

#ifndef STRATA_H
#error "include strata.h, not strata/ckpt.h"
#endif

#define STRATA_CKPT_FORMAT      "strata-checkpoint"
#define STRATA_CKPT_VERSION     1         /* the format version written and read */
#define STRATA_CKPT_MAX_DIMS    8         /* tensor rank limit */
#define STRATA_CKPT_MAX_NAME    128       /* unit, parameter and state names: bytes incl. NUL */

/* One parameter of a unit: its full logical shape (row-major) and where it
 * starts in the unit's flat vector. ndims >= 1 (a scalar is dims {1}). */
typedef struct strata_ckpt_param {
    const char *name;
    int         ndims;
    uint64_t    dims[STRATA_CKPT_MAX_DIMS];
    uint64_t    offset;
} strata_ckpt_param_t;

/* One optimizer state tensor of a unit ("exp_avg", "exp_avg_sq",
 * "momentum"): this rank's shard, npad/S elements, same geometry as the
 * parameter shard. Written into by load. */
typedef struct strata_ckpt_state {
    const char *name;
    float      *shard;
} strata_ckpt_state_t;

/* An optimizer scalar of a unit (e.g. "step", "lr"): saved as an attribute,
 * value overwritten by load (a scalar missing from the file is an error). */
typedef struct strata_ckpt_scalar {
    const char *name;
    double      value;
} strata_ckpt_scalar_t;

typedef struct strata_ckpt_unit {
    const char           *name;
    uint64_t              npad;        /* padded flat length, multiple of S */
    int                   nparams;
    const strata_ckpt_param_t *params; /* in registration order */
    float                *shard;       /* this rank's fp32 master shard, npad/S elements */
    int                   nstates;
    strata_ckpt_state_t  *states;
    int                   nscalars;
    strata_ckpt_scalar_t *scalars;
} strata_ckpt_unit_t;

/* Training position, saved under /train. On load step and data_pos are
 * overwritten, and rng (rng_len bytes, owned by the caller) is filled; the
 * file's RNG state must have exactly rng_len bytes. */
typedef struct strata_ckpt_train {
    uint64_t step;          /* completed optimizer steps; names the file */
    uint64_t data_pos;      /* position in the data stream (tokens, samples: caller's unit) */
    void    *rng;
    size_t   rng_len;
} strata_ckpt_train_t;

/* Model configuration, saved as root attributes "config.<key>" (strings). */
typedef struct strata_ckpt_kv {
    const char *key;
    const char *value;
} strata_ckpt_kv_t;

/* The whole description of one rank's sharded state. Every rank passes a
 * layout with the same units, parameters, states, scalars names, S and W
 * (checked); only the pointers, shard_rank and replica differ. */
typedef struct strata_ckpt_layout {
    int                 nunits;
    strata_ckpt_unit_t *units;
    int                 shard_size;    /* S */
    int                 shard_rank;    /* s in [0, S) */
    int                 replica;       /* r in [0, W/S); only replica 0 writes */
    int                 world_size;    /* W, the size of the context's communicator */
    strata_ckpt_train_t train;
    int                 nconfig;
    const strata_ckpt_kv_t *config;
} strata_ckpt_layout_t;

/* Options of a save; a growable structure (strata.h): set it up
 * with strata_ckpt_save_opts_default, then change fields. */
typedef struct strata_ckpt_save_opts {
    size_t size;            /* set by strata_ckpt_save_opts_default */
    /* STRATA_F32 (the default, 0): no extra copy. STRATA_BF16 or STRATA_F16:
     * also write the parameters rounded to 16 bits under /model_bf16 or
     * /model_f16, for inference-size exports. */
    strata_dtype_t half_copy;
    /* Newest checkpoints kept by strata_ckpt_save: > 0 keeps that many,
     * 0 takes the ckpt_keep option (default 3), < 0 keeps all. */
    int keep;
} strata_ckpt_save_opts_t;

/* Fill *opts (size bytes) with the defaults (no half copy, keep 0) and set
 * opts->size; call it through the macro, which passes the program's size.
 * STRATA_ERR_INVALID for NULL or a size no version of the struct has. */
strata_status_t strata_ckpt_save_opts_init(strata_ckpt_save_opts_t *opts, size_t size);
#define strata_ckpt_save_opts_default(opts) strata_ckpt_save_opts_init((opts), sizeof *(opts))

/* The elements [begin, end) of the flat vector held by shard rank s. */
strata_status_t strata_ckpt_shard_range(uint64_t npad, int shard_size, int shard_rank,
                                        uint64_t *begin_p, uint64_t *end_p);

/*
 * Write the layout's state to path, atomically: path.tmp is written, closed
 * and fsync'ed (file and directory), then renamed to path. On failure path
 * is untouched (an older file of that name stays) and path.tmp may remain.
 * Collective over the context's communicator. opts may be NULL. Each call
 * of strata_ckpt_write, strata_ckpt_save or strata_ckpt_load is one
 * operation of the flight recorder under ckpt_timeout (docs/flight.md).
 */
strata_status_t strata_ckpt_write(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                  const char *path, const strata_ckpt_save_opts_t *opts);

/*
 * Save into directory dir (created if missing) as step-<8 digits>.h5 with
 * the number layout->train.step, then point dir/latest at it (written as
 * latest.tmp + fsync + rename) and delete all but the newest K checkpoints
 * (only after the new one is complete). The file's path goes into path_p
 * (len bytes) when path_p is not NULL. Collective.
 */
strata_status_t strata_ckpt_save(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                 const char *dir, const strata_ckpt_save_opts_t *opts,
                                 char *path_p, size_t len);

/*
 * Read path into the layout's shards, optimizer states, scalars and train
 * data, whatever world and shard size wrote it. Padding elements become 0.
 * Checksums of every region read are verified. The file's shapes must match
 * the layout's (else STRATA_ERR_MISMATCH naming the dataset). With
 * layout->nconfig > 0 the file's config.<key> attributes are compared with
 * the layout's first: a key recorded with another value fails the load
 * with STRATA_ERR_CONFIG, naming every difference, before any tensor is
 * read (a key the file lacks is not compared). On failure the shards may
 * hold partial data. Collective.
 */
strata_status_t strata_ckpt_load(strata_context_t *ctx, strata_ckpt_layout_t *layout,
                                 const char *path);

/*
 * The newest complete checkpoint in dir: the file dir/latest names, if it
 * opens as a strata checkpoint, else the highest-numbered step-*.h5 that
 * does. Its path goes into path_p (len bytes). STRATA_ERR_NOT_FOUND when
 * there is none. Not collective (call it on every rank, or on one and
 * broadcast). ctx may be NULL.
 */
strata_status_t strata_ckpt_find_latest(strata_context_t *ctx, const char *dir,
                                        char *path_p, size_t len);

/*
 * One job per checkpoint directory. strata_ckpt_dir_lock (collective, at
 * the start of a job) makes dir if needed, checks that it is a writable
 * directory, and creates dir/lock ("host=H pid=P start=T job=J pstart=S",
 * S the process's start in clock ticks since boot) on rank 0, or takes
 * over the lock of a holder that is provably gone (same host and its pid
 * is dead, a zombie, or a process started at another time than S; or the
 * same $SLURM_JOB_ID) with a warning; a live or unknown holder, or a lock
 * that cannot be removed, refuses the job with STRATA_ERR_STATE naming it. With
 * the lock held it removes the step-*.tmp files of saves that died.
 * strata_ckpt_dir_unlock removes the lock if it is this process's.
 * strata_ckpt_lock_holder describes the holder of dir's lock into buf:
 * 0, or -1 when there is no readable lock.
 */
#define STRATA_CKPT_LOCK_NAME "lock"
strata_status_t strata_ckpt_dir_lock(strata_context_t *ctx, const char *dir);
strata_status_t strata_ckpt_dir_unlock(strata_context_t *ctx, const char *dir);
int strata_ckpt_lock_holder(const char *dir, char *buf, size_t len);

/*
 * Check a checkpoint file on one process, whatever world size wrote it:
 * header attributes, that every tensor is covered by checksummed regions
 * and every recorded region hashes to its stored value, that no tensor is
 * missing. One line per problem (and a summary) goes to report when not
 * NULL. Returns the first problem's status. ctx may be NULL.
 */
strata_status_t strata_ckpt_verify(strata_context_t *ctx, const char *path, FILE *report);

/* Print the header, step and every tensor (dtype, shape, bytes) to out.
 * One process. ctx may be NULL. */
strata_status_t strata_ckpt_info(strata_context_t *ctx, const char *path, FILE *out);

/* Compare the tensors of two checkpoints: for each tensor of a, its max
 * absolute and max relative difference to the same tensor of b, one line
 * each to out. *differs_p = 1 when a value differs or a tensor is missing
 * on either side or has another shape. One process. ctx may be NULL. */
strata_status_t strata_ckpt_diff(strata_context_t *ctx, const char *a, const char *b,
                                 FILE *out, int *differs_p);

#endif /* STRATA_CKPT_H */
