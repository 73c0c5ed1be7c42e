/*
 * ckpt_inspect.c - single-process readers of checkpoint files: verify,
 * info, diff, and finding the newest complete checkpoint of a directory.
 * They open files with HDF5's default (sec2) driver, so they need no MPI
 * job and work whatever world size wrote the file.
 */
#include "config.h"
#include "base/base.h"
#include "io/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Regions and tensors are read in slices of at most this many elements, so
 * memory stays bounded whatever sizes a file claims. */
#define SLICE_ELEMS ((uint64_t)8 << 20)

/* A dataset's dims into dims[STRATA_CKPT_MAX_DIMS]; -1 if its rank is
 * larger or the dataspace is unreadable. */
static int dataset_shape(hid_t ds, int *ndims, uint64_t *dims, uint64_t *numel)
{
    hid_t sp = H5Dget_space(ds);
    if (sp < 0) return -1;
    int n = H5Sget_simple_extent_ndims(sp);
    hsize_t d[H5S_MAX_RANK];
    int rc = -1;
    if (n >= 1 && n <= STRATA_CKPT_MAX_DIMS && H5Sget_simple_extent_dims(sp, d, NULL) >= 0) {
        for (int i = 0; i < n; i++) dims[i] = d[i];
        *ndims = n;
        rc = ckpt_numel(n, dims, numel);
    } else if (0 == n) {     /* scalar dataspace */
        dims[0] = 1;
        *ndims = 1;
        *numel = 1;
        rc = 0;
    }
    H5Sclose(sp);
    return rc;
}

/* Read elements [a, b) of ds in memory type mt (elements of esize bytes)
 * into buf. */
static int read_range(hid_t ds, hid_t mt, int ndims, const uint64_t *dims, uint64_t a, uint64_t b,
                      void *buf)
{
    hid_t fs = H5Dget_space(ds);
    hsize_t n = b - a;
    hid_t ms = H5Screate_simple(1, &n, NULL);
    int rc = -1;
    if (fs >= 0 && ms >= 0 && 0 == ckpt_select_range(fs, ndims, dims, a, b) &&
        H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf) >= 0)
        rc = 0;
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
    return rc;
}

static void describe_type(hid_t t, char *buf, size_t len)
{
    size_t sz = H5Tget_size(t);
    switch (H5Tget_class(t)) {
    case H5T_FLOAT:
        if (4 == sz) snprintf(buf, len, "f32");
        else if (8 == sz) snprintf(buf, len, "f64");
        else if (2 == sz) snprintf(buf, len, "%s", 127 == H5Tget_ebias(t) ? "bf16" : "f16");
        else snprintf(buf, len, "float%zu", 8 * sz);
        break;
    case H5T_INTEGER:
        snprintf(buf, len, "%s%zu", H5T_SGN_NONE == H5Tget_sign(t) ? "u" : "i", 8 * sz);
        break;
    case H5T_STRING: snprintf(buf, len, "string"); break;
    default: snprintf(buf, len, "class%d", (int)H5Tget_class(t)); break;
    }
}

/* ------------------------------------------------------- dataset walk --- */

typedef struct dslist {
    int    n, cap;
    char **paths;
} dslist_t;

static herr_t collect_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    dslist_t *l = data;
    if (H5L_TYPE_HARD != info->type) return 0;
    hid_t o = H5Oopen(g, name, H5P_DEFAULT);
    if (o < 0) return 0;
    int is_ds = H5I_DATASET == H5Iget_type(o);
    H5Oclose(o);
    if (!is_ds) return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **np = realloc(l->paths, (size_t)cap * sizeof *np);
        if (!np) return -1;
        l->paths = np;
        l->cap = cap;
    }
    size_t len = strlen(name) + 2;
    if (!(l->paths[l->n] = malloc(len))) return -1;
    snprintf(l->paths[l->n++], len, "/%s", name);
    return 0;
}

