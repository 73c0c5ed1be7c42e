/*
 * run_cmd.c - strata run [OPTIONS] -- LAUNCHER ARGS...: start a job,
 * watch it, and when a rank dies (killed by a signal) or the watchdog ends
 * it (exit 75), start it again with the same command, which resumes from
 * the newest good checkpoint (train_gpt --resume), on the ranks that are
 * left. The launcher's standard error passes through this process, which
 * reads the launcher's own report of a rank that died:
 *   Open MPI: "mpirun noticed that process rank R with PID P on node H
 *              exited on signal S (...)"
 *   Slurm:    "srun: error: H: task R: Killed" (or "tasks R-Q: ...")
 * Each rank named there is one rank fewer for the next run; a watchdog's
 * end or a death nobody named restarts on as many ranks as before. With
 * --global-batch N in the command, the next count is the largest one left
 * that divides N, so the global batch stays N. Everything else (a usage
 * error, a refusal, a runtime error, success) ends the supervisor with the
 * job's own status; a stop signal to this process goes to the launcher and
 * no restart follows. docs/reliability.md lists the cases.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/cmds.h"

#define RUN_EXIT_GAVE_UP 76     /* restarts or time exhausted (documented) */
#define WATCHDOG_EXIT 75        /* train_gpt's watchdog: MPI_Abort(..., 75) */

typedef struct {
    int     max_restarts, min_ranks;
    double  max_time;           /* seconds; 0: no bound */
    char  **cmd;                /* the launcher's command, NULL-terminated */
    int     ncmd;
    int     np_at, np_prefix;   /* cmd[np_at] + np_prefix holds the rank count */
    int     np;                 /* the rank count of the next run */
    int     gbatch, accum;      /* the program's --global-batch and --accum, or 0 */
} run_spec;

/* What one run of the job ended with. */
typedef struct {
    int     status;             /* the job's exit status (128 + S if signalled) */
    int     died;               /* ranks the launcher said died of a signal */
    int     rank, sig;          /* the first of them and its signal */
    char    when[16];           /* local time the death was seen */
} run_end;

static volatile sig_atomic_t child_pid, stop_sig;

static void forward(int sig)
{
    stop_sig = sig;
    if (0 < child_pid) kill((pid_t)child_pid, sig);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: strata run [--max-restarts N] [--max-time SECONDS] [--min-ranks N] -- LAUNCHER ARGS...\n"
"Run the job LAUNCHER ARGS... (mpirun -np N ... or srun -n N ...) and, when one of its\n"
"ranks dies of a signal or the watchdog ends it (exit 75), run it again: the same\n"
"command, on the ranks that are left (the rank count after -np/-n/--np/-c/--ntasks\n"
"lowered by the ranks the launcher names as dead; with --global-batch N in the\n"
"command, the largest count left that divides N). Give the program its resume\n"
"flag (train_gpt --ckpt-dir DIR --resume) so each run continues from the newest\n"
"good checkpoint. Every restart is one line on stderr naming its cause.\n"
"  --max-restarts N  restarts at most (3)\n"
"  --max-time S      no restart begins S seconds after the start (0 = no bound)\n"
"  --min-ranks N     no restart on fewer than N ranks (1)\n"
"SIGTERM, SIGINT and SIGUSR1 go to the launcher (train_gpt stops with a checkpoint);\n"
"no restart follows them.\n"
"Exit: the job's own status when it ends without a rank's death (0: done; 2: a usage\n"
"error; 4: refused, ...; 128+S: the launcher killed by signal S); %d: a rank died\n"
"and no restart is left (--max-restarts, --max-time or --min-ranks); 2: usage.\n",
            RUN_EXIT_GAVE_UP);
}

