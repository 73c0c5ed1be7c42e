/*
 * ckpt_save.c - collective, atomic checkpoint writes.
 *
 * All ranks open one file through MPI-IO with collective metadata; every
 * dataset is created by all ranks together and each replica-0 rank writes
 * the hyperslabs its flat shard covers (others select none). Each writer
 * hashes what it wrote (XXH3) and records {offset, length, hash} per tensor
 * in /checksums/<unit>, so any reader can verify any region. The file is
 * written as NAME.tmp, closed, fsync'ed and only then renamed.
 *
 * Three phases: all ranks create all datasets together (collective
 * metadata, storage allocated at creation, never filled); each writer
 * pwrite()s its parts at the datasets' file offsets on its own descriptor,
 * hashing each chunk just before it is copied and starting its writeback
 * right after (see io.h, "Direct raw data transfers"); the checksum tables
 * are written through HDF5.
 */
#define _GNU_SOURCE             /* sync_file_range, fallocate */
#include "config.h"
#include "base/base.h"
#include "base/grow.h"
#include "base/test_fault.h"
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

typedef struct writer {
    strata_context_t *ctx;
    const strata_ckpt_layout_t *L;
    const char *file;          /* the final name, for messages */
    hid_t  fid, dcpl, dxpl;
    hid_t  half_type;          /* file type of the 16-bit copy, or -1 */
    const char *half_group;    /* "model_bf16" / "model_f16" */
    strata_dtype_t half;
    int    rank, writes;       /* writes: this rank is in replica 0 */
    uint64_t data_end;         /* end of the last directly written dataset in the file */
    uint16_t *half_buf;        /* shard-sized conversion buffer */
    uint64_t bytes, kill_after, direct_bytes;   /* kill_after: the ckpt_kill test faults */
    uint64_t stall_after;                       /* the ckpt_stall test fault */
    int      kill_rank;                         /* 1 (ckpt_kill) or 0 (ckpt_kill0) */
    const char *tmp;           /* the file being written */
    char   tmpbuf[4096 + 8];   /* NAME.tmp */
    hid_t  fapl, gmodel, goptim, ghalf, gsum;
    struct uplan *plans;       /* per unit, from create to the checksum tables */
    double t[5];               /* phase times, see enum save_time */
    int    direct;             /* tensor bytes go through fd, not H5Dwrite */
    int    fd;                 /* this writer's descriptor of tmp, or -1 */
    ckpt_hash_t *hash;
    struct wpiece *pieces;     /* the direct writes of all units */
    int    npieces;
    /* the first failure of a direct write on this rank: the rank keeps
     * taking part in the collective calls, and all agree at the end */
    strata_status_t local;
} writer_t;

/* A tensor part written directly once its unit's datasets exist: nbytes
 * from src at file offset foff; its checksum goes into row[2]. */
typedef struct wpiece {
    uint64_t    foff;
    const void *src;
    size_t      nbytes;
    uint64_t   *row;
    const char *path;
} wpiece_t;

/* When the phases of a save end, for the debug line. */
enum save_time { T_START, T_META, T_DATA, T_CLOSE, T_SYNC };

/* The ckpt_kill test fault (base/test_fault.h): die in the middle of a
 * save, as a node failure would. */
static void kill_point(const writer_t *w)
{
    if (w->kill_after && w->kill_rank == w->rank && w->bytes >= w->kill_after) raise(SIGKILL);
    /* ckpt_stall: hang instead, as a rank stuck on a dead file server would;
     * only the watchdog (ckpt_timeout) or the launcher ends it */
    if (w->stall_after && 1 == w->rank && w->bytes >= w->stall_after)
        for (;;) pause();
}

/* Bytes hashed and then written per pwrite: small enough that the hash
 * leaves them in cache for the copy into the page cache, large enough that
 * the syscalls cost nothing. */
#define WRITE_CHUNK ((size_t)8 << 20)

static strata_status_t h5fail(writer_t *w, const char *what, const char *obj)
{
    char m[256];
    return base_error(w->ctx, STRATA_ERR_HDF5, "%s: %s %s failed (%s)", w->file, what, obj,
                      ckpt_h5_msg(m, sizeof m));
}

/* The file system that holds path: its mount point (the longest entry of
 * /proc/self/mounts that is a prefix of path's real directory) and type,
 * or path's directory where that is unknown. */
