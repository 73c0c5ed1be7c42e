/*
 * ckpt_bad.c - checkpoint failures, on 2 ranks (t/ckpt-bad.t): every kind
 * of bad file is made here from a good one (truncated, bytes flipped in the
 * data, a dataset deleted, attributes changed, wrong shapes and dtypes,
 * a damaged checksum table), and each must fail with the right status and
 * a message naming the file and dataset, the same on every rank, never a
 * crash. Also bad arguments, keep-K rotation and find_latest.
 *
 *   ckpt_bad DIR
 */
#include "config.h"
#include "t/tap.h"
#include "t/ckpt_synth.h"

#include <fcntl.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static strata_context_t *ctx;
static int W, R;
static const char *dir;
static char good[4300];

static void copy_file(const char *src, const char *dst)
{
    if (0 != R) return;
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    if (!in || !out) bail_out("cannot copy %s to %s", src, dst);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}

/* A copy of the good file under name, for rank 0 to damage. */
static const char *make_case(const char *name)
{
    static char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    copy_file(good, path);
    return path;
}

/* Load path with a fresh layout on all ranks; return the status. */
static strata_status_t try_load(const char *path, int dim0_delta, size_t rng_len)
{
    synth_t s;
    if (synth_init(&s, W, W, R, 0, dim0_delta)) bail_out("no memory");
    if (rng_len) s.L.train.rng_len = rng_len;
    strata_status_t st = strata_ckpt_load(ctx, &s.L, path);
    synth_free(&s);
    return st;
}

/* Load path on all ranks and check every element; 0 = all as saved at step. */
static long load_and_check(const char *path, uint64_t step, strata_status_t *st_p)
{
    MPI_Barrier(MPI_COMM_WORLD);   /* rank 0 finished rewriting the file */
    synth_t s;
    if (synth_init(&s, W, W, R, 0, 0)) bail_out("no memory");
    synth_scribble(&s);
    *st_p = strata_ckpt_load(ctx, &s.L, path);
    if (STRATA_OK != *st_p && 0 == R) diag("load: %s", strata_last_error(ctx));
    char why[256];
    long bad = STRATA_OK == *st_p ? synth_check(&s, step, why, sizeof why) : -1;
    if (bad > 0) diag("rank %d: %ld wrong, first: %s", R, bad, why);
    synth_free(&s);
    return bad;
}

static int has(const char *text) { return NULL != strstr(strata_last_error(ctx), text); }

/* One failing load: expected status, and the message names what it must. */
static void expect_fail(const char *path, int dim0_delta, size_t rng_len, strata_status_t want,
                        const char *must1, const char *must2, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);   /* rank 0 finished damaging the file */
    strata_status_t st = try_load(path, dim0_delta, rng_len);
    if (st != want && 0 == R) diag("got %s: %s", strata_strerror(st), strata_last_error(ctx));
    is_int(st, want, "%s: load fails with %s", what, strata_strerror(want));
    int named = has(must1) && (!must2 || has(must2));
    if (!named && 0 == R) diag("message: %s", strata_last_error(ctx));
    ok(named, "%s: message names %s%s%s", what, must1, must2 ? " and " : "", must2 ? must2 : "");
}

/* strata_ckpt_verify on rank 0 only; the result shared. */
static strata_status_t verify0(const char *path)
{
    int st = STRATA_OK;
    if (0 == R) {
        FILE *devnull = fopen("/dev/null", "w");
        st = strata_ckpt_verify(ctx, path, devnull);
        if (devnull) fclose(devnull);
    }
    MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return (strata_status_t)st;
}

/* ------------------------------------------------ ways to damage files --- */

static void flip_bytes(const char *path, const char *dset, size_t at)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    if (HADDR_UNDEF == off) bail_out("no offset for %s", dset);
    int fd = open(path, O_RDWR);
    unsigned char b[2];
    if (fd < 0 || 2 != pread(fd, b, 2, (off_t)(off + at))) bail_out("cannot read %s", path);
    b[0] ^= 0x5a;
    b[1] ^= 0x01;
    if (2 != pwrite(fd, b, 2, (off_t)(off + at))) bail_out("cannot write %s", path);
    close(fd);
}

