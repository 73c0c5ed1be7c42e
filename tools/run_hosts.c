/*
 * run_hosts.c - strata run and the hosts of its job: the command's host
 * list (--hostfile or --host), a copy of it without a lost host, and the
 * probe that finds which host is gone when the launcher does not say: the
 * launcher's own agent (--mca plm_rsh_agent, else ssh) runs "true" on every
 * host at once, and a host that fails or has not answered in RUN_PROBE_S
 * seconds is lost.
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

#include "tools/run.h"

double run_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The command's host list: --hostfile F (also -hostfile, --machinefile,
 * -machinefile) or --host/-H LIST; s->hosts_at -1 when it has none. */
void run_find_hosts(run_spec *s)
{
    static const char *const files[] = { "--hostfile", "-hostfile", "--machinefile", "-machinefile", NULL };
    s->hosts_at = -1;
    for (int i = 1; i + 1 < s->ncmd && s->hosts_at < 0; i++) {
        for (int k = 0; files[k]; k++)
            if (!strcmp(s->cmd[i], files[k])) { s->hosts_at = i + 1; s->hostfile = 1; }
        if (!strcmp(s->cmd[i], "--host") || !strcmp(s->cmd[i], "-H") || !strcmp(s->cmd[i], "-host")) {
            s->hosts_at = i + 1;
            s->hostfile = 0;
        }
    }
}

/* The slots of a hostfile line's options ("slots=N"; 1 when not said). */
static int line_slots(const char *opts)
{
    const char *p = strstr(opts, "slots=");
    int n = p ? atoi(p + 6) : 1;
    return n > 0 ? n : 1;
}

static char hosts_copy[4096];    /* our copy of the hostfile, removed at exit */

static void remove_hosts_copy(void)
{
    if (hosts_copy[0]) unlink(hosts_copy);
}

/* The command's hosts without `lost`: a copy of the hostfile (a file of
 * ours, in $TMPDIR) or a shorter --host list. Returns the slots that went
 * with it (ranks gone), 0 when the command names no such host, -1 when the
 * copy cannot be written (said). */
int run_drop_host(run_spec *s, const char *lost)
{
    static char list[4096], path[4096];
    int gone = 0;
    if (s->hosts_at < 0) return 0;
    if (!s->hostfile) {     /* h1:2,h2,h3 */
        char in[4096];
        snprintf(in, sizeof in, "%s", s->cmd[s->hosts_at]);
        list[0] = '\0';
        for (char *save = NULL, *h = strtok_r(in, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(h, ':');
            size_t l = colon ? (size_t)(colon - h) : strlen(h);
            if (strlen(lost) == l && !strncmp(h, lost, l)) { gone += colon ? atoi(colon + 1) : 1; continue; }
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? "," : "", h);
        }
        s->cmd[s->hosts_at] = list;
        return gone;
    }
    FILE *f = fopen(s->cmd[s->hosts_at], "r");
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/strata-run-hosts.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int fd = f ? mkstemp(path) : -1;
    FILE *o = 0 <= fd ? fdopen(fd, "w") : NULL;
    if (!o) {
        fprintf(stderr, "strata run: cannot write a hostfile without host %s: %s\n", lost,
                strerror(errno));
        if (f) fclose(f);
        if (0 <= fd) close(fd);
        return -1;
    }
    char line[1024], name[256];
    while (fgets(line, sizeof line, f)) {
        if (1 == sscanf(line, " %255s", name) && '#' != name[0] && !strcmp(name, lost)) {
            gone += line_slots(line + strlen(name));
            continue;
        }
        fputs(line, o);
    }
    fclose(f);
    fclose(o);
    if (!hosts_copy[0]) atexit(remove_hosts_copy);
    else unlink(hosts_copy);                        /* the copy before this one */
    snprintf(hosts_copy, sizeof hosts_copy, "%s", path);
    s->cmd[s->hosts_at] = path;
    return gone;
}

