/*
 * ckpt_lock.c - one job per checkpoint directory: DIR/lock, created with
 * O_EXCL by rank 0 when a job starts and removed when it ends, holds one
 * line "host=H pid=P start=T job=J pstart=S" (J: $SLURM_JOB_ID or -; S: the
 * process's start in clock ticks since boot, /proc/PID/stat). A lock whose
 * holder is provably gone is taken over with a warning: same host and its
 * pid no longer exists, is a zombie or belongs to a process that started
 * at another time than S (a reused pid), or the same SLURM job (a
 * requeued job) unless the holder provably still runs on this host (another
 * step of that job); locks without pstart (older writers) skip the start
 * time comparison. Anything
 * else refuses the job, naming the holder. Taking the lock also checks
 * that DIR is (or can be made) a writable directory and removes the
 * step-*.tmp files of dead writers (only a lock holder may).
 * Caveats on network file systems: docs/reliability.md.
 */
#include "config.h"
#include "base/base.h"
#include "base/proc.h"
#include "io/io.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char host[256];
    long pid;
    long long start;
    char job[64];
    unsigned long long pstart;  /* 0: not recorded */
} holder_t;

static void lock_path(const char *dir, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" STRATA_CKPT_LOCK_NAME, dir);
}

static void me(holder_t *h)
{
    memset(h, 0, sizeof *h);
    gethostname(h->host, sizeof h->host - 1);
    h->pid = (long)getpid();
    h->start = (long long)time(NULL);
    const char *j = getenv("SLURM_JOB_ID");
    snprintf(h->job, sizeof h->job, "%s", j && j[0] ? j : "-");
    h->pstart = base_proc_start(h->pid);
}

/* 0 and *h from the lock file at path; -1 when it is unreadable/garbled. */
static int read_holder(const char *path, holder_t *h)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(h, 0, sizeof *h);
    int n = fscanf(f, "host=%255s pid=%ld start=%lld job=%63s", h->host, &h->pid, &h->start, h->job);
    if (4 == n && 1 != fscanf(f, " pstart=%llu", &h->pstart)) h->pstart = 0;
    fclose(f);
    return 4 == n ? 0 : -1;
}

int strata_ckpt_lock_holder(const char *dir, char *buf, size_t len)
{
    char path[4200];
    holder_t h;
    lock_path(dir, path, sizeof path);
    if (read_holder(path, &h)) return -1;
    char when[64];
    time_t t = (time_t)h.start;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    snprintf(buf, len, "pid %ld on %s, started %s, SLURM job %s", h.pid, h.host, when, h.job);
    return 0;
}

/* Why the holder is provably gone ("" when it is not). The same SLURM job
 * is a requeue, which may land on another node, unless the holder provably
 * still runs on this host (its pid with its own start time): then it is
 * another step of the job, still writing. */
static const char *gone(const holder_t *h, const holder_t *self)
{
    int here = !strcmp(self->host, h->host);
    const char *why = here ? base_proc_gone(h->pid, h->pstart) : NULL;
    if (why) return why;
    int runs_here = here && h->pstart && base_proc_start(h->pid) == h->pstart;
    if (strcmp(self->job, "-") && !strcmp(self->job, h->job) && !runs_here) return "same SLURM job (requeued)";
    return "";
}