static void dslist_free(dslist_t *l)
{
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

/* Every dataset of the file, by name; -1 on failure. */
static int list_datasets(hid_t fid, dslist_t *l)
{
    memset(l, 0, sizeof *l);
    if (H5Lvisit(fid, H5_INDEX_NAME, H5_ITER_INC, collect_cb, l) < 0) {
        dslist_free(l);
        return -1;
    }
    return 0;
}

static int is_tensor_path(const char *p)
{
    return !strncmp(p, "/model/", 7) || !strncmp(p, "/optim/", 7) ||
           !strncmp(p, "/model_bf16/", 12) || !strncmp(p, "/model_f16/", 11);
}

/* ------------------------------------------------------------ verify --- */

typedef struct verifier {
    strata_context_t *ctx;
    const char *file;
    FILE *out;
    strata_status_t first;
    int problems;
    uint64_t bytes, regions, tensors;
} verifier_t;

static void problem(verifier_t *v, strata_status_t st)
{
    v->problems++;
    if (STRATA_OK == v->first) v->first = st;
    if (v->out) fprintf(v->out, "FAIL %s\n", v->ctx ? strata_last_error(v->ctx) : strata_strerror(st));
}

/* Hash each region of one tensor, slice by slice. */
static void verify_tensor(verifier_t *v, hid_t fid, const ckpt_sumtab_entry_t *e, void *buf)
{
    strata_context_t *ctx = v->ctx;
    if (H5Lexists(fid, e->path, H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        problem(v, base_error(ctx, STRATA_ERR_NOT_FOUND, "%s: dataset %s is listed in the checksum table but missing",
                              v->file, e->path));
        return;
    }
    hid_t ds = H5Dopen2(fid, e->path, H5P_DEFAULT), ty = -1, mt = -1;
    int ndims;
    uint64_t dims[STRATA_CKPT_MAX_DIMS], numel;
    if (ds < 0 || (ty = H5Dget_type(ds)) < 0 || dataset_shape(ds, &ndims, dims, &numel)) {
        H5Eclear2(H5E_DEFAULT);
        problem(v, base_error(ctx, STRATA_ERR_FORMAT, "%s: %s cannot be opened or has an unsupported shape",
                              v->file, e->path));
        goto out;
    }
    size_t es = H5Tget_size(ty);
    if (H5T_FLOAT != H5Tget_class(ty) || (4 != es && 2 != es)) {
        problem(v, base_error(ctx, STRATA_ERR_MISMATCH, "%s: %s is not a 16- or 32-bit float dataset",
                              v->file, e->path));
        goto out;
    }
    /* the hashes are of little-endian element bytes: a file rewritten
     * big-endian by another tool is read converted to that order */
    if (H5T_ORDER_LE != H5Tget_order(ty) && (mt = H5Tcopy(ty)) >= 0 && H5Tset_order(mt, H5T_ORDER_LE) < 0) {
        H5Tclose(mt);
        mt = -1;
    }
    strata_status_t st = ckpt_regions_check(ctx, v->file, e, numel);
    if (STRATA_OK != st) { problem(v, st); goto out; }
    v->tensors++;
    for (int r = 0; r < e->nregions; r++) {
        const ckpt_region_t *g = &e->regions[r];
        XXH3_state_t *s = XXH3_createState();
        if (!s) { problem(v, base_error(ctx, STRATA_ERR_NOMEM, "verify: no memory")); break; }
        XXH3_64bits_reset(s);
        int bad = 0;
        for (uint64_t a = g->off; a < g->off + g->len && !bad; a += SLICE_ELEMS) {
            uint64_t b = a + SLICE_ELEMS < g->off + g->len ? a + SLICE_ELEMS : g->off + g->len;
            /* raw bytes in the file's own type: no conversion but the order */
            if (read_range(ds, mt >= 0 ? mt : ty, ndims, dims, a, b, buf)) bad = 1;
            else XXH3_64bits_update(s, buf, (size_t)(b - a) * es);
        }
        uint64_t h = XXH3_64bits_digest(s);
        XXH3_freeState(s);
        if (bad) {
            char m[256];
            problem(v, base_error(ctx, STRATA_ERR_HDF5, "%s: reading %s elements [%llu, %llu) failed (%s)",
                                  v->file, e->path, (unsigned long long)g->off,
                                  (unsigned long long)(g->off + g->len), ckpt_h5_msg(m, sizeof m)));
            continue;
        }
        v->regions++;
        v->bytes += g->len * es;
        if (h != g->hash)
            problem(v, base_error(ctx, STRATA_ERR_CHECKSUM,
                                  "%s: checksum mismatch in %s, elements [%llu, %llu) written by shard rank %d: "
                                  "stored xxh3 %016llx, computed %016llx",
                                  v->file, e->path, (unsigned long long)g->off,
                                  (unsigned long long)(g->off + g->len), g->writer,
                                  (unsigned long long)g->hash, (unsigned long long)h));
    }
out:
    H5Eclear2(H5E_DEFAULT);
    if (mt >= 0) H5Tclose(mt);
    if (ty >= 0) H5Tclose(ty);
    if (ds >= 0) H5Dclose(ds);
}

typedef struct { int n, cap; char **names; } namelist_t;

static herr_t unit_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    namelist_t *l = data;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **np = realloc(l->names, (size_t)cap * sizeof *np);
        if (!np) return -1;
        l->names = np;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name))) return -1;
    l->n++;
    return 0;
}

