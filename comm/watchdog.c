/*
 * watchdog.c - one thread per rank that turns a hang into a report.
 *
 * It sleeps in poll() on a self-pipe: with no deadline outstanding it
 * sleeps until an operation begins (comm_rec_begin writes one byte, only
 * when the thread said it sleeps idle), else until the oldest deadline. A
 * pipe rather than a condition variable because the signal handlers must
 * wake the same thread and write() is the one wake-up a handler may use;
 * the handlers only set a flag and write. Past a deadline: the flight
 * record, one report on stderr, the backend's abort (ncclCommAbort in
 * CUDA builds) and MPI_Abort, whose launcher then ends every rank with
 * SIGTERM, on which each rank writes its own record before it dies.
 *
 * While operations run the thread also wakes every REC_HEARTBEAT seconds,
 * and every wake-up request is stamped: a wake-up much later than it was
 * due means the whole process did not run (SIGSTOP, a debugger,
 * starvation). The latest
 * such pause goes into the record and the report, so that the rank that
 * was stopped inside a collective every rank entered can still be named.
 */
#include "config.h"
#include "comm/comm.h"
#include "comm/recorder_impl.h"
#include "base/agree.h"
#include "base/thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The signal handlers' view, process-global because signals are: one
 * recorder per process takes SIGTERM and SIGUSR2, the newest context's
 * (the handlers are installed by the first, restored when the newest
 * stops). An older context alive beside it writes no record on a signal.
 * The only process-global state of comm/. */
static comm_recorder_t *volatile sig_rec;
static volatile sig_atomic_t sig_term, sig_usr2;
static struct sigaction old_term, old_usr2;

static void on_signal(int sig)
{
    int saved = errno;
    if (SIGTERM == sig) sig_term = 1;
    else sig_usr2 = 1;
    comm_recorder_t *r = sig_rec;
    if (r && r->pipe_w >= 0) {
        double now = base_now();   /* clock_gettime: async-signal-safe */
        __atomic_store(&r->wake_t, &now, __ATOMIC_RELEASE);
        ssize_t w = write(r->pipe_w, "s", 1);
        (void)w;
    }
    errno = saved;
}

void rec_watchdog_wake(comm_recorder_t *r)
{
    __atomic_store_n(&r->idle, 0, __ATOMIC_RELEASE);
    double now = base_now();
    __atomic_store(&r->wake_t, &now, __ATOMIC_RELEASE);
    ssize_t w = write(r->pipe_w, "b", 1);
    (void)w;   /* a full pipe already holds a wake-up */
}

/* heartbeat while a deadline is outstanding, and the lateness that counts
 * as a pause: far above scheduling noise on a loaded machine, far below
 * any deadline worth setting */
#define REC_HEARTBEAT 0.5
#define REC_PAUSE_MIN 1.0

static void report(comm_recorder_t *r, const rec_entry_t *e, double now)
{
    strata_context_t *ctx = r->ctx;
    int ck = REC_CKPT_SAVE == e->kind || REC_CKPT_LOAD == e->kind;
    char paused[160] = "";
    pthread_mutex_lock(&r->lock);
    if (r->pause_s > 0 && r->pause_end >= e->t_enq)
        snprintf(paused, sizeof paused, "; this rank itself did not run for %.1f s of it "
                 "(stopped or starved of CPU)", r->pause_s);
    pthread_mutex_unlock(&r->lock);
    fprintf(stderr, "strata: rank %d: watchdog: %s (group %s, seq %llu, step %d, unit %d, "
            "%zu bytes) not complete after %.1f s (%s %g s)%s; flight record %s; aborting "
            "the job (exit code %d)\n", ctx->rank, comm_rec_kind_name((rec_kind_t)e->kind),
            e->group >= 0 ? r->gname[e->group] : "none", (unsigned long long)e->seq, e->step,
            e->unit, e->bytes, now - e->t_enq, ck ? "ckpt_timeout" : "collective_timeout",
            ck ? ctx->cfg.ckpt_timeout : ctx->cfg.collective_timeout, paused, r->path,
            STRATA_EXIT_TIMEOUT);
    fflush(stderr);
}

/* the thread woke `late` seconds after it asked to: note a pause */
static void note_pause(comm_recorder_t *r, double late, double now)
{
    if (late < REC_PAUSE_MIN) return;
    pthread_mutex_lock(&r->lock);
    r->pause_s = late;
    r->pause_end = now;
    pthread_mutex_unlock(&r->lock);
}

static void abort_job(comm_recorder_t *r)
{
    strata_context_t *ctx = r->ctx;
    /* one mechanism: the backend's communicators first (NCCL kernels would
     * otherwise spin on the device), then the job */
    if (ctx->comm_ops && ctx->comm_ops->abort) {
        for (int g = 0; g < r->ngroups; g++)
            if (r->gptr[g]) ctx->comm_ops->abort(r->gptr[g]);
    }
    /* the record is written: the launcher's SIGTERM may end this rank at
     * once (the handler would only wake this thread, which is in here) */
    signal(SIGTERM, SIG_DFL);
    if (sig_term) raise(SIGTERM);   /* it came while we wrote: the job is ending */
    MPI_Abort(MPI_COMM_WORLD, STRATA_EXIT_TIMEOUT);
    _exit(STRATA_EXIT_TIMEOUT);
}

