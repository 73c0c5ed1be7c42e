/*
 * ckpt_load.c - collective checkpoint reads with resharding.
 *
 * Each rank reads exactly the elements of its new shard from the full
 * tensors, whatever S and W wrote the file. Checksums: every recorded
 * region (one old writer's part of a tensor) is verified by the one
 * replica-0 rank whose new range contains the region's first element; that
 * rank extends its read to the region's end. With unchanged S and W the
 * regions are the shards themselves and nothing extra is read.
 *
 * Per unit: all ranks open and check the unit's datasets (collective
 * metadata reads), then each rank pread()s its parts at the datasets' file
 * offsets on its own descriptor, in large calls, hashing each chunk while
 * it is still in cache (see io.h, "Direct raw data transfers"). Datasets
 * that are not plain byte ranges of fp32 are read with H5Dread.
 */
#include "config.h"
#include "base/base.h"
#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* A tensor part read directly once its unit's datasets are checked:
 * elements [ta, te) at file offset foff (of element 0) into buf; regions
 * r0..r1-1 of e are verified; when buf is a temporary (the read extends
 * past this rank's range to finish a region), elements [ta, tb) are copied
 * to dst afterwards. */
typedef struct rpiece {
    uint64_t foff, ta, tb, te;
    float   *buf, *tmp, *dst;
    const ckpt_sumtab_entry_t *e;
    int      r0, r1;
} rpiece_t;

/* Bytes per pread: hashed right after they arrive, while in cache. */
#define READ_CHUNK ((size_t)8 << 20)

typedef struct loader {
    strata_context_t *ctx;
    strata_ckpt_layout_t *L;
    const char *file;
    hid_t fid, dxpl;
    MPI_Comm comm;
    int direct, fd;            /* direct reads through fd */
    ckpt_hash_t *hash;
    rpiece_t *pieces;          /* this unit's direct reads */
    int npieces;
    /* The first failure of this rank alone (checksum, memory, read). The
     * rank keeps taking part in the collective metadata calls without
     * reading, and the ranks agree once per unit: no barrier per tensor,
     * so one rank's slow read does not hold up the others' next one. */
    strata_status_t local;
    struct {                   /* where the load spends its time (debug log) */
        double   read, hash, sync, meta;
        uint64_t direct_bytes, hdf5_bytes;   /* bytes read each way */
    } times;
} loader_t;

static strata_status_t checksum_error(loader_t *ld, const ckpt_sumtab_entry_t *e, const ckpt_region_t *g,
                                      uint64_t h)
{
    return base_error(ld->ctx, STRATA_ERR_CHECKSUM,
                      "%s: checksum mismatch in %s, elements [%llu, %llu) written by shard rank %d: "
                      "stored xxh3 %016llx, computed %016llx; the file is corrupt",
                      ld->file, e->path, (unsigned long long)g->off,
                      (unsigned long long)(g->off + g->len), g->writer,
                      (unsigned long long)g->hash, (unsigned long long)h);
}

/* The dataset at path and its entry in the checksum table, checked
 * against P: a structural error, the same on every rank (all read the same
 * metadata). *ds_p is the dataset (or -1) even on failure. */
static strata_status_t open_tensor(loader_t *ld, const char *path, const strata_ckpt_param_t *P,
                                   const ckpt_sumtab_t *tab, uint64_t numel, hid_t *ds_p,
                                   const ckpt_sumtab_entry_t **e_p)
{
    strata_context_t *ctx = ld->ctx;
    strata_status_t st = STRATA_OK;
    hid_t ds = -1;
    if (H5Lexists(ld->fid, path, H5P_DEFAULT) <= 0 || (ds = H5Dopen2(ld->fid, path, H5P_DEFAULT)) < 0) {
        H5Eclear2(H5E_DEFAULT);
        st = base_error(ctx, STRATA_ERR_NOT_FOUND, "%s: dataset %s is missing", ld->file, path);
    }
    *ds_p = ds;
    if (STRATA_OK == st) st = ckpt_check_dataset(ctx, ld->file, path, ds, P->ndims, P->dims);
    const ckpt_sumtab_entry_t *e = NULL;
    if (STRATA_OK == st && !(e = ckpt_sumtab_find(tab, path)))
        st = base_error(ctx, STRATA_ERR_FORMAT, "%s: %s has no entry in its unit's checksum table", ld->file, path);
    if (STRATA_OK == st) st = ckpt_regions_check(ctx, ld->file, e, numel);
    *e_p = e;
    return st;
}

/* Which part of the tensor (P, entry e) this rank reads for its shard
 * [sa, sb): elements [ta, tb) land in the shard; the regions r0..r1-1, those
 * that start inside [ta, tb) (replica 0 only), are verified, which may
 * extend the read to te. Nothing (ta = tb = te) once this rank has failed. */
static void tensor_part(const loader_t *ld, const strata_ckpt_param_t *P, uint64_t numel,
                        const ckpt_sumtab_entry_t *e, uint64_t sa, uint64_t sb, rpiece_t *pc)
{
    uint64_t lo, hi;
    *pc = (rpiece_t){ .e = e };
    if (STRATA_OK == ld->local && ckpt_overlap(sa, sb, P->offset, P->offset + numel, &lo, &hi)) {
        pc->ta = lo - P->offset;
        pc->tb = hi - P->offset;
    }
    pc->te = pc->tb;
    if (0 != ld->L->replica || pc->tb <= pc->ta) return;
    while (pc->r0 < e->nregions && e->regions[pc->r0].off < pc->ta) pc->r0++;
    pc->r1 = pc->r0;
    while (pc->r1 < e->nregions && e->regions[pc->r1].off < pc->tb) pc->r1++;
    if (pc->r1 > pc->r0) {
        const ckpt_region_t *last = &e->regions[pc->r1 - 1];
        if (last->off + last->len > pc->te) pc->te = last->off + last->len;
    }
}

/* Read [ta, te) of the dataset through HDF5 into pc->buf and verify the
 * regions r0..r1-1; with a temporary buffer, [ta, tb) goes to pc->dst after.
 * Every rank calls it (the transfer may be collective), also one with
 * nothing to read. Returns this rank's own failure. */
static strata_status_t read_hdf5(loader_t *ld, hid_t ds, const char *path,
                                 const strata_ckpt_param_t *P, const rpiece_t *pc)
{
    strata_context_t *ctx = ld->ctx;
    strata_status_t st = STRATA_OK;
    hsize_t n = pc->te - pc->ta, mdim = n ? n : 1;
    float dummy[1];
    hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &mdim, NULL);
    if (fs < 0 || ms < 0 || ckpt_select_range(fs, P->ndims, P->dims, pc->ta, pc->te) < 0 ||
        (0 == n && H5Sselect_none(ms) < 0)) {
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: cannot select the part of %s to read", ld->file, path);
        n = 0;
        H5Sselect_none(fs);
        H5Sselect_none(ms);
    }
    double t0 = base_now();
    herr_t rrc = H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, ld->dxpl, n ? (void *)pc->buf : (void *)dummy);
    ld->times.read += base_now() - t0;
    ld->times.hdf5_bytes += n * sizeof(float);
    if (rrc < 0 && STRATA_OK == st) {
        char m[256];
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: reading elements [%llu, %llu) of %s failed (%s)",
                        ld->file, (unsigned long long)pc->ta, (unsigned long long)pc->te, path,
                        ckpt_h5_msg(m, sizeof m));
    }
    t0 = base_now();
    for (int r = pc->r0; STRATA_OK == st && r < pc->r1; r++) {
        const ckpt_region_t *g = &pc->e->regions[r];
        uint64_t h = ckpt_hash64(pc->buf + (g->off - pc->ta), (size_t)g->len * sizeof(float));
        if (h != g->hash) st = checksum_error(ld, pc->e, g, h);
    }
    if (STRATA_OK == st && pc->tmp && pc->tb > pc->ta)
        memcpy(pc->dst, pc->tmp, (size_t)(pc->tb - pc->ta) * sizeof(float));
    ld->times.hash += base_now() - t0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return st;
}

