/*
 * run_cmd.c - strata run [OPTIONS] -- LAUNCHER ARGS...: start a job,
 * watch it, and when a rank dies (the launcher reports it killed by a
 * signal) or the watchdog ends it (exit 75), start it again with the same
 * command, which resumes from the newest good checkpoint (train_gpt
 * --resume). The launcher's standard error passes through this process,
 * which reads the launcher's own report of a rank that died:
 *   Open MPI: "mpirun noticed that process rank R with PID P on node H
 *              exited on signal S (...)"
 *   Slurm:    "srun: error: H: task R: Killed" (or "tasks R-Q: ..."), until
 *             srun says it ends the step (then it names the tasks it kills)
 * and the watchdog's "strata: rank R: watchdog: ..." line, and a host lost
 * whole (Open MPI: "ORTE has lost communication with a remote daemon" with
 * "Remote daemon: [[J,0],D] on node H"; its ranks are not reported dead).
 * The next run goes without a lost host: it is left out of the command's
 * --hostfile (a copy) or --host list, and its slots (slots=N, :N; 1 if not
 * said) are ranks gone. A launcher still running LOST_GRACE seconds after
 * it named the host (Open MPI's mpirun sometimes hangs then) is ended.
 * When no line names the host ("unable to reliably start one or more
 * daemons" after the loss, or only a rank's "Peer host: H"), every host of
 * the list is asked a second later through the launcher's own agent (--mca
 * plm_rsh_agent, else ssh): "AGENT HOST true"; one that does not answer is
 * lost, and the launcher has PROBED_GRACE seconds to end. Without a host
 * list, a peer's host counts as lost after LOST_GRACE seconds of silence.
 * The launcher's stderr is read to its end, or DRAIN_S seconds after the
 * launcher exited (what it started on other hosts may hold it open).
 * With --global-batch G in the command, each rank named dead is one rank
 * fewer for the next run (the largest count left that divides G, so the
 * global batch stays G and the checkpoint reshards on load); without it
 * the count stays, since train_gpt refuses to resume a checkpoint of
 * another global batch. Everything else (a usage error, a refusal, a
 * runtime error, success) ends the supervisor with the job's own status;
 * a stop signal to this process goes to the launcher and no restart
 * follows. docs/train_gpt.md and docs/reliability.md describe it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "tools/cmds.h"
#include "tools/run.h"

#define RUN_EXIT_GAVE_UP 76     /* a restart was needed and none was left */
#define WATCHDOG_EXIT 75        /* the runtime's watchdog: MPI_Abort(..., 75) */
#define LOST_GRACE 10.0         /* seconds a launcher may take to end after losing a host */
#define PROBE_AFTER 1.0         /* seconds from a sign of a lost host to asking the hosts */
#define PROBED_GRACE 3.0        /* seconds a launcher may take to end once a host does not answer */
#define KILL_AFTER 3.0          /* seconds from the launcher's SIGTERM to its SIGKILL */
#define DRAIN_S 2.0             /* seconds the stderr pipe is read after the launcher ended */

/* What one run of the job ended with. */
typedef struct {
    int     status;             /* the job's exit status (128 + S if signalled) */
    int     died;               /* ranks the launcher said died of a signal */
    int     rank, sig;          /* the first of them and its signal */
    int     wd_rank;            /* the first rank whose watchdog fired, or -1 */
    double  fault;              /* when the first death was seen (else the job's end) */
    int     ending;             /* srun said it ends the step: its kills follow */
    char    flight[1024];       /* the directory of the watchdog's flight records */
    char    suspect[64];        /* strata flight's suspect ranks, or "" */
    time_t  started;            /* when the run began: older records are not its */
    char    lost_host[256];     /* a host the launcher lost whole, or "" */
    const char *lost_why;       /* how it was found, for the restart line */
    char    peer_host[256];     /* a host a rank lost its MPI peer on, or "" */
    int     daemon_lost;        /* the launcher lost a daemon, naming no host */
    double  peer_t;             /* when the peer's host was seen */
    double  sign_t;             /* the first sign of a lost host (daemon or peer) */
    double  end_by;             /* a host is lost: the launcher is ended if it runs past this */
    int     ended;              /* signals sent to end the launcher */
    int     probing;            /* 0: hosts not asked; 1: asking; 2: done */
    run_probe probe;
} run_end;