static void fs_of(const char *path, char *buf, size_t len)
{
    char dir[4200], real[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    snprintf(buf, len, "%s", dir);
    if (!realpath(dir[0] ? dir : "/", real)) return;
    FILE *f = fopen("/proc/self/mounts", "r");
    char dev[512], mnt[4200], type[64];
    size_t best = 0;
    while (f && 3 == fscanf(f, "%511s %4199s %63s %*[^\n]", dev, mnt, type)) {
        size_t l = strlen(mnt);
        if (l >= best && !strncmp(real, mnt, l) && ('/' == real[l] || !real[l] || 1 == l)) {
            best = l;
            snprintf(buf, len, "%s (%s)", mnt, type);
        }
    }
    if (f) fclose(f);
}

/* A checkpoint that does not fit: the file system named, what it needs and
 * what is free, and what to do; the previous checkpoint is untouched. */
static strata_status_t no_space(writer_t *w, int err, uint64_t need, const char *doing)
{
    char fs[4400];
    fs_of(w->tmp, fs, sizeof fs);
    struct statvfs vs;
    unsigned long long avail = 0 == statvfs(w->tmp, &vs)
                                   ? (unsigned long long)vs.f_bavail * vs.f_frsize : 0;
    return base_error(w->ctx, STRATA_ERR_IO,
                      "checkpoint %s: the file system %s is full (%s) %s: the checkpoint needs "
                      "%llu bytes, %llu are free there; the previous checkpoint stays the latest. "
                      "Free space there or point ckpt_dir (--ckpt-dir) at a larger file system",
                      w->file, fs, strerror(err), doing, (unsigned long long)need, avail);
}

/* A 16-bit float file type HDF5 converts like any float (h5dump shows the
 * values): bf16 = sign 15, exponent 7..14, mantissa 0..6, bias 127;
 * f16 = IEEE binary16. */
static hid_t half_file_type(strata_dtype_t dt)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    if (t < 0) return t;
    int bf = STRATA_BF16 == dt;
    if (H5Tset_fields(t, 15, bf ? 7 : 10, bf ? 8 : 5, 0, bf ? 7 : 10) < 0 ||
        H5Tset_precision(t, 16) < 0 || H5Tset_size(t, 2) < 0 ||
        H5Tset_ebias(t, bf ? 127 : 15) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

static hid_t create_dataset(writer_t *w, hid_t parent, const char *name, hid_t type,
                            int ndims, const uint64_t *dims)
{
    hsize_t d[STRATA_CKPT_MAX_DIMS];
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    hid_t sp = H5Screate_simple(ndims, d, NULL);
    if (sp < 0) return -1;
    hid_t ds = H5Dcreate2(parent, name, type, sp, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
    H5Sclose(sp);
    return ds;
}

/*
 * Write elements [ta, tb) of a tensor (row-major positions) from buf; an
 * empty range still takes part in the collective write. The hash of the
 * bytes written goes into row[0..2] = {offset, length, xxh3}.
 */
static strata_status_t write_range(writer_t *w, hid_t ds, const char *path, hid_t memtype,
                                   size_t esize, int ndims, const uint64_t *dims,
                                   uint64_t ta, uint64_t tb, const void *buf, uint64_t *row)
{
    strata_status_t st = STRATA_OK;
    hid_t fs = H5Dget_space(ds);
    hsize_t n = tb - ta;
    hsize_t mdim = n ? n : 1;
    hid_t ms = H5Screate_simple(1, &mdim, NULL);
    static const float dummy[1];
    if (fs < 0 || ms < 0 || ckpt_select_range(fs, ndims, dims, ta, tb) < 0 ||
        (0 == n && H5Sselect_none(ms) < 0)) {
        st = h5fail(w, "selecting the hyperslabs of", path);
        goto out;
    }
    if (H5Dwrite(ds, memtype, ms, fs, w->dxpl, n ? buf : (const void *)dummy) < 0) {
        st = h5fail(w, "writing", path);
        goto out;
    }
    row[0] = ta;
    row[1] = n;
    row[2] = n ? ckpt_hash64(buf, (size_t)n * esize) : 0;
    w->bytes += (uint64_t)n * esize;
    kill_point(w);
out:
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
    return st;
}

/*
 * Elements [ta, tb) of a newly created dataset, from buf: queued for the
 * direct write when the dataset's bytes are one plain range of the file,
 * else written through HDF5 now. The decision depends on metadata only, so
 * every rank makes the same one (collective transfer modes need that).
 */
static strata_status_t put_tensor(writer_t *w, hid_t ds, const char *path, hid_t memtype,
                                  size_t esize, int ndims, const uint64_t *dims, uint64_t ta,
                                  uint64_t tb, const void *buf, uint64_t *row)
{
    uint64_t numel = 0;
    ckpt_numel(ndims, dims, &numel);
    uint64_t foff = w->direct ? ckpt_raw_offset(ds, memtype, numel * esize) : UINT64_MAX;
    if (UINT64_MAX == foff)
        return write_range(w, ds, path, memtype, esize, ndims, dims, ta, tb, buf, row);
    if (foff + numel * esize > w->data_end) w->data_end = foff + numel * esize;
    row[0] = ta;
    row[1] = tb - ta;
    row[2] = 0;
    if (tb > ta)
        w->pieces[w->npieces++] = (wpiece_t){ foff + ta * esize, buf, (size_t)(tb - ta) * esize, row, path };
    return STRATA_OK;
}

/* The direct writes. A failure stops this rank's writes and is kept in
 * w->local (reported after the collective calls). */
static void write_pieces(writer_t *w)
{
    const wpiece_t *pc = w->pieces;
    int n = w->npieces;
    for (int i = 0; i < n && STRATA_OK == w->local; i++) {
        ckpt_hash_reset(w->hash);
        for (size_t done = 0; done < pc[i].nbytes;) {
            size_t k = pc[i].nbytes - done < WRITE_CHUNK ? pc[i].nbytes - done : WRITE_CHUNK;
            const char *p = (const char *)pc[i].src + done;
            ckpt_hash_update(w->hash, p, k);
            int e = ckpt_pwrite_full(w->fd, p, k, pc[i].foff + done);
            if (ENOSPC == e || EDQUOT == e) {
                w->local = no_space(w, e, w->data_end, "writing its tensors");
                break;
            }
            if (e) {
                w->local = base_error(w->ctx, STRATA_ERR_IO,
                                      "%s: writing %zu bytes of %s at offset %llu of %s failed: %s",
                                      w->file, k, pc[i].path, (unsigned long long)(pc[i].foff + done),
                                      w->tmp, strerror(e));
                break;
            }
#ifdef SYNC_FILE_RANGE_WRITE
            /* start writing it to disk now, so the disk works while we
             * copy the rest and the final fsync has little left to do
             * (measured: save 1.3-1.9 GB/s with, 0.6-0.8 without) */
            sync_file_range(w->fd, (off_t)(pc[i].foff + done), (off_t)k, SYNC_FILE_RANGE_WRITE);
#endif
            done += k;
            w->bytes += k;
            w->direct_bytes += k;
            kill_point(w);
        }
        pc[i].row[2] = ckpt_hash_digest(w->hash);
    }
}

static hid_t make_group(hid_t parent, const char *name)
{
    return H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

/* The order of a group's members (units of /model, parameters of a unit),
 * which HDF5 does not keep (it lists links by name): attribute `attr`, the
 * names in order. names[i] is at (const char *const *)((char *)names + i * stride). */
static strata_status_t put_order(writer_t *w, hid_t obj, const char *attr, int n,
                                 const char *const *names, size_t stride)
{
    const char **v = calloc(n > 0 ? (size_t)n : 1, sizeof *v);
    if (!v) return base_error(w->ctx, STRATA_ERR_NOMEM, "checkpoint: no memory for names");
    for (int i = 0; i < n; i++) v[i] = *(const char *const *)((const char *)names + i * stride);
    int rc = ckpt_attr_put_strs(obj, attr, n, v);
    free(v);
    return rc < 0 ? h5fail(w, "writing the order attribute", attr) : STRATA_OK;
}

/* The checksum table of a unit: (S, T, 3) u64; writer s fills row s. */
static strata_status_t write_sumtab(writer_t *w, hid_t gsum, const strata_ckpt_unit_t *U,
                                    char **paths, int T, const uint64_t *rows)
{
    const strata_ckpt_layout_t *L = w->L;
    strata_status_t st = STRATA_OK;
    hsize_t dims[3] = { (hsize_t)L->shard_size, (hsize_t)T, 3 };
    hid_t sp = H5Screate_simple(3, dims, NULL), ds = -1, ms = -1;
    ds = H5Dcreate2(gsum, U->name, H5T_STD_U64LE, sp, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
    if (ds < 0) { st = h5fail(w, "creating the checksum table of", U->name); goto out; }
    hsize_t start[3] = { (hsize_t)L->shard_rank, 0, 0 }, count[3] = { 1, (hsize_t)T, 3 };
    hsize_t mdim = (hsize_t)T * 3;
    ms = H5Screate_simple(1, &mdim, NULL);
    if (w->writes) H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
    else {
        H5Sselect_none(sp);
        H5Sselect_none(ms);
    }
    if (H5Dwrite(ds, H5T_NATIVE_UINT64, ms, sp, w->dxpl, rows) < 0) {
        st = h5fail(w, "writing the checksum table of", U->name);
        goto out;
    }
    if (ckpt_attr_put_strs(ds, "tensors", T, (const char *const *)paths) < 0 ||
        ckpt_attr_put_str(ds, "columns", "offset,length,xxh3_64") < 0)
        st = h5fail(w, "writing the tensor names of the checksum table of", U->name);
out:
    if (ms >= 0) H5Sclose(ms);
    if (ds >= 0) H5Dclose(ds);
    if (sp >= 0) H5Sclose(sp);
    return st;
}

/* A unit's tensors between the phases of a save: their paths and checksum
 * rows (written last, once the direct writes have hashed their bytes). */
typedef struct uplan {
    int        T;
    char     **paths;
    uint64_t  *rows;
} uplan_t;

static int unit_tensors(const writer_t *w, const strata_ckpt_unit_t *U)
{
    return U->nparams * (1 + U->nstates + (w->half_type >= 0 ? 1 : 0));
}

static void uplan_free(uplan_t *up)
{
    for (int i = 0; up->paths && i < up->T; i++) free(up->paths[i]);
    free(up->paths);
    free(up->rows);
    memset(up, 0, sizeof *up);
}

/* One tensor's dataset `name` under parent, created, then written or
 * queued (put_tensor): tensor elements [ta, tb) from src. path: its full
 * name, kept for the checksum table as up->paths[*t]. */
static strata_status_t put_dataset(writer_t *w, hid_t parent, const char *name, const char *path,
                                   hid_t ftype, hid_t memtype, size_t esize,
                                   const strata_ckpt_param_t *P, uint64_t ta, uint64_t tb,
                                   const void *src, uplan_t *up, int *t)
{
    if (!(up->paths[*t] = strdup(path))) return STRATA_ERR_NOMEM;
    hid_t ds = create_dataset(w, parent, name, ftype, P->ndims, P->dims);
    if (ds < 0) return h5fail(w, "creating", path);
    strata_status_t st = put_tensor(w, ds, up->paths[*t], memtype, esize, P->ndims, P->dims,
                                    ta, tb, src, up->rows + 3 * *t);
    (*t)++;
    H5Dclose(ds);
    return st;
}

/* A parameter's datasets: /model, its optimizer states under /optim, its
 * 16-bit copy; each gets the part of the tensor in this rank's shard
 * [sa, sb) (none where this rank does not write). */
static strata_status_t put_param(writer_t *w, hid_t gm, hid_t go, hid_t gh,
                                 const strata_ckpt_unit_t *U, const strata_ckpt_param_t *P,
                                 uint64_t sa, uint64_t sb, const uint16_t *half, uplan_t *up,
                                 int *t)
{
    uint64_t numel, lo, hi, ta = 0, tb = 0;
    ckpt_numel(P->ndims, P->dims, &numel);
    /* the part of this tensor in my shard, in tensor positions */
    if (w->writes && ckpt_overlap(sa, sb, P->offset, P->offset + numel, &lo, &hi)) {
        ta = lo - P->offset;
        tb = hi - P->offset;
    }
    size_t at = tb > ta ? (size_t)(P->offset + ta - sa) : 0;   /* where it starts in my shard */
    char path[3 * STRATA_CKPT_MAX_NAME + 32];
    snprintf(path, sizeof path, "/model/%s/%s", U->name, P->name);
    strata_status_t st = put_dataset(w, gm, P->name, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4,
                                     P, ta, tb, U->shard + at, up, t);
    if (STRATA_OK == st && U->nstates) {
        hid_t gp = make_group(go, P->name);
        if (gp < 0) st = h5fail(w, "creating the group of", path);
        for (int k = 0; k < U->nstates && STRATA_OK == st; k++) {
            snprintf(path, sizeof path, "/optim/%s/%s/%s", U->name, P->name, U->states[k].name);
            st = put_dataset(w, gp, U->states[k].name, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4,
                             P, ta, tb, U->states[k].shard + at, up, t);
        }
        if (gp >= 0) H5Gclose(gp);
    }
    if (STRATA_OK == st && gh >= 0) {
        snprintf(path, sizeof path, "/%s/%s/%s", w->half_group, U->name, P->name);
        st = put_dataset(w, gh, P->name, path, w->half_type, w->half_type, 2, P, ta, tb,
                         half + at, up, t);
    }
    return st;
}

/* Create a unit's groups, scalars and datasets (collective); queue this
 * rank's direct writes in w->pieces, or write through HDF5 now where a
 * dataset cannot take them. half: this unit's part of the 16-bit buffer. */
static strata_status_t create_unit(writer_t *w, hid_t gmodel, hid_t goptim, hid_t ghalf,
                                   const strata_ckpt_unit_t *U, uint16_t *half, uplan_t *up)
{
    const strata_ckpt_layout_t *L = w->L;
    strata_status_t st = STRATA_OK;
    uint64_t sa, sb;
    strata_ckpt_shard_range(U->npad, L->shard_size, L->shard_rank, &sa, &sb);
    up->T = unit_tensors(w, U);
    up->paths = calloc((size_t)up->T, sizeof *up->paths);
    up->rows = calloc((size_t)up->T * 3, sizeof *up->rows);
    hid_t gm = -1, go = -1, gh = -1;
    if (!up->paths || !up->rows) return base_error(w->ctx, STRATA_ERR_NOMEM, "checkpoint: no memory");

    if ((gm = make_group(gmodel, U->name)) < 0 || (go = make_group(goptim, U->name)) < 0 ||
        (ghalf >= 0 && (gh = make_group(ghalf, U->name)) < 0))
        st = h5fail(w, "creating the groups of unit", U->name);
    if (STRATA_OK == st)
        st = put_order(w, gm, "params", U->nparams, &U->params[0].name, sizeof U->params[0]);
    for (int k = 0; k < U->nscalars && STRATA_OK == st; k++)
        if (ckpt_attr_put_f64(go, U->scalars[k].name, U->scalars[k].value) < 0)
            st = h5fail(w, "writing optimizer scalar", U->scalars[k].name);
    /* the 16-bit copy of the whole shard, read by the writes below */
    if (gh >= 0 && w->writes && STRATA_BF16 == w->half) strata_f32_to_bf16(U->shard, half, (size_t)(sb - sa));
    else if (gh >= 0 && w->writes) strata_f32_to_f16(U->shard, half, (size_t)(sb - sa));
    for (int p = 0, t = 0; p < U->nparams && STRATA_OK == st; p++)
        st = put_param(w, gm, go, gh, U, &U->params[p], sa, sb, half, up, &t);
    if (STRATA_ERR_NOMEM == st && !w->ctx->errmsg[0])
        base_error(w->ctx, st, "checkpoint: no memory for tensor paths");
    if (gh >= 0) H5Gclose(gh);
    if (go >= 0) H5Gclose(go);
    if (gm >= 0) H5Gclose(gm);
    return st;
}

static strata_status_t write_header(writer_t *w)
{
    const strata_ckpt_layout_t *L = w->L;
    char created[64] = "";
    if (0 == w->rank) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    /* collective metadata writes need the same value on every rank */
    MPI_Bcast(created, sizeof created, MPI_CHAR, 0, w->ctx->comm);
    hid_t f = w->fid;
    if (ckpt_attr_put_str(f, "format", STRATA_CKPT_FORMAT) < 0 ||
        ckpt_attr_put_i64(f, "format_version", STRATA_CKPT_VERSION) < 0 ||
        ckpt_attr_put_str(f, "strata_version", strata_version_string()) < 0 ||
        ckpt_attr_put_i64(f, "world_size", L->world_size) < 0 ||
        ckpt_attr_put_i64(f, "shard_size", L->shard_size) < 0 ||
        ckpt_attr_put_str(f, "created", created) < 0 ||
        ckpt_attr_put_str(f, "checksum", "xxh3_64") < 0)
        return h5fail(w, "writing", "the root attributes");
    for (int i = 0; i < L->nconfig; i++) {
        char name[STRATA_CKPT_MAX_NAME + 8];
        snprintf(name, sizeof name, "config.%s", L->config[i].key);
        if (ckpt_attr_put_str(f, name, L->config[i].value) < 0) return h5fail(w, "writing attribute", name);
    }

    strata_status_t st = STRATA_OK;
    hid_t g = make_group(f, "train"), sp = -1, ds = -1;
    if (g < 0 || ckpt_attr_put_i64(g, "step", (int64_t)L->train.step) < 0 ||
        ckpt_attr_put_i64(g, "data_position", (int64_t)L->train.data_pos) < 0) {
        st = h5fail(w, "writing", "/train");
        goto out;
    }
    if (L->train.rng_len) {
        hsize_t n = L->train.rng_len;
        sp = H5Screate_simple(1, &n, NULL);
        ds = H5Dcreate2(g, "rng", H5T_STD_U8LE, sp, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
        if (0 != w->rank) H5Sselect_none(sp);   /* one writer; the rest take part */
        if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_UINT8, sp, sp, w->dxpl, L->train.rng) < 0)
            st = h5fail(w, "writing", "/train/rng");
    }
out:
    if (ds >= 0) H5Dclose(ds);
    if (sp >= 0) H5Sclose(sp);
    if (g >= 0) H5Gclose(g);
    return st;
}

static strata_status_t fsync_path(strata_context_t *ctx, const char *path, int dir)
{
    int fd = open(path, O_RDONLY | (dir ? O_DIRECTORY : 0));
    if (fd < 0) return base_error(ctx, STRATA_ERR_IO, "checkpoint: cannot open %s to fsync it: %s",
                                  path, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc) return base_error(ctx, STRATA_ERR_IO, "checkpoint: fsync %s failed: %s", path, strerror(e));
    return STRATA_OK;
}

static void dir_of(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, len, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
}

/* ------------------------------------------------------------- the save --- */
/*
 * strata_ckpt_write runs in four phases. A rank that fails inside a phase
 * still takes part in that phase's collective calls where it can (a failed
 * direct write waits in w->local); the ranks agree on the outcome only at
 * the end of each phase, and no rank starts the next one unless all
 * succeeded:
 *
 *   open    buffers for the plan; NAME.tmp created (collective); each
 *           writer's own descriptor of it.
 *   create  the header, groups and every dataset (collective metadata);
 *           this rank's direct writes queued, the file's blocks reserved.
 *           The agreement after it also means: every dataset exists before
 *           anyone writes. A collective HDF5 write may still be in progress
 *           on another rank (MPI-IO aggregators read-modify-write ranges
 *           spanning the raw data around metadata blocks), and must not
 *           overlap the direct writes.
 *   write   the direct writes of all units, with no collective call between
 *           them (one rank's slow write does not hold up the others' next
 *           one); then the checksum tables, which need their hashes; the
 *           close; each writer's fsync. Durable before visible.
 *   commit  rank 0 renames NAME.tmp to NAME between fsyncs of the directory.
 */

static void writer_init(writer_t *w, strata_context_t *ctx, const strata_ckpt_layout_t *L,
                        const char *path, strata_dtype_t half)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->L = L;
    w->file = path;
    w->rank = ctx->rank;
    w->writes = 0 == L->replica;
    w->half = half;
    w->fid = w->fapl = w->dcpl = w->dxpl = w->half_type = -1;
    w->gmodel = w->goptim = w->ghalf = w->gsum = -1;
    w->fd = -1;
    w->direct = ckpt_direct_enabled(ctx);
    w->kill_after = test_fault_arg("ckpt_kill");
    w->kill_rank = 1;
    if (!w->kill_after && (w->kill_after = test_fault_arg("ckpt_kill0"))) w->kill_rank = 0;
    w->stall_after = test_fault_arg("ckpt_stall");
    snprintf(w->tmpbuf, sizeof w->tmpbuf, "%s.tmp", path);
    w->tmp = w->tmpbuf;
}

/* The plan's buffers: the 16-bit copies of all shards (kept until the
 * direct writes), the units' tensor lists, the queue of direct writes. */
static strata_status_t alloc_plan(writer_t *w)
{
    const strata_ckpt_layout_t *L = w->L;
    strata_status_t st = STRATA_OK;
    if (STRATA_F32 != w->half) {
        w->half_type = half_file_type(w->half);
        w->half_group = STRATA_BF16 == w->half ? "model_bf16" : "model_f16";
        size_t total = 1;
        for (int u = 0; u < L->nunits; u++)
            total += (size_t)(L->units[u].npad / (uint64_t)L->shard_size);
        w->half_buf = malloc(total * sizeof(uint16_t));
        if (w->half_type < 0 || !w->half_buf)
            st = base_error(w->ctx, STRATA_ERR_NOMEM, "%s: no memory for the %s copy buffer",
                            w->file, strata_dtype_name(w->half));
    }
    size_t ntensors = 0;
    for (int u = 0; u < L->nunits; u++) ntensors += (size_t)unit_tensors(w, &L->units[u]);
    w->plans = calloc(L->nunits > 0 ? (size_t)L->nunits : 1, sizeof *w->plans);
    w->pieces = calloc(ntensors ? ntensors : 1, sizeof *w->pieces);
    if (STRATA_OK == st && (!(w->hash = ckpt_hash_new()) || !w->plans || !w->pieces))
        st = base_error(w->ctx, STRATA_ERR_NOMEM, "%s: no memory to plan the writes", w->file);
    return st;
}

/* Phase open. A rank short of memory still takes part in the collective
 * create, so that the ranks can agree afterwards. */
static strata_status_t save_open(writer_t *w)
{
    strata_status_t st = alloc_plan(w);
    w->fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(w->fapl, w->ctx->comm, MPI_INFO_NULL);
    H5Pset_all_coll_metadata_ops(w->fapl, 1);
    H5Pset_coll_metadata_write(w->fapl, 1);
    /* the 1.10 file format: superblock v3 and checksummed object headers,
     * B-trees and heaps, so a damaged metadata byte fails the open or read
     * with an error instead of misleading the reader; HDF5 >= 1.10 and
     * h5py read it */
    H5Pset_libver_bounds(w->fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
    /* large datasets start on 1 MiB boundaries: whole file-system blocks and
     * stripes for each writer's range */
    H5Pset_alignment(w->fapl, 1 << 20, 1 << 20);
    /* small metadata objects go into 256 KiB blocks instead of between the data */
    H5Pset_meta_block_size(w->fapl, 256 << 10);
    w->dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(w->dcpl, H5D_CONTIGUOUS);
    H5Pset_alloc_time(w->dcpl, H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_time(w->dcpl, H5D_FILL_TIME_NEVER);   /* every element is written */
    w->dxpl = H5Pcreate(H5P_DATASET_XFER);
    ckpt_set_transfer(w->ctx, w->dxpl);

    w->t[T_START] = base_now();
    w->fid = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, w->fapl);
    if (w->fid < 0) {
        char m[256];
        return base_error(w->ctx, STRATA_ERR_HDF5, "checkpoint: cannot create %s (%s); is the "
                          "directory writable?", w->tmp, ckpt_h5_msg(m, sizeof m));
    }
    /* the writers' own descriptors for the direct writes; the file exists
     * on every rank once the collective create has returned */
    if (STRATA_OK == st && w->direct && w->writes && (w->fd = open(w->tmp, O_WRONLY | O_CLOEXEC)) < 0)
        st = base_error(w->ctx, STRATA_ERR_IO, "checkpoint: cannot open %s for writing: %s",
                        w->tmp, strerror(errno));
    return st;
}

/* Bytes reserved beyond the datasets: the checksum tables and the
 * metadata written at the close (256 KiB metadata blocks). */
#define CLOSE_MARGIN ((uint64_t)1 << 20)

/* Phase create. */
static strata_status_t save_create(writer_t *w)
{
    const strata_ckpt_layout_t *L = w->L;
    strata_status_t st = write_header(w);
    if (STRATA_OK != st) return st;
    w->gmodel = make_group(w->fid, "model");
    w->goptim = make_group(w->fid, "optim");
    w->gsum = make_group(w->fid, "checksums");
    if (w->half_type >= 0) w->ghalf = make_group(w->fid, w->half_group);
    if (w->gmodel < 0 || w->goptim < 0 || w->gsum < 0 || (w->half_type >= 0 && w->ghalf < 0))
        return h5fail(w, "creating", "the top-level groups");
    ckpt_attr_put_str(w->gsum, "algorithm", "xxh3_64");
    strata_status_t ost = put_order(w, w->gmodel, "units", L->nunits, &L->units[0].name,
                                    sizeof L->units[0]);
    if (STRATA_OK != ost) return ost;
    size_t hoff = 0;
    for (int u = 0; u < L->nunits && STRATA_OK == st; u++) {
        const strata_ckpt_unit_t *U = &L->units[u];
        st = create_unit(w, w->gmodel, w->goptim, w->ghalf, U, w->half_buf ? w->half_buf + hoff : NULL,
                         &w->plans[u]);
        hoff += (size_t)(U->npad / (uint64_t)L->shard_size);
    }
    /* One rank reserves the blocks of every dataset in one call before
     * the writers start. Left to the writers, the file system allocates
     * blocks in the order their concurrent writes reach the disk: a 1 GiB
     * file of 4 writers came out in ~120 extents here, against 9 with
     * this call (and ~10 for one raw file written by 4 ranks). A hint
     * only: where fallocate is not supported the writes allocate. */
#ifdef FALLOC_FL_KEEP_SIZE
    /* It also finds a file system too small for the checkpoint before any
     * byte is written, on one rank, so all ranks fail together (a margin
     * for the checksum tables and the metadata HDF5 writes at the close). */
    if (STRATA_OK == st && 0 == w->rank && w->fd >= 0 && w->data_end > 0 &&
        !test_fault_arg("ckpt_noreserve") && fallocate(w->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)(w->data_end + CLOSE_MARGIN)) &&
        (ENOSPC == errno || EDQUOT == errno))
        st = no_space(w, errno, w->data_end + CLOSE_MARGIN, "reserving its blocks");
#endif
    return st;
}

/* Close the groups and the file (collective) where open; a failure to
 * close counts only where nothing failed before. */
static strata_status_t close_file(writer_t *w, strata_status_t st)
{
    hid_t *groups[] = { &w->gsum, &w->ghalf, &w->goptim, &w->gmodel };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (*groups[i] >= 0) H5Gclose(*groups[i]);
        *groups[i] = -1;
    }
    if (w->fid >= 0 && H5Fclose(w->fid) < 0 && STRATA_OK == st)
        st = h5fail(w, "closing", w->tmp);
    w->fid = -1;
    return st;
}

/* After a failed save, before its collective close: the tmp file's blocks
 * go back to the file system (rank 0 empties it; the metadata HDF5 writes
 * at the close then finds room), so the close completes on every rank. */
static void release_space(writer_t *w)
{
    if (0 == w->rank && truncate(w->tmp, 0))
        strata_debug(w->ctx, "checkpoint: cannot empty %s: %s", w->tmp, strerror(errno));
    (void)ckpt_agree_wait(w->ctx, w->ctx->comm, STRATA_OK);
}

/* Every writer flushes what it wrote, after HDF5's close wrote the metadata. */
static strata_status_t flush_file(writer_t *w)
{
    strata_status_t st = STRATA_OK;
    if (w->fd < 0) return w->writes ? fsync_path(w->ctx, w->tmp, 0) : STRATA_OK;
    /* the reservation's blocks past the end of the file HDF5 closed go back
     * (truncating to the same size frees them on ext4 and XFS) */
    off_t end = 0 == w->rank ? lseek(w->fd, 0, SEEK_END) : -1;
    if (end > 0 && ftruncate(w->fd, end))
        strata_debug(w->ctx, "checkpoint: cannot trim %s: %s", w->tmp, strerror(errno));
    if (fsync(w->fd))
        st = base_error(w->ctx, STRATA_ERR_IO, "checkpoint: fsync %s failed: %s", w->tmp, strerror(errno));
    if (close(w->fd) && STRATA_OK == st)
        st = base_error(w->ctx, STRATA_ERR_IO, "checkpoint: close %s failed: %s", w->tmp, strerror(errno));
    w->fd = -1;
    return st;
}

/* Phase write. */
static strata_status_t save_write(writer_t *w)
{
    strata_status_t st = STRATA_OK;
    w->t[T_META] = base_now();
    write_pieces(w);
    w->t[T_DATA] = base_now();
    /* A write that failed (a full file system) is known to every rank
     * before the checksum tables and the close: their collective calls
     * would otherwise part ways where HDF5 fails on one rank and not on
     * another, and wait for each other until ckpt_timeout. */
    st = ckpt_agree_wait(w->ctx, w->ctx->comm, w->local);
    if (STRATA_OK != st) {
        release_space(w);
        close_file(w, st);
        return st;
    }
    for (int u = 0; u < w->L->nunits && STRATA_OK == st; u++)
        st = write_sumtab(w, w->gsum, &w->L->units[u], w->plans[u].paths, w->plans[u].T,
                          w->plans[u].rows);
    st = close_file(w, st);
    w->t[T_CLOSE] = base_now();
    if (STRATA_OK == st) st = w->local;
    if (STRATA_OK == st) st = flush_file(w);
    w->t[T_SYNC] = base_now();
    return st;
}

/* Phase commit: the name points at complete, durable data. */
static strata_status_t save_commit(writer_t *w)
{
    if (0 != w->rank) return STRATA_OK;
    char dir[4096];
    dir_of(w->file, dir, sizeof dir);
    strata_status_t st = fsync_path(w->ctx, dir, 1);
    if (STRATA_OK == st && rename(w->tmp, w->file))
        st = base_error(w->ctx, STRATA_ERR_IO, "checkpoint: rename %s -> %s failed: %s",
                        w->tmp, w->file, strerror(errno));
    if (STRATA_OK == st) st = fsync_path(w->ctx, dir, 1);
    return st;
}

/* Whatever is still open or allocated, on any path (the file collectively). */
static void writer_cleanup(writer_t *w)
{
    close_file(w, STRATA_OK);
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->hash) ckpt_hash_free(w->hash);
    for (int u = 0; w->plans && u < w->L->nunits; u++) uplan_free(&w->plans[u]);
    free(w->plans);
    free(w->pieces);
    if (w->dxpl >= 0) H5Pclose(w->dxpl);
    if (w->dcpl >= 0) H5Pclose(w->dcpl);
    if (w->fapl >= 0) H5Pclose(w->fapl);
    if (w->half_type >= 0) H5Tclose(w->half_type);
    free(w->half_buf);
}

/* opts: this library's own struct (save_opts_in), never NULL */
static strata_status_t write_file(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                  const char *path, const strata_ckpt_save_opts_t *opts)
{
    if (!ctx) return STRATA_ERR_INVALID;
    MPI_Comm comm = ctx->comm;
    strata_dtype_t half = opts->half_copy;
    strata_status_t st = STRATA_OK;
    if (!path || !path[0] || strlen(path) > 4000)
        st = base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_write: path is NULL, empty or too long");
    st = ckpt_agree_wait(ctx, comm, st);
    if (STRATA_OK == st) st = ckpt_layout_check(ctx, comm, layout, path);
    if (STRATA_OK != st) return st;
    if (STRATA_F32 != half && STRATA_BF16 != half && STRATA_F16 != half)   /* opts: the same everywhere */
        return base_error(ctx, STRATA_ERR_INVALID, "%s: half_copy must be f32 (none), bf16 or f16", path);

    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    writer_t w;
    writer_init(&w, ctx, layout, path, half);
    st = ckpt_agree_wait(ctx, comm, save_open(&w));
    if (STRATA_OK == st) st = ckpt_agree_wait(ctx, comm, save_create(&w));
    if (STRATA_OK == st) st = ckpt_agree_wait(ctx, comm, save_write(&w));
    writer_cleanup(&w);
    ckpt_h5_restore(&quiet);
    /* a failed save leaves no NAME.tmp behind to fill the file system */
    if (STRATA_OK != st && 0 == ctx->rank) unlink(w.tmp);
    if (STRATA_OK != st) return st;

    st = save_commit(&w);
    const double *t = w.t;
    strata_debug(ctx, "checkpoint %s: %.3f s creating, %.3f s data, %.3f s close, %.3f s fsync, "
                 "%.3f s rename (%llu bytes written here, %llu directly)", path,
                 t[T_META] - t[T_START], t[T_DATA] - t[T_META], t[T_CLOSE] - t[T_DATA],
                 t[T_SYNC] - t[T_CLOSE], base_now() - t[T_SYNC], (unsigned long long)w.bytes,
                 (unsigned long long)w.direct_bytes);
    return ckpt_agree_wait(ctx, comm, st);
}

/* ------------------------------------------------ directory rotation --- */

/* step-<digits>.h5 -> step number; -1 for anything else. */
static long long step_of(const char *name)
{
    if (strncmp(name, "step-", 5)) return -1;
    const char *p = name + 5;
    long long v = 0;
    int nd = 0;
    for (; *p >= '0' && *p <= '9'; p++, nd++) {
        if (v > (1LL << 55)) return -1;
        v = v * 10 + (*p - '0');
    }
    if (nd < 8 || strcmp(p, ".h5")) return -1;
    return v;
}

int ckpt_list_steps(const char *dir, long long **steps_p)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0, cap = 0;
    long long *v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        long long s = step_of(e->d_name);
        if (s < 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            long long *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) { free(v); closedir(d); return -1; }
            v = nv;
        }
        v[n++] = s;
    }
    closedir(d);
    for (int i = 1; i < n; i++)           /* insertion sort, ascending */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            long long t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
        }
    *steps_p = v;
    return n;
}