strata_status_t strata_ckpt_verify(strata_context_t *ctx, const char *path, FILE *report)
{
    if (!path) return base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_verify: path is NULL");
    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    verifier_t v = { ctx, path, report, STRATA_OK, 0, 0, 0, 0 };
    hid_t fid = -1;
    ckpt_header_t hdr;
    namelist_t units = { 0, 0, NULL };
    dslist_t all = { 0, 0, NULL };
    ckpt_sumtab_t *tabs = NULL;
    void *buf = NULL;

    strata_status_t st = ckpt_open(ctx, path, MPI_COMM_NULL, &fid, &hdr);
    if (STRATA_OK != st) { problem(&v, st); goto out; }
    buf = malloc(SLICE_ELEMS * 4);
    if (!buf) { problem(&v, base_error(ctx, STRATA_ERR_NOMEM, "verify: no memory")); goto out; }
    hid_t gs = H5Lexists(fid, "/checksums", H5P_DEFAULT) > 0 ? H5Gopen2(fid, "/checksums", H5P_DEFAULT) : -1;
    if (gs < 0 || H5Literate(gs, H5_INDEX_NAME, H5_ITER_INC, NULL, unit_cb, &units) < 0) {
        if (gs >= 0) H5Gclose(gs);
        problem(&v, base_error(ctx, STRATA_ERR_FORMAT, "%s: the /checksums group is missing or unreadable", path));
        goto out;
    }
    H5Gclose(gs);
    tabs = calloc((size_t)units.n + 1, sizeof *tabs);
    if (!tabs) { problem(&v, base_error(ctx, STRATA_ERR_NOMEM, "verify: no memory")); goto out; }
    for (int u = 0; u < units.n; u++) {
        st = ckpt_sumtab_read(ctx, path, fid, units.names[u], H5P_DEFAULT, &tabs[u]);
        if (STRATA_OK != st) { problem(&v, st); continue; }
        for (int i = 0; i < tabs[u].ntensors; i++) verify_tensor(&v, fid, &tabs[u].t[i], buf);
    }
    /* completeness: every tensor dataset has checksums, and /model is not empty */
    if (list_datasets(fid, &all)) {
        problem(&v, base_error(ctx, STRATA_ERR_HDF5, "%s: cannot list the datasets", path));
        goto out;
    }
    int nmodel = 0;
    for (int i = 0; i < all.n; i++) {
        if (!is_tensor_path(all.paths[i])) continue;
        if (!strncmp(all.paths[i], "/model/", 7)) nmodel++;
        int found = 0;
        for (int u = 0; u < units.n && !found; u++) found = NULL != ckpt_sumtab_find(&tabs[u], all.paths[i]);
        if (!found)
            problem(&v, base_error(ctx, STRATA_ERR_FORMAT, "%s: %s has no checksums (not written by strata?)",
                                   path, all.paths[i]));
    }
    if (0 == nmodel)
        problem(&v, base_error(ctx, STRATA_ERR_FORMAT, "%s: the file holds no /model tensors", path));
out:
    if (report) {
        if (v.problems)
            fprintf(report, "%s: %d problem%s found\n", path, v.problems, 1 == v.problems ? "" : "s");
        else
            fprintf(report, "%s: OK: step %llu, %llu tensors, %llu regions, %llu bytes verified\n", path,
                    (unsigned long long)hdr.step, (unsigned long long)v.tensors,
                    (unsigned long long)v.regions, (unsigned long long)v.bytes);
    }
    for (int u = 0; tabs && u < units.n; u++) ckpt_sumtab_free(&tabs[u]);
    free(tabs);
    for (int u = 0; u < units.n; u++) free(units.names[u]);
    free(units.names);
    dslist_free(&all);
    free(buf);
    if (fid >= 0) H5Fclose(fid);
    H5Eclear2(H5E_DEFAULT);
    ckpt_h5_restore(&quiet);
    /* the first problem's message stays the context's last error */
    return v.first;
}