static void truncate_half(const char *path)
{
    if (0 != R) return;
    struct stat sb;
    stat(path, &sb);
    if (truncate(path, sb.st_size / 2)) bail_out("truncate %s", path);
}

static void delete_link(const char *path, const char *obj)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0 || H5Ldelete(f, obj, H5P_DEFAULT) < 0) bail_out("H5Ldelete %s", obj);
    H5Fclose(f);
}

static void delete_attr(const char *path, const char *obj, const char *name)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    if (o < 0 || H5Adelete(o, name) < 0) bail_out("H5Adelete %s", name);
    H5Oclose(o);
    H5Fclose(f);
}

/* Replace a root attribute: an integer (type 'i') or a string ('s'). */
static void set_root_attr(const char *path, const char *name, char type, long long iv, const char *sv)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, name);
    hid_t sp = H5Screate(H5S_SCALAR), t, a;
    if ('i' == type) {
        a = H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_LLONG, &iv);
    } else {
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, strlen(sv) + 1);
        a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, t, sv);
        H5Tclose(t);
    }
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(f);
}

/* Replace a dataset by one of another dtype (f64) with the same shape. */
static void retype_dataset(const char *path, const char *dset)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), sp = H5Dget_space(d);
    H5Dclose(d);
    H5Ldelete(f, dset, H5P_DEFAULT);
    d = H5Dcreate2(f, dset, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0) bail_out("recreate %s", dset);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

/* Rewrite a dataset with the same values in a layout a tool other than
 * strata might use: chunked and deflated ('c'), or big-endian ('b'). The
 * loader must read these through HDF5, not at a raw file offset. */
static void relayout_dataset(const char *path, const char *dset, char how)
{
    if (0 != R) return;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT), sp = H5Dget_space(d);
    hsize_t dims[8];
    int nd = H5Sget_simple_extent_dims(sp, dims, NULL);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    float *v = malloc((size_t)n * sizeof *v);
    if (nd < 1 || !v || H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
        bail_out("read %s", dset);
    H5Dclose(d);
    H5Ldelete(f, dset, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if ('c' == how) {
        hsize_t chunk[8];
        for (int i = 0; i < nd; i++) chunk[i] = dims[i] > 1 ? dims[i] / 2 : 1;
        H5Pset_chunk(dcpl, nd, chunk);
        H5Pset_deflate(dcpl, 1);
    }
    d = H5Dcreate2(f, dset, 'b' == how ? H5T_IEEE_F32BE : H5T_IEEE_F32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) bail_out("rewrite %s", dset);
    free(v);
    H5Pclose(dcpl);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

/* Make one region length of a checksum table absurd. */
static void damage_sumtab(const char *path, const char *unit)
{
    if (0 != R) return;
    char p[256];
    snprintf(p, sizeof p, "/checksums/%s", unit);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, p, H5P_DEFAULT), sp = H5Dget_space(d);
    hsize_t start[3] = { 0, 0, 1 }, one[3] = { 1, 1, 1 }, m = 1;
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, one, NULL);
    hid_t ms = H5Screate_simple(1, &m, NULL);
    uint64_t v = (uint64_t)1 << 62;
    if (H5Dwrite(d, H5T_NATIVE_UINT64, ms, sp, H5P_DEFAULT, &v) < 0) bail_out("damage %s", p);
    H5Sclose(ms);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
}

/* ----------------------------------------------------------- helpers --- */

static strata_status_t save(const char *d, uint64_t step, int keep)
{
    synth_t s;
    if (synth_init(&s, W, W, R, step, 0)) bail_out("no memory");
    synth_fill(&s);
    strata_ckpt_save_opts_t o;
    strata_ckpt_save_opts_default(&o);
    o.keep = keep;
    strata_status_t st = strata_ckpt_save(ctx, &s.L, d, &o, NULL, 0);
    synth_free(&s);
    return st;
}

