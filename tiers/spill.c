/*
 * spill.c - the storage tier's file: one HDF5 file per rank, one dataset
 * per spilled block (see spill.h for why the raw bytes move with pwrite/pread).
 */
#include "config.h"
#include "tiers/spill.h"
#include "base/proc.h"
#include "base/test_fault.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

struct spill_file {
    char     dir[PATH_MAX];
    char     path[PATH_MAX + 16];
    hid_t    file;            /* < 0 until spill_file_open */
    int      fd;              /* our own handle for raw data */
    unsigned ndatasets;
    uint64_t written, enospc_at;  /* enospc_at: the spill_enospc test fault */
};

const char *spill_file_path(const spill_file_t *sp) { return sp ? sp->path : ""; }
const char *spill_file_dir(const spill_file_t *sp) { return sp ? sp->dir : ""; }
int spill_file_fd(const spill_file_t *sp) { return sp && sp->file >= 0 ? sp->fd : -1; }

/* ------------------------------------------------ owners and reclaim --- */
/* Each spill directory holds `owner`: "host=H pid=P start=T" (T: the
 * process's start in clock ticks since boot, /proc/PID/stat field 22), so
 * that a later job may remove it when its owner is provably dead: same
 * host, and no process P, a zombie P, or a process P that started at
 * another time (the pid was reused). Directories of other hosts (a shared spill_dir on
 * a network file system) or of live owners are never touched. */

static void write_owner(const char *dir)
{
    char path[PATH_MAX + 16], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/owner", dir);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "host=%s pid=%ld start=%llu\n", host, (long)getpid(), base_proc_start((long)getpid()));
    fclose(f);
}

/* 1 when the owner of spill directory dir is provably dead. */
static int owner_dead(const char *dir)
{
    char path[PATH_MAX + 400], host[256] = "", me[256] = "";
    long pid = 0;
    unsigned long long start = 0;
    snprintf(path, sizeof path, "%s/owner", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = fscanf(f, "host=%255s pid=%ld start=%llu", host, &pid, &start);
    fclose(f);
    gethostname(me, sizeof me - 1);
    if (3 != n || pid <= 0 || strcmp(host, me)) return 0;
    return NULL != base_proc_gone(pid, start);     /* gone, a zombie, or a reused pid */
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 300];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int spill_reclaim(const char *root, char *msg, size_t msglen)
{
    DIR *d = opendir(root);
    struct dirent *e;
    int n = 0;
    char path[PATH_MAX + 300];
    if (msglen) msg[0] = '\0';
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "strata-spill-r", 14)) continue;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (!owner_dead(path)) continue;
        remove_tree(path);
        if (0 == n++) snprintf(msg, msglen, "%s", path);
    }
    if (d) closedir(d);
    return n;
}

strata_status_t spill_file_prepare(const char *root, int rank, spill_file_t **sp_p,
                                   char *msg, size_t msglen)
{
    spill_file_t *sp = calloc(1, sizeof *sp);
    if (!sp) return STRATA_ERR_NOMEM;
    sp->file = -1;
    sp->fd = -1;
    /* mkdtemp makes the directory with mode 0700 whatever the umask */
    if ((size_t)snprintf(sp->dir, sizeof sp->dir, "%s/strata-spill-r%d-XXXXXX",
                         root, rank) >= sizeof sp->dir) {
        snprintf(msg, msglen, "spill_dir '%s' is too long", root);
        free(sp);
        return STRATA_ERR_CONFIG;
    }
    if (!mkdtemp(sp->dir)) {
        int e = errno;
        snprintf(msg, msglen, "cannot create the storage tier's spill directory under "
                 "'%s': %s (set spill_dir / STRATA_SPILL_DIR to a writable directory)",
                 root, strerror(e));
        free(sp);
        return STRATA_ERR_IO;
    }
    write_owner(sp->dir);
    snprintf(sp->path, sizeof sp->path, "%s/spill.h5", sp->dir);
    /* created 0600 here; HDF5 later truncates it, which keeps the mode */
    int fd = open(sp->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(msg, msglen, "cannot create spill file '%s': %s", sp->path, strerror(e));
        remove_tree(sp->dir);
        free(sp);
        return STRATA_ERR_IO;
    }
    close(fd);
    *sp_p = sp;
    return STRATA_OK;
}

/* The innermost HDF5 error message (HDF5's own stack printing is off). */
static herr_t first_error(unsigned n, const H5E_error2_t *err, void *data)
{
    char *buf = data;
    if (0 == n) snprintf(buf, 256, "%s (%s)", err->desc ? err->desc : "?",
                         err->func_name ? err->func_name : "?");
    return 0;
}

static strata_status_t hdf5_error(char *msg, size_t msglen, const char *what,
                                  const char *path)
{
    char native[256] = "unknown HDF5 error";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, first_error, native);
    H5Eclear2(H5E_DEFAULT);
    snprintf(msg, msglen, "%s '%s' failed: %s", what, path, native);
    return STRATA_ERR_HDF5;
}

static strata_status_t open_unlocked(spill_file_t *sp, char *msg, size_t msglen)
{
    if (sp->file >= 0) return STRATA_OK;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* page-aligned raw data: a write that starts or ends inside a page
     * not in the page cache makes the kernel read that page first */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_alignment(fapl, 4096, 4096) < 0) {
        if (fapl >= 0) H5Pclose(fapl);
        return hdf5_error(msg, msglen, "setting up spill file", sp->path);
    }
    hid_t f = H5Fcreate(sp->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return hdf5_error(msg, msglen, "creating spill file", sp->path);
    int fd = open(sp->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        H5Fclose(f);
        snprintf(msg, msglen, "cannot open spill file '%s': %s", sp->path, strerror(e));
        return STRATA_ERR_IO;
    }
    sp->file = f;
    sp->fd = fd;
    sp->enospc_at = test_fault_arg("spill_enospc");
    return STRATA_OK;
}

