/* proc.c - processes by pid, from /proc/PID/stat (see proc.h). */
#include "config.h"
#include "base/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /proc/PID/stat's state (field 3) and start time (field 22); -1 when
 * there is no such process. */
static int proc_stat(long pid, char *state_p, unsigned long long *start_p)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');           /* the command may hold spaces */
    if (!p || ' ' != p[1]) return -1;
    *state_p = p[2];
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    *start_p = p ? strtoull(p + 1, NULL, 10) : 0;
    return 0;
}

unsigned long long base_proc_start(long pid)
{
    char state;
    unsigned long long start = 0;
    return proc_stat(pid, &state, &start) ? 0 : start;
}

const char *base_proc_gone(long pid, unsigned long long start)
{
    if (pid <= 0) return NULL;
    if (kill((pid_t)pid, 0) && ESRCH == errno) return "its process no longer exists";
    char state = '?';
    unsigned long long now = 0;
    if (proc_stat(pid, &state, &now)) return NULL;     /* no /proc: cannot tell */
    /* a killed rank stays a zombie until its launcher reaps it */
    if ('Z' == state || 'X' == state) return "its process has exited (a zombie, not yet reaped)";
    if (start && now && now != start) return "its pid now belongs to another process (started at another time)";
    return NULL;
}