static int file_exists(const char *d, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", d, name);
    return 0 == access(p, F_OK);
}

/* the good file every case starts from */
static void test_good_file(void)
{
    synth_t s;
    if (synth_init(&s, W, W, R, 11, 0)) bail_out("no memory");
    synth_fill(&s);
    snprintf(good, sizeof good, "%s/good.h5", dir);
    is_int(strata_ckpt_write(ctx, &s.L, good, NULL), STRATA_OK, "write the good file");
    synth_free(&s);
    is_int(try_load(good, 0, 0), STRATA_OK, "the good file loads");
    is_int(verify0(good), STRATA_OK, "the good file verifies");
}

/* missing, not HDF5, truncated */
static void test_unreadable(void)
{
    char missing[4400];
    snprintf(missing, sizeof missing, "%s/nope.h5", dir);
    expect_fail(missing, 0, 0, STRATA_ERR_NOT_FOUND, "nope.h5", "No such file", "missing file");
    const char *p = make_case("text.h5");
    if (0 == R) { FILE *f = fopen(p, "w"); fputs("not a checkpoint\n", f); fclose(f); }
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "text.h5", "not an HDF5 file", "plain text file");
    p = make_case("truncated.h5");
    truncate_half(p);
    expect_fail(p, 0, 0, STRATA_ERR_HDF5, "truncated.h5", "truncated", "file truncated to half");
    ok(STRATA_OK != verify0(p), "truncated: verify fails");
}

/* flipped bytes in tensor data */
static void test_flipped_bytes(void)
{
    const char *p = make_case("flip-model.h5");
    flip_bytes(p, "/model/block.0/qkv", 4 * 100);
    expect_fail(p, 0, 0, STRATA_ERR_CHECKSUM, "flip-model.h5", "/model/block.0/qkv", "bytes flipped in a parameter");
    is_int(verify0(p), STRATA_ERR_CHECKSUM, "flipped parameter: verify reports a checksum mismatch");
    p = make_case("flip-optim.h5");
    flip_bytes(p, "/optim/embed/g/exp_avg_sq", 4 * 29);
    expect_fail(p, 0, 0, STRATA_ERR_CHECKSUM, "flip-optim.h5", "/optim/embed/g/exp_avg_sq",
                "bytes flipped in optimizer state");
    is_int(verify0(p), STRATA_ERR_CHECKSUM, "flipped state: verify reports a checksum mismatch");
}

/* a dataset deleted */
static void test_deleted(void)
{
    const char *p = make_case("deleted.h5");
    delete_link(p, "/model/embed/b");
    expect_fail(p, 0, 0, STRATA_ERR_NOT_FOUND, "deleted.h5", "/model/embed/b", "dataset deleted (H5Ldelete)");
    is_int(verify0(p), STRATA_ERR_NOT_FOUND, "deleted dataset: verify reports it missing");
    p = make_case("deleted-sums.h5");
    delete_link(p, "/checksums/head");
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "deleted-sums.h5", "/checksums/head", "checksum table deleted");
    ok(STRATA_OK != verify0(p), "deleted checksum table: verify finds tensors without checksums");
}

/* attributes changed */
static void test_attributes(void)
{
    const char *p = make_case("version.h5");
    set_root_attr(p, "format_version", 'i', 99, NULL);
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "version.h5", "version 99", "unknown format version");
    is_int(verify0(p), STRATA_ERR_FORMAT, "unknown version: verify refuses it");
    p = make_case("format.h5");
    set_root_attr(p, "format", 's', 0, "someone-elses-format");
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "format.h5", "someone-elses-format", "format name changed");
    p = make_case("world.h5");
    set_root_attr(p, "world_size", 's', 0, "many");
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "world.h5", "world_size", "world_size attribute of the wrong type");
    p = make_case("scalar.h5");
    delete_attr(p, "/optim/head", "lr");
    expect_fail(p, 0, 0, STRATA_ERR_NOT_FOUND, "scalar.h5", "lr", "optimizer scalar deleted");
}