/* The message of a full file system: the file, what was needed and what is
 * free, and what to do. */
static strata_status_t full(const spill_file_t *sp, size_t need, char *msg, size_t msglen)
{
    struct statvfs vs;
    unsigned long long avail = 0 == fstatvfs(sp->fd, &vs) ? (unsigned long long)vs.f_bavail * vs.f_frsize : 0;
    snprintf(msg, msglen, "storage tier full (ENOSPC: %s) writing spill file '%s': %zu more bytes "
             "needed, %llu bytes free on its file system; free space there, point spill_dir "
             "(STRATA_SPILL_DIR, --spill-dir) at a larger file system, or raise host_mem so that "
             "less spills", strerror(ENOSPC), sp->path, need, avail);
    return STRATA_ERR_IO;
}

static strata_status_t dataset_unlocked(spill_file_t *sp, size_t bytes, uint64_t *offset_p,
                                        char *msg, size_t msglen)
{
    char name[32];
    strata_status_t st = STRATA_ERR_HDF5;
    hid_t space = -1, dcpl = -1, ds = -1;
    hsize_t dim = bytes;
    snprintf(name, sizeof name, "block%06u", sp->ndatasets);
    space = H5Screate_simple(1, &dim, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (space < 0 || dcpl < 0) goto err_hdf5;
    /* contiguous, allocated now, never filled: the raw bytes get a fixed
     * offset and creating the dataset writes nothing */
    if (H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 ||
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) goto err_hdf5;
    ds = H5Dcreate2(sp->file, name, H5T_NATIVE_UINT8, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) goto err_hdf5;
    sp->ndatasets++;              /* the name is taken even if what follows fails */
    haddr_t off = H5Dget_offset(ds);
    if (HADDR_UNDEF == off) goto err_hdf5;
    int rc = posix_fallocate(sp->fd, (off_t)off, (off_t)bytes);
    if (ENOSPC == rc) {
        st = full(sp, bytes, msg, msglen);
        goto err;
    }
    if (0 != rc) {
        snprintf(msg, msglen, "cannot reserve %zu bytes in spill file '%s': %s",
                 bytes, sp->path, strerror(rc));
        st = STRATA_ERR_IO;
        goto err;
    }
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    *offset_p = off;
    return STRATA_OK;

err_hdf5:
    st = hdf5_error(msg, msglen, "creating a dataset in spill file", sp->path);
err:
    if (ds >= 0) H5Dclose(ds);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return st;
}

/* The HDF5 parts under the process's HDF5 lock (io/io.h: threads and HDF5). */
strata_status_t spill_file_open(spill_file_t *sp, char *msg, size_t msglen)
{
    base_h5_lock();
    strata_status_t st = open_unlocked(sp, msg, msglen);
    base_h5_unlock();
    return st;
}

strata_status_t spill_file_dataset(spill_file_t *sp, size_t bytes, uint64_t *offset_p,
                                   char *msg, size_t msglen)
{
    base_h5_lock();
    strata_status_t st = dataset_unlocked(sp, bytes, offset_p, msg, msglen);
    base_h5_unlock();
    return st;
}

strata_status_t spill_file_write(spill_file_t *sp, uint64_t off, const void *buf, size_t n,
                                 char *msg, size_t msglen)
{
    const char *p = buf;
    if (sp->enospc_at && sp->written + n >= sp->enospc_at) return full(sp, n, msg, msglen);
    sp->written += n;
    while (n > 0) {
        ssize_t w = pwrite(sp->fd, p, n, (off_t)off);
        if (w < 0 && EINTR == errno) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            if (ENOSPC == e || EDQUOT == e) return full(sp, n, msg, msglen);
            snprintf(msg, msglen, "writing spill file '%s': %s", sp->path, strerror(e));
            return STRATA_ERR_IO;
        }
        p += w;
        off += (uint64_t)w;
        n -= (size_t)w;
    }
    return STRATA_OK;
}

strata_status_t spill_file_read(spill_file_t *sp, uint64_t off, void *buf, size_t n,
                                char *msg, size_t msglen)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(sp->fd, p, n, (off_t)off);
        if (r < 0 && EINTR == errno) continue;
        if (r <= 0) {
            snprintf(msg, msglen, "reading spill file '%s': %s", sp->path,
                     r < 0 ? strerror(errno) : "unexpected end of file");
            return STRATA_ERR_IO;
        }
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return STRATA_OK;
}

strata_status_t spill_file_sync(spill_file_t *sp, char *msg, size_t msglen)
{
    if (0 != fdatasync(sp->fd)) {
        snprintf(msg, msglen, "fdatasync of spill file '%s': %s", sp->path, strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

void spill_file_prefetch(spill_file_t *sp, uint64_t off, size_t n)
{
    /* the whole block's read starts now, not chunk by chunk */
    posix_fadvise(sp->fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
}

int spill_file_unlinked(spill_file_t *sp)
{
    struct stat st;
    return sp->fd >= 0 && 0 == fstat(sp->fd, &st) && 0 == st.st_nlink;
}

void spill_file_close(spill_file_t *sp)
{
    if (!sp) return;
    if (sp->file >= 0) {
        base_h5_lock();
        H5Fclose(sp->file);
        base_h5_unlock();
    }
    sp->file = -1;
    if (sp->fd >= 0) close(sp->fd);
    sp->fd = -1;
}

void spill_file_remove_dir(spill_file_t *sp)
{
    if (sp) remove_tree(sp->dir);
}

void spill_file_remove(spill_file_t *sp)
{
    if (!sp) return;
    remove_tree(sp->dir);
    free(sp);
}
