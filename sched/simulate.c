/*
 * simulate.c - the cost model: run a schedule in simulated time. Each
 * engine takes its ops in issue order; an op starts when its engine is
 * free and every op it depends on has ended, and lasts its predicted
 * seconds. Memory is taken at an op's start (a gather's when its deps are
 * met: the runtime allocates it when it issues the prefetch) and released
 * at its end. Where ops on different engines share a resource (the host
 * link both ways, copy engines, HBM, the NIC: sched_res_t), the ops that
 * draw on it at once run at their share of it (run_shared).
 */
#include "config.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_transfer(sched_engine_t e) { return SCHED_D2H == e || SCHED_H2D == e || SCHED_IO == e; }

static int cmp_mem(const void *x, const void *y)
{
    const sched_mem_event_t *a = x, *b = y;
    if (a->time_s != b->time_s) return a->time_s < b->time_s ? -1 : 1;
    /* frees first, so an op that starts when another ends reuses its bytes */
    return (a->delta > b->delta) - (a->delta < b->delta);
}

int sched_mem_events(const sched_t *s, const double *start, const double *end,
                     sched_mem_event_t **ev_p, int *n_p)
{
    sched_mem_event_t *ev = malloc(((size_t)s->nops * 2 * STRATA_TIER_COUNT + 1) * sizeof *ev);
    int n = 0;
    if (!ev) return -1;
    for (int i = 0; i < s->nops; i++) {
        /* a gather's buffer is taken when it is issued (its deps met), as
         * the runtime's prefetch does, not when the comm engine gets to
         * it: a reduce-scatter before it may still be running */
        double at = start[i];
        if (SCHED_OP_AG == s->ops[i].kind) {
            at = 0;
            for (int k = 0; k < s->ops[i].ndeps; k++)
                if (end[s->ops[i].deps[k]] > at) at = end[s->ops[i].deps[k]];
            if (at > start[i]) at = start[i];
        }
        for (int t = 0; t < STRATA_TIER_COUNT; t++) {
            if (s->ops[i].mem_alloc[t]) ev[n++] = (sched_mem_event_t){ at, t, (long long)s->ops[i].mem_alloc[t] };
            if (s->ops[i].mem_free[t]) ev[n++] = (sched_mem_event_t){ end[i], t, -(long long)s->ops[i].mem_free[t] };
        }
    }
    qsort(ev, (size_t)n, sizeof *ev, cmp_mem);
    *ev_p = ev;
    *n_p = n;
    return 0;
}

/* Every engine takes its ops in issue order, each starting when its
 * engine is free and its deps have ended. The ops that never start (a
 * deadlock); 0 when all ran. */
static int run_engines(const sched_t *s, double *start, double *end, char *done, sched_result_t *r)
{
    int head[SCHED_ENGINE_COUNT] = { 0 }, left = s->nops;
    double avail[SCHED_ENGINE_COUNT] = { 0 };
    while (left > 0) {
        int progress = 0;
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
            while (head[e] < s->norder[e]) {
                int id = s->order[e][head[e]];
                const sched_op_t *o = &s->ops[id];
                double t = avail[e];
                int ready = 1;
                for (int i = 0; i < o->ndeps && ready; i++) {
                    if (!done[o->deps[i]]) ready = 0;
                    else if (end[o->deps[i]] > t) t = end[o->deps[i]];
                }
                if (!ready) break;
                start[id] = t;
                end[id] = t + o->seconds;
                avail[e] = end[id];
                done[id] = 1;
                r->busy_s[e] += o->seconds;
                if (is_transfer(e)) r->transfer_s += o->seconds;
                if (end[id] > r->step_s) r->step_s = end[id];
                head[e]++;
                left--;
                progress = 1;
            }
        if (!progress) return left;
    }
    return 0;
}