/* rank 0: DIR exists as a writable directory. */
static strata_status_t check_dir(strata_context_t *ctx, const char *dir)
{
    struct stat sb;
    if (mkdir(dir, 0755) && EEXIST != errno)
        return base_error(ctx, STRATA_ERR_IO, "checkpoint directory %s cannot be created: %s", dir, strerror(errno));
    if (stat(dir, &sb))
        return base_error(ctx, STRATA_ERR_IO, "checkpoint directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return base_error(ctx, STRATA_ERR_IO, "checkpoint directory %s exists but is not a directory", dir);
    if (access(dir, W_OK | X_OK))
        return base_error(ctx, STRATA_ERR_IO, "checkpoint directory %s is not writable: %s", dir, strerror(errno));
    return STRATA_OK;
}

/* rank 0: create the lock, or take over a dead holder's. */
static strata_status_t take(strata_context_t *ctx, const char *dir)
{
    char path[4200], line[512];
    holder_t self, h;
    me(&self);
    lock_path(dir, path, sizeof path);
    int n = snprintf(line, sizeof line, "host=%s pid=%ld start=%lld job=%s pstart=%llu\n",
                     self.host, self.pid, self.start, self.job, self.pstart);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            int bad = write(fd, line, (size_t)n) != n || fsync(fd);
            close(fd);
            if (bad) {
                unlink(path);
                return base_error(ctx, STRATA_ERR_IO, "cannot write the lock %s: %s", path, strerror(errno));
            }
            return STRATA_OK;
        }
        if (EEXIST != errno)
            return base_error(ctx, STRATA_ERR_IO, "cannot create the lock %s: %s", path, strerror(errno));
        char who[512];
        if (read_holder(path, &h) || strata_ckpt_lock_holder(dir, who, sizeof who))
            return base_error(ctx, STRATA_ERR_STATE, "%s exists but is not a strata lock; if no job uses "
                              "%s, remove it with 'strata ckpt unlock %s'", path, dir, dir);
        const char *why = gone(&h, &self);
        if (!why[0])
            return base_error(ctx, STRATA_ERR_STATE, "checkpoint directory %s is in use by another job "
                              "(%s); if that job is gone, 'strata ckpt unlock %s' removes the lock",
                              dir, who, dir);
        if (0 == attempt)
            fprintf(stderr, "strata: warning: taking over the lock %s of %s: %s\n", path, who, why);
        if (unlink(path) && ENOENT != errno) {
            struct stat sb;
            int e = errno, sticky = 0 == stat(dir, &sb) && (sb.st_mode & S_ISVTX);
            return base_error(ctx, STRATA_ERR_STATE, "the lock %s of %s (%s) cannot be removed: %s%s; "
                              "remove it as its owner, or with 'strata ckpt unlock %s' as a user "
                              "who may", path, who, why, strerror(e),
                              sticky ? " (the directory is sticky: only the lock's or the "
                                       "directory's owner may remove it)" : "", dir);
        }
    }
    return base_error(ctx, STRATA_ERR_STATE, "lost the race for the lock %s to another job", path);
}

/* rank 0, lock held: the step-*.tmp files of saves that died. */
static void remove_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4200];
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".tmp") &&
            (!strncmp(e->d_name, "step-", 5) || !strcmp(e->d_name, "latest.tmp"))) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (0 == unlink(path)) fprintf(stderr, "strata: removed %s, left by a save that died\n", path);
        }
    }
    if (d) closedir(d);
}

strata_status_t strata_ckpt_dir_lock(strata_context_t *ctx, const char *dir)
{
    if (!ctx) return STRATA_ERR_INVALID;
    strata_status_t st = STRATA_OK;
    if (!dir || !dir[0] || strlen(dir) > 4000)
        st = base_error(ctx, STRATA_ERR_INVALID, "strata_ckpt_dir_lock: no directory, or too long");
    if (STRATA_OK == st && 0 == ctx->rank) st = check_dir(ctx, dir);
    if (STRATA_OK == st && 0 == ctx->rank) st = take(ctx, dir);
    if (STRATA_OK == st && 0 == ctx->rank) remove_tmp(dir);
    uint64_t op = ckpt_rec_begin(ctx, BASE_OP_MPI);     /* the agreement has a deadline too */
    st = base_agree(ctx, ctx->comm, st);
    ckpt_rec_end(ctx, op, st);
    return st;
}

strata_status_t strata_ckpt_dir_unlock(strata_context_t *ctx, const char *dir)
{
    if (!ctx || !dir) return STRATA_ERR_INVALID;
    if (0 != ctx->rank) return STRATA_OK;
    char path[4200];
    holder_t h, self;
    me(&self);
    lock_path(dir, path, sizeof path);
    if (read_holder(path, &h) || h.pid != self.pid || strcmp(h.host, self.host))
        return base_error(ctx, STRATA_ERR_STATE, "the lock %s is not this job's; left alone", path);
    if (unlink(path))
        return base_error(ctx, STRATA_ERR_IO, "cannot remove the lock %s: %s", path, strerror(errno));
    return STRATA_OK;
}