/* Read one tensor's part of this rank's shard, verifying the regions this
 * rank owns: queued as a direct read when the dataset is a plain byte
 * range of fp32 (ld->pieces; read by read_pieces), else read now with
 * H5Dread. Returns a structural error (missing dataset, wrong shape or
 * dtype, bad checksum table): the same on every rank, since all read the
 * same metadata. Failures of this rank alone go to ld->local. */
static strata_status_t read_tensor(loader_t *ld, const char *path, const strata_ckpt_param_t *P,
                                   const ckpt_sumtab_t *tab, uint64_t sa, uint64_t sb, float *shard)
{
    hid_t ds = -1;
    const ckpt_sumtab_entry_t *e = NULL;
    uint64_t numel;
    ckpt_numel(P->ndims, P->dims, &numel);
    strata_status_t st = open_tensor(ld, path, P, tab, numel, &ds, &e);
    if (STRATA_OK != st) {
        if (ds >= 0) H5Dclose(ds);
        return st;
    }
    /* metadata only, so the same choice on every rank */
    uint64_t foff = ld->direct ? ckpt_raw_offset(ds, H5T_NATIVE_FLOAT, numel * sizeof(float)) : UINT64_MAX;
    rpiece_t pc;
    tensor_part(ld, P, numel, e, sa, sb, &pc);
    pc.foff = foff;
    pc.dst = pc.tb > pc.ta ? shard + (P->offset + pc.ta - sa) : NULL;
    pc.buf = pc.dst;
    if (pc.te > pc.tb) {
        pc.tmp = malloc((size_t)(pc.te - pc.ta) * sizeof(float));
        if (!pc.tmp)
            st = base_error(ld->ctx, STRATA_ERR_NOMEM, "%s: no memory to verify %s (%llu elements)",
                            ld->file, path, (unsigned long long)(pc.te - pc.ta));
        else pc.buf = pc.tmp;
    }
    if (STRATA_OK != st) {            /* still take part in the collective read */
        pc.te = pc.ta = pc.tb = 0;
        pc.r0 = pc.r1 = 0;
    }
    if (UINT64_MAX == foff) {
        strata_status_t rs = read_hdf5(ld, ds, path, P, &pc);
        if (STRATA_OK == st) st = rs;
    } else if (pc.te > pc.ta) {
        ld->pieces[ld->npieces++] = pc;
        pc.tmp = NULL;                       /* the piece owns it */
    }
    if (STRATA_OK != st && STRATA_OK == ld->local) ld->local = st;
    free(pc.tmp);
    H5Dclose(ds);
    return STRATA_OK;
}