static volatile sig_atomic_t child_pid, stop_sig;

/* A stop signal goes to the launcher's process group (the launcher leads
 * it), which passes it on to every rank. The first one goes as SIGUSR1, the
 * stop that train_gpt finishes with a checkpoint: mpirun and srun forward
 * SIGUSR1 at once, while Open MPI 4.1 gives the ranks a SIGTERM or SIGINT
 * only after odls_base_sigkill_timeout and SIGKILLs them as long after,
 * which cut a loaded machine's stop before its checkpoint. A second one
 * goes as it came. Open MPI puts each rank in a group of its own, so the
 * ranks get it once, from mpirun. */
static void forward(int sig)
{
    static volatile sig_atomic_t stops;
    stop_sig = sig;
    int send = 0 == stops++ ? SIGUSR1 : sig;
    if (0 < child_pid) kill(-(pid_t)child_pid, send);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: strata run [--max-restarts N] [--max-time SECONDS] [--min-ranks N] -- LAUNCHER ARGS...\n"
"Run the job LAUNCHER ARGS... (mpirun -np N ... or srun -n N ...) and, when one of its\n"
"ranks dies of a signal or the watchdog ends it (exit %d), run it again from the newest\n"
"good checkpoint. Give the program its resume flag (train_gpt --ckpt-dir DIR --resume;\n"
"a first run with no checkpoint starts from step 0); each run gets STRATA_RUN_RESTART\n"
"(0 on the first, then 1, 2, ...) in its environment.\n"
"Rank count: with --global-batch G in the command, a restart runs on the ranks left\n"
"(the count after -np/-n/--np/--ntasks lowered by the ranks the launcher names as dead,\n"
"then to the largest that divides G), so the global batch stays G; without it, on as\n"
"many ranks as before (train_gpt resumes only at the same global batch).\n"
"Every restart is one line on stderr: its number, the cause, the time since the fault,\n"
"the rank count.\n"
"  --max-restarts N  restarts at most (3)\n"
"  --max-time S      no restart begins S seconds or more after the start (0 = no bound)\n"
"  --min-ranks N     no restart on fewer than N ranks (1)\n"
"SIGTERM, SIGINT, SIGHUP or SIGUSR1 goes to the launcher as SIGUSR1 (train_gpt stops\n"
"after the current step with a checkpoint), a second one as it came; no restart\n"
"follows them. Nothing is left running:\n"
"the launcher's process group is killed when it ends, and the launcher gets SIGTERM\n"
"if this process dies.\n"
"Exit: the job's own status when no restart is needed (0: done; 2: usage; 4: refused;\n"
"128+S: the launcher killed by signal S; ...); %d: a restart was needed and none is\n"
"left (--max-restarts, --max-time or --min-ranks); 2: a usage error of strata run.\n",
            WATCHDOG_EXIT, RUN_EXIT_GAVE_UP);
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

/* The rank count in the launcher's command: the first -np/-n/--np/
 * --ntasks N or --np=/--ntasks=N whose N is a whole number. (srun's -c is
 * cpus per task, not ranks.) 0 if found, -1 if not. */
