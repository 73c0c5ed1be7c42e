/*
 * recorder.c - the flight recorder's ring and its JSON dump (format in
 * docs/flight.md). Recording costs one uncontended mutex per begin and end;
 * the watchdog thread (watchdog.c) reads the same ring.
 */
#include "config.h"
#include "comm/comm.h"
#include "comm/recorder_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const kind_names[REC_KIND_COUNT] = {
    "allgather", "reduce_scatter", "allreduce", "broadcast", "barrier",
    "check", "transfer", "ckpt_save", "ckpt_load", "mpi"
};
static const char *const state_names[] = { "free", "enqueued", "started", "waiting", "done", "failed" };

const char *comm_rec_kind_name(rec_kind_t kind)
{
    return (unsigned)kind < REC_KIND_COUNT ? kind_names[kind] : "?";
}

static int is_dir(const char *p)
{
    struct stat sb;
    return p && *p && 0 == stat(p, &sb) && S_ISDIR(sb.st_mode);
}

/* The record's directories, in order: flight_dir, the checkpoint directory
 * if it exists at the time of the dump (a job's first run makes it after
 * strata_init), the working directory, the system's temporary directory;
 * where one cannot be written the next is tried. n: how many. */
static int dump_dirs(const comm_recorder_t *r, const char *dirs[4])
{
    const strata_config_t *c = &r->ctx->cfg;
    const char *t = getenv("TMPDIR");
    int n = 0;
    if (c->flight_dir[0]) dirs[n++] = c->flight_dir;
    if (is_dir(c->ckpt_dir)) dirs[n++] = c->ckpt_dir;
    dirs[n++] = ".";
    dirs[n++] = t && t[0] ? t : "/tmp";
    return n;
}

static void dump_path(comm_recorder_t *r)
{
    const char *dirs[4];
    dump_dirs(r, dirs);
    snprintf(r->path, sizeof r->path, "%s/flight.%d.json", dirs[0], r->ctx->rank);
}

/* ctx->op_begin: one operation of the world group the rank blocks in */
static uint64_t base_op_begin(strata_context_t *ctx, base_op_kind_t kind)
{
    rec_kind_t k = BASE_OP_CKPT_SAVE == kind ? REC_CKPT_SAVE :
                   BASE_OP_CKPT_LOAD == kind ? REC_CKPT_LOAD : REC_MPI;
    rec_op_t op = comm_rec_begin(ctx, ctx->world, k, 0, STRATA_F32);
    comm_rec_waiting(ctx, op);
    return op;
}

strata_status_t comm_rec_create(strata_context_t *ctx)
{
    size_t n = (size_t)ctx->cfg.flight_entries;
    if (0 == n) return STRATA_OK;
    comm_recorder_t *r = calloc(1, sizeof *r);
    if (!r) return base_error(ctx, STRATA_ERR_NOMEM, "flight recorder");
    r->ring = calloc(n, sizeof *r->ring);
    r->snap = calloc(n, sizeof *r->snap);
    if (!r->ring || !r->snap) {
        free(r->ring); free(r->snap); free(r);
        return base_error(ctx, STRATA_ERR_NOMEM, "flight recorder: %zu entries", n);
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->dump_lock, NULL);
    r->ctx = ctx;
    r->n = n;
    r->step = r->unit = -1;
    r->pipe_r = r->pipe_w = -1;
    struct timespec w;
    clock_gettime(CLOCK_REALTIME, &w);
    r->t0_wall = (double)w.tv_sec + 1e-9 * (double)w.tv_nsec - base_now();
    dump_path(r);
    ctx->rec = r;
    ctx->op_begin = base_op_begin;
    ctx->op_end = comm_rec_end;
    comm_rec_group(ctx->world, "world");
    strata_status_t st = rec_watchdog_start(r);
    if (STRATA_OK != st) comm_rec_destroy(ctx);
    return st;
}