/* The agent Open MPI starts its daemons with: the command's
 * --mca plm_rsh_agent A, else OMPI_MCA_plm_rsh_agent, else ssh; the first
 * of a list ("ssh : rsh"). */
static void rsh_agent(const run_spec *s, char *out, size_t len)
{
    const char *a = NULL;
    for (int i = 0; i + 2 < s->ncmd && !a; i++)
        if ((!strcmp(s->cmd[i], "--mca") || !strcmp(s->cmd[i], "-mca")) &&
            !strcmp(s->cmd[i + 1], "plm_rsh_agent"))
            a = s->cmd[i + 2];
    if (!a) a = getenv("OMPI_MCA_plm_rsh_agent");
    if (!a || !a[0]) a = "ssh";
    snprintf(out, len, "%.*s", (int)strcspn(a, ":"), a);
    for (size_t l = strlen(out); l && ' ' == out[l - 1]; l--) out[l - 1] = '\0';
}

static void host_names(const run_spec *s, run_probe *p)
{
    p->n = 0;
    if (s->hosts_at < 0) return;
    if (s->hostfile) {
        FILE *f = fopen(s->cmd[s->hosts_at], "r");
        char line[1024];
        while (f && p->n < RUN_MAX_HOSTS && fgets(line, sizeof line, f))
            if (1 == sscanf(line, " %255s", p->name[p->n]) && '#' != p->name[p->n][0]) p->n++;
        if (f) fclose(f);
        return;
    }
    char in[4096];
    snprintf(in, sizeof in, "%s", s->cmd[s->hosts_at]);
    for (char *save = NULL, *h = strtok_r(in, ",", &save); h && p->n < RUN_MAX_HOSTS;
         h = strtok_r(NULL, ",", &save))
        snprintf(p->name[p->n++], sizeof p->name[0], "%.*s", (int)strcspn(h, ":"), h);
}

/* Ask every host of the command's list at once. */
void run_probe_begin(const run_spec *s, run_probe *p)
{
    memset(p, 0, sizeof *p);
    host_names(s, p);
    rsh_agent(s, p->agent, sizeof p->agent);
    p->t0 = run_mono();
    fflush(NULL);
    for (int i = 0; i < p->n; i++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "%s '%s' true", p->agent, p->name[i]);
        pid_t pid = fork();
        if (0 == pid) {
            int nul = open("/dev/null", O_RDWR);
            if (0 <= nul) { dup2(nul, STDIN_FILENO); dup2(nul, STDOUT_FILENO); dup2(nul, STDERR_FILENO); }
            setpgid(0, 0);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        p->pid[i] = 0 < pid ? pid : 0;
        p->answered[i] = 0 > pid;     /* a probe that cannot start proves nothing */
    }
}

/* Whether every probe has ended (a host that has not answered in
 * RUN_PROBE_S seconds is killed and counts as not answering); when so,
 * *lost is `prefer` if it did not answer, else the first host of the list
 * that did not, else "". */
int run_probe_done(run_probe *p, const char *prefer, char *lost, size_t len)
{
    const int late = run_mono() - p->t0 > RUN_PROBE_S;
    int pending = 0;
    for (int i = 0; i < p->n; i++) {
        int st;
        if (!p->pid[i]) continue;
        if (late) kill(-p->pid[i], SIGKILL);
        pid_t w = waitpid(p->pid[i], &st, late ? 0 : WNOHANG);
        if (w == p->pid[i]) {
            p->answered[i] = WIFEXITED(st) && 0 == WEXITSTATUS(st);
            p->pid[i] = 0;
        } else if (0 > w && ECHILD == errno) {
            p->pid[i] = 0;      /* reaped by someone else: proves nothing */
            p->answered[i] = 1;
        } else {
            pending++;
        }
    }
    if (pending) return 0;
    lost[0] = '\0';
    for (int i = 0; i < p->n; i++)
        if (!p->answered[i] && (!lost[0] || (prefer && !strcmp(p->name[i], prefer))))
            snprintf(lost, len, "%s", p->name[i]);
    return 1;
}