/* Point dir/latest at name (latest.tmp + fsync + rename + fsync dir). */
static strata_status_t write_latest(strata_context_t *ctx, const char *dir, const char *name)
{
    char tmp[4200], fin[4200];
    snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
    snprintf(fin, sizeof fin, "%s/latest", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return base_error(ctx, STRATA_ERR_IO, "checkpoint: cannot write %s: %s", tmp, strerror(errno));
    char line[300];
    int n = snprintf(line, sizeof line, "%s\n", name);
    int bad = write(fd, line, (size_t)n) != n || fsync(fd);
    int e = errno;
    close(fd);
    if (bad) return base_error(ctx, STRATA_ERR_IO, "checkpoint: writing %s failed: %s", tmp, strerror(e));
    if (rename(tmp, fin))
        return base_error(ctx, STRATA_ERR_IO, "checkpoint: rename %s -> %s failed: %s", tmp, fin, strerror(errno));
    return fsync_path(ctx, dir, 1);
}

/* Delete all but the newest keep checkpoints, never `current`, and stale
 * step-*.h5.tmp files of saves that died. Runs after the new file is
 * complete, so a failure here loses nothing. */
static void prune(strata_context_t *ctx, const char *dir, int keep, long long current)
{
    long long *steps = NULL;
    int n = ckpt_list_steps(dir, &steps);
    char path[4200];
    for (int i = 0; n > 0 && keep > 0 && i < n - keep; i++) {
        if (steps[i] == current) continue;
        snprintf(path, sizeof path, "%s/step-%08lld.h5", dir, steps[i]);
        if (unlink(path) && ENOENT != errno)
            strata_warn(ctx, "checkpoint: cannot delete old %s: %s", path, strerror(errno));
        else strata_info(ctx, "checkpoint: deleted old %s (keeping the newest %d)", path, keep);
    }
    free(steps);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".tmp") && !strncmp(e->d_name, "step-", 5)) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d) closedir(d);
}

