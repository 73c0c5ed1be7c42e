/*
 * io.h - internal header of io/, the HDF5 checkpoint formats: save, load
 * with resharding, inspect and verify (io/ckpt_*.c). Not installed. The
 * storage tier's spill file, also HDF5, is the tier's own: tiers/spill.h.
 *
 * Threads and HDF5. Debian's parallel HDF5 is not thread-safe, and two
 * threads can want it at once: the tiers' I/O thread (spill file and
 * datasets) and a checkpoint on the caller's thread while a move to the
 * storage tier is still in flight. So every HDF5 call of the library holds
 * the one process-wide HDF5 lock (base_h5_lock, base/h5lock.c):
 * spill_file_open, spill_file_dataset and spill_file_close take it
 * themselves, and every checkpoint entry point holds it from ckpt_h5_quiet
 * to ckpt_h5_restore (its whole HDF5 part, collective calls included). A
 * checkpoint therefore delays a spill that needs a new dataset until it is
 * done; raw spill reads and writes (pwrite/pread on the file descriptor)
 * need no lock and go on. No holder waits for another rank while another
 * thread of its own process waits for the lock with a remote dependency:
 * the spill's HDF5 calls are local (a serial file per rank), so a
 * checkpoint's collective calls cannot deadlock on it.
 */
#ifndef STRATA_IO_H
#define STRATA_IO_H

#include <stdint.h>
#include <hdf5.h>

#include "base/base.h"
#include "base/agree.h"

/* ======================================================================== */
/* Checkpoints (io/ckpt_*.c)                                                 */
/* ======================================================================== */

/* A box (hyperslab block) of a row-major tensor: start and count per dim. */
typedef struct ckpt_box {
    uint64_t start[STRATA_CKPT_MAX_DIMS];
    uint64_t count[STRATA_CKPT_MAX_DIMS];
} ckpt_box_t;

/* A flat range of an n-d tensor needs at most 2n-1 boxes (3 for a matrix:
 * partial first row, whole rows, partial last row). */
#define CKPT_MAX_BOXES (2 * STRATA_CKPT_MAX_DIMS - 1)

/*
 * Decompose the flat element range [a, b) of a row-major tensor of shape
 * dims[0..ndims-1] into boxes whose union is exactly the range, in flat
 * order, disjoint, at most 2*ndims-1 of them. Writes the boxes into
 * boxes[CKPT_MAX_BOXES] and returns their number (0 for an empty range), or
 * -1 for bad arguments (ndims out of 1..MAX_DIMS, b > numel, a > b, a zero
 * dim with a nonempty range). Pure.
 */
int ckpt_range_boxes(int ndims, const uint64_t *dims, uint64_t a, uint64_t b,
                     ckpt_box_t *boxes);

/* Product of dims into *numel; -1 on overflow or a bad ndims. Pure. */
int ckpt_numel(int ndims, const uint64_t *dims, uint64_t *numel);

/* Intersection of [a, b) and [c, d) into [*lo, *hi); returns 1 when it is
 * not empty, else 0 (and *lo = *hi). Pure. */
static inline int ckpt_overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                               uint64_t *lo, uint64_t *hi)
{
    uint64_t l = a > c ? a : c, h = b < d ? b : d;
    if (l >= h) { *lo = *hi = l; return 0; }
    *lo = l;
    *hi = h;
    return 1;
}

/* ---- HDF5 plumbing shared by save, load and the inspectors (ckpt_h5.c) */

/* Bracket every checkpoint entry point's HDF5 calls: quiet takes the HDF5
 * lock (base_h5_lock) and switches HDF5's automatic error printing off,
 * restore switches it back and releases the lock. Failures become strata
 * messages instead of stack dumps on stderr. No HDF5 call before quiet or
 * after restore. */
typedef struct ckpt_h5quiet {
    H5E_auto2_t func;
    void       *data;
} ckpt_h5quiet_t;
void ckpt_h5_quiet(ckpt_h5quiet_t *q);
void ckpt_h5_restore(const ckpt_h5quiet_t *q);
/* The most specific message on HDF5's current error stack (or ""). */
const char *ckpt_h5_msg(char *buf, size_t len);

