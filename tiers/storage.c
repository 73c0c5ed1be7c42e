/*
 * storage.c - the storage tier's policy: when the spill file is made,
 * which dataset a spilled block goes to, checksums, failures. The file
 * format is tiers/spill.c (tiers/spill.h). Everything here that touches
 * HDF5 runs on the I/O engine's thread; a thread waiting on a storage op may run one
 * that needs no HDF5 call itself (tiers_storage_no_hdf5_locked, then
 * begin, chunks, finish: pwrite/pread, XXH3, fdatasync).
 *
 * Datasets are reused: a freed block's dataset goes on a free list and the
 * next spill takes the smallest free one that holds it and is at most
 * twice its size, so the step-after-step pattern of equal sizes reuses the
 * same datasets and the file stops growing after the first step.
 */
#include "config.h"
#include "tiers/tiers.h"
#include "tiers/spill.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

strata_status_t tiers_storage_prepare(tiers_state_t *ts)
{
    char msg[STRATA_ERRMSG_LEN] = "";
    strata_status_t st = STRATA_OK;
    pthread_mutex_lock(&ts->lock);
    if (!ts->spill) {
        char first[512];
        int k = spill_reclaim(ts->ctx->cfg.spill_dir, first, sizeof first);
        if (k)
            strata_warn(ts->ctx, "storage tier: removed %d spill director%s of dead jobs under %s "
                        "(%s%s)", k, 1 == k ? "y" : "ies", ts->ctx->cfg.spill_dir, first,
                        1 < k ? ", ..." : "");
        st = spill_file_prepare(ts->ctx->cfg.spill_dir, ts->ctx->rank, &ts->spill,
                                msg, sizeof msg);
        if (STRATA_OK == st)
            strata_info(ts->ctx, "storage tier: spill file %s", spill_file_path(ts->spill));
    }
    tiers_unlock(ts);
    if (STRATA_OK != st) return base_error(ts->ctx, st, "%s", msg);
    return STRATA_OK;
}

static spill_ds_t *take_free_ds(tiers_state_t *ts, size_t bytes)
{
    spill_ds_t **best = NULL;
    for (spill_ds_t **pp = &ts->ds_free; *pp; pp = &(*pp)->next) {
        size_t c = (*pp)->capacity;
        if (c >= bytes && c / 2 <= bytes && (!best || c < (*best)->capacity)) best = pp;
    }
    if (!best) return NULL;
    spill_ds_t *ds = *best;
    *best = ds->next;
    ds->next = NULL;
    return ds;
}

/* Whether the spill file refuses new spills; the message says why. */
static strata_status_t check_unlinked(tiers_state_t *ts, const tiers_op_t *op)
{
    if (!spill_file_unlinked(ts->spill)) return STRATA_OK;
    return base_error(ts->ctx, STRATA_ERR_IO,
                      "spill file '%s' was removed while in use: new spills are "
                      "refused (blocks already spilled can still be read back); "
                      "the block stays in the %s tier",
                      spill_file_path(ts->spill), strata_tier_name(op->src));
}

int tiers_storage_no_hdf5_locked(tiers_state_t *ts, tiers_op_t *op)
{
    strata_block_t *blk = op->blk;
    tiers_slot_t *s = &blk->slot[STRATA_TIER_STORAGE];
    if (!ts->spill_open) return 0;
    if (STRATA_TIER_STORAGE == op->dst && blk->bytes > 0 && !s->ds) {
        /* taken now: the dataset is the block's from here on, and goes
         * back to the free list if the op fails */
        s->ds = take_free_ds(ts, blk->bytes);
        if (!s->ds) return 0;
    }
    return 1;
}

/* The cause of a failed spill at the default log level, once per context:
 * the transfer's own error, which the caller sees, names only the block. */
static void say_cause(tiers_state_t *ts, const char *msg)
{
    if (!ts->spill_error_said) strata_log(ts->ctx, STRATA_LOG_ERROR, "%s", msg);
    ts->spill_error_said = 1;
}