static int num(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || '\0' != *end || x < lo || x > hi) {
        fprintf(stderr, "strata run: %s needs an integer in %ld..%ld, not '%s' (see --help)\n",
                opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

/* The rank count in the launcher's command: the first -np/-n/--np/-c/--n/
 * --ntasks N or --np=/--n=/--ntasks=N whose N is a whole number (sh -c
 * 'script' is no rank count). 0 if found, -1 if not. */
static int find_ranks(run_spec *s)
{
    static const char *const opts[] = { "-np", "-n", "--np", "-c", "--n", "--ntasks",
                                        "--np=", "--n=", "--ntasks=", NULL };
    for (int i = 1; i < s->ncmd; i++)
        for (int k = 0; opts[k]; k++) {
            size_t l = strlen(opts[k]);
            int at = '=' == opts[k][l - 1] ? i : i + 1;
            if (at >= s->ncmd || (at == i ? strncmp(s->cmd[i], opts[k], l)
                                          : strcmp(s->cmd[i], opts[k])))
                continue;
            const char *v = s->cmd[at] + (at == i ? l : 0);
            char *end;
            long np = strtol(v, &end, 10);
            if (end == v || '\0' != *end || np < 1 || np > (1 << 24)) continue;
            s->np_at = at;
            s->np_prefix = at == i ? (int)l : 0;
            s->np = (int)np;
            return 0;
        }
    return -1;
}

/* The program's --global-batch and --accum, if the command gives them. */
static void find_batch(run_spec *s)
{
    for (int i = 0; i + 1 < s->ncmd; i++) {
        if (!strcmp(s->cmd[i], "--global-batch")) s->gbatch = atoi(s->cmd[i + 1]);
        if (!strcmp(s->cmd[i], "--accum")) s->accum = atoi(s->cmd[i + 1]);
    }
}

/* 0: go on; 1: --help printed; 2: usage error (said) */
static int parse(int argc, char **argv, run_spec *s)
{
    *s = (run_spec){ .max_restarts = 3, .min_ranks = 1 };
    int i;
    for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        long v;
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 1; }
        else if (!strcmp(a, "--max-restarts")) {
            if (num(a, val, 0, 1000, &v)) return 2;
            s->max_restarts = (int)v;
        } else if (!strcmp(a, "--max-time")) {
            if (num(a, val, 0, 1L << 30, &v)) return 2;
            s->max_time = (double)v;
        } else if (!strcmp(a, "--min-ranks")) {
            if (num(a, val, 1, 1 << 24, &v)) return 2;
            s->min_ranks = (int)v;
        } else {
            fprintf(stderr, "strata run: unknown option '%s' (the job's command goes after "
                    "'--'; see --help)\n", a);
            return 2;
        }
        i++;
    }
    if (i >= argc || i + 1 >= argc) {
        fprintf(stderr, "strata run: no job: give its command after '--' (strata run -- mpirun "
                "-np 4 train_gpt ... --ckpt-dir DIR --resume; see --help)\n");
        return 2;
    }
    s->cmd = argv + i + 1;
    s->ncmd = argc - i - 1;
    if (find_ranks(s)) {
        fprintf(stderr, "strata run: no rank count in the job's command: give the launcher -np N "
                "(mpirun), -n N or --ntasks=N (srun)\n");
        return 2;
    }
    find_batch(s);
    int resume = 0;
    for (int k = 0; k < s->ncmd; k++)
        resume |= !strcmp(s->cmd[k], "--resume") || !strcmp(s->cmd[k], "--resume-any-shape");
    if (!resume)
        fprintf(stderr, "strata run: warning: the job's command has no --resume: a restart "
                "would begin again from step 0\n");
    return 0;
}

/* The launcher's report of a dead rank in one line of its stderr: the
 * rank and signal noted in *e (the first only), counted once per rank. */
static void scan_line(const char *line, run_end *e)
{
    int r, sig, hi;
    const char *p;
    if (NULL != (p = strstr(line, "noticed that process rank ")) &&
        2 == sscanf(p, "noticed that process rank %d with PID %*d on node %*s exited on signal %d",
                    &r, &sig)) {
        hi = r;
    } else if (NULL != strstr(line, "srun: error:") && NULL != (p = strstr(line, ": task"))) {
        const char *q = p + strlen(": task") + ('s' == p[strlen(": task")]);
        if (1 > sscanf(q, " %d", &r)) return;
        if (1 != sscanf(q, " %*d-%d", &hi)) hi = r;
        sig = strstr(line, "Killed") ? SIGKILL : 0;
    } else {
        return;
    }
    if (0 == e->died) {
        time_t now = time(NULL);
        strftime(e->when, sizeof e->when, "%H:%M:%S", localtime(&now));
        e->rank = r;
        e->sig = sig;
    }
    e->died += hi >= r ? hi - r + 1 : 1;
}

/* Copy the job's stderr to ours as it comes, reading it line by line. */
static void relay(int fd, run_end *e)
{
    char buf[4096], line[4096];
    size_t used = 0;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (0 > got && EINTR == errno) continue;
        if (0 >= got) break;
        for (ssize_t off = 0; off < got;) {
            ssize_t w = write(STDERR_FILENO, buf + off, (size_t)(got - off));
            if (0 > w && EINTR == errno) continue;
            if (0 > w) break;
            off += w;
        }
        for (ssize_t k = 0; k < got; k++) {
            if ('\n' != buf[k] && used + 1 < sizeof line) { line[used++] = buf[k]; continue; }
            line[used] = '\0';
            scan_line(line, e);
            used = 0;
        }
    }
    line[used] = '\0';
    if (used) scan_line(line, e);
}