/* Bytes per second op o draws on each shared resource at full speed. */
static void op_demand(const sched_t *s, const sched_op_t *o, double d[SCHED_RES_COUNT])
{
    for (int r = 0; r < SCHED_RES_COUNT; r++) d[r] = 0;
    if (!(o->seconds > 0)) return;
    if (SCHED_D2H == o->engine || SCHED_H2D == o->engine) {
        /* a copy crosses the link, runs on a copy engine and reads or
         * writes its device side in HBM */
        double b = (double)o->bytes / o->seconds;
        d[SCHED_RES_LINK] = d[SCHED_RES_CE] = d[SCHED_RES_HBM] = b;
        return;
    }
    if (o->unit < 0 || o->unit >= s->prog->nunits) return;
    const sched_unit_t *u = &s->prog->units[o->unit];
    int k;
    switch (o->kind) {
    case SCHED_OP_F: case SCHED_OP_RECOMPUTE: case SCHED_OP_REGEN: k = SCHED_COST_FWD; break;
    case SCHED_OP_B: k = SCHED_COST_BWD; break;
    case SCHED_OP_AG: k = SCHED_COST_AG; break;
    case SCHED_OP_RS: k = SCHED_COST_RS; break;
    default: return;
    }
    if (!(u->cost_s[k] > 0)) return;
    for (int r = 0; r < SCHED_RES_COUNT; r++) d[r] = u->res_bytes[k][r] / u->cost_s[k];
}

static int sharing(const sched_t *s)
{
    for (int r = 0; r < SCHED_RES_COUNT; r++)
        if (s->share_bw[r] > 0) return 1;
    return 0;
}

/* Start, at time t, every op whose engine is idle and whose deps have
 * ended; an op of no duration ends at once (which may ready others). */
static void start_ready(const sched_t *s, double t, int *head, int *run, double *rem,
                        double (*dem)[SCHED_RES_COUNT], double *start, double *end, char *done,
                        int *left)
{
    for (int again = 1; again;) {
        again = 0;
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
            while (run[e] < 0 && head[e] < s->norder[e]) {
                int id = s->order[e][head[e]];
                const sched_op_t *o = &s->ops[id];
                int ready = 1;
                for (int i = 0; i < o->ndeps && ready; i++) ready = done[o->deps[i]];
                if (!ready) break;
                head[e]++;
                start[id] = t;
                again = 1;
                if (!(o->seconds > 0)) {
                    end[id] = t;
                    done[id] = 1;
                    (*left)--;
                    continue;
                }
                run[e] = id;
                rem[e] = o->seconds;
                op_demand(s, o, dem[e]);
            }
    }
}

/* run_engines with shared resources: between two events (an op starting
 * or ending) the running ops progress at the speeds the sharing rule
 * gives them; rem[e] is what is left of engine e's op, in seconds at
 * full speed. The ops that never start; 0 when all ran. */
static int run_shared(const sched_t *s, double *start, double *end, char *done, sched_result_t *r)
{
    int head[SCHED_ENGINE_COUNT] = { 0 }, run[SCHED_ENGINE_COUNT], left = s->nops;
    double rem[SCHED_ENGINE_COUNT] = { 0 }, dem[SCHED_ENGINE_COUNT][SCHED_RES_COUNT], t = 0;
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) run[e] = -1;
    for (;;) {
        start_ready(s, t, head, run, rem, dem, start, end, done, &left);
        int idx[SCHED_ENGINE_COUNT], n = 0, first = 0;
        double d[SCHED_ENGINE_COUNT][SCHED_RES_COUNT], speed[SCHED_ENGINE_COUNT], dt = INFINITY;
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
            if (run[e] >= 0) {
                memcpy(d[n], dem[e], sizeof d[n]);
                idx[n++] = e;
            }
        if (!n) break;
        sched_share_speeds(n, (const double (*)[SCHED_RES_COUNT])d, s->share_bw, speed);
        for (int k = 0; k < n; k++)
            if (rem[idx[k]] / speed[k] < dt) { dt = rem[idx[k]] / speed[k]; first = k; }
        t += dt;
        for (int k = 0; k < n; k++) {
            int e = idx[k], id = run[e];
            rem[e] -= speed[k] * dt;
            /* the first to end ends exactly; others within rounding with it */
            if (k == first || rem[e] <= 1e-12 * s->ops[id].seconds) {
                end[id] = t;
                done[id] = 1;
                run[e] = -1;
                left--;
            }
        }
    }
    for (int i = 0; i < s->nops; i++) {
        if (!done[i]) continue;
        sched_engine_t e = s->ops[i].engine;
        r->busy_s[e] += end[i] - start[i];
        if (is_transfer(e)) r->transfer_s += end[i] - start[i];
        if (end[i] > r->step_s) r->step_s = end[i];
    }
    return left;
}