void comm_rec_destroy(strata_context_t *ctx)
{
    comm_recorder_t *r = ctx->rec;
    if (!r) return;
    rec_watchdog_stop(r);
    ctx->rec = NULL;
    ctx->op_begin = NULL;
    ctx->op_end = NULL;
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->dump_lock);
    free(r->ring);
    free(r->snap);
    free(r);
}

void comm_rec_group(strata_group_t *g, const char *name)
{
    comm_recorder_t *r = g ? g->ctx->rec : NULL;
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    g->rec_gid = -1;
    if (r->ngroups < REC_MAX_GROUPS) {
        g->rec_gid = r->ngroups++;
        snprintf(r->gname[g->rec_gid], sizeof r->gname[0], "%s", name);
        r->gsize[g->rec_gid] = g->size;
        r->grank[g->rec_gid] = g->rank;
        r->gptr[g->rec_gid] = g;
    }
    pthread_mutex_unlock(&r->lock);
}

void comm_rec_ungroup(strata_group_t *g)
{
    comm_recorder_t *r = g ? g->ctx->rec : NULL;
    if (!r || g->rec_gid < 0) return;
    pthread_mutex_lock(&r->lock);
    r->gptr[g->rec_gid] = NULL;
    pthread_mutex_unlock(&r->lock);
}

void comm_rec_where(strata_context_t *ctx, int step, int unit)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r) return;
    if (step >= 0) __atomic_store_n(&r->step, step, __ATOMIC_RELAXED);
    __atomic_store_n(&r->unit, unit, __ATOMIC_RELAXED);
}

static double timeout_of(const strata_config_t *c, rec_kind_t kind)
{
    double t = (REC_CKPT_SAVE == kind || REC_CKPT_LOAD == kind) ? c->ckpt_timeout
                                                                : c->collective_timeout;
    return t > 0 ? t : 0;
}

rec_op_t comm_rec_begin(strata_context_t *ctx, strata_group_t *g, rec_kind_t kind,
                        size_t bytes, strata_dtype_t dtype)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r) return 0;
    double now = base_now(), t = timeout_of(&ctx->cfg, kind);
    pthread_mutex_lock(&r->lock);
    uint64_t idx = ++r->next;
    rec_entry_t *e = &r->ring[(idx - 1) % r->n];
    e->index = idx;
    e->seq = (g && g->rec_gid >= 0) ? ++g->rec_seq : ++r->check_seq;
    e->group = g ? g->rec_gid : -1;
    e->kind = (int)kind;
    e->step = __atomic_load_n(&r->step, __ATOMIC_RELAXED);
    e->unit = __atomic_load_n(&r->unit, __ATOMIC_RELAXED);
    e->bytes = bytes;
    e->dtype = (int)dtype;
    e->state = REC_ENQUEUED;
    e->status = 0;
    e->t_enq = now;
    e->t_start = e->t_end = 0;
    /* inside a checkpoint save or load, HDF5's collectives and ours share
     * its deadline: the whole save is one operation. But a rank waiting
     * for the others to agree (REC_MPI) gives them collective_timeout
     * beyond the time it has spent in the save itself: a rank stalled in
     * the middle of a save ends the job that long after, not at
     * ckpt_timeout. */
    e->deadline = t > 0 ? now + t : 0;
    if (r->ckpt_depth > 0 && REC_MPI == kind && e->deadline > 0) {
        e->deadline += now - r->ckpt_start;
        if (r->ckpt_deadline > 0 && r->ckpt_deadline < e->deadline) e->deadline = r->ckpt_deadline;
    } else if (r->ckpt_depth > 0 && (0 == e->deadline || e->deadline < r->ckpt_deadline)) {
        e->deadline = r->ckpt_deadline;
    }
    if (REC_CKPT_SAVE == kind || REC_CKPT_LOAD == kind) {
        if (0 == r->ckpt_depth++) {
            r->ckpt_deadline = e->deadline;
            r->ckpt_start = now;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (e->deadline > 0 && __atomic_load_n(&r->idle, __ATOMIC_ACQUIRE)) rec_watchdog_wake(r);
    return idx;
}

static rec_entry_t *entry(comm_recorder_t *r, rec_op_t op)
{
    rec_entry_t *e = &r->ring[(op - 1) % r->n];
    return e->index == op ? e : NULL;   /* NULL: overwritten by a newer op */
}

void comm_rec_started(strata_context_t *ctx, rec_op_t op)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r || !op) return;
    double now = base_now();
    pthread_mutex_lock(&r->lock);
    rec_entry_t *e = entry(r, op);
    if (e && REC_ENQUEUED == e->state) {
        e->state = REC_STARTED;
        e->t_start = now;
    }
    pthread_mutex_unlock(&r->lock);
}

