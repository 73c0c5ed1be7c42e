/*
 * ckpt_h5.c - HDF5 plumbing shared by checkpoint save, load and the
 * inspectors: quiet error stacks, validated attributes, the header check,
 * the checksum tables. Ranks agree on a status with base_agree (base/agree.h).
 *
 * Everything read from a file is untrusted: types, shapes and sizes are
 * checked before anything is allocated or read.
 */
#include "config.h"
#include "base/base.h"
#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ errors --- */

void ckpt_h5_quiet(ckpt_h5quiet_t *q)
{
    base_h5_lock();
    q->func = NULL;
    q->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void ckpt_h5_restore(const ckpt_h5quiet_t *q)
{
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
    base_h5_unlock();
}

typedef struct { char *buf; size_t len; } walk_t;

/* Walking upward, the first entry is the most specific (e.g. "truncated
 * file: eof = ..."); that is the one a person can act on. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
    walk_t *w = data;
    if (!w->buf[0] && err->desc && err->desc[0]) snprintf(w->buf, w->len, "%s", err->desc);
    return 0;
}

const char *ckpt_h5_msg(char *buf, size_t len)
{
    walk_t w = { buf, len };
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (!buf[0]) snprintf(buf, len, "no detail from HDF5");
    return buf;
}

uint64_t ckpt_rec_begin(strata_context_t *ctx, base_op_kind_t kind)
{
    return ctx->op_begin ? ctx->op_begin(ctx, kind) : 0;
}

void ckpt_rec_end(strata_context_t *ctx, uint64_t op, strata_status_t st)
{
    if (ctx->op_end && op) ctx->op_end(ctx, op, st);
}

strata_status_t ckpt_agree_wait(strata_context_t *ctx, MPI_Comm comm, strata_status_t st)
{
    uint64_t op = ckpt_rec_begin(ctx, BASE_OP_MPI);
    st = base_agree(ctx, comm, st);
    ckpt_rec_end(ctx, op, st);
    return st;
}

/* -------------------------------------------------------- attributes --- */

static int attr_put(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    int rc = -1;
    hid_t sp = H5Screate(H5S_SCALAR), a = H5I_INVALID_HID;
    if (sp < 0) return -1;
    a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0 && H5Awrite(a, mtype, v) >= 0) rc = 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

int ckpt_attr_put_str(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    /* fixed length, NUL-terminated: h5dump and h5py show it as a string */
    size_t n = strlen(value) + 1;
    int rc = -1;
    if (H5Tset_size(t, n) >= 0 && H5Tset_strpad(t, H5T_STR_NULLTERM) >= 0)
        rc = attr_put(obj, name, t, t, value);
    H5Tclose(t);
    return rc;
}

/* A 1-d attribute of n fixed-length, NUL-padded strings (as wide as the
 * longest): h5py reads it as an array of bytes objects, in order. */
int ckpt_attr_put_strs(hid_t obj, const char *name, int n, const char *const *v)
{
    size_t w = 2;
    for (int i = 0; i < n; i++) if (strlen(v[i]) + 1 > w) w = strlen(v[i]) + 1;
    char *flat = calloc(n > 0 ? (size_t)n : 1, w);
    hsize_t dim = (hsize_t)n;
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate_simple(1, &dim, NULL), a = H5I_INVALID_HID;
    int rc = -1;
    if (flat && t >= 0 && sp >= 0 && H5Tset_size(t, w) >= 0 &&
        H5Tset_strpad(t, H5T_STR_NULLPAD) >= 0) {
        for (int i = 0; i < n; i++) memcpy(flat + (size_t)i * w, v[i], strlen(v[i]));
        a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0 && H5Awrite(a, t, flat) >= 0) rc = 0;
    }
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    free(flat);
    return rc;
}