/* shapes and dtypes that do not match the registered model */
static void test_mismatch(void)
{
    expect_fail(good, 1, 0, STRATA_ERR_MISMATCH, "good.h5", "/model/embed/w", "layout with another shape");
    ok(has("[5, 7]") && has("[6, 7]"), "shape mismatch: message gives both shapes");
    const char *p = make_case("dtype.h5");
    retype_dataset(p, "/model/head/v");
    expect_fail(p, 0, 0, STRATA_ERR_MISMATCH, "dtype.h5", "/model/head/v", "dataset rewritten as f64");
    expect_fail(good, 0, 16, STRATA_ERR_MISMATCH, "good.h5", "/train/rng", "RNG state of another size");
}

/* files from outside: layouts that are no plain byte range of fp32
 * load through HDF5, with the same values */
static void test_foreign_layouts(void)
{
    strata_status_t lst;
    const char *p = make_case("chunked.h5");
    relayout_dataset(p, "/model/block.0/qkv", 'c');
    relayout_dataset(p, "/optim/embed/g/exp_avg", 'c');
    ok(0 == load_and_check(p, 11, &lst), "chunked, deflated datasets (another writer): load gives every element");
    is_int(verify0(p), STRATA_OK, "chunked, deflated datasets: verify passes");
    p = make_case("bigendian.h5");
    relayout_dataset(p, "/model/block.1/t3", 'b');
    relayout_dataset(p, "/optim/block.0/qkv/exp_avg_sq", 'b');
    ok(0 == load_and_check(p, 11, &lst), "big-endian fp32 datasets: load gives every element");
    is_int(verify0(p), STRATA_OK, "big-endian fp32 datasets: verify passes");
}

/* a damaged checksum table must not make us read out of bounds */
static void test_damaged_sumtab(void)
{
    const char *p = make_case("sumtab.h5");
    damage_sumtab(p, "embed");
    expect_fail(p, 0, 0, STRATA_ERR_FORMAT, "sumtab.h5", "/model/embed/w", "checksum region length 2^62");
    is_int(verify0(p), STRATA_ERR_FORMAT, "damaged checksum table: verify reports it");
}

/* bad arguments: refused on every rank before any file is touched */
static void test_bad_args(void)
{
    synth_t s;
    is_int(strata_ckpt_load(ctx, NULL, good), STRATA_ERR_INVALID, "load with a NULL layout");
    synth_init(&s, W, W, R, 1, 0);
    synth_fill(&s);
    char path[4600];
    snprintf(path, sizeof path, "%s/bad-args.h5", dir);
    s.units[1].npad += 1;
    is_int(strata_ckpt_write(ctx, &s.L, path, NULL), STRATA_ERR_INVALID, "npad not a multiple of S is refused");
    s.units[1].npad -= 1;
    s.params[0][1].offset -= 1;
    is_int(strata_ckpt_write(ctx, &s.L, path, NULL), STRATA_ERR_INVALID, "overlapping parameters are refused");
    ok(has("overlap"), "message says they overlap");
    s.params[0][1].offset += 1;
    if (1 == R) { s.params[2][0].dims[1] = 4; s.params[2][0].dims[2] = 3; }  /* only rank 1 disagrees */
    is_int(strata_ckpt_write(ctx, &s.L, path, NULL), STRATA_ERR_INVALID, "ranks passing different layouts are refused");
    ok(has("different layouts"), "message says the layouts differ");
    if (1 == R) { s.params[2][0].dims[1] = 3; s.params[2][0].dims[2] = 4; }
    s.L.shard_size = 3;
    is_int(strata_ckpt_write(ctx, &s.L, path, NULL), STRATA_ERR_INVALID, "a shard size not dividing W is refused");
    s.L.shard_size = W;
    strata_ckpt_save_opts_t o;
    strata_ckpt_save_opts_default(&o);
    o.half_copy = (strata_dtype_t)7;
    is_int(strata_ckpt_write(ctx, &s.L, path, &o), STRATA_ERR_INVALID, "an unknown half_copy dtype is refused");
    strata_status_t st = strata_ckpt_write(ctx, &s.L, "/proc/strata-no-such-dir/x.h5", NULL);
    ok(STRATA_ERR_HDF5 == st || STRATA_ERR_IO == st, "an unwritable directory fails cleanly (%s)", strata_strerror(st));
    ok(has("/proc/strata-no-such-dir/x.h5"), "message names the file");
    synth_free(&s);
}