/*
 * The direct reads run on a helper thread while this thread hashes what
 * has arrived: read and hash in turn, the disk would sit idle during every
 * hash (measured on one process: 2.4 GB/s read+hash in turn, 2.9 GB/s
 * reading alone). The helper only calls pread (no HDF5: not thread-safe)
 * and publishes how many chunks are complete; both sides walk the same
 * chunk sequence (every piece in READ_CHUNK steps). The helper reads into
 * the final buffers, so it needs no back-pressure.
 */
typedef struct reader {
    const loader_t *ld;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    size_t done;               /* chunks complete */
    int    err;                /* pread's failure (errno, -1 end of file) at chunk `done` */
    int    stop;               /* the hashing side gave up */
} reader_t;

static uint64_t chunk_end(const rpiece_t *pc, uint64_t at)
{
    uint64_t n = READ_CHUNK / sizeof(float);
    return pc->te - at > n ? at + n : pc->te;
}

static int read_chunk(const loader_t *ld, const rpiece_t *pc, uint64_t at)
{
    return ckpt_pread_full(ld->fd, pc->buf + (at - pc->ta), (size_t)(chunk_end(pc, at) - at) * sizeof(float),
                           pc->foff + at * sizeof(float));
}

static void *reader_main(void *arg)
{
    reader_t *rd = arg;
    const loader_t *ld = rd->ld;
    for (int i = 0; i < ld->npieces; i++) {
        const rpiece_t *pc = &ld->pieces[i];
        for (uint64_t at = pc->ta; at < pc->te; at = chunk_end(pc, at)) {
            int err = read_chunk(ld, pc, at);
            pthread_mutex_lock(&rd->mu);
            int stop = rd->stop;
            if (err) rd->err = err;
            else rd->done++;
            pthread_cond_signal(&rd->cv);
            pthread_mutex_unlock(&rd->mu);
            if (err || stop) return NULL;
        }
    }
    return NULL;
}