/* The first op, in engine order, that never started. */
static int first_stuck(const sched_t *s, const char *done)
{
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        for (int k = 0; k < s->norder[e]; k++)
            if (!done[s->order[e][k]]) return s->order[e][k];
    return -1;
}

/* Why compute waited: the part of each gap before an op in which only
 * transfers were still pending is exposed transfer time. */
static void waits_of_compute(const sched_t *s, const double *start, const double *end, sched_result_t *r)
{
    double prev_end = 0;
    for (int k = 0; k < s->norder[SCHED_COMPUTE]; k++) {
        int id = s->order[SCHED_COMPUTE][k];
        const sched_op_t *o = &s->ops[id];
        double other = prev_end;
        for (int i = 0; i < o->ndeps; i++) {
            const sched_op_t *d = &s->ops[o->deps[i]];
            if (!is_transfer(d->engine) && end[o->deps[i]] > other) other = end[o->deps[i]];
        }
        if (start[id] > other) r->exposed_transfer_s += start[id] - other;
        if (other > prev_end) r->comm_wait_s += other - prev_end;
        prev_end = end[id];
    }
    r->overlap_frac = r->transfer_s > 0 ? 1.0 - r->exposed_transfer_s / r->transfer_s : 1.0;
    if (r->overlap_frac < 0) r->overlap_frac = 0;
}

/* Each tier's peak over the run; -1 when out of memory. */
static int tier_peaks(const sched_t *s, const double *start, const double *end, sched_result_t *r)
{
    sched_mem_event_t *ev = NULL;
    int n;
    if (sched_mem_events(s, start, end, &ev, &n)) return -1;
    long long cur[STRATA_TIER_COUNT] = { (long long)s->prog->resident_bytes, 0, 0 };
    for (int t = 0; t < STRATA_TIER_COUNT; t++) r->peak[t] = (size_t)cur[t];
    r->device_reserve = s->prog->reserve_bytes < s->prog->resident_bytes ? s->prog->reserve_bytes
                                                                         : s->prog->resident_bytes;
    for (int i = 0; i < n; i++) {
        cur[ev[i].tier] += ev[i].delta;
        if (cur[ev[i].tier] > (long long)r->peak[ev[i].tier]) r->peak[ev[i].tier] = (size_t)cur[ev[i].tier];
    }
    free(ev);
    return 0;
}

strata_status_t sched_simulate(const sched_t *s, sched_result_t *res_p, double *start_out,
                               double *end_out, char *err, size_t errlen)
{
    if (!s || !res_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "simulate: NULL argument");
    sched_result_t r;
    memset(&r, 0, sizeof r);
    double *start = malloc(((size_t)s->nops + 1) * sizeof(double));
    double *end = malloc(((size_t)s->nops + 1) * sizeof(double));
    char *done = calloc((size_t)s->nops + 1, 1);
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!start || !end || !done) goto out;

    /* without shared resources the plain run, so that the runtime's own
     * predictions are those it always made */
    int left = sharing(s) ? run_shared(s, start, end, done, &r) : run_engines(s, start, end, done, &r);
    if (left) {
        char lab[96];
        st = sched_fail(err, errlen, STRATA_ERR_STATE, "schedule deadlocks: %d ops never start (first: %s)",
                        left, sched_op_label(s, first_stuck(s, done), lab, sizeof lab));
        goto out;
    }
    waits_of_compute(s, start, end, &r);
    if (tier_peaks(s, start, end, &r)) goto out;
    if (start_out) memcpy(start_out, start, (size_t)s->nops * sizeof(double));
    if (end_out) memcpy(end_out, end, (size_t)s->nops * sizeof(double));
    *res_p = r;
    st = STRATA_OK;
out:
    if (STRATA_ERR_NOMEM == st) sched_fail(err, errlen, st, "out of memory simulating the schedule");
    free(start);
    free(end);
    free(done);
    return st;
}