strata_status_t tiers_storage_start(tiers_state_t *ts, tiers_op_t *op)
{
    char msg[STRATA_ERRMSG_LEN] = "";
    strata_block_t *blk = op->blk;
    strata_status_t st;
    if (0 == blk->bytes) return STRATA_OK;
    st = spill_file_open(ts->spill, msg, sizeof msg);
    if (STRATA_OK != st) {
        say_cause(ts, msg);
        return base_error(ts->ctx, st, "%s", msg);
    }
    pthread_mutex_lock(&ts->lock);
    ts->spill_open = 1;
    tiers_unlock(ts);
    tiers_slot_t *s = &blk->slot[STRATA_TIER_STORAGE];

    if (STRATA_TIER_STORAGE == op->dst) {
        st = check_unlinked(ts, op);
        if (STRATA_OK != st) return st;
        pthread_mutex_lock(&ts->lock);
        spill_ds_t *ds = s->ds;
        if (!ds) ds = take_free_ds(ts, blk->bytes);
        tiers_unlock(ts);
        if (!ds) {
            uint64_t off;
            st = spill_file_dataset(ts->spill, blk->rounded, &off, msg, sizeof msg);
            if (STRATA_OK != st) {
                say_cause(ts, msg);
                return base_error(ts->ctx, st, "%s; the block stays in the %s tier", msg,
                                  strata_tier_name(op->src));
            }
            ds = calloc(1, sizeof *ds);
            if (!ds) return base_error(ts->ctx, STRATA_ERR_NOMEM, "storage tier: out of memory");
            ds->capacity = blk->rounded;
            ds->offset = off;
            pthread_mutex_lock(&ts->lock);
            ds->all_next = ts->ds_all;
            ts->ds_all = ds;
            tiers_unlock(ts);
        }
        pthread_mutex_lock(&ts->lock);
        s->ds = ds;
        tiers_unlock(ts);
    }
    return tiers_storage_begin(ts, op);
}

strata_status_t tiers_storage_begin(tiers_state_t *ts, tiers_op_t *op)
{
    strata_block_t *blk = op->blk;
    spill_ds_t *ds = blk->slot[STRATA_TIER_STORAGE].ds;
    if (0 == blk->bytes) return STRATA_OK;
    if (STRATA_TIER_STORAGE == op->dst) {
        strata_status_t st = check_unlinked(ts, op);
        if (STRATA_OK != st) return st;
        ds->summed = 0;
    } else {
        /* Only a block of one chunk gets the read-ahead hint. Measured
         * (ext4 on virtio, read_ahead_kb 8192, cold cache): WILLNEED on a
         * 4 MiB block then reading it is ~15% faster than the read alone,
         * but on 16-64 MiB blocks it is 20-25% slower than the kernel's own
         * read-ahead, which grows its window over a sequential read. */
        if (ds && blk->bytes <= ts->chunk) spill_file_prefetch(ts->spill, ds->offset, blk->bytes);
        if (spill_file_unlinked(ts->spill)) {
            pthread_mutex_lock(&ts->lock);
            int warn = !ts->warned_unlinked;
            ts->warned_unlinked = 1;
            tiers_unlock(ts);
            if (warn)
                strata_warn(ts->ctx, "spill file '%s' was removed while in use; reading spilled "
                            "blocks back through the open handle", spill_file_path(ts->spill));
        }
    }
    if (ts->checksums) {
        op->hash = XXH3_createState();
        if (!op->hash || XXH_OK != XXH3_64bits_reset(op->hash))
            return base_error(ts->ctx, STRATA_ERR_NOMEM, "storage tier: out of memory");
    }
    return STRATA_OK;
}

