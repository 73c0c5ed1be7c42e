/*
 * trace.h - reading per-rank Chrome traces back and analysing them, for
 * `strata trace` and the tests (tools/libtrace.a; not in libstrata). The
 * format and its writer are sched/'s (sched/sched.h, sched/trace.c); this
 * side parses it with jansson and measures per step how much of the
 * transfer time was hidden under compute and communication.
 *
 * Error convention as sched/'s: a status, and a message a person can act
 * on in (err, errlen) (err may be NULL); out-parameters end in _p and are
 * written only on success.
 */
#ifndef STRATA_TOOLS_TRACE_H
#define STRATA_TOOLS_TRACE_H

#include <stddef.h>

#include "strata.h"
#include "sched/sched.h"

typedef struct {
    int    rank;            /* pid */
    char   ph;              /* 'X', 'i', 'C', 'M' (others are skipped) */
    int    engine;          /* sched_engine_t from "cat"; -1 step or unknown */
    int    is_step;         /* name "step" */
    int    step;            /* args.step, -1 if absent */
    double ts, dur;         /* seconds */
    char   name[SCHED_NAME_MAX];
} sched_trace_event_t;

typedef struct {
    int nevents, cap;
    sched_trace_event_t *ev;
} sched_trace_events_t;

/* Append the events of one file (a rank's trace). STRATA_ERR_IO if it
 * cannot be read, STRATA_ERR_FORMAT with the line and what jansson
 * expected if it is not a trace. Tolerates what Chrome's loader does:
 * spacing, key order, unknown keys, other tools' events, and a missing
 * closing bracket (a trace cut short between events). On failure evs
 * holds what it held before. */
strata_status_t sched_trace_read(const char *path, sched_trace_events_t *evs,
                                 char *err, size_t errlen);
strata_status_t sched_trace_parse(const char *text, size_t len, sched_trace_events_t *evs,
                                  char *err, size_t errlen);
void sched_trace_events_free(sched_trace_events_t *evs);

typedef struct {
    int    step;
    int    ranks;
    double step_s;                       /* longest rank */
    double transfer_s;                   /* per rank, mean: time any transfer engine was busy */
    double hidden_s;                     /* ... of it, while compute or comm was busy */
    double overlap_frac;                 /* hidden / transfer (1 when no transfer) */
    double exposed_s;                    /* transfer time while compute was idle
                                          * (as the simulator's exposed_transfer_s) */
    double wait_s[SCHED_ENGINE_COUNT];   /* per rank, mean: engine idle within the step */
} sched_trace_step_t;

/* Per step (steps from "step" complete events, or between "step" instant
 * events; a trace without step marks is one step). *steps_p is malloc'd. */
strata_status_t sched_trace_analyze(const sched_trace_events_t *evs, sched_trace_step_t **steps_p,
                                    int *nsteps_p, char *err, size_t errlen);

#endif