static strata_status_t save_dir(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                const char *dir, const strata_ckpt_save_opts_t *opts,
                                char *path_p, size_t len)
{
    strata_status_t st = STRATA_OK;
    char path[4200], name[64];
    if (!dir || !dir[0] || strlen(dir) > 4000 || !layout)
        st = base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_save: directory or layout missing, or path too long");
    st = ckpt_agree_wait(ctx, ctx->comm, st);
    if (STRATA_OK != st) return st;
    snprintf(name, sizeof name, "step-%08llu.h5", (unsigned long long)layout->train.step);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (0 == ctx->rank && mkdir(dir, 0755) && EEXIST != errno)
        st = base_error(ctx, STRATA_ERR_IO, "checkpoint: cannot create directory %s: %s", dir, strerror(errno));
    st = ckpt_agree_wait(ctx, ctx->comm, st);
    if (STRATA_OK != st) return st;

    st = write_file(ctx, layout, path, opts);
    if (STRATA_OK != st) return st;
    if (0 == ctx->rank) {
        st = write_latest(ctx, dir, name);
        int keep = opts->keep ? opts->keep : ctx->cfg.ckpt_keep;
        if (STRATA_OK == st && keep > 0) prune(ctx, dir, keep, (long long)layout->train.step);
    }
    st = ckpt_agree_wait(ctx, ctx->comm, st);
    if (STRATA_OK == st && path_p) {
        if (strlen(path) >= len) return base_error(ctx, STRATA_ERR_INVALID, "checkpoint path %s longer than the %zu-byte buffer", path, len);
        memcpy(path_p, path, strlen(path) + 1);
    }
    return st;
}