/* Wait for chunk k (threaded) or read it here; 0 or pread's failure. */
static int await_chunk(reader_t *rd, int threaded, const rpiece_t *pc, uint64_t at, size_t k)
{
    if (!threaded) return read_chunk(rd->ld, pc, at);
    int err = 0;
    pthread_mutex_lock(&rd->mu);
    while (rd->done <= k && !rd->err) pthread_cond_wait(&rd->cv, &rd->mu);
    if (rd->done <= k) err = rd->err;
    pthread_mutex_unlock(&rd->mu);
    return err;
}

/* All direct reads, each piece's verified regions hashed chunk by chunk
 * as they arrive. A failure stops this rank's reads and goes to
 * ld->local. */
static void read_pieces(loader_t *ld)
{
    reader_t rd = { .ld = ld };
    pthread_t th;
    int threaded = STRATA_OK == ld->local && ld->npieces > 0 && 0 == pthread_mutex_init(&rd.mu, NULL);
    if (threaded && pthread_cond_init(&rd.cv, NULL)) {
        pthread_mutex_destroy(&rd.mu);
        threaded = 0;
    }
    if (threaded && pthread_create(&th, NULL, reader_main, &rd)) {   /* then read here, in turn */
        pthread_cond_destroy(&rd.cv);
        pthread_mutex_destroy(&rd.mu);
        threaded = 0;
    }
    size_t k = 0;
    for (int i = 0; i < ld->npieces && STRATA_OK == ld->local; i++) {
        rpiece_t *pc = &ld->pieces[i];
        const ckpt_sumtab_entry_t *e = pc->e;
        strata_status_t st = STRATA_OK;
        int r = pc->r0;
        ckpt_hash_reset(ld->hash);
        for (uint64_t at = pc->ta; STRATA_OK == st && at < pc->te; k++) {
            uint64_t end = chunk_end(pc, at);
            double t0 = base_now();
            int err = await_chunk(&rd, threaded, pc, at, k);
            ld->times.read += base_now() - t0;
            if (err) {
                st = base_error(ld->ctx, STRATA_ERR_IO, "%s: reading elements [%llu, %llu) of %s at offset %llu failed: %s",
                                ld->file, (unsigned long long)at, (unsigned long long)end, e->path,
                                (unsigned long long)(pc->foff + at * sizeof(float)),
                                err < 0 ? "the file ends before them (truncated?)" : strerror(err));
                break;
            }
            ld->times.direct_bytes += (end - at) * sizeof(float);
            /* hash the parts of the regions being verified that just arrived */
            t0 = base_now();
            for (uint64_t h = at; r < pc->r1;) {
                const ckpt_region_t *g = &e->regions[r];
                uint64_t gend = g->off + g->len;
                uint64_t lo = h > g->off ? h : g->off, hi = gend < end ? gend : end;
                if (lo >= end) break;
                ckpt_hash_update(ld->hash, pc->buf + (lo - pc->ta), (size_t)(hi - lo) * sizeof(float));
                if (hi < gend) break;              /* continues in the next chunk */
                uint64_t got = ckpt_hash_digest(ld->hash);
                if (got != g->hash) {
                    st = checksum_error(ld, e, g, got);
                    break;
                }
                ckpt_hash_reset(ld->hash);
                h = gend;
                r++;
            }
            ld->times.hash += base_now() - t0;
            at = end;
        }
        if (STRATA_OK == st && pc->tmp && pc->tb > pc->ta)
            memcpy(pc->dst, pc->tmp, (size_t)(pc->tb - pc->ta) * sizeof(float));
        if (STRATA_OK != st) ld->local = st;
    }
    if (threaded) {
        pthread_mutex_lock(&rd.mu);
        rd.stop = 1;
        pthread_mutex_unlock(&rd.mu);
        pthread_join(th, NULL);
        pthread_cond_destroy(&rd.cv);
        pthread_mutex_destroy(&rd.mu);
    }
    for (int i = 0; i < ld->npieces; i++) free(ld->pieces[i].tmp);
    ld->npieces = 0;
}

typedef struct span { uint64_t lo, hi; } span_t;