void comm_rec_waiting(strata_context_t *ctx, rec_op_t op)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r || !op) return;
    double now = base_now();
    pthread_mutex_lock(&r->lock);
    rec_entry_t *e = entry(r, op);
    if (e && (REC_ENQUEUED == e->state || REC_STARTED == e->state)) {
        if (0 == e->t_start) e->t_start = now;
        e->state = REC_WAITING;
    }
    pthread_mutex_unlock(&r->lock);
}

void comm_rec_end(strata_context_t *ctx, rec_op_t op, strata_status_t st)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r || !op) return;
    double now = base_now();
    pthread_mutex_lock(&r->lock);
    rec_entry_t *e = entry(r, op);
    if (e) {
        if (0 == e->t_start) e->t_start = now;
        e->t_end = now;
        e->state = STRATA_OK == st ? REC_DONE : REC_FAILED;
        e->status = (int)st;
        if ((REC_CKPT_SAVE == e->kind || REC_CKPT_LOAD == e->kind) && r->ckpt_depth > 0)
            r->ckpt_depth--;
    }
    pthread_mutex_unlock(&r->lock);
}

void comm_rec_note(strata_context_t *ctx, const char *text)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    if (r->nnotes < REC_MAX_NOTES) {
        /* JSON-safe as it is written: no quote, backslash or control character */
        char *d = r->notes[r->nnotes++];
        size_t k = 0;
        for (; text[k] && k + 1 < REC_NOTE_LEN; k++) {
            unsigned char c = (unsigned char)text[k];
            d[k] = c < 0x20 || '"' == c || '\\' == c ? '\'' : (char)c;
        }
        d[k] = '\0';
    }
    pthread_mutex_unlock(&r->lock);
}

/* ---- the dump ------------------------------------------------------------------------ */

static void write_entry(FILE *f, const comm_recorder_t *r, const rec_entry_t *e, int first)
{
    fprintf(f, "%s\n    {\"index\": %llu, \"group\": \"%s\", \"seq\": %llu, \"kind\": \"%s\", "
            "\"step\": %d, \"unit\": %d, \"bytes\": %zu, \"dtype\": \"%s\", "
            "\"t_enqueue\": %.6f, \"t_start\": %.6f, \"t_end\": %.6f, \"state\": \"%s\", "
            "\"status\": %d}", first ? "" : ",", (unsigned long long)e->index,
            e->group >= 0 ? r->gname[e->group] : "none", (unsigned long long)e->seq,
            comm_rec_kind_name((rec_kind_t)e->kind), e->step, e->unit, e->bytes,
            strata_dtype_name((strata_dtype_t)e->dtype), e->t_enq, e->t_start, e->t_end,
            state_names[e->state], e->status);
}