void comm_rec_fatal(strata_context_t *ctx, const char *why)
{
    fprintf(stderr, "strata: rank %d: fatal: %s; aborting the job (exit code %d)\n",
            ctx->rank, why, STRATA_EXIT_TIMEOUT);
    if (ctx->rec) {
        comm_rec_dump(ctx, "fatal");
        abort_job(ctx->rec);
    }
    MPI_Abort(MPI_COMM_WORLD, STRATA_EXIT_TIMEOUT);
    _exit(STRATA_EXIT_TIMEOUT);
}

/* The oldest outstanding operation with a deadline; 0 when none. */
static int oldest(comm_recorder_t *r, rec_entry_t *out)
{
    int found = 0;
    pthread_mutex_lock(&r->lock);
    size_t count = r->next < r->n ? (size_t)r->next : r->n;
    for (size_t i = 0; i < count; i++) {
        const rec_entry_t *e = &r->ring[i];
        if (e->state < REC_ENQUEUED || e->state > REC_WAITING || 0 == e->deadline) continue;
        if (!found || e->deadline < out->deadline) *out = *e;
        found = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

static void handle_signals(comm_recorder_t *r)
{
    if (sig_usr2) {
        sig_usr2 = 0;
        if (STRATA_OK == comm_rec_dump(r->ctx, "sigusr2"))
            fprintf(stderr, "strata: rank %d: flight record written to %s (SIGUSR2)\n",
                    r->ctx->rank, r->path);
    }
    if (sig_term) {
        comm_rec_dump(r->ctx, "sigterm");
        sigaction(SIGTERM, &old_term, NULL);
        raise(SIGTERM);
        /* a handler that ignores SIGTERM keeps the process; so do we */
        sig_term = 0;
    }
}

static void *wd_main(void *arg)
{
    comm_recorder_t *r = arg;
    uint64_t seen = 0;
    for (;;) {
        rec_entry_t e = { 0 };
        double now = base_now();
        int ms = -1;
        if (oldest(r, &e)) {
            if (now >= e.deadline) {
                comm_rec_dump(r->ctx, "timeout");
                report(r, &e, now);
                abort_job(r);
            }
            ms = (int)((e.deadline - now) * 1e3) + 1;
        } else {
            uint64_t next = __atomic_load_n(&r->next, __ATOMIC_RELAXED);
            /* ops ran since the last look: they may begin again at once,
             * so look again in a heartbeat instead of asking to be woken */
            if (next != seen) ms = (int)(REC_HEARTBEAT * 1e3);
            seen = next;
        }
        if (ms > (int)(REC_HEARTBEAT * 1e3)) ms = (int)(REC_HEARTBEAT * 1e3);
        if (ms < 0) __atomic_store_n(&r->idle, 1, __ATOMIC_RELEASE);
        struct pollfd p = { .fd = r->pipe_r, .events = POLLIN };
        poll(&p, 1, ms);
        /* due: the end of the sleep, or the wake-up asked for during it */
        double woke = base_now(), asked, due = ms >= 0 ? now + ms * 1e-3 : woke;
        __atomic_load(&r->wake_t, &asked, __ATOMIC_ACQUIRE);
        if (asked > now && asked < due) due = asked;
        note_pause(r, woke - due, woke);
        char buf[64];
        while (read(r->pipe_r, buf, sizeof buf) > 0) {}
        if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) return NULL;
        handle_signals(r);
    }
}

strata_status_t rec_watchdog_start(comm_recorder_t *r)
{
    int fd[2];
    if (pipe(fd))
        return base_error(r->ctx, STRATA_ERR_IO, "watchdog: pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) | O_NONBLOCK);
        fcntl(fd[i], F_SETFD, FD_CLOEXEC);
    }
    r->pipe_r = fd[0];
    r->pipe_w = fd[1];
    /* the thread must not take the process's signals off other threads:
     * it blocks everything; the handlers run on whichever thread gets them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = base_thread_create(r->ctx, &r->thread, wd_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        close(fd[0]); close(fd[1]);
        return base_error(r->ctx, STRATA_ERR_NOMEM, "watchdog thread: %s", strerror(rc));
    }
    r->running = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (!sig_rec) {
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGUSR2, &sa, &old_usr2);
    }
    sig_rec = r;
    return STRATA_OK;
}

void rec_watchdog_stop(comm_recorder_t *r)
{
    if (!r->running) return;
    if (sig_rec == r) {
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGUSR2, &old_usr2, NULL);
        sig_rec = NULL;
    }
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    rec_watchdog_wake(r);
    pthread_join(r->thread, NULL);
    close(r->pipe_r);
    close(r->pipe_w);
    r->running = 0;
}

strata_status_t comm_wait_backoff(strata_context_t *ctx, MPI_Request *req, const char *what)
{
    return comm_wait_spin(ctx, req, what, ctx->cfg.spin_time);
}

strata_status_t comm_wait_spin(strata_context_t *ctx, MPI_Request *req, const char *what,
                               double spin)
{
    return comm_wait_all(ctx, req, 1, what, spin);
}

strata_status_t comm_wait_all(strata_context_t *ctx, MPI_Request *reqs, int n, const char *what,
                              double spin)
{
    int rc = base_mpi_wait(ctx, reqs, n, spin);
    return MPI_SUCCESS == rc ? STRATA_OK : base_mpi_error(ctx, rc, what);
}