static int span_cmp(const void *x, const void *y)
{
    const span_t *a = x, *b = y;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Zero the elements of shard [sa, sb) of v that no parameter covers
 * (padding, gaps between parameters); the reads overwrite the rest, so the
 * whole shard need not be cleared first. -1 without memory. */
static int zero_uncovered(const strata_ckpt_unit_t *U, uint64_t sa, uint64_t sb, float *v)
{
    span_t *sp = malloc(((size_t)U->nparams + 1) * sizeof *sp);
    if (!sp) return -1;
    int n = 0;
    for (int p = 0; p < U->nparams; p++) {
        uint64_t numel = 0, lo, hi;
        ckpt_numel(U->params[p].ndims, U->params[p].dims, &numel);
        if (ckpt_overlap(sa, sb, U->params[p].offset, U->params[p].offset + numel, &lo, &hi))
            sp[n++] = (span_t){ lo, hi };
    }
    qsort(sp, (size_t)n, sizeof *sp, span_cmp);
    uint64_t at = sa;
    for (int i = 0; i <= n; i++) {
        uint64_t next = i < n ? sp[i].lo : sb;
        if (next > at) memset(v + (at - sa), 0, (size_t)(next - at) * sizeof(float));
        if (i < n && sp[i].hi > at) at = sp[i].hi;
    }
    free(sp);
    return 0;
}

/* A unit's metadata: its checksum table (into *tab, kept until the reads
 * are done), scalars, and every dataset opened and checked, this rank's
 * reads queued (or done through HDF5 where a dataset needs it). Returns a
 * structural error, the same on every rank. */
static strata_status_t plan_unit(loader_t *ld, strata_ckpt_unit_t *U, ckpt_sumtab_t *tabp)
{
    strata_context_t *ctx = ld->ctx;
    const strata_ckpt_layout_t *L = ld->L;
    ckpt_sumtab_t tab;
    uint64_t sa, sb;
    strata_ckpt_shard_range(U->npad, L->shard_size, L->shard_rank, &sa, &sb);

    /* padding and any gap between parameters read as zero */
    int zero_rc = zero_uncovered(U, sa, sb, U->shard);
    for (int k = 0; k < U->nstates; k++) zero_rc |= zero_uncovered(U, sa, sb, U->states[k].shard);

    strata_status_t st = ckpt_sumtab_read(ctx, ld->file, ld->fid, U->name, ld->dxpl, &tab);
    if (STRATA_OK == st) *tabp = tab;
    if (STRATA_OK == st && zero_rc)
        st = base_error(ctx, STRATA_ERR_NOMEM, "%s: no memory to plan the reads of unit %s", ld->file, U->name);
    st = base_agree(ctx, ld->comm, st);
    if (STRATA_OK != st) return st;

    char path[3 * STRATA_CKPT_MAX_NAME + 32];
    if (U->nscalars) {
        snprintf(path, sizeof path, "/optim/%s", U->name);
        hid_t g = H5Lexists(ld->fid, "/optim", H5P_DEFAULT) > 0 && H5Lexists(ld->fid, path, H5P_DEFAULT) > 0
                ? H5Gopen2(ld->fid, path, H5P_DEFAULT) : -1;
        if (g < 0) st = base_error(ctx, STRATA_ERR_NOT_FOUND, "%s: group %s is missing", ld->file, path);
        for (int k = 0; STRATA_OK == st && k < U->nscalars; k++) {
            int rc = ckpt_attr_get_f64(g, U->scalars[k].name, &U->scalars[k].value);
            if (rc)
                st = base_error(ctx, -1 == rc ? STRATA_ERR_NOT_FOUND : STRATA_ERR_FORMAT,
                                "%s: optimizer scalar %s (attribute of %s) is %s", ld->file,
                                U->scalars[k].name, path, -1 == rc ? "missing" : "not a number");
        }
        if (g >= 0) H5Gclose(g);
        H5Eclear2(H5E_DEFAULT);
    }
    for (int p = 0; STRATA_OK == st && p < U->nparams; p++) {
        const strata_ckpt_param_t *P = &U->params[p];
        snprintf(path, sizeof path, "/model/%s/%s", U->name, P->name);
        st = read_tensor(ld, path, P, &tab, sa, sb, U->shard);
        for (int k = 0; STRATA_OK == st && k < U->nstates; k++) {
            snprintf(path, sizeof path, "/optim/%s/%s/%s", U->name, P->name, U->states[k].name);
            st = read_tensor(ld, path, P, &tab, sa, sb, U->states[k].shard);
        }
    }
    return st;
}

static strata_status_t load_train(loader_t *ld)
{
    strata_context_t *ctx = ld->ctx;
    strata_ckpt_train_t *T = &ld->L->train;
    strata_status_t st = STRATA_OK;
    hid_t g = H5Gopen2(ld->fid, "/train", H5P_DEFAULT), ds = -1, sp = -1, ty = -1;
    int64_t step = 0, pos = 0;
    if (g < 0 || ckpt_attr_get_i64(g, "step", &step) || ckpt_attr_get_i64(g, "data_position", &pos) ||
        step < 0 || pos < 0) {
        st = base_error(ctx, STRATA_ERR_FORMAT, "%s: /train lacks valid step and data_position attributes",
                        ld->file);
        goto out;
    }
    if (T->rng_len) {
        hsize_t n = 0;
        if (H5Lexists(g, "rng", H5P_DEFAULT) <= 0 || (ds = H5Dopen2(g, "rng", H5P_DEFAULT)) < 0) {
            st = base_error(ctx, STRATA_ERR_NOT_FOUND, "%s: dataset /train/rng is missing", ld->file);
            goto out;
        }
        sp = H5Dget_space(ds);
        ty = H5Dget_type(ds);
        if (sp < 0 || ty < 0 || H5T_INTEGER != H5Tget_class(ty) || 1 != H5Tget_size(ty) ||
            1 != H5Sget_simple_extent_ndims(sp) || H5Sget_simple_extent_dims(sp, &n, NULL) < 0 ||
            n != T->rng_len) {
            st = base_error(ctx, STRATA_ERR_MISMATCH,
                            "%s: /train/rng holds %llu bytes but the caller's RNG state has %zu",
                            ld->file, (unsigned long long)n, T->rng_len);
            goto out;
        }
        if (H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, ld->dxpl, T->rng) < 0) {
            char m[256];
            st = base_error(ctx, STRATA_ERR_HDF5, "%s: reading /train/rng failed (%s)", ld->file,
                            ckpt_h5_msg(m, sizeof m));
            goto out;
        }
    }
    T->step = (uint64_t)step;
    T->data_pos = (uint64_t)pos;
out:
    H5Eclear2(H5E_DEFAULT);
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    if (g >= 0) H5Gclose(g);
    return st;
}