/*
 * Sizes of the pwrite/pread calls within a chunk. Measured on this
 * machine (ext4 on virtio, read_ahead_kb 8192, 2 cores, 1 MiB L2 each;
 * medians of 15-31 interleaved runs):
 * - with checksums, pieces of HASH_PIECE, each hashed while it is still in
 *   the core's cache; hashing a whole chunk after moving it read it from
 *   memory a second time (h2s with checksums at ~0.75 of pwrite);
 * - cold reads in calls that start at READ_PIECE and double up to the
 *   chunk: a 16 MiB block read 20-70% faster than in one pread (the first
 *   data is copied out while read-ahead fetches the rest), and a 256 MiB
 *   one as fast as in one pread, where fixed 512 KiB calls lost 10-25%;
 * - writes: one call per chunk; over clean cached pages 1-8 MiB calls were
 *   as fast as or faster than one 16-256 MiB call.
 */
#define HASH_PIECE ((size_t)512 << 10)
#define READ_PIECE ((size_t)512 << 10)

strata_status_t tiers_storage_chunk(tiers_state_t *ts, tiers_op_t *op, size_t off, size_t n)
{
    char msg[STRATA_ERRMSG_LEN] = "";
    strata_block_t *blk = op->blk;
    spill_ds_t *ds = blk->slot[STRATA_TIER_STORAGE].ds;
    char *host = (char *)blk->slot[STRATA_TIER_PINNED_HOST].ptr + off;
    int write = STRATA_TIER_STORAGE == op->dst;
    size_t piece = op->hash ? HASH_PIECE : write ? n : op->piece ? op->piece : READ_PIECE;
    for (size_t done = 0, k; done < n; done += k) {
        k = n - done < piece ? n - done : piece;
        strata_status_t st;
        if (write) {
            if (op->hash) XXH3_64bits_update(op->hash, host + done, k);
            st = spill_file_write(ts->spill, ds->offset + off + done, host + done, k, msg, sizeof msg);
            if (STRATA_OK != st) {
                say_cause(ts, msg);
                return base_error(ts->ctx, st, "%s; the block stays in the host tier", msg);
            }
        } else {
            st = spill_file_read(ts->spill, ds->offset + off + done, host + done, k, msg, sizeof msg);
            if (STRATA_OK != st)
                return base_error(ts->ctx, st, "%s; the block stays in the storage tier", msg);
            if (op->hash) XXH3_64bits_update(op->hash, host + done, k);
            else if (piece < n) op->piece = piece *= 2;
        }
    }
    return STRATA_OK;
}

strata_status_t tiers_storage_finish(tiers_state_t *ts, tiers_op_t *op)
{
    char msg[STRATA_ERRMSG_LEN] = "";
    strata_block_t *blk = op->blk;
    spill_ds_t *ds = blk->slot[STRATA_TIER_STORAGE].ds;
    if (0 == blk->bytes) return STRATA_OK;
    if (STRATA_TIER_STORAGE == op->dst) {
        if (ts->spill_fsync) {
            strata_status_t st = spill_file_sync(ts->spill, msg, sizeof msg);
            if (STRATA_OK != st)
                return base_error(ts->ctx, st, "%s; the block stays in the host tier", msg);
        }
        if (op->hash) {
            ds->checksum = XXH3_64bits_digest(op->hash);
            ds->summed = 1;
        }
        return STRATA_OK;
    }
    if (op->hash && ds->summed) {
        uint64_t got = XXH3_64bits_digest(op->hash);
        if (got != ds->checksum)
            return base_error(ts->ctx, STRATA_ERR_CHECKSUM,
                              "checksum mismatch reading a %s block of %zu bytes back from "
                              "spill file '%s' at offset %" PRIu64 ": stored %016" PRIx64
                              ", read %016" PRIx64 "; the data is not returned and the "
                              "block stays in the storage tier",
                              strata_tag_name(blk->tag), blk->bytes,
                              spill_file_path(ts->spill), ds->offset, ds->checksum, got);
    }
    return STRATA_OK;
}

/* On the I/O thread as it exits: the only HDF5 call of the shutdown. */
void tiers_storage_cleanup(tiers_state_t *ts)
{
    spill_file_close(ts->spill);
}

/* ---- hooks for tests and the benchmark --------------------------------- */