/* One run of the command; -1 if it could not start (said). */
static int run_once(char **cmd, run_end *e)
{
    int fds[2];
    memset(e, 0, sizeof *e);
    if (pipe(fds) || fcntl(fds[0], F_SETFD, FD_CLOEXEC) || fcntl(fds[1], F_SETFD, FD_CLOEXEC)) {
        fprintf(stderr, "strata run: pipe: %s\n", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (0 > pid) {
        fprintf(stderr, "strata run: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (0 == pid) {
        dup2(fds[1], STDERR_FILENO);
        execvp(cmd[0], cmd);
        fprintf(stderr, "strata run: cannot run '%s': %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    if (stop_sig) kill(pid, stop_sig);   /* a stop that came while it started */
    close(fds[1]);
    relay(fds[0], e);
    close(fds[0]);
    int st;
    while (0 > waitpid(pid, &st, 0) && EINTR == errno) {}
    child_pid = 0;
    e->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (!e->died) {     /* the time the restart line gives: the job's end */
        time_t now = time(NULL);
        strftime(e->when, sizeof e->when, "%H:%M:%S", localtime(&now));
    }
    return 0;
}

/* The rank count of the next run after `died` ranks died; 0 if none fits
 * (fewer than --min-ranks, or none dividing the global batch). */
static int next_ranks(const run_spec *s, int died)
{
    for (int n = s->np - died; n >= s->min_ranks && n >= 1; n--) {
        if (0 == s->gbatch) return n;
        if (0 == s->gbatch % n && 0 == (s->gbatch / n) % (0 < s->accum ? s->accum : 1)) return n;
    }
    return 0;
}

/* Why a run ended, as the restart line says it; 0 if no restart can help. */
static int cause(const run_end *e, char *why, size_t len)
{
    if (0 < e->died && 1 == e->died)
        snprintf(why, len, "rank %d died (signal %d) at %s", e->rank, e->sig, e->when);
    else if (0 < e->died)
        snprintf(why, len, "%d ranks died (rank %d first, signal %d) at %s", e->died, e->rank,
                 e->sig, e->when);
    else if (WATCHDOG_EXIT == e->status)
        snprintf(why, len, "the watchdog ended the job (exit %d) at %s", WATCHDOG_EXIT, e->when);
    else if (128 < e->status && 124 + 128 != e->status)
        snprintf(why, len, "the job was killed (status %d, no rank named) at %s", e->status,
                 e->when);
    else
        return 0;
    return 1;
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;    /* no SA_RESTART: the relay's read returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int cmd_run(int argc, char **argv)
{
    run_spec s;
    int rc = parse(argc, argv, &s);
    if (rc) return 1 == rc ? 0 : rc;
    install();
    char npbuf[64], why[256];
    const double t0 = mono();
    for (int restarts = 0;; restarts++) {
        run_end e;
        if (run_once(s.cmd, &e)) return 1;
        if (stop_sig || !cause(&e, why, sizeof why)) return e.status;
        int n = 0 < e.died ? next_ranks(&s, e.died) : s.np;
        const char *limit = restarts >= s.max_restarts ? "no restart is left (--max-restarts)"
            : 0 < s.max_time && mono() - t0 >= s.max_time ? "past --max-time"
            : 0 == n ? "too few ranks are left (--min-ranks, or none dividing --global-batch)"
            : NULL;
        if (limit) {
            fprintf(stderr, "strata run: %s; %s: giving up after %d restart%s (exit %d)\n", why,
                    limit, restarts, 1 == restarts ? "" : "s", RUN_EXIT_GAVE_UP);
            return RUN_EXIT_GAVE_UP;
        }
        fprintf(stderr, "strata run: %s; restart %d of %d on %d rank%s from the newest "
                "checkpoint\n", why, restarts + 1, s.max_restarts, n, 1 == n ? "" : "s");
        char pre[32];   /* "--ntasks=" of "--ntasks=4"; copied: npbuf may hold it */
        snprintf(pre, sizeof pre, "%.*s", s.np_prefix, s.cmd[s.np_at]);
        snprintf(npbuf, sizeof npbuf, "%s%d", pre, n);
        s.cmd[s.np_at] = npbuf;
        s.np = n;
    }
}