/* The layout's configuration against the file's config.<key> attributes:
 * a key the file records with another value means another model or run
 * (STRATA_ERR_CONFIG, naming every difference); a key the file lacks (a
 * file of an older writer) is not compared. */
static strata_status_t check_config(strata_context_t *ctx, const char *path, hid_t fid,
                                    const strata_ckpt_layout_t *L)
{
    char diff[1024] = "";
    size_t n = 0;
    for (int i = 0; i < L->nconfig; i++) {
        const strata_ckpt_kv_t *kv = &L->config[i];
        char name[STRATA_CKPT_MAX_NAME + 8], v[256];
        if (!kv->key || !kv->value) continue;
        snprintf(name, sizeof name, "config.%s", kv->key);
        if (ckpt_attr_get_str(fid, name, v, sizeof v) || !strcmp(v, kv->value)) continue;
        if (n < sizeof diff)
            n += (size_t)snprintf(diff + n, sizeof diff - n, "%s%s %s in the file, %s here",
                                  n ? "; " : "", kv->key, v, kv->value);
    }
    H5Eclear2(H5E_DEFAULT);
    if (!diff[0]) return STRATA_OK;
    return base_error(ctx, STRATA_ERR_CONFIG, "checkpoint %s was written for another configuration "
                      "(%s); load it with the same one", path, diff);
}