/* The record into r->path (through r->path.tmp): 0, or the errno. */
static int dump_to(comm_recorder_t *r, const char *why, size_t count, uint64_t next,
                   double pause_s, double pause_end)
{
    strata_context_t *ctx = r->ctx;
    char tmp[1200], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(tmp, sizeof tmp, "%s.tmp", r->path);
    FILE *f = fopen(tmp, "w");
    if (!f) return errno;
    fprintf(f, "{\"format\": \"strata-flight-1\", \"rank\": %d, \"world_size\": %d, "
            "\"reason\": \"%s\", \"host\": \"%s\", \"pid\": %d, \"now\": %.6f, "
            "\"wall_minus_mono\": %.6f, \"collective_timeout\": %g, \"ckpt_timeout\": %g, "
            "\"entries_max\": %zu, \"ops\": %llu, \"pause_s\": %.6f, \"pause_end\": %.6f,"
            "\n  \"groups\": [", ctx->rank, ctx->size, why, host, (int)getpid(), base_now(),
            r->t0_wall, ctx->cfg.collective_timeout, ctx->cfg.ckpt_timeout, r->n,
            (unsigned long long)next, pause_s, pause_end);
    for (int g = 0; g < r->ngroups; g++)
        fprintf(f, "%s{\"name\": \"%s\", \"size\": %d, \"rank\": %d}", g ? ", " : "",
                r->gname[g], r->gsize[g], r->grank[g]);
    fprintf(f, "],\n  \"notes\": [");
    pthread_mutex_lock(&r->lock);   /* the notes, as comm_rec_note leaves them */
    for (int i = 0; i < r->nnotes; i++) fprintf(f, "%s\"%s\"", i ? ", " : "", r->notes[i]);
    pthread_mutex_unlock(&r->lock);
    fprintf(f, "],\n  \"entries\": [");
    for (size_t i = 0; i < count; i++) write_entry(f, r, &r->snap[i], 0 == i);
    fprintf(f, "\n  ]\n}\n");
    int bad = ferror(f);
    bad |= fclose(f);
    int e = bad ? (errno ? errno : EIO) : 0;
    if (!e && rename(tmp, r->path)) e = errno;
    if (e) unlink(tmp);
    return e;
}

static strata_status_t dump_locked(strata_context_t *ctx, comm_recorder_t *r, const char *reason)
{
    pthread_mutex_lock(&r->lock);
    uint64_t next = r->next;
    size_t count = next < r->n ? (size_t)next : r->n;
    for (size_t i = 0; i < count; i++) r->snap[i] = r->ring[(next - count + i) % r->n];
    double pause_s = r->pause_s, pause_end = r->pause_end;
    pthread_mutex_unlock(&r->lock);

    char why[32];
    size_t k = 0;
    for (; reason[k] && k + 1 < sizeof why; k++)   /* a JSON-safe word */
        why[k] = isalnum((unsigned char)reason[k]) || '_' == reason[k] ? reason[k] : '_';
    why[k] = '\0';
    const char *dirs[4];
    int n = dump_dirs(r, dirs), e = 0;
    for (int i = 0; i < n; i++) {
        snprintf(r->path, sizeof r->path, "%s/flight.%d.json", dirs[i], ctx->rank);
        if (!(e = dump_to(r, why, count, next, pause_s, pause_end))) {
            if (i) fprintf(stderr, "strata: rank %d: the flight record went to %s instead\n",
                           ctx->rank, r->path);
            return STRATA_OK;
        }
        fprintf(stderr, "strata: rank %d: cannot write the flight record %s: %s\n", ctx->rank,
                r->path, strerror(e));
    }
    snprintf(r->path, sizeof r->path, "(none written)");
    return STRATA_ERR_IO;
}

/* The training thread (a straggler named, a fatal error) and the watchdog
 * thread (a timeout, a signal) may dump at once: they share snap, path and
 * the .tmp file, so one waits for the other. */
strata_status_t comm_rec_dump(strata_context_t *ctx, const char *reason)
{
    comm_recorder_t *r = ctx ? ctx->rec : NULL;
    if (!r) return STRATA_OK;
    pthread_mutex_lock(&r->dump_lock);
    strata_status_t st = dump_locked(ctx, r, reason);
    pthread_mutex_unlock(&r->dump_lock);
    return st;
}

strata_status_t strata_flight_dump(strata_context_t *ctx, const char *reason)
{
    if (!ctx) return STRATA_ERR_INVALID;
    return comm_rec_dump(ctx, reason ? reason : "request");
}