/* -------------------------------------------------------------- info --- */

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *ainfo, void *data)
{
    FILE *out = data;
    if (strncmp(name, "config.", 7)) return 0;
    char val[4200];
    if (0 == ckpt_attr_get_str(loc, name, val, sizeof val)) fprintf(out, "  %-20s %s\n", name, val);
    return 0;
}

strata_status_t strata_ckpt_info(strata_context_t *ctx, const char *path, FILE *out)
{
    if (!path || !out) return base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_info: NULL argument");
    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    hid_t fid = -1;
    ckpt_header_t h;
    dslist_t all = { 0, 0, NULL };
    strata_status_t st = ckpt_open(ctx, path, MPI_COMM_NULL, &fid, &h);
    if (STRATA_OK != st) goto out;
    int64_t pos = 0;
    hid_t tr = H5Gopen2(fid, "/train", H5P_DEFAULT);
    if (tr >= 0) { ckpt_attr_get_i64(tr, "data_position", &pos); H5Gclose(tr); }
    fprintf(out, "file           %s\n", path);
    fprintf(out, "format         %s version %lld (written by strata %s)\n", h.format, (long long)h.version,
            h.strata_version[0] ? h.strata_version : "?");
    fprintf(out, "created        %s\n", h.created[0] ? h.created : "?");
    fprintf(out, "world size     %lld (shard size %lld)\n", (long long)h.world_size, (long long)h.shard_size);
    fprintf(out, "step           %llu\n", (unsigned long long)h.step);
    fprintf(out, "data position  %lld\n", (long long)pos);
    fprintf(out, "model configuration:\n");
    hsize_t idx = 0;
    H5Aiterate2(fid, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, out);
    if (list_datasets(fid, &all)) {
        st = base_error(ctx, STRATA_ERR_HDF5, "%s: cannot list the datasets", path);
        goto out;
    }
    fprintf(out, "%-48s %-6s %-20s %14s\n", "tensor", "dtype", "shape", "bytes");
    uint64_t total = 0, ntensor = 0;
    for (int i = 0; i < all.n; i++) {
        hid_t ds = H5Dopen2(fid, all.paths[i], H5P_DEFAULT);
        if (ds < 0) continue;
        hid_t ty = H5Dget_type(ds);
        int nd = 0;
        uint64_t dims[STRATA_CKPT_MAX_DIMS], numel = 0;
        char tname[32] = "?", shape[160] = "?";
        if (ty >= 0) describe_type(ty, tname, sizeof tname);
        if (0 == dataset_shape(ds, &nd, dims, &numel)) {
            size_t n = (size_t)snprintf(shape, sizeof shape, "[");
            for (int k = 0; k < nd && n < sizeof shape; k++)
                n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%llu", k ? "," : "", (unsigned long long)dims[k]);
            if (n < sizeof shape) snprintf(shape + n, sizeof shape - n, "]");
        }
        uint64_t bytes = (ty >= 0 ? H5Tget_size(ty) : 0) * numel;
        if (is_tensor_path(all.paths[i])) { total += bytes; ntensor++; }
        fprintf(out, "%-48s %-6s %-20s %14llu\n", all.paths[i], tname, shape, (unsigned long long)bytes);
        if (ty >= 0) H5Tclose(ty);
        H5Dclose(ds);
    }
    char sz[32];
    fprintf(out, "%llu tensors, %s of tensor data\n", (unsigned long long)ntensor,
            strata_format_size((size_t)total, sz, sizeof sz));
out:
    dslist_free(&all);
    if (fid >= 0) H5Fclose(fid);
    H5Eclear2(H5E_DEFAULT);
    ckpt_h5_restore(&quiet);
    return st;
}