/* Attributes. Writes are collective under collective metadata writes: every
 * rank passes the same values. Reads validate class, size and shape first:
 * 0 = read, -1 = missing, -2 = wrong type, shape or size. */
int ckpt_attr_put_str(hid_t obj, const char *name, const char *value);
int ckpt_attr_put_strs(hid_t obj, const char *name, int n, const char *const *v);
int ckpt_attr_put_i64(hid_t obj, const char *name, int64_t value);
int ckpt_attr_put_u64(hid_t obj, const char *name, uint64_t value);
int ckpt_attr_put_f64(hid_t obj, const char *name, double value);
int ckpt_attr_get_str(hid_t obj, const char *name, char *buf, size_t len);
int ckpt_attr_get_i64(hid_t obj, const char *name, int64_t *value);
int ckpt_attr_get_f64(hid_t obj, const char *name, double *value);

/* The root attributes every reader checks. */
typedef struct ckpt_header {
    char     format[64];
    int64_t  version;
    char     strata_version[64];
    char     created[64];
    int64_t  world_size;
    int64_t  shard_size;
    uint64_t step;
} ckpt_header_t;

/*
 * Open a checkpoint read-only and check its header: comm is MPI_COMM_NULL
 * for a single-process open (sec2 driver), else every rank of comm opens it
 * through MPI-IO with collective metadata reads. Errors name the file:
 * NOT_FOUND (missing), FORMAT (not HDF5, not a strata checkpoint, unknown
 * version, bad attribute), HDF5 (HDF5 could not open it, e.g. truncated).
 */
strata_status_t ckpt_open(strata_context_t *ctx, const char *path, MPI_Comm comm,
                          hid_t *file_p, ckpt_header_t *hdr);

/* One checksummed region of a tensor: elements [off, off+len) in the
 * tensor's row-major order, written by shard rank `writer`. */
typedef struct ckpt_region {
    uint64_t off, len, hash;
    int      writer;
} ckpt_region_t;

typedef struct ckpt_sumtab_entry {
    char          *path;       /* "/model/u/p", "/optim/u/p/exp_avg", ... */
    int            nregions;   /* regions with len > 0, sorted by off */
    ckpt_region_t *regions;
} ckpt_sumtab_entry_t;

/* The checksum table of one unit (dataset /checksums/<unit>). */
typedef struct ckpt_sumtab {
    int                  ntensors;
    ckpt_sumtab_entry_t *t;
} ckpt_sumtab_t;

/* Read and validate /checksums/<unit> (dxpl: H5P_DEFAULT or a collective
 * transfer list; all ranks then read all of it). */
strata_status_t ckpt_sumtab_read(strata_context_t *ctx, const char *file, hid_t fid,
                                 const char *unit, hid_t dxpl, ckpt_sumtab_t *tab);
void ckpt_sumtab_free(ckpt_sumtab_t *tab);
const ckpt_sumtab_entry_t *ckpt_sumtab_find(const ckpt_sumtab_t *tab, const char *path);
/* The regions must tile [0, numel) exactly: no gap, no overlap. */
strata_status_t ckpt_regions_check(strata_context_t *ctx, const char *file,
                                   const ckpt_sumtab_entry_t *e, uint64_t numel);

/* Select the flat range [a, b) of a row-major dataspace (none if empty). */
int ckpt_select_range(hid_t space, int ndims, const uint64_t *dims, uint64_t a, uint64_t b);

/* Check a dataset's type and shape: class float of 4 bytes when want_f32,
 * and exactly ndims/dims. MISMATCH names file and dataset. */
strata_status_t ckpt_check_dataset(strata_context_t *ctx, const char *file, const char *path,
                                   hid_t dset, int ndims, const uint64_t *dims);


/* Begin one operation of the flight recorder (through ctx->op_begin, which
 * comm/ sets): a checkpoint save or load under ckpt_timeout, another MPI
 * call under collective_timeout; the rank blocks in it. 0 when the
 * recorder is off. Every public entry point here that makes collective
 * calls runs inside one, ended by ckpt_rec_end. */
uint64_t ckpt_rec_begin(strata_context_t *ctx, base_op_kind_t kind);
void ckpt_rec_end(strata_context_t *ctx, uint64_t op, strata_status_t st);

