/*
 * io.h - internal interface of the HDF5 layer. Here: the storage tier's
 * spill file. Checkpoints (another issue) will add to this header.
 *
 * The spill file is one HDF5 file per rank in a private directory (0700,
 * file 0600). Each spilled block lives in a 1-D uint8 dataset with
 * contiguous layout, allocated when created (no fill), so its raw bytes
 * sit at a fixed file offset: block data moves with pwrite/pread at that
 * offset, at the speed of the file system, while the file stays an
 * ordinary HDF5 file (h5dump reads it). Every function that calls HDF5
 * must run on the tiers' I/O thread: Debian's parallel HDF5 is not
 * thread-safe.
 */
#ifndef STRATA_IO_H
#define STRATA_IO_H

#include "base/base.h"

typedef struct io_spill io_spill_t;

/* Any thread, no HDF5: make the private directory under root and an empty
 * file in it. Fails with STRATA_ERR_IO and a message naming the path. */
strata_status_t io_spill_prepare(const char *root, int rank, io_spill_t **sp_p,
                                 char *msg, size_t msglen);
/* I/O thread: create the HDF5 file over the prepared one. Idempotent. */
strata_status_t io_spill_open(io_spill_t *sp, char *msg, size_t msglen);
/* I/O thread: a new dataset of `bytes`, its disk space reserved
 * (fallocate, so a full disk fails here rather than mid-write). */
strata_status_t io_spill_dataset(io_spill_t *sp, size_t bytes, uint64_t *offset_p,
                                 char *msg, size_t msglen);
/* I/O thread: raw data at a dataset's offset. */
strata_status_t io_spill_write(io_spill_t *sp, uint64_t off, const void *buf, size_t n,
                               char *msg, size_t msglen);
strata_status_t io_spill_read(io_spill_t *sp, uint64_t off, void *buf, size_t n,
                              char *msg, size_t msglen);
/* Hint that [off, off+n) will be read soon (the kernel starts reading). */
void io_spill_prefetch(io_spill_t *sp, uint64_t off, size_t n);
strata_status_t io_spill_sync(io_spill_t *sp, char *msg, size_t msglen);
/* Whether the file was unlinked underneath us (the open handle still works). */
int io_spill_unlinked(io_spill_t *sp);
/* I/O thread: close the HDF5 file. */
void io_spill_close(io_spill_t *sp);
/* Any thread, after io_spill_close: remove the file and the directory and
 * free sp. NULL is a no-op. */
void io_spill_remove(io_spill_t *sp);
const char *io_spill_path(const io_spill_t *sp);
const char *io_spill_dir(const io_spill_t *sp);

#endif