/* -------------------------------------------------------------- diff --- */

static strata_status_t diff_tensor(strata_context_t *ctx, const char *fa, const char *fb,
                                   hid_t da, hid_t db, const char *path, float *ba, float *bb,
                                   FILE *out, int *differs)
{
    int na, nb;
    uint64_t dimsa[STRATA_CKPT_MAX_DIMS], dimsb[STRATA_CKPT_MAX_DIMS], numa, numb;
    if (dataset_shape(da, &na, dimsa, &numa) || dataset_shape(db, &nb, dimsb, &numb))
        return base_error(ctx, STRATA_ERR_FORMAT, "%s or %s: %s has an unsupported shape", fa, fb, path);
    if (na != nb || memcmp(dimsa, dimsb, sizeof(uint64_t) * (size_t)na)) {
        fprintf(out, "%-48s shapes differ\n", path);
        *differs = 1;
        return STRATA_OK;
    }
    double max_abs = 0, max_rel = 0;
    for (uint64_t a = 0; a < numa; a += SLICE_ELEMS) {
        uint64_t b = a + SLICE_ELEMS < numa ? a + SLICE_ELEMS : numa;
        if (read_range(da, H5T_NATIVE_FLOAT, na, dimsa, a, b, ba) ||
            read_range(db, H5T_NATIVE_FLOAT, nb, dimsb, a, b, bb)) {
            char m[256];
            return base_error(ctx, STRATA_ERR_HDF5, "%s / %s: reading %s failed (%s)", fa, fb, path,
                              ckpt_h5_msg(m, sizeof m));
        }
        for (uint64_t i = 0; i < b - a; i++) {
            double x = ba[i], y = bb[i], d = fabs(x - y);
            if (x == y) continue;           /* also equal infinities */
            if (isnan(d)) { max_abs = max_rel = NAN; continue; }
            double m = fmax(fabs(x), fabs(y));
            if (d > max_abs) max_abs = d;
            if (m > 0 && d / m > max_rel) max_rel = d / m;
        }
    }
    if (max_abs != 0 || isnan(max_abs)) *differs = 1;
    fprintf(out, "%-48s %14.6g %14.6g\n", path, max_abs, max_rel);
    return STRATA_OK;
}