/* base_agree inside a save, recorded as a wait for the other ranks (an
 * "mpi" operation): its deadline is collective_timeout beyond the time
 * this rank has spent in the save so far (within ckpt_timeout), so a
 * rank stalled in the middle of a save ends the job that soon. */
strata_status_t ckpt_agree_wait(strata_context_t *ctx, MPI_Comm comm, strata_status_t st);

/* Check a caller's layout (names, sizes, overlaps, pointers, S, W, this
 * rank's place) and that every rank of comm passes the same structure.
 * Collective; every rank returns the same status. */
strata_status_t ckpt_layout_check(strata_context_t *ctx, MPI_Comm comm,
                                  const strata_ckpt_layout_t *layout, const char *what);

/* Names usable as HDF5 link names: 1..MAX_NAME-1 bytes, no '/', not "."
 * or "..", printable. */
int ckpt_name_ok(const char *name);

/* The data transfer mode: independent unless the option ckpt_mpio says
 * collective or individual (see ckpt_h5.c). */
void ckpt_set_transfer(const strata_context_t *ctx, hid_t dxpl);

/* ---- Direct raw data transfers (ckpt_h5.c)
 *
 * Tensor bytes move with pread/pwrite on a POSIX descriptor of the file at
 * the dataset's file offset, in one large call per tensor part, while HDF5
 * (through MPI-IO) handles all metadata. MPI-IO splits reads into ~1.5 MB
 * requests and adds per-call overhead; a direct transfer runs at the file
 * system's speed (bench/run ckpt). Only datasets whose raw bytes are one
 * plain, allocated byte range of the element type are moved this way; any
 * other dataset (chunked, filtered, external, another byte order: files
 * from outside) goes through H5Dread/H5Dwrite. The raw ranges are disjoint
 * from everything HDF5 writes once the dataset is allocated; a save still
 * agrees (a barrier) after the last collective create and before the
 * first raw write, because MPI-IO may read-modify-write whole ranges
 * around metadata inside a collective call still running on another rank.
 * Like MPI-IO itself, this needs a file system on which one process's
 * write is seen by the next read of another (local, Lustre, GPFS).
 * The option ckpt_direct = off (STRATA_CKPT_DIRECT=0) forces the HDF5
 * transfers (for tests and for file systems where MPI-IO does better). */
int ckpt_direct_enabled(const strata_context_t *ctx);

/* The file offset of dataset ds's raw bytes when they can be moved
 * directly: contiguous layout, no filters, no external files, storage of
 * exactly nbytes allocated, file type equal to memtype (so bytes need no
 * conversion). UINT64_MAX otherwise. */
uint64_t ckpt_raw_offset(hid_t ds, hid_t memtype, uint64_t nbytes);

/* Whole-buffer pwrite/pread at off, retrying short transfers and EINTR.
 * 0 on success, else an errno value; pread gives -1 when the file ends
 * before n bytes. */
int ckpt_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
int ckpt_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* ---- The checkpoint hash (ckpt_hash.c): XXH3-64, seed 0, the same values
 * as libxxhash's XXH3_64bits, on AVX2 where the CPU has it. A state
 * hashes one stream: reset, update..., digest. Test hook, not an option
 * (the values do not depend on it): STRATA_TEST_CKPT_HASH=generic forces
 * the baseline build so that t/ckpt-hash-generic.t covers that path. */
#define CKPT_HASH_TEST_ENV "STRATA_TEST_CKPT_HASH"
typedef struct ckpt_hash ckpt_hash_t;
ckpt_hash_t *ckpt_hash_new(void);              /* NULL without memory */
void ckpt_hash_free(ckpt_hash_t *h);           /* NULL-safe */
void ckpt_hash_reset(ckpt_hash_t *h);
void ckpt_hash_update(ckpt_hash_t *h, const void *p, size_t n);
uint64_t ckpt_hash_digest(const ckpt_hash_t *h);
uint64_t ckpt_hash64(const void *p, size_t n);

/* The step numbers of dir's step-<8+ digits>.h5 files, ascending, into a
 * malloc'ed *steps_p; returns their number, -1 if dir cannot be read. */
int ckpt_list_steps(const char *dir, long long **steps_p);

#endif
