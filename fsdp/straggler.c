/*
 * straggler.c - name a rank that is persistently slower than the others.
 *
 * In a synchronous step every rank takes the same wall time: the fast
 * ranks wait in the collectives for the slow one. What differs is the time
 * a rank was busy: in its unit callbacks and its optimizer, and between
 * steps (the program's data, I/O, logging) less its waits in collectives
 * there. Every
 * straggler_every steps the ranks exchange that window's figures (one
 * small allgather over the world) and a rank whose busy time is above
 * straggler_ratio times the others' median, both summed over the window
 * and in its typical (median) step, is named once: by rank 0 as a
 * warning, and by every rank into its flight record (a later `strata
 * flight` prints it). The decision is fsdp_straggler_find, pure.
 */
#include "config.h"
#include "fsdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Busy time a rank may exceed the median by, per step of the window,
 * whatever the ratio: scheduler noise on tiny steps is not a straggler. */
#define STRAGGLER_FLOOR_S 0.002

enum { F_BUSY, F_TYPICAL, F_COMPUTE, F_COMM, F_XFER, F_OPTIM, F_OUTSIDE, F_COUNT };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n), sorting v; 0 when n < 1. */
static double median_sort(double *v, int n)
{
    if (n < 1) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Median of v[0..n) without v[skip] (skip < 0: all); sorts tmp. */
static double median_of(const double *v, int n, int skip, double *tmp)
{
    int k = 0;
    for (int i = 0; i < n; i++) if (i != skip) tmp[k++] = v[i];
    return median_sort(tmp, k);
}

int fsdp_straggler_find(const double *busy, const double *typical, int W, int steps,
                        double ratio, int *slow, double *median)
{
    int found = 0;
    double *tmp = malloc((size_t)(W > 0 ? W : 1) * sizeof *tmp);
    for (int r = 0; r < W; r++) {
        slow[r] = 0;
        median[r] = 0;
        if (!tmp || W < 2 || steps < 1) continue;
        double mb = median_of(busy, W, r, tmp), mt = median_of(typical, W, r, tmp);
        median[r] = mb;
        slow[r] = busy[r] > ratio * mb && busy[r] - mb > STRAGGLER_FLOOR_S * steps &&
                  typical[r] > ratio * mt && typical[r] - mt > STRAGGLER_FLOOR_S;
        found += slow[r];
    }
    free(tmp);
    return found;
}

void fsdp_straggler_free(fsdp_straggler_t *s)
{
    free(s->typ);
    free(s->named);
    memset(s, 0, sizeof *s);
}

/* The step that just ended into the window (after m->stats are set). */
static void add_step(strata_model_t *m, double t_end)
{
    fsdp_straggler_t *s = &m->strag;
    const strata_model_stats_t *st = &m->stats;
    /* busy: what the rank computed -- its callbacks, its optimizer and
     * its time between steps (the program's data, I/O, logging) less what
     * it spent blocked there in collectives (a loss summed over the ranks).
     * Not the step less its exposed collective time: a fast rank also
     * waits for a slow one where no collective wait is timed (inside a
     * collective's start, in the program's own collectives), and where it
     * waits moves with comm_check and the schedule. */
    double outside = s->t_prev_end > 0 ? m->t_step0 - s->t_prev_end : 0;
    double blocked = s->t_prev_end > 0 ? s->blocked_step0 - s->blocked_prev_end : 0;
    if (blocked > outside) blocked = outside;
    if (blocked > 0) outside -= blocked;
    double busy = st->compute_s + st->optim_s + outside;
    s->t_prev_end = t_end;
    s->blocked_prev_end = m->ctx->comm_blocked_s;
    s->sum[F_BUSY] += busy;
    s->sum[F_COMPUTE] += st->compute_s;
    s->sum[F_COMM] += st->exposed_comm_s;
    s->sum[F_XFER] += st->exposed_transfer_s;
    s->sum[F_OPTIM] += st->optim_s;
    s->sum[F_OUTSIDE] += outside;
    s->typ[s->n++] = busy;
}

/* Rank 0's warning and every rank's flight note for rank r. */
static void name_rank(strata_model_t *m, const float *all, int r, double median)
{
    const float *v = all + (size_t)r * F_COUNT;
    int N = m->strag.every;
    char line[400];
    snprintf(line, sizeof line, "straggler: rank %d busy %.3f s over steps %d-%d, %.1fx the "
             "other ranks' median %.3f s (compute %.3f s, optimizer %.3f s, waiting for "
             "collectives %.3f s, for transfers %.3f s, between steps (data, I/O) %.3f s)", r,
             (double)v[F_BUSY], m->step_count - N + 1, m->step_count,
             median > 0 ? v[F_BUSY] / median : 0.0, median, (double)v[F_COMPUTE],
             (double)v[F_OPTIM], (double)v[F_COMM], (double)v[F_XFER], (double)v[F_OUTSIDE]);
    if (0 == m->ctx->rank) strata_warn(m->ctx, "%s", line);
    comm_rec_note(m->ctx, line);
}

/* The window's typical step: its median busy time (sorts s->typ, which
 * the window's end discards anyway). */
static double typical_step(fsdp_straggler_t *s)
{
    return median_sort(s->typ, s->n);
}

/* Exchange the window and judge it; every rank sees the same figures, so
 * every rank names the same ranks and notes them in its flight record. */
static strata_status_t judge(strata_model_t *m)
{
    fsdp_straggler_t *s = &m->strag;
    int W = strata_group_size(m->ctx->world), N = s->n;
    float v[F_COUNT], *all = malloc((size_t)W * F_COUNT * sizeof *all);
    double *d = malloc((size_t)W * 3 * sizeof *d);
    int *slow = malloc((size_t)W * sizeof *slow);
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!all || !d || !slow) {
        st = base_error(m->ctx, STRATA_ERR_NOMEM, "straggler check: no memory for %d ranks", W);
        goto out;
    }
    double typ = typical_step(s);
    for (int i = 0; i < F_COUNT; i++) v[i] = (float)(F_TYPICAL == i ? typ : s->sum[i]);
    pthread_mutex_lock(&m->lock);
    st = strata_allgather(m->ctx->world, v, all, F_COUNT, STRATA_F32);
    pthread_mutex_unlock(&m->lock);
    if (STRATA_OK != st) goto out;
    double *busy = d, *typs = d + W, *median = d + 2 * W;
    for (int r = 0; r < W; r++) {
        busy[r] = all[(size_t)r * F_COUNT + F_BUSY];
        typs[r] = all[(size_t)r * F_COUNT + F_TYPICAL];
    }
    int named = 0;
    fsdp_straggler_find(busy, typs, W, N, m->ctx->cfg.straggler_ratio, slow, median);
    for (int r = 0; r < W; r++)
        if (slow[r] && !s->named[r]) {
            s->named[r] = 1;
            named = 1;
            name_rank(m, all, r, median[r]);
        }
    /* the record on file holds the note even when the job ends well (a
     * later dump, a timeout's, rewrites it with the note kept) */
    if (named) (void)comm_rec_dump(m->ctx, "straggler");
out:
    memset(s->sum, 0, sizeof s->sum);
    s->n = 0;
    free(all);
    free(d);
    free(slow);
    return st;
}

strata_status_t fsdp_straggler_step(strata_model_t *m)
{
    fsdp_straggler_t *s = &m->strag;
    int every = m->ctx->cfg.straggler_every;
    if (every <= 0 || m->ctx->size < 2) return STRATA_OK;   /* off: not even a clock read */
    if (!s->typ) {
        s->typ = malloc((size_t)every * sizeof *s->typ);
        s->named = calloc((size_t)m->ctx->size, 1);
        if (!s->typ || !s->named) {
            fsdp_straggler_free(s);
            return base_error(m->ctx, STRATA_ERR_NOMEM, "straggler check");
        }
        s->every = every;
    }
    add_step(m, base_now());
    /* every rank counts the same steps: the exchange lines up */
    if (s->n < s->every) return STRATA_OK;
    strata_status_t st = judge(m);
    s->t_prev_end = base_now();   /* the exchange is not the program's time */
    s->blocked_prev_end = m->ctx->comm_blocked_s;
    return st;
}