strata_status_t strata_ckpt_diff(strata_context_t *ctx, const char *a, const char *b,
                                 FILE *out, int *differs_p)
{
    if (!a || !b || !out || !differs_p) return base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_diff: NULL argument");
    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    hid_t fa = -1, fb = -1;
    dslist_t la = { 0, 0, NULL }, lb = { 0, 0, NULL };
    float *ba = NULL, *bb = NULL;
    int differs = 0;
    strata_status_t st = ckpt_open(ctx, a, MPI_COMM_NULL, &fa, NULL);
    if (STRATA_OK == st) st = ckpt_open(ctx, b, MPI_COMM_NULL, &fb, NULL);
    if (STRATA_OK != st) goto out;
    ba = malloc(SLICE_ELEMS * sizeof(float));
    bb = malloc(SLICE_ELEMS * sizeof(float));
    if (!ba || !bb) { st = base_error(ctx, STRATA_ERR_NOMEM, "diff: no memory"); goto out; }
    if (list_datasets(fa, &la) || list_datasets(fb, &lb)) {
        st = base_error(ctx, STRATA_ERR_HDF5, "diff: cannot list the datasets of %s or %s", a, b);
        goto out;
    }
    fprintf(out, "%-48s %14s %14s\n", "tensor", "max_abs", "max_rel");
    for (int i = 0; STRATA_OK == st && i < la.n; i++) {
        const char *p = la.paths[i];
        if (!is_tensor_path(p)) continue;
        if (H5Lexists(fb, p, H5P_DEFAULT) <= 0) {
            H5Eclear2(H5E_DEFAULT);
            fprintf(out, "%-48s only in %s\n", p, a);
            differs = 1;
            continue;
        }
        hid_t da = H5Dopen2(fa, p, H5P_DEFAULT), db = H5Dopen2(fb, p, H5P_DEFAULT);
        if (da < 0 || db < 0) {
            fprintf(out, "%-48s cannot be opened\n", p);
            differs = 1;
        } else {
            st = diff_tensor(ctx, a, b, da, db, p, ba, bb, out, &differs);
        }
        if (da >= 0) H5Dclose(da);
        if (db >= 0) H5Dclose(db);
    }
    for (int i = 0; STRATA_OK == st && i < lb.n; i++) {
        if (!is_tensor_path(lb.paths[i])) continue;
        if (H5Lexists(fa, lb.paths[i], H5P_DEFAULT) <= 0) {
            fprintf(out, "%-48s only in %s\n", lb.paths[i], b);
            differs = 1;
        }
    }
    if (STRATA_OK == st) *differs_p = differs;
out:
    free(ba);
    free(bb);
    dslist_free(&la);
    dslist_free(&lb);
    if (fa >= 0) H5Fclose(fa);
    if (fb >= 0) H5Fclose(fb);
    H5Eclear2(H5E_DEFAULT);
    ckpt_h5_restore(&quiet);
    return st;
}

/* ------------------------------------------------------- find latest --- */

static int usable(strata_context_t *ctx, const char *path)
{
    hid_t fid;
    if (STRATA_OK != ckpt_open(ctx, path, MPI_COMM_NULL, &fid, NULL)) return 0;
    H5Fclose(fid);
    return 1;
}

strata_status_t strata_ckpt_find_latest(strata_context_t *ctx, const char *dir,
                                        char *path_p, size_t len)
{
    if (!dir || !path_p) return base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_find_latest: NULL argument");
    ckpt_h5quiet_t quiet;
    ckpt_h5_quiet(&quiet);
    char path[4300], name[256] = "";
    strata_status_t st = STRATA_ERR_NOT_FOUND;
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\r\n")] = '\0';
        fclose(f);
    }
    /* the pointer may only name a file in dir */
    if (name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..")) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (usable(ctx, path)) st = STRATA_OK;
    }
    long long *steps = NULL;
    int n = STRATA_OK == st ? 0 : ckpt_list_steps(dir, &steps);
    for (int i = n - 1; i >= 0 && STRATA_OK != st; i--) {
        snprintf(path, sizeof path, "%s/step-%08lld.h5", dir, steps[i]);
        if (usable(ctx, path)) {
            st = STRATA_OK;
            strata_warn(ctx, "checkpoint: %s/latest is missing or stale; using %s", dir, path);
        }
    }
    free(steps);
    ckpt_h5_restore(&quiet);
    if (STRATA_OK != st)
        return base_error(ctx, STRATA_ERR_NOT_FOUND, "no complete checkpoint in %s", dir);
    if (strlen(path) >= len)
        return base_error(ctx, STRATA_ERR_INVALID, "checkpoint path %s longer than the %zu-byte buffer", path, len);
    memcpy(path_p, path, strlen(path) + 1);
    return STRATA_OK;
}
