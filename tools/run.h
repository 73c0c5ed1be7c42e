/*
 * run.h - what strata run's files share: the job's command as parsed, and
 * its host list (tools/run_hosts.c): reading it, leaving a lost host out,
 * and asking every host whether it still answers.
 */
#ifndef STRATA_TOOLS_RUN_H
#define STRATA_TOOLS_RUN_H

#include <stddef.h>
#include <sys/types.h>

#define RUN_MAX_HOSTS 64        /* hosts of a list probed at most */
#define RUN_PROBE_S 10.0        /* seconds a host has to answer */

typedef struct {
    int     max_restarts, min_ranks;
    double  max_time;           /* seconds; 0: no bound */
    char  **cmd;                /* the launcher's command, NULL-terminated */
    int     ncmd;
    int     np_at, np_prefix;   /* cmd[np_at] + np_prefix holds the rank count */
    int     np;                 /* the rank count of the next run */
    int     gbatch, accum;      /* the program's --global-batch and --accum, or 0 */
    int     hosts_at;           /* cmd[hosts_at] is the --hostfile path or --host list; -1 none */
    int     hostfile;           /* 1: a file, 0: a list */
} run_spec;

/* "AGENT HOST true" for every host of the list at once, each a child
 * process in a group of its own; run_probe_done collects them. */
typedef struct {
    int     n;                  /* hosts asked; 0: none (no list) */
    char    name[RUN_MAX_HOSTS][256];
    pid_t   pid[RUN_MAX_HOSTS]; /* 0 once reaped */
    int     answered[RUN_MAX_HOSTS];
    double  t0;                 /* when they were asked (CLOCK_MONOTONIC) */
    char    agent[256];         /* as said in the message */
} run_probe;

void   run_find_hosts(run_spec *s);
int    run_drop_host(run_spec *s, const char *lost);
void   run_probe_begin(const run_spec *s, run_probe *p);
int    run_probe_done(run_probe *p, const char *prefer, char *lost, size_t len);
double run_mono(void);

#endif
