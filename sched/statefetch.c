/*
 * statefetch.c - when training state on the storage tier is fetched: the
 * position before which each use's read is issued, from the recorded
 * costs of the step's compute positions and the storage bandwidth, within
 * a host room (the rule: sched.h, above sched_fetch_use_t). Pure: the
 * runtime (fsdp/fetch.c) lists the uses and issues the fetches.
 */
#include "config.h"
#include "sched/sched.h"

#include <math.h>
#include <stdlib.h>

static strata_status_t check_input(const sched_fetch_use_t *uses, int nuses, const double *pos_s,
                                   int npos, long long room, const int *at, char *err,
                                   size_t errlen)
{
    if (npos < 1)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: %d compute positions; "
                          "a step has at least one", npos);
    if (nuses < 0 || (nuses > 0 && (!uses || !at)) || !pos_s)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: %d uses, or a NULL "
                          "list", nuses);
    if (room < 0)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: host room of %lld "
                          "bytes; give 0 or more", room);
    for (int q = 0; q < npos; q++)
        if (!(pos_s[q] >= 0) || isinf(pos_s[q]))
            return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: position %d "
                              "takes %g s; costs are finite and not negative", q, pos_s[q]);
    for (int i = 0; i < nuses; i++) {
        const sched_fetch_use_t *u = &uses[i];
        if (u->bytes < 0)
            return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: use %d (unit %d) "
                              "reads %lld bytes", i, u->unit, u->bytes);
        if (u->pos < 0 || u->pos >= npos || u->earliest < 0 || u->earliest > u->pos)
            return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: use %d (unit %d) "
                              "at position %d, earliest %d, of %d positions", i, u->unit, u->pos,
                              u->earliest, npos);
        if (i > 0 && u->pos < uses[i - 1].pos)
            return sched_fail(err, errlen, STRATA_ERR_INVALID, "state fetch: use %d (unit %d) "
                              "at position %d comes after one at %d; list the uses in step order",
                              i, u->unit, u->pos, uses[i - 1].pos);
    }
    return STRATA_OK;
}

/* One position before the use, not before earliest. */
static int default_at(const sched_fetch_use_t *u)
{
    int q = u->pos > 0 ? u->pos - 1 : 0;
    return q > u->earliest ? q : u->earliest;
}

/* As late as hides each fetch, from the last use back: use i must be
 * read by its use and before use i+1's latest start (one engine, use
 * order). t[q] is when position q starts with no waits. */
static void latest_positions(const sched_fetch_use_t *uses, int nuses, const double *t,
                             double bw, int *at)
{
    double due = INFINITY;
    for (int i = nuses - 1; i >= 0; i--) {
        const sched_fetch_use_t *u = &uses[i];
        if (t[u->pos] < due) due = t[u->pos];
        due -= (double)u->bytes / bw;   /* its latest start */
        int q = default_at(u);
        while (q > u->earliest && t[q] > due) q--;
        at[i] = q;
    }
}

/* Bound what waits on the host: in use order, each fetch moves later
 * (towards its default) until the bytes waiting at every position from
 * it to its use fit room beside the fetches already placed. */
static int bound_room(const sched_fetch_use_t *uses, int nuses, int npos, long long room, int *at)
{
    long long *held = calloc((size_t)npos, sizeof *held);
    if (!held) return -1;
    for (int i = 0; i < nuses; i++) {
        const sched_fetch_use_t *u = &uses[i];
        int last = default_at(u);
        /* the most held from q to the use, for q from the use down */
        long long most = 0;
        int q = last;
        for (int p = u->pos - 1; p >= at[i]; p--) {
            if (held[p] > most) most = held[p];
            if (p <= last && most + u->bytes <= room) q = p;
            else if (p <= last) break;
        }
        at[i] = q;
        for (int p = q; p < u->pos; p++) held[p] += u->bytes;
    }
    free(held);
    return 0;
}

strata_status_t sched_state_fetch(const sched_fetch_use_t *uses, int nuses, const double *pos_s,
                                  int npos, double storage_bw, long long room, int *at,
                                  double *wait_s_p, char *err, size_t errlen)
{
    strata_status_t st = check_input(uses, nuses, pos_s, npos, room, at, err, errlen);
    if (STRATA_OK != st) return st;
    double *t = malloc(((size_t)npos + 1) * sizeof *t);
    if (!t) return sched_fail(err, errlen, STRATA_ERR_NOMEM, "state fetch: %d positions", npos);
    t[0] = 0;
    for (int q = 0; q < npos; q++) t[q + 1] = t[q] + pos_s[q];
    if (!(storage_bw > 0) || t[npos] <= 0) {
        /* nothing to plan with: the default rule */
        for (int i = 0; i < nuses; i++) at[i] = default_at(&uses[i]);
    } else {
        latest_positions(uses, nuses, t, storage_bw, at);
        if (bound_room(uses, nuses, npos, room, at)) st = STRATA_ERR_NOMEM;
    }
    free(t);
    if (STRATA_OK != st) return sched_fail(err, errlen, st, "state fetch: %d positions", npos);
    if (wait_s_p) *wait_s_p = sched_state_fetch_wait(uses, nuses, pos_s, npos, storage_bw, at);
    return STRATA_OK;
}

static int cmp_int(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

double sched_state_fetch_wait(const sched_fetch_use_t *uses, int nuses, const double *pos_s,
                              int npos, double storage_bw, const int *at)
{
    /* the fetches in issue order: by position, then use order */
    int (*order)[2] = malloc(((size_t)nuses + 1) * sizeof *order);
    double *done = malloc(((size_t)nuses + 1) * sizeof *done);
    if (!order || !done) {
        free(order);
        free(done);
        return -1;
    }
    for (int i = 0; i < nuses; i++) order[i][0] = at[i], order[i][1] = i;
    qsort(order, (size_t)nuses, sizeof *order, cmp_int);
    double now = 0, engine = 0, wait = 0;
    for (int q = 0, f = 0, i = 0; q < npos; q++) {
        for (; f < nuses && order[f][0] == q; f++) {
            int k = order[f][1];
            engine = (engine > now ? engine : now) +
                     (storage_bw > 0 ? (double)uses[k].bytes / storage_bw : 0);
            done[k] = engine;
        }
        for (; i < nuses && uses[i].pos == q; i++)
            if (done[i] > now) {
                wait += done[i] - now;
                now = done[i];
            }
        now += pos_s[q];
    }
    free(order);
    free(done);
    return wait;
}