_Static_assert(0 == sizeof(strata_ckpt_save_opts_t) % 8, "strata_ckpt_save_opts_t: pad to 8");

static const base_grow_t save_opts_grow = {
    "strata_ckpt_save_opts_t", "strata_ckpt_save_opts_default(&opts)",
    sizeof(strata_ckpt_save_opts_t)
};

strata_status_t strata_ckpt_save_opts_init(strata_ckpt_save_opts_t *opts, size_t size)
{
    const strata_ckpt_save_opts_t d = { .size = sizeof d, .half_copy = STRATA_F32, .keep = 0 };
    return base_grow_init(&save_opts_grow, opts, size, &d);
}

/* The caller's options (NULL: the defaults) as this library's struct,
 * agreed: a rank whose struct is refused fails the save on every rank. */
static strata_status_t save_opts_in(strata_context_t *ctx, const strata_ckpt_save_opts_t *opts,
                                    strata_ckpt_save_opts_t *o)
{
    strata_ckpt_save_opts_init(o, sizeof *o);
    strata_status_t st = opts ? base_grow_in(ctx, &save_opts_grow, o, opts) : STRATA_OK;
    return base_agree(ctx, ctx->comm, st);
}

/* The public entry points: each whole save is one recorded operation under
 * ckpt_timeout, with HDF5's collectives and ours inside it (the recorder
 * gives them its deadline), however the caller got here. */
strata_status_t strata_ckpt_write(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                  const char *path, const strata_ckpt_save_opts_t *opts)
{
    if (!ctx) return STRATA_ERR_INVALID;
    uint64_t op = ckpt_rec_begin(ctx, BASE_OP_CKPT_SAVE);
    strata_ckpt_save_opts_t o;
    strata_status_t st = save_opts_in(ctx, opts, &o);
    if (STRATA_OK == st) st = write_file(ctx, layout, path, &o);
    ckpt_rec_end(ctx, op, st);
    return st;
}

strata_status_t strata_ckpt_save(strata_context_t *ctx, const strata_ckpt_layout_t *layout,
                                 const char *dir, const strata_ckpt_save_opts_t *opts,
                                 char *path_p, size_t len)
{
    if (!ctx) return STRATA_ERR_INVALID;
    uint64_t op = ckpt_rec_begin(ctx, BASE_OP_CKPT_SAVE);
    strata_ckpt_save_opts_t o;
    strata_status_t st = save_opts_in(ctx, opts, &o);
    if (STRATA_OK == st) st = save_dir(ctx, layout, dir, &o, path_p, len);
    ckpt_rec_end(ctx, op, st);
    return st;
}