/* keep-K rotation, latest pointer, find_latest */
static void test_rotation(void)
{
    char path[4600];
    char rot[4400], found[4400];
    snprintf(rot, sizeof rot, "%s/rot", dir);
    is_int(strata_ckpt_find_latest(ctx, rot, found, sizeof found), STRATA_ERR_NOT_FOUND,
           "find_latest in a missing directory: not found");
    int all_ok = 1;
    for (uint64_t k = 1; k <= 5; k++) all_ok &= STRATA_OK == save(rot, k * 10, 3);
    ok(all_ok, "five saves with keep=3");
    ok(!file_exists(rot, "step-00000010.h5") && !file_exists(rot, "step-00000020.h5") &&
       file_exists(rot, "step-00000030.h5") && file_exists(rot, "step-00000040.h5") &&
       file_exists(rot, "step-00000050.h5"), "only the newest three remain");
    ok(!file_exists(rot, "latest.tmp") && !file_exists(rot, "step-00000050.h5.tmp"), "no temporary files remain");
    char latest[64] = "";
    if (0 == R) {
        snprintf(path, sizeof path, "%s/latest", rot);
        FILE *f = fopen(path, "r");
        if (f) { if (!fgets(latest, sizeof latest, f)) latest[0] = '\0'; fclose(f); }
    }
    MPI_Bcast(latest, sizeof latest, MPI_CHAR, 0, MPI_COMM_WORLD);
    is_string(latest, "step-00000050.h5\n", "latest names the newest");
    ok(STRATA_OK == strata_ckpt_find_latest(ctx, rot, found, sizeof found) && strstr(found, "step-00000050.h5"),
       "find_latest follows latest");
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == R) {   /* the newest goes bad: find_latest falls back */
        snprintf(path, sizeof path, "%s/step-00000050.h5", rot);
        truncate(path, 100);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ok(STRATA_OK == strata_ckpt_find_latest(ctx, rot, found, sizeof found) && strstr(found, "step-00000040.h5"),
       "a damaged newest file is skipped: falls back to step 40");
    is_int(save(rot, 60, -1), STRATA_OK, "save with keep<0 keeps all");
    ok(file_exists(rot, "step-00000030.h5") && file_exists(rot, "step-00000060.h5"), "nothing deleted");
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/empty", dir);
    if (0 == R) mkdir(path, 0755);
    MPI_Barrier(MPI_COMM_WORLD);
    is_int(strata_ckpt_find_latest(ctx, path, found, sizeof found), STRATA_ERR_NOT_FOUND,
           "find_latest in an empty directory: not found");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    tap_use_comm(MPI_COMM_WORLD);
    if (argc < 2) bail_out("usage: ckpt_bad DIR");
    dir = argv[1];
    if (strata_init(MPI_COMM_WORLD, NULL, &ctx)) bail_out("strata_init failed");
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (W < 2) bail_out("ckpt_bad needs at least 2 ranks");
    plan(65);

    test_good_file();
    test_unreadable();
    test_flipped_bytes();
    test_deleted();
    test_attributes();
    test_mismatch();
    test_foreign_layouts();
    test_damaged_sumtab();
    test_bad_args();
    test_rotation();

    strata_finalize(ctx);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