static int find_ranks(run_spec *s)
{
    static const char *const opts[] = { "-np", "-n", "--np", "--ntasks",
                                        "--np=", "--ntasks=", NULL };
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

/* The value of the program's option `name` (NAME V or NAME=V), or 0. */
static int find_opt(const run_spec *s, const char *name)
{
    size_t l = strlen(name);
    int v = 0;
    for (int i = 0; i < s->ncmd; i++) {
        if (!strcmp(s->cmd[i], name) && i + 1 < s->ncmd) v = atoi(s->cmd[i + 1]);
        else if (!strncmp(s->cmd[i], name, l) && '=' == s->cmd[i][l]) v = atoi(s->cmd[i] + l + 1);
    }
    return v;
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
    if (i + 1 >= argc) {
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
    run_find_hosts(s);
    s->gbatch = find_opt(s, "--global-batch");
    s->accum = find_opt(s, "--accum");
    int resume = 0;
    for (int k = 0; k < s->ncmd; k++)
        resume |= !strcmp(s->cmd[k], "--resume") || !strcmp(s->cmd[k], "--resume-any-shape");
    if (!resume)
        fprintf(stderr, "strata run: warning: the job's command has no --resume: a restart "
                "would begin again from step 0\n");
    return 0;
}

/* The launcher's report of a dead rank, or a watchdog's, in one line of
 * its stderr: the first rank and signal noted in *e, each dead rank
 * counted once. */
static void scan_line(const char *line, run_end *e)
{
    int r, sig, hi;
    const char *p;
    if (0 > e->wd_rank && NULL != (p = strstr(line, "strata: rank ")) &&
        1 == sscanf(p, "strata: rank %d: watchdog:", &r) && strstr(p, ": watchdog:")) {
        e->wd_rank = r;
        const char *f = strstr(p, "; flight record "), *end;
        if (f && NULL != (end = strstr(f, "/flight.")) && end - f - 16 < (int)sizeof e->flight)
            snprintf(e->flight, sizeof e->flight, "%.*s", (int)(end - f - 16), f + 16);
        return;
    }
    if (strstr(line, "unable to reliably start one or more daemons") ||
        strstr(line, "lost communication with a remote daemon")) {
        if (!e->daemon_lost && !e->lost_host[0] && 0 == e->died) e->fault = run_mono();
        if (!e->daemon_lost && !e->peer_host[0]) e->sign_t = run_mono();
        e->daemon_lost = 1;
        return;
    }
    if (!e->peer_host[0] && NULL != (p = strstr(line, "Peer host: ")) &&
        1 == sscanf(p + 11, "%255s", e->peer_host)) {
        e->peer_t = run_mono();
        if (!e->daemon_lost) e->sign_t = e->peer_t;
        return;
    }
    if (NULL != (p = strstr(line, "Remote daemon: ")) && NULL != (p = strstr(p, " on node "))) {
        if (!e->lost_host[0] && 1 == sscanf(p + 9, "%255s", e->lost_host)) {
            e->end_by = run_mono() + LOST_GRACE;
            e->lost_why = "the launcher lost its daemon there";
            if (0 == e->died) e->fault = run_mono();
        }
        return;
    }
    if (NULL != (p = strstr(line, "noticed that process rank ")) &&
        2 == sscanf(p, "noticed that process rank %d with PID %*d on node %*s exited on signal %d",
                    &r, &sig)) {
        hi = r;
    } else if (strstr(line, "srun: ") && (strstr(line, "Terminating StepId") ||
                                          strstr(line, "Job step aborted"))) {
        /* --kill-on-bad-exit: the tasks srun names as killed from here on
         * are the ones it killed itself, not more dead ranks */
        e->ending = 1;
        return;
    } else if (!e->ending && strstr(line, "srun: error:") && NULL != (p = strstr(line, ": task"))) {
        const char *q = p + strlen(": task") + ('s' == p[strlen(": task")]);
        if (1 > sscanf(q, " %d", &r)) return;
        if (1 != sscanf(q, " %*d-%d", &hi)) hi = r;
        sig = strstr(line, "Killed") ? SIGKILL : 0;
    } else {
        return;
    }
    if (0 == e->died) {
        e->fault = run_mono();
        e->rank = r;
        e->sig = sig;
    }
    e->died += hi >= r ? hi - r + 1 : 1;
}

/* The host a sign pointed at is lost: the launcher ends by itself or is
 * ended after `grace` seconds. */
static void host_lost(run_end *e, const char *host, const char *why, double fault, double grace)
{
    e->lost_why = why;
    snprintf(e->lost_host, sizeof e->lost_host, "%s", host);
    e->fault = fault;
    e->end_by = run_mono() + grace;
}

/* Between reads, the signs of a lost host that no line named: a daemon or
 * a rank's peer lost, and no rank reported dead. PROBE_AFTER seconds on,
 * the hosts are asked (once); a host that does not answer is lost. With
 * no host list to ask, a peer's host counts as lost after LOST_GRACE
 * seconds in which nothing more came (Open MPI's mpirun can hang when a
 * host goes). A launcher still running past e->end_by gets SIGTERM,
 * KILL_AFTER seconds later SIGKILL. */
static void watch(const run_spec *s, run_end *e)
{
    const double now = run_mono();
    const int sign = !e->lost_host[0] && 0 == e->died && (e->daemon_lost || e->peer_host[0]);
    char lost[256];
    if (sign && 0 == e->probing && 0 <= s->hosts_at && now - e->sign_t > PROBE_AFTER) {
        run_probe_begin(s, &e->probe);
        e->probing = 1;
    }
    if (1 == e->probing && run_probe_done(&e->probe, e->peer_host, lost, sizeof lost)) {
        e->probing = 2;
        if (lost[0] && sign) {
            host_lost(e, lost, "it does not answer the launcher's agent", e->sign_t, PROBED_GRACE);
            fprintf(stderr, "strata run: the launcher lost %s; host %s does not answer '%s %s "
                    "true': host %s counts as lost\n", e->daemon_lost ? "a daemon" : "a rank's peer",
                    lost, e->probe.agent, lost, lost);
        }
    }
    if (sign && e->peer_host[0] && 0 == e->probing && now - e->peer_t > LOST_GRACE) {
        host_lost(e, e->peer_host, "a rank lost its peer there, then silence", e->peer_t, 0);
        fprintf(stderr, "strata run: a rank lost its peer on host %s %.0f s ago and the "
                "launcher reports nothing more: host %s counts as lost\n", e->peer_host,
                LOST_GRACE, e->peer_host);
    }
    const double late = e->lost_host[0] && 0 < e->end_by ? now - e->end_by : -1;
    if (late > 0 && e->ended < 1 + (late > KILL_AFTER) && child_pid) {
        if (0 == e->ended)
            fprintf(stderr, "strata run: the launcher still runs %.0f s after it lost host %s: "
                    "ending it\n", now - e->fault, e->lost_host);
        kill(-child_pid, 0 == e->ended++ ? SIGTERM : SIGKILL);
    }
}

/* Whether the launcher (our child) has exited; it is not reaped. */
static int launcher_gone(void)
{
    siginfo_t si;
    si.si_pid = 0;
    return child_pid && 0 == waitid(P_PID, (id_t)child_pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
           0 != si.si_pid;
}

/* Copy the job's stderr to ours as it comes, reading it line by line,
 * until its end, or DRAIN_S seconds after the launcher exited (what it
 * started elsewhere may hold the pipe open). A probe of the hosts under way
 * is seen to its end. */
static void relay(int fd, const run_spec *s, run_end *e)
{
    char buf[4096], line[4096];
    size_t used = 0;
    double gone_t = 0;
    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        int ready = poll(&pf, 1, 200);
        watch(s, e);
        if (0 == gone_t && launcher_gone()) gone_t = run_mono();
        if (0 < gone_t && run_mono() - gone_t > DRAIN_S) break;
        if (1 > ready) continue;
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
    while (1 == e->probing) {
        struct timespec ts = { 0, 50000000L };
        nanosleep(&ts, NULL);
        watch(s, e);
    }
}

/* In the child: its own process group (the signals forwarded reach it and
 * its helpers, and a terminal's ^C reaches it once, through us), the
 * launcher killed if we die, no terminal input (a background group
 * reading it would stop), the stderr pipe, the restart count. */
static void exec_child(char **cmd, int errfd, int restarts)
{
    char nb[16];
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    int nul = open("/dev/null", O_RDONLY);
    if (0 <= nul) { dup2(nul, STDIN_FILENO); close(nul); }
    dup2(errfd, STDERR_FILENO);
    snprintf(nb, sizeof nb, "%d", restarts);
    setenv("STRATA_RUN_RESTART", nb, 1);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(cmd[0], cmd);
    fprintf(stderr, "strata run: cannot run '%s': %s\n", cmd[0], strerror(errno));
    _exit(127);
}

/* After the watchdog's end: the suspect ranks `strata flight` names from
 * this run's flight records (flight.*.json in the directory the watchdog
 * named, written since the run began), into e->suspect; "" if none. */
static void flight_suspects(run_end *e)
{
    char *files[258], line[256];
    int nf = 0, fds[2];
    DIR *d = e->flight[0] ? opendir(e->flight) : NULL;
    struct dirent *de;
    while (d && nf < 256 && NULL != (de = readdir(d))) {
        struct stat sb;
        size_t l = strlen(de->d_name);
        char path[2048];
        if (strncmp(de->d_name, "flight.", 7) || l < 6 || strcmp(de->d_name + l - 5, ".json"))
            continue;
        snprintf(path, sizeof path, "%s/%s", e->flight, de->d_name);
        if (0 == stat(path, &sb) && sb.st_mtime >= e->started) files[1 + nf++] = strdup(path);
    }
    if (d) closedir(d);
    if (0 < nf && 0 == pipe(fds)) {
        fflush(NULL);           /* nothing of ours written twice by the child */
        pid_t pid = fork();
        if (0 == pid) {     /* strata flight, its report into the pipe */
            files[0] = "flight";
            files[nf + 1] = NULL;
            dup2(fds[1], STDOUT_FILENO);
            int nul = open("/dev/null", O_WRONLY);
            if (0 <= nul) dup2(nul, STDERR_FILENO);
            int rc = cmd_flight(nf + 1, files);
            fflush(stdout);     /* _exit flushes nothing */
            _exit(rc);
        }
        close(fds[1]);
        FILE *f = fdopen(fds[0], "r");
        while (f && fgets(line, sizeof line, f))
            if (1 == sscanf(line, "suspect ranks: %63s", e->suspect)) break;
        if (f) fclose(f); else close(fds[0]);
        if (0 < pid) while (0 > waitpid(pid, NULL, 0) && EINTR == errno) {}
    }
    for (int i = 1; i <= nf; i++) free(files[i]);
}

/* The processes of the job that outlived its launcher. On Linux this
 * process is their subreaper (cmd_run): a rank whose launcher died, or that
 * it left behind, is reparented here, and is killed and reaped, so that
 * none keeps running, holding a device, or stays a zombie whose pid holds
 * the checkpoint lock. Elsewhere the launcher's group is all we reach. */
static void reap_orphans(void)
{
#ifdef __linux__
    int killed = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    const pid_t self = getpid();
    while (d && NULL != (de = readdir(d))) {
        char path[288], buf[512];
        long ppid;
        if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[got] = '\0';
        const char *p = strrchr(buf, ')');     /* the name may hold anything */
        if (p && 1 == sscanf(p + 1, " %*c %ld", &ppid) && ppid == (long)self)
            killed += 0 == kill((pid_t)atol(de->d_name), SIGKILL);
    }
    if (d) closedir(d);
    /* the killed ones, then any that were zombies already */
    for (pid_t w; 0 < killed; killed -= 0 < w)
        if (0 > (w = waitpid(-1, NULL, 0)) && EINTR != errno) break;
#endif
    while (0 < waitpid(-1, NULL, WNOHANG)) {}
}

/* One run of the command; -1 if it could not start (said). */
static int run_once(const run_spec *s, int restarts, run_end *e)
{
    int fds[2];
    memset(e, 0, sizeof *e);
    e->wd_rank = -1;
    e->started = time(NULL) - 1;    /* mtimes have whole seconds at worst */
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
    if (0 == pid) exec_child(s->cmd, fds[1], restarts);
    setpgid(pid, pid);      /* also here: a signal may come before the child runs */
    child_pid = pid;
    if (stop_sig) kill(-pid, SIGUSR1);    /* a stop that came while it started */
    close(fds[1]);
    relay(fds[0], s, e);
    close(fds[0]);
    /* whatever of its group outlived the launcher goes, while the
     * launcher is not yet reaped (its pid, the group's id, cannot be reused) */
    siginfo_t si;
    while (0 > waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) && EINTR == errno) {}
    kill(-pid, SIGKILL);
    int st;
    while (0 > waitpid(pid, &st, 0) && EINTR == errno) {}
    reap_orphans();
    child_pid = 0;
    e->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (!e->died && !e->lost_host[0]) e->fault = run_mono();   /* nothing seen: the job's end */
    if (WATCHDOG_EXIT == e->status && !e->died) flight_suspects(e);
    return 0;
}

/* The rank count of the next run after `died` ranks died; 0 if none fits
 * (fewer than --min-ranks, or none dividing the global batch). Without
 * --global-batch the count stays: another count is another global batch. */
static int next_ranks(const run_spec *s, int died)
{
    if (0 == s->gbatch) return s->np >= s->min_ranks ? s->np : 0;
    for (int n = s->np - died; n >= s->min_ranks && n >= 1; n--)
        if (0 == s->gbatch % n && 0 == (s->gbatch / n) % (0 < s->accum ? s->accum : 1)) return n;
    return 0;
}

/* Why a run ended, as the restart line says it; 0 if no restart can help. */
static int cause(const run_end *e, char *why, size_t len)
{
    if (e->lost_host[0])
        snprintf(why, len, "host %s lost (%s)", e->lost_host, e->lost_why ? e->lost_why : "named");
    else if (1 == e->died)
        snprintf(why, len, "rank %d died (signal %d)", e->rank, e->sig);
    else if (0 < e->died)
        snprintf(why, len, "%d ranks died (rank %d first, signal %d)", e->died, e->rank, e->sig);
    else if (WATCHDOG_EXIT == e->status && 0 <= e->wd_rank)
        snprintf(why, len, "the watchdog of rank %d ended the job (exit %d; flight records: "
                 "suspect ranks %s)", e->wd_rank, WATCHDOG_EXIT,
                 e->suspect[0] ? e->suspect : "not named");
    else if (WATCHDOG_EXIT == e->status)
        snprintf(why, len, "the watchdog ended the job (exit %d)", WATCHDOG_EXIT);
    else if (128 < e->status)
        snprintf(why, len, "the job ended with status %d (128 + signal %d), no rank named",
                 e->status, e->status - 128);
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
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

/* The rank count field of the command set to n (its "--ntasks=" kept). */
static void set_ranks(run_spec *s, int n)
{
    static char npbuf[64];
    char pre[32];       /* copied first: npbuf may hold it */
    snprintf(pre, sizeof pre, "%.*s", s->np_prefix, s->cmd[s->np_at]);
    snprintf(npbuf, sizeof npbuf, "%s%d", pre, n);
    s->cmd[s->np_at] = npbuf;
    s->np = n;
}

int cmd_run(int argc, char **argv)
{
    run_spec s;
    int rc = parse(argc, argv, &s);
    if (rc) return 1 == rc ? 0 : rc;
    install();
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, 1);   /* see reap_orphans */
#endif
    char why[640], batch[96];
    const double t0 = run_mono();
    for (int restarts = 0;; restarts++) {
        run_end e;
        if (run_once(&s, restarts, &e)) return 1;
        if (e.daemon_lost && !e.lost_host[0] && 0 == e.died && !stop_sig && 0 <= s.hosts_at) {
            run_probe_begin(&s, &e.probe);      /* (again) now that the launcher has ended */
            for (e.probing = 1; 1 == e.probing; watch(&s, &e))
                nanosleep(&(struct timespec){ 0, 50000000L }, NULL);
        }
        if (stop_sig || !cause(&e, why, sizeof why)) return e.status;
        int gone = 0 < e.died ? e.died : 0;
        if (e.lost_host[0]) {
            int h = run_drop_host(&s, e.lost_host);
            if (0 > h) return RUN_EXIT_GAVE_UP;
            gone = h > gone ? h : gone;
        }
        int n = next_ranks(&s, gone);
        const char *limit = restarts >= s.max_restarts ? "no restart is left (--max-restarts)"
            : 0 < s.max_time && run_mono() - t0 >= s.max_time ? "past --max-time"
            : 0 == n ? "too few ranks are left (--min-ranks, or none dividing --global-batch)"
            : NULL;
        if (limit) {
            fprintf(stderr, "strata run: %s (job exit %d); %s: giving up after %d restart%s "
                    "(exit %d)\n", why, e.status, limit, restarts, 1 == restarts ? "" : "s",
                    RUN_EXIT_GAVE_UP);
            return RUN_EXIT_GAVE_UP;
        }
        if (s.gbatch)
            snprintf(batch, sizeof batch, "global batch %d kept (--global-batch)", s.gbatch);
        else
            snprintf(batch, sizeof batch, "the same count: no --global-batch in the command");
        fprintf(stderr, "strata run: restart %d of %d: %s (job exit %d); %.1f s after the fault; "
                "on %d rank%s (was %d), %s\n", restarts + 1, s.max_restarts, why, e.status,
                run_mono() - e.fault, n, 1 == n ? "" : "s", s.np, batch);
        set_ranks(&s, n);
    }
}
