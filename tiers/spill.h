/*
 * spill.h - the storage tier's file format (tiers/spill.c), used only by
 * the storage tier (tiers/storage.c). Not installed.
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
#ifndef STRATA_TIERS_SPILL_H
#define STRATA_TIERS_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

typedef struct spill_file spill_file_t;

/* Any thread, no HDF5: make the private directory under root and an empty
 * file in it. Fails with STRATA_ERR_IO and a message naming the path. */
/* Remove the spill directories under root whose owner is provably dead
 * (same host; pid gone or reused): how many, the first one's path in msg. */
int spill_reclaim(const char *root, char *msg, size_t msglen);

strata_status_t spill_file_prepare(const char *root, int rank, spill_file_t **sp_p,
                                   char *msg, size_t msglen);
/* I/O thread: create the HDF5 file over the prepared one. Idempotent. */
strata_status_t spill_file_open(spill_file_t *sp, char *msg, size_t msglen);
/* I/O thread: a new dataset of `bytes`, its disk space reserved
 * (fallocate, so a full disk fails here rather than mid-write). */
strata_status_t spill_file_dataset(spill_file_t *sp, size_t bytes, uint64_t *offset_p,
                                   char *msg, size_t msglen);
/* Any thread once spill_file_open has succeeded (no HDF5 call): raw data at
 * a dataset's offset; these, spill_file_prefetch, spill_file_sync and
 * spill_file_unlinked use only the file descriptor. */
strata_status_t spill_file_write(spill_file_t *sp, uint64_t off, const void *buf, size_t n,
                                 char *msg, size_t msglen);
strata_status_t spill_file_read(spill_file_t *sp, uint64_t off, void *buf, size_t n,
                                char *msg, size_t msglen);
/* Hint that [off, off+n) will be read soon (the kernel starts reading). */
void spill_file_prefetch(spill_file_t *sp, uint64_t off, size_t n);
strata_status_t spill_file_sync(spill_file_t *sp, char *msg, size_t msglen);
/* Whether the file was unlinked underneath us (the open handle still works). */
int spill_file_unlinked(spill_file_t *sp);
/* I/O thread: close the HDF5 file. */
void spill_file_close(spill_file_t *sp);
/* Any thread, after spill_file_close: remove the file and the directory and
 * free sp. NULL is a no-op. */
void spill_file_remove(spill_file_t *sp);
/* The directory and its files now, the file left open (a process about to
 * be aborted: nothing is waited for, nothing freed). */
void spill_file_remove_dir(spill_file_t *sp);
const char *spill_file_path(const spill_file_t *sp);
const char *spill_file_dir(const spill_file_t *sp);
/* The raw-data descriptor (read-write) once open, else -1. */
int spill_file_fd(const spill_file_t *sp);

#endif