strata_status_t tiers_spill_path(strata_context_t *ctx, char *buf, size_t len)
{
    if (!ctx || !ctx->tiers || !buf) return STRATA_ERR_INVALID;
    pthread_mutex_lock(&ctx->tiers->lock);
    snprintf(buf, len, "%s", spill_file_path(ctx->tiers->spill));
    tiers_unlock(ctx->tiers);
    return STRATA_OK;
}

strata_status_t tiers_storage_offset(strata_block_t *blk, uint64_t *offset_p)
{
    if (!blk || !offset_p) return STRATA_ERR_INVALID;
    strata_status_t st = STRATA_ERR_STATE;
    pthread_mutex_lock(&blk->ts->lock);
    const tiers_slot_t *s = &blk->slot[STRATA_TIER_STORAGE];
    if ((blk->valid & (1u << STRATA_TIER_STORAGE)) && s->ds) {
        *offset_p = s->ds->offset;
        st = STRATA_OK;
    }
    tiers_unlock(blk->ts);
    return st;
}

/* The mapping of a block's dataset: from the page below its offset. */
static size_t map_delta(uint64_t offset)
{
    return (size_t)(offset % (uint64_t)sysconf(_SC_PAGESIZE));
}

strata_status_t tiers_storage_map(strata_block_t *blk, int writable, void **ptr_p)
{
    if (!blk || !ptr_p) return STRATA_ERR_INVALID;
    tiers_state_t *ts = blk->ts;
    pthread_mutex_lock(&ts->lock);
    while (blk->pending > 0) tiers_cond_wait(ts, &ts->cond);
    const tiers_slot_t *s = &blk->slot[STRATA_TIER_STORAGE];
    uint64_t off = s->ds ? s->ds->offset : 0;
    int ok = (blk->valid & (1u << STRATA_TIER_STORAGE)) && s->ds && blk->bytes;
    int fd = spill_file_fd(ts->spill);
    tiers_unlock(ts);
    if (!ok || fd < 0)
        return base_error(ts->ctx, STRATA_ERR_STATE, "storage tier: a %s block of %zu bytes has "
                          "no copy in the spill file to map", strata_tag_name(blk->tag), blk->bytes);
    size_t d = map_delta(off);
    void *p = mmap(NULL, blk->bytes + d, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd,
                   (off_t)(off - d));
    if (MAP_FAILED == p)
        return base_error(ts->ctx, STRATA_ERR_IO, "storage tier: cannot map %zu bytes of spill "
                          "file '%s' at offset %" PRIu64 ": %s", blk->bytes,
                          spill_file_path(ts->spill), off, strerror(errno));
    /* read once, front to back */
    (void)madvise(p, blk->bytes + d, MADV_SEQUENTIAL);
    *ptr_p = (char *)p + d;
    return STRATA_OK;
}

strata_status_t tiers_storage_unmap(strata_block_t *blk, void *ptr, int written)
{
    if (!blk || !ptr) return STRATA_ERR_INVALID;
    tiers_state_t *ts = blk->ts;
    spill_ds_t *ds = blk->slot[STRATA_TIER_STORAGE].ds;
    size_t d = map_delta(ds->offset);
    strata_status_t st = STRATA_OK;
    if (written && ts->checksums) {   /* the block's bytes changed under its sum */
        ds->checksum = XXH3_64bits(ptr, blk->bytes);
        ds->summed = 1;
    }
    if (written && ts->spill_fsync && msync((char *)ptr - d, blk->bytes + d, MS_SYNC))
        st = base_error(ts->ctx, STRATA_ERR_IO, "storage tier: msync of spill file '%s' "
                        "failed: %s", spill_file_path(ts->spill), strerror(errno));
    munmap((char *)ptr - d, blk->bytes + d);
    return st;
}

void tiers_set_spill_fsync(strata_context_t *ctx, int on)
{
    if (ctx && ctx->tiers) ctx->tiers->spill_fsync = on;
}