int ckpt_attr_put_i64(hid_t obj, const char *name, int64_t value)
{
    return attr_put(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

int ckpt_attr_put_u64(hid_t obj, const char *name, uint64_t value)
{
    return attr_put(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

int ckpt_attr_put_f64(hid_t obj, const char *name, double value)
{
    return attr_put(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

/* Open a scalar attribute of the given class; -1 missing, -2 wrong. */
static int attr_open(hid_t obj, const char *name, H5T_class_t cls, hid_t *a_p, hid_t *t_p)
{
    htri_t ex = H5Aexists(obj, name);
    if (ex <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    int ok = t >= 0 && sp >= 0 && H5Tget_class(t) == cls &&
             (H5Sget_simple_extent_type(sp) == H5S_SCALAR ||
              (H5Sget_simple_extent_npoints(sp) == 1));
    if (sp >= 0) H5Sclose(sp);
    if (!ok) {
        if (t >= 0) H5Tclose(t);
        H5Aclose(a);
        return -2;
    }
    *a_p = a;
    *t_p = t;
    return 0;
}

int ckpt_attr_get_str(hid_t obj, const char *name, char *buf, size_t len)
{
    hid_t a, t;
    int rc = attr_open(obj, name, H5T_STRING, &a, &t);
    if (rc) return rc;
    rc = -2;
    size_t n = H5Tget_size(t);
    if (!H5Tis_variable_str(t) && n > 0 && n < len) {
        hid_t m = H5Tcopy(H5T_C_S1);
        if (m >= 0 && H5Tset_size(m, n) >= 0) {
            memset(buf, 0, len);
            if (H5Aread(a, m, buf) >= 0) { buf[n] = '\0'; rc = 0; }
        }
        if (m >= 0) H5Tclose(m);
    }
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* A numeric scalar attribute of class cls and at most 8 bytes, converted
 * to mem_type (an 8-byte native type) into *value, written only on success. */
static int attr_get(hid_t obj, const char *name, H5T_class_t cls, hid_t mem_type, void *value)
{
    hid_t a, t;
    int rc = attr_open(obj, name, cls, &a, &t);
    if (rc) return rc;
    union { int64_t i; double f; } v;
    rc = (H5Tget_size(t) <= 8 && H5Aread(a, mem_type, &v) >= 0) ? 0 : -2;
    if (!rc) memcpy(value, &v, sizeof v);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int ckpt_attr_get_i64(hid_t obj, const char *name, int64_t *value)
{
    return attr_get(obj, name, H5T_INTEGER, H5T_NATIVE_INT64, value);
}

int ckpt_attr_get_f64(hid_t obj, const char *name, double *value)
{
    return attr_get(obj, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, value);
}

/* ----------------------------------------------------------- header --- */

static strata_status_t attr_error(strata_context_t *ctx, const char *file, const char *obj,
                                  const char *name, int rc, const char *want)
{
    return base_error(ctx, STRATA_ERR_FORMAT,
                      "%s: attribute %s of %s is %s (expected %s); the file is not a complete strata checkpoint",
                      file, name, obj, -1 == rc ? "missing" : "of the wrong type or size", want);
}

/* Open path read-only (over comm's ranks unless MPI_COMM_NULL) after the
 * checks that name what is wrong with a file that is not one. */
static strata_status_t open_hdf5(strata_context_t *ctx, const char *path, MPI_Comm comm,
                                 hid_t *fid_p)
{
    struct stat sb;
    char h5msg[256];
    if (0 != stat(path, &sb))
        return base_error(ctx, ENOENT == errno ? STRATA_ERR_NOT_FOUND : STRATA_ERR_IO,
                          "checkpoint %s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return base_error(ctx, STRATA_ERR_FORMAT, "checkpoint %s is not a regular file", path);
    /* a file this process may not read is not a damaged one: said as such
     * (HDF5 would call it "not an HDF5 file") */
    int fd = open(path, O_RDONLY | O_CLOEXEC), e = errno;
    if (fd < 0)
        return base_error(ctx, EACCES == e || EPERM == e ? STRATA_ERR_ACCESS : STRATA_ERR_IO,
                          "checkpoint %s cannot be read by this process (uid %u): %s (mode %04o, "
                          "owner uid %u); fix its permissions or run as its owner",
                          path, (unsigned)geteuid(), strerror(e), (unsigned)(sb.st_mode & 07777),
                          (unsigned)sb.st_uid);
    close(fd);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        ckpt_h5_msg(h5msg, sizeof h5msg);
        return base_error(ctx, STRATA_ERR_FORMAT,
                          "checkpoint %s is not an HDF5 file (no HDF5 signature found; %zu bytes)",
                          path, (size_t)sb.st_size);
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return base_error(ctx, STRATA_ERR_HDF5, "H5Pcreate failed");
    if (MPI_COMM_NULL != comm) {
        H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
        H5Pset_all_coll_metadata_ops(fapl, 1);
    }
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fid < 0) ckpt_h5_msg(h5msg, sizeof h5msg);   /* before the next call clears the stack */
    H5Pclose(fapl);
    if (fid < 0) {
        return base_error(ctx, STRATA_ERR_HDF5,
                          "checkpoint %s cannot be opened by HDF5 (%s); the file is damaged or truncated "
                          "(%zu bytes on disk)", path, h5msg, (size_t)sb.st_size);
    }
    *fid_p = fid;
    return STRATA_OK;
}

/* The header's attributes: format, version, world and shard size (checked),
 * the informational ones, and /train's step. */
static strata_status_t read_header(strata_context_t *ctx, const char *path, hid_t fid,
                                   ckpt_header_t *h)
{
    int rc;
    memset(h, 0, sizeof *h);
    if ((rc = ckpt_attr_get_str(fid, "format", h->format, sizeof h->format)))
        return attr_error(ctx, path, "/", "format", rc, "the string \"" STRATA_CKPT_FORMAT "\"");
    if (strcmp(h->format, STRATA_CKPT_FORMAT))
        return base_error(ctx, STRATA_ERR_FORMAT, "%s: format is \"%s\", not \"%s\": not a strata checkpoint",
                          path, h->format, STRATA_CKPT_FORMAT);
    if ((rc = ckpt_attr_get_i64(fid, "format_version", &h->version)))
        return attr_error(ctx, path, "/", "format_version", rc, "an integer");
    if (STRATA_CKPT_VERSION != h->version)
        return base_error(ctx, STRATA_ERR_FORMAT,
                          "%s: unknown checkpoint format version %lld (this strata %s reads version %d)",
                          path, (long long)h->version, strata_version_string(), STRATA_CKPT_VERSION);
    if ((rc = ckpt_attr_get_i64(fid, "world_size", &h->world_size)) || h->world_size < 1)
        return attr_error(ctx, path, "/", "world_size", rc ? rc : -2, "a positive integer");
    if ((rc = ckpt_attr_get_i64(fid, "shard_size", &h->shard_size)) || h->shard_size < 1 ||
        h->shard_size > h->world_size)
        return attr_error(ctx, path, "/", "shard_size", rc ? rc : -2, "an integer in 1..world_size");
    /* informational: absent values do not stop a load */
    ckpt_attr_get_str(fid, "strata_version", h->strata_version, sizeof h->strata_version);
    ckpt_attr_get_str(fid, "created", h->created, sizeof h->created);

    hid_t tr = H5Gopen2(fid, "/train", H5P_DEFAULT);
    int64_t step = -1;
    rc = tr < 0 ? -1 : ckpt_attr_get_i64(tr, "step", &step);
    if (tr >= 0) H5Gclose(tr);
    if (rc || step < 0)
        return base_error(ctx, STRATA_ERR_FORMAT, "%s: /train or its attribute step is missing or invalid", path);
    h->step = (uint64_t)step;
    return STRATA_OK;
}

strata_status_t ckpt_open(strata_context_t *ctx, const char *path, MPI_Comm comm,
                          hid_t *file_p, ckpt_header_t *hdr)
{
    hid_t fid = H5I_INVALID_HID;
    strata_status_t st = open_hdf5(ctx, path, comm, &fid);
    if (STRATA_OK != st) return st;
    ckpt_header_t h;
    st = read_header(ctx, path, fid, &h);
    if (STRATA_OK != st) {
        H5Fclose(fid);
        return st;
    }
    H5Eclear2(H5E_DEFAULT);
    if (hdr) *hdr = h;
    *file_p = fid;
    return STRATA_OK;
}

/* ------------------------------------------------------- checksums --- */

/* Bounds on a table read from a file, far above any real model, so a
 * hostile file cannot make us allocate without limit. */
#define SUMTAB_MAX_WRITERS  (1 << 20)
#define SUMTAB_MAX_TENSORS  (1 << 20)
#define SUMTAB_MAX_ENTRIES  ((uint64_t)1 << 26)
#define SUMTAB_MAX_PATH     1024

void ckpt_sumtab_free(ckpt_sumtab_t *tab)
{
    if (!tab) return;
    for (int i = 0; i < tab->ntensors; i++) {
        free(tab->t[i].path);
        free(tab->t[i].regions);
    }
    free(tab->t);
    tab->t = NULL;
    tab->ntensors = 0;
}

const ckpt_sumtab_entry_t *ckpt_sumtab_find(const ckpt_sumtab_t *tab, const char *path)
{
    for (int i = 0; i < tab->ntensors; i++)
        if (!strcmp(tab->t[i].path, path)) return &tab->t[i];
    return NULL;
}

static int region_cmp(const void *x, const void *y)
{
    const ckpt_region_t *a = x, *b = y;
    return (a->off > b->off) - (a->off < b->off);
}

/* The table's shape: (writers, tensors, 3) 64-bit integers, within the
 * bounds above. */
static strata_status_t sumtab_shape(strata_context_t *ctx, const char *file, const char *dpath,
                                    hid_t d, int *nw_p, int *nt_p)
{
    hsize_t dims[3];
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    int good = t >= 0 && sp >= 0 && H5T_INTEGER == H5Tget_class(t) && 8 == H5Tget_size(t) &&
               3 == H5Sget_simple_extent_ndims(sp) && H5Sget_simple_extent_dims(sp, dims, NULL) >= 0 &&
               dims[0] >= 1 && dims[0] <= SUMTAB_MAX_WRITERS && dims[1] >= 1 &&
               dims[1] <= SUMTAB_MAX_TENSORS && 3 == dims[2] && dims[0] * dims[1] <= SUMTAB_MAX_ENTRIES;
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (!good)
        return base_error(ctx, STRATA_ERR_FORMAT,
                          "%s: %s is not a (writers, tensors, 3) table of 64-bit integers", file, dpath);
    *nw_p = (int)dims[0];
    *nt_p = (int)dims[1];
    return STRATA_OK;
}

/* The table's tensor names, its attribute "tensors" of nt fixed-length
 * strings: *names_p, nt strings of *stride_p bytes each, NUL-terminated. */
static strata_status_t sumtab_names(strata_context_t *ctx, const char *file, const char *dpath,
                                    hid_t d, int nt, char **names_p, size_t *stride_p)
{
    strata_status_t st = STRATA_OK;
    hid_t a = H5I_INVALID_HID, at = H5I_INVALID_HID, asp = H5I_INVALID_HID, mt = H5I_INVALID_HID;
    size_t slen = 0;
    char *raw = NULL, *names = NULL;
    if (H5Aexists(d, "tensors") <= 0 || (a = H5Aopen(d, "tensors", H5P_DEFAULT)) < 0 ||
        (at = H5Aget_type(a)) < 0 || H5T_STRING != H5Tget_class(at) || H5Tis_variable_str(at) ||
        (slen = H5Tget_size(at)) < 2 || slen > SUMTAB_MAX_PATH || (asp = H5Aget_space(a)) < 0 ||
        1 != H5Sget_simple_extent_ndims(asp) || H5Sget_simple_extent_npoints(asp) != nt) {
        H5Eclear2(H5E_DEFAULT);
        st = base_error(ctx, STRATA_ERR_FORMAT,
                        "%s: attribute tensors of %s is missing or does not list %d names", file, dpath, nt);
        goto out;
    }
    names = calloc((size_t)nt, slen + 1);
    raw = malloc((size_t)nt * slen);
    if (!names || !raw) {
        st = base_error(ctx, STRATA_ERR_NOMEM, "%s: no memory for the tensor names of %s (%d)",
                        file, dpath, nt);
        goto out;
    }
    mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, slen);
    if (H5Aread(a, mt, raw) < 0) {
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: cannot read the tensor names of %s (%s)", file, dpath,
                        ckpt_h5_msg((char[256]){ 0 }, 256));
        goto out;
    }
    for (int i = 0; i < nt; i++) memcpy(names + (size_t)i * (slen + 1), raw + (size_t)i * slen, slen);
    *names_p = names;
    *stride_p = slen + 1;
    names = NULL;
out:
    if (mt >= 0) H5Tclose(mt);
    if (asp >= 0) H5Sclose(asp);
    if (at >= 0) H5Tclose(at);
    if (a >= 0) H5Aclose(a);
    free(raw);
    free(names);
    return st;
}

/* Entry i of the table from its rows: the regions of every writer that
 * wrote any, in file order. -1 without memory. */
static int sumtab_entry(ckpt_sumtab_entry_t *e, const char *path, const uint64_t *rows,
                        int i, int nw, int nt)
{
    e->path = strdup(path);
    e->regions = calloc((size_t)nw, sizeof(ckpt_region_t));
    if (!e->path || !e->regions) return -1;
    for (int w = 0; w < nw; w++) {
        const uint64_t *r = rows + ((size_t)w * (size_t)nt + (size_t)i) * 3;
        if (0 == r[1]) continue;
        ckpt_region_t *g = &e->regions[e->nregions++];
        g->off = r[0];
        g->len = r[1];
        g->hash = r[2];
        g->writer = w;
    }
    qsort(e->regions, (size_t)e->nregions, sizeof(ckpt_region_t), region_cmp);
    return 0;
}

strata_status_t ckpt_sumtab_read(strata_context_t *ctx, const char *file, hid_t fid,
                                 const char *unit, hid_t dxpl, ckpt_sumtab_t *tab)
{
    char dpath[STRATA_CKPT_MAX_NAME + 32];
    snprintf(dpath, sizeof dpath, "/checksums/%s", unit);
    hid_t d = H5I_INVALID_HID;
    uint64_t *rows = NULL;
    char *names = NULL;
    size_t stride = 0;
    int nw = 0, nt = 0;
    memset(tab, 0, sizeof *tab);

    if (H5Lexists(fid, "/checksums", H5P_DEFAULT) <= 0 || H5Lexists(fid, dpath, H5P_DEFAULT) <= 0 ||
        (d = H5Dopen2(fid, dpath, H5P_DEFAULT)) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return base_error(ctx, STRATA_ERR_FORMAT, "%s: checksum table %s is missing", file, dpath);
    }
    strata_status_t st = sumtab_shape(ctx, file, dpath, d, &nw, &nt);
    if (STRATA_OK == st) st = sumtab_names(ctx, file, dpath, d, nt, &names, &stride);
    if (STRATA_OK != st) goto out;
    rows = malloc((size_t)nw * (size_t)nt * 3 * sizeof *rows);
    tab->t = calloc((size_t)nt, sizeof *tab->t);
    if (!rows || !tab->t) {
        st = base_error(ctx, STRATA_ERR_NOMEM, "%s: no memory for the checksum table %s (%d x %d)",
                        file, dpath, nw, nt);
        goto out;
    }
    if (H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, dxpl, rows) < 0) {
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: cannot read %s (%s)", file, dpath,
                        ckpt_h5_msg((char[256]){ 0 }, 256));
        goto out;
    }
    tab->ntensors = nt;
    for (int i = 0; STRATA_OK == st && i < nt; i++)
        if (sumtab_entry(&tab->t[i], names + (size_t)i * stride, rows, i, nw, nt))
            st = base_error(ctx, STRATA_ERR_NOMEM, "%s: no memory for the checksum table %s", file, dpath);
out:
    H5Eclear2(H5E_DEFAULT);
    H5Dclose(d);
    free(rows);
    free(names);
    if (STRATA_OK != st) ckpt_sumtab_free(tab);
    return st;
}

strata_status_t ckpt_regions_check(strata_context_t *ctx, const char *file,
                                   const ckpt_sumtab_entry_t *e, uint64_t numel)
{
    uint64_t at = 0;
    for (int i = 0; i < e->nregions; i++) {
        const ckpt_region_t *r = &e->regions[i];
        uint64_t end;
        if (r->off != at || __builtin_add_overflow(r->off, r->len, &end) || end > numel)
            return base_error(ctx, STRATA_ERR_FORMAT,
                              "%s: the checksummed regions of %s do not tile its %llu elements "
                              "(region [%llu, +%llu) of writer %d where element %llu was expected); "
                              "the checksum table is damaged",
                              file, e->path, (unsigned long long)numel, (unsigned long long)r->off,
                              (unsigned long long)r->len, r->writer, (unsigned long long)at);
        at = end;
    }
    if (at != numel)
        return base_error(ctx, STRATA_ERR_FORMAT,
                          "%s: %s is incomplete: checksummed regions cover %llu of its %llu elements",
                          file, e->path, (unsigned long long)at, (unsigned long long)numel);
    return STRATA_OK;
}

/* ---------------------------------------------------------- datasets --- */

/* Data transfers are independent by default: every rank reads or writes
 * one large contiguous range per tensor, which MPI-IO aggregation cannot
 * improve, and an independent call has no hidden synchronisation, so one
 * rank's slow write does not stall the others tensor by tensor (measured:
 * bench/run ckpt). Metadata stays collective. The option ckpt_mpio
 * (STRATA_CKPT_MPIO) = collective (two-phase aggregation) or individual
 * (a collective call doing per-rank I/O) switches for file systems where
 * that pays. */
void ckpt_set_transfer(const strata_context_t *ctx, hid_t dxpl)
{
    int mode = ctx->cfg.ckpt_mpio;       /* 0 independent, 1 collective, 2 individual */
    if (0 == mode) {
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT);
        return;
    }
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    if (2 == mode)
        H5Pset_dxpl_mpio_collective_opt(dxpl, H5FD_MPIO_INDIVIDUAL_IO);
}


int ckpt_direct_enabled(const strata_context_t *ctx)
{
    return ctx->cfg.ckpt_direct;
}

uint64_t ckpt_raw_offset(hid_t ds, hid_t memtype, uint64_t nbytes)
{
    uint64_t off = UINT64_MAX;
    hid_t dcpl = H5Dget_create_plist(ds), t = H5Dget_type(ds);
    if (dcpl >= 0 && t >= 0 && H5D_CONTIGUOUS == H5Pget_layout(dcpl) && 0 == H5Pget_nfilters(dcpl) &&
        0 == H5Pget_external_count(dcpl) && H5Tequal(t, memtype) > 0 &&
        (hsize_t)nbytes == H5Dget_storage_size(ds)) {
        haddr_t a = H5Dget_offset(ds);
        uint64_t end;
        if (HADDR_UNDEF != a && !__builtin_add_overflow((uint64_t)a, nbytes, &end) &&
            end <= (uint64_t)INT64_MAX)
            off = (uint64_t)a;
    }
    H5Eclear2(H5E_DEFAULT);
    if (t >= 0) H5Tclose(t);
    if (dcpl >= 0) H5Pclose(dcpl);
    return off;
}

int ckpt_pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && EINTR == errno) continue;
        if (k < 0) return errno;
        if (0 == k) return ENOSPC;
        p += k;
        off += (uint64_t)k;
        n -= (size_t)k;
    }
    return 0;
}

int ckpt_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && EINTR == errno) continue;
        if (k < 0) return errno;
        if (0 == k) return -1;
        p += k;
        off += (uint64_t)k;
        n -= (size_t)k;
    }
    return 0;
}

