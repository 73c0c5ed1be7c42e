/*
 * trace_analyze.c - the per-step analysis behind `strata trace`: per rank
 * and step, the union of each engine's busy intervals, how much of the
 * transfer time fell under compute or communication, and how long each
 * engine was idle; then the mean over ranks.
 */
#include "config.h"
#include "tools/trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct { double a, b; } iv_t;

static int cmp_iv(const void *x, const void *y)
{
    const iv_t *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge overlapping intervals in place; returns the new count. */
static int merge(iv_t *iv, int n)
{
    if (n <= 1) return n;
    qsort(iv, (size_t)n, sizeof *iv, cmp_iv);
    int m = 0;
    for (int i = 1; i < n; i++) {
        if (iv[i].a <= iv[m].b) { if (iv[i].b > iv[m].b) iv[m].b = iv[i].b; }
        else iv[++m] = iv[i];
    }
    return m + 1;
}

static double measure(const iv_t *iv, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += iv[i].b - iv[i].a;
    return s;
}

static double overlap(const iv_t *x, int nx, const iv_t *y, int ny)
{
    double s = 0;
    for (int i = 0, j = 0; i < nx && j < ny;) {
        double a = x[i].a > y[j].a ? x[i].a : y[j].a, b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (b > a) s += b - a;
        if (x[i].b < y[j].b) i++; else j++;
    }
    return s;
}

typedef struct { int rank, step; double t0, t1; } window_t;

static int cmp_ev_ts(const void *x, const void *y)
{
    const sched_trace_event_t *a = *(sched_trace_event_t *const *)x, *b = *(sched_trace_event_t *const *)y;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The step windows of one rank. */
static int windows_of(const sched_trace_events_t *evs, int rank, window_t **w_p, int *n_p)
{
    int n = 0, ninst = 0;
    double lo = 1e300, hi = -1e300;
    for (int i = 0; i < evs->nevents; i++) {
        const sched_trace_event_t *e = &evs->ev[i];
        if (e->rank != rank) continue;
        if (e->is_step && 'X' == e->ph) n++;
        if (e->is_step && ('i' == e->ph || 'I' == e->ph)) ninst++;
        if ('X' == e->ph || 'i' == e->ph || 'I' == e->ph) {
            if (e->ts < lo) lo = e->ts;
            if (e->ts + e->dur > hi) hi = e->ts + e->dur;
        }
    }
    window_t *w = calloc((size_t)(n + ninst + 1), sizeof *w);
    if (!w) return -1;
    int k = 0;
    if (n > 0) {
        for (int i = 0; i < evs->nevents; i++) {
            const sched_trace_event_t *e = &evs->ev[i];
            if (e->rank == rank && e->is_step && 'X' == e->ph)
                w[k++] = (window_t){ rank, e->step >= 0 ? e->step : k, e->ts, e->ts + e->dur };
        }
    } else if (ninst > 0) {
        const sched_trace_event_t **marks = malloc((size_t)ninst * sizeof *marks);
        if (!marks) { free(w); return -1; }
        int m = 0;
        for (int i = 0; i < evs->nevents; i++) {
            const sched_trace_event_t *e = &evs->ev[i];
            if (e->rank == rank && e->is_step && ('i' == e->ph || 'I' == e->ph)) marks[m++] = e;
        }
        qsort(marks, (size_t)m, sizeof *marks, cmp_ev_ts);
        /* a mark starts a step, which lasts until the next mark or the end */
        for (int i = 0; i < m; i++) {
            double t1 = i + 1 < m ? marks[i + 1]->ts : hi;
            if (t1 > marks[i]->ts) w[k++] = (window_t){ rank, marks[i]->step >= 0 ? marks[i]->step : i, marks[i]->ts, t1 };
        }
        free(marks);
    } else if (hi > lo) {
        w[k++] = (window_t){ rank, 0, lo, hi };
    }
    *w_p = w;
    *n_p = k;
    return 0;
}

static int cmp_step(const void *x, const void *y)
{
    const sched_trace_step_t *a = x, *b = y;
    return (a->step > b->step) - (a->step < b->step);
}

strata_status_t sched_trace_analyze(const sched_trace_events_t *evs, sched_trace_step_t **steps_p,
                                    int *nsteps_p, char *err, size_t errlen)
{
    if (!evs || !steps_p || !nsteps_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "analyze: NULL argument");
    sched_trace_step_t *steps = NULL;
    int nsteps = 0;
    iv_t *iv[SCHED_ENGINE_COUNT + 2] = { NULL };
    int nv[SCHED_ENGINE_COUNT + 2];
    strata_status_t st = STRATA_ERR_NOMEM;
    int *ranks = malloc(((size_t)evs->nevents + 1) * sizeof(int)), nranks = 0;
    if (!ranks) goto out;
    for (int i = 0; i < evs->nevents; i++) {
        int seen = 0;
        for (int k = 0; k < nranks && !seen; k++) seen = ranks[k] == evs->ev[i].rank;
        if (!seen) ranks[nranks++] = evs->ev[i].rank;
    }
    for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++)
        if (!(iv[e] = malloc(((size_t)evs->nevents + 1) * sizeof(iv_t)))) goto out;
    const int XFER = SCHED_ENGINE_COUNT, BUSY = SCHED_ENGINE_COUNT + 1;   /* unions */

    for (int ri = 0; ri < nranks; ri++) {
        window_t *w;
        int nw;
        if (windows_of(evs, ranks[ri], &w, &nw)) goto out;
        for (int k = 0; k < nw; k++) {
            for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) nv[e] = 0;
            for (int i = 0; i < evs->nevents; i++) {
                const sched_trace_event_t *x = &evs->ev[i];
                if (x->rank != ranks[ri] || 'X' != x->ph || x->engine < 0) continue;
                double a = x->ts > w[k].t0 ? x->ts : w[k].t0;
                double b = x->ts + x->dur < w[k].t1 ? x->ts + x->dur : w[k].t1;
                if (b <= a) continue;
                iv[x->engine][nv[x->engine]++] = (iv_t){ a, b };
                if (SCHED_D2H == x->engine || SCHED_H2D == x->engine || SCHED_IO == x->engine)
                    iv[XFER][nv[XFER]++] = (iv_t){ a, b };
                else iv[BUSY][nv[BUSY]++] = (iv_t){ a, b };
            }
            for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) nv[e] = merge(iv[e], nv[e]);
            /* find or add the step */
            int s;
            for (s = 0; s < nsteps && steps[s].step != w[k].step; s++) {}
            if (s == nsteps) {
                sched_trace_step_t *x = realloc(steps, (size_t)(nsteps + 1) * sizeof *x);
                if (!x) { free(w); goto out; }
                steps = x;
                memset(&steps[nsteps], 0, sizeof steps[nsteps]);
                steps[nsteps++].step = w[k].step;
            }
            sched_trace_step_t *t = &steps[s];
            double len = w[k].t1 - w[k].t0;
            t->ranks++;
            if (len > t->step_s) t->step_s = len;
            t->transfer_s += measure(iv[XFER], nv[XFER]);
            t->hidden_s += overlap(iv[XFER], nv[XFER], iv[BUSY], nv[BUSY]);
            t->exposed_s += measure(iv[XFER], nv[XFER]) -
                            overlap(iv[XFER], nv[XFER], iv[SCHED_COMPUTE], nv[SCHED_COMPUTE]);
            for (int e = 0; e < SCHED_ENGINE_COUNT; e++) t->wait_s[e] += len - measure(iv[e], nv[e]);
        }
        free(w);
    }
    for (int s = 0; s < nsteps; s++) {
        sched_trace_step_t *t = &steps[s];
        t->transfer_s /= t->ranks;
        t->hidden_s /= t->ranks;
        t->exposed_s /= t->ranks;
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++) t->wait_s[e] /= t->ranks;
        t->overlap_frac = t->transfer_s > 0 ? t->hidden_s / t->transfer_s : 1.0;
    }
    if (nsteps > 1) qsort(steps, (size_t)nsteps, sizeof *steps, cmp_step);
    if (0 == nsteps) {
        st = sched_fail(err, errlen, STRATA_ERR_FORMAT, "the trace holds no timed events");
        goto out;
    }
    *steps_p = steps;
    *nsteps_p = nsteps;
    steps = NULL;
    st = STRATA_OK;
out:
    if (STRATA_ERR_NOMEM == st) sched_fail(err, errlen, st, "out of memory analysing the trace");
    free(steps);
    free(ranks);
    for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) free(iv[e]);
    return st;
}