static strata_status_t load_file(strata_context_t *ctx, strata_ckpt_layout_t *layout,
                                 const char *path)
{
    strata_status_t st = STRATA_OK;
    if (!path || !path[0])
        st = base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_load: path is NULL or empty");
    st = base_agree(ctx, ctx->comm, st);
    if (STRATA_OK != st) return st;
    double t_start = base_now(), t_open = 0, t_close = 0;
    st = ckpt_layout_check(ctx, ctx->comm, layout, path);
    if (STRATA_OK != st) return st;

    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    loader_t ld = { .ctx = ctx, .L = layout, .file = path, .fid = -1, .dxpl = -1, .comm = ctx->comm,
                    .direct = ckpt_direct_enabled(ctx), .fd = -1, .local = STRATA_OK };
    ckpt_header_t hdr;
    ckpt_sumtab_t *tabs = NULL;
    st = ckpt_open(ctx, path, ctx->comm, &ld.fid, &hdr);
    if (STRATA_OK == st) st = check_config(ctx, path, ld.fid, layout);
    /* this rank's descriptor for the direct reads */
    if (STRATA_OK == st && ld.direct && (ld.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        st = base_error(ctx, STRATA_ERR_IO, "checkpoint %s: cannot open it for reading: %s", path, strerror(errno));
    if (STRATA_OK == st && ld.direct && !(ld.hash = ckpt_hash_new()))
        st = base_error(ctx, STRATA_ERR_NOMEM, "checkpoint %s: no memory for a hash state", path);
    st = base_agree(ctx, ctx->comm, st);
    if (STRATA_OK != st) {
        if (ld.fid >= 0) H5Fclose(ld.fid);
        goto out;
    }
    t_open = base_now() - t_start;
    ld.dxpl = H5Pcreate(H5P_DATASET_XFER);
    ckpt_set_transfer(ctx, ld.dxpl);
    strata_debug(ctx, "loading %s: step %llu written by %lld ranks (S=%lld), reading with W=%d S=%d",
                 path, (unsigned long long)hdr.step, (long long)hdr.world_size,
                 (long long)hdr.shard_size, layout->world_size, layout->shard_size);
    st = load_train(&ld);
    /* Two phases, so that the direct reads of all units run without a
     * collective call between them (one rank's slow read does not hold up
     * the others' next one): all metadata, then all reads. */
    size_t ntensors = 0;
    for (int u = 0; u < layout->nunits; u++)
        ntensors += (size_t)layout->units[u].nparams * (size_t)(1 + layout->units[u].nstates);
    tabs = calloc(layout->nunits > 0 ? (size_t)layout->nunits : 1, sizeof *tabs);
    ld.pieces = calloc(ntensors ? ntensors : 1, sizeof *ld.pieces);
    if (STRATA_OK == st && (!tabs || !ld.pieces))
        st = base_error(ctx, STRATA_ERR_NOMEM, "%s: no memory to plan the reads", path);
    st = base_agree(ctx, ctx->comm, st);
    double t0 = base_now();
    for (int u = 0; STRATA_OK == st && u < layout->nunits; u++)
        st = plan_unit(&ld, &layout->units[u], &tabs[u]);
    ld.times.meta = base_now() - t0;
    if (STRATA_OK != st && STRATA_OK == ld.local) ld.local = st;   /* skips the reads */
    if (ld.pieces) read_pieces(&ld);
    if (STRATA_OK == st) st = ld.local;
    t0 = base_now();
    st = base_agree(ctx, ctx->comm, st);
    ld.times.sync += base_now() - t0;
    for (int u = 0; tabs && u < layout->nunits; u++) ckpt_sumtab_free(&tabs[u]);
    free(tabs);
    free(ld.pieces);
    H5Pclose(ld.dxpl);
    t0 = base_now();
    if (H5Fclose(ld.fid) < 0 && STRATA_OK == st) {
        char m[256];
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: closing failed (%s)", path, ckpt_h5_msg(m, sizeof m));
    }
    t_close = base_now() - t0;
out:
    if (ld.fd >= 0) close(ld.fd);
    if (ld.hash) ckpt_hash_free(ld.hash);
    ckpt_h5_restore(&quiet);
    strata_debug(ctx, "load %s: %.3f s in all: %.3f s opening, %.3f s metadata, %.3f s reading (%llu bytes directly, "
                 "%llu through HDF5), %.3f s hashing, %.3f s waiting for other ranks, %.3f s closing", path,
                 base_now() - t_start, t_open, ld.times.meta, ld.times.read,
                 (unsigned long long)ld.times.direct_bytes, (unsigned long long)ld.times.hdf5_bytes,
                 ld.times.hash, ld.times.sync, t_close);
    return base_agree(ctx, ctx->comm, st);
}

/* One recorded operation under ckpt_timeout, HDF5's collectives inside it. */
strata_status_t strata_ckpt_load(strata_context_t *ctx, strata_ckpt_layout_t *layout,
                                 const char *path)
{
    if (!ctx) return STRATA_ERR_INVALID;
    uint64_t op = ckpt_rec_begin(ctx, BASE_OP_CKPT_LOAD);
    strata_status_t st = load_file(ctx, layout, path);
    ckpt_rec_end(ctx, op, st);
    return st;
}