int ckpt_select_range(hid_t space, int ndims, const uint64_t *dims, uint64_t a, uint64_t b)
{
    ckpt_box_t boxes[CKPT_MAX_BOXES];
    int n = ckpt_range_boxes(ndims, dims, a, b, boxes);
    if (n < 0) return -1;
    if (0 == n) return H5Sselect_none(space) < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        hsize_t start[STRATA_CKPT_MAX_DIMS], count[STRATA_CKPT_MAX_DIMS];
        for (int k = 0; k < ndims; k++) {
            start[k] = boxes[i].start[k];
            count[k] = boxes[i].count[k];
        }
        if (H5Sselect_hyperslab(space, i ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL) < 0)
            return -1;
    }
    return 0;
}

static void format_shape(char *buf, size_t len, int ndims, const uint64_t *dims)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndims && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

strata_status_t ckpt_check_dataset(strata_context_t *ctx, const char *file, const char *path,
                                   hid_t dset, int ndims, const uint64_t *dims)
{
    hid_t t = H5Dget_type(dset), sp = H5Dget_space(dset);
    strata_status_t st = STRATA_OK;
    char want[256], got[256];
    format_shape(want, sizeof want, ndims, dims);
    if (t < 0 || sp < 0) {
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: cannot query %s (%s)", file, path,
                        ckpt_h5_msg((char[256]){ 0 }, 256));
        goto out;
    }
    if (H5T_FLOAT != H5Tget_class(t) || 4 != H5Tget_size(t)) {
        st = base_error(ctx, STRATA_ERR_MISMATCH,
                        "%s: %s has dtype class %d of %zu bytes, but checkpoints hold fp32 (4-byte float) tensors",
                        file, path, (int)H5Tget_class(t), H5Tget_size(t));
        goto out;
    }
    int fnd = H5Sget_simple_extent_ndims(sp);
    hsize_t fd[H5S_MAX_RANK];
    uint64_t fd64[H5S_MAX_RANK];
    if (fnd < 0 || fnd > H5S_MAX_RANK || H5Sget_simple_extent_dims(sp, fd, NULL) < 0) {
        st = base_error(ctx, STRATA_ERR_FORMAT, "%s: %s has an unreadable dataspace", file, path);
        goto out;
    }
    int same = fnd == ndims;
    for (int i = 0; i < fnd; i++) {
        fd64[i] = fd[i];
        if (same && fd[i] != dims[i]) same = 0;
    }
    if (!same) {
        format_shape(got, sizeof got, fnd, fd64);
        st = base_error(ctx, STRATA_ERR_MISMATCH, "%s: %s has shape %s but the model registers %s",
                        file, path, got, want);
    }
out:
    H5Eclear2(H5E_DEFAULT);
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    return st;
}
