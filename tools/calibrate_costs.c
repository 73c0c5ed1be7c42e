/*
 * calibrate_costs.c - what collectives and host-link copies cost the
 * compute on this machine, for `strata calibrate` (docs/planner.md): every
 * rank at once, the slowest rank's time, medians of a few repeats.
 */
#include "config.h"

#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "base/base.h"
#include "base/wait.h"
#include "comm/comm.h"
#include "tools/calibrate.h"

/* sgemm at --shape on the team; c is NULL (and nothing held) where
 * memory ran out */
static calib_job_t shape_job(const copts_t *o, team_t *tm)
{
    calib_job_t j = { o->M, o->K, o->N, calloc((size_t)o->M * o->K, 4), calloc((size_t)o->K * o->N, 4),
                      calloc((size_t)o->M * o->N, 4), NULL, NULL, 0, tm };
    if (!j.a || !j.b || !j.c) {
        free(j.a); free(j.b); free(j.c);
        j.a = j.b = j.c = NULL;
    }
    return j;
}

static void shape_job_free(calib_job_t *j)
{
    free(j->a); free(j->b); free(j->c);
}

/* The collectives of the measurement: an all-gather and a reduce-scatter
 * of 1 MiB each over every rank, with their buffers */
typedef struct {
    calib_job_t *job;
    int per;                 /* bytes each rank contributes to the gather */
    char *ag_in, *ag_out;
    float *rs_in, *rs_out;
} ovl_t;

/* The collectives of a unit in flight: the all-gather and the runtime's
 * reduce-scatter (comm/rs.c, point-to-point messages; not
 * MPI_Ireduce_scatter_block, which the runtime does not call) */
typedef struct {
    MPI_Request ag;
    comm_rs_t   rs;
    int         rs_on, rs_done;
} inflight_t;

static void inflight_add_rs(const ovl_t *v, inflight_t *f)
{
    static unsigned tag;
    comm_rs_start(&f->rs, MPI_COMM_WORLD, 1 + (int)(tag++ % 32000u), v->rs_in, v->rs_out,
                  (size_t)v->per / 4, 0.0f);
    f->rs_on = 1;
    f->rs_done = 0;
}

static void inflight_start(const ovl_t *v, int mask, inflight_t *f)
{
    f->ag = MPI_REQUEST_NULL;
    f->rs_on = 0;
    f->rs_done = 1;
    if (mask & 1) MPI_Iallgather(v->ag_in, v->per, MPI_BYTE, v->ag_out, v->per, MPI_BYTE, MPI_COMM_WORLD, &f->ag);
    if (mask & 2) inflight_add_rs(v, f);
}

/* 1 once both are done (the reduce-scatter's sum run), as the runtime's tests */
static int inflight_test(inflight_t *f)
{
    int ag = 1, rs = 1;
    MPI_Test(&f->ag, &ag, MPI_STATUS_IGNORE);
    if (!f->rs_done) {
        comm_rs_test(&f->rs, &rs);
        if (rs) {
            comm_rs_finish(&f->rs);
            f->rs_done = 1;
        }
    }
    return ag && f->rs_done;
}

static void inflight_end(inflight_t *f)
{
    if (f->rs_on) comm_rs_release(&f->rs);
    f->rs_on = 0;
}

/* A unit's body: the collectives of `mask` started (1 the all-gather, 2
 * the reduce-scatter), then `calls` sgemm calls with them tested between
 * calls, as the runtime's units do; the caller waits for f. */
static void unit_body(const ovl_t *v, int mask, long calls, inflight_t *f)
{
    inflight_start(v, mask, f);
    for (long k = 0; k < calls; k++) {
        calib_sgemm_team_op(v->job);
        if (mask & 3) inflight_test(f);
    }
}

/* ROUNDS rounds back to back, each `calls` sgemm calls with the
 * collectives of `mask` in flight (1 the all-gather, 2 the reduce-scatter,
 * 3 both) and waited for at the round's end; mask 4: first an 8-byte
 * blocking all-reduce, as the runtime's comm_check makes before each
 * collective. The ranks start together once and drift apart as they do
 * in training. The slowest rank's seconds per round. */
#define ROUNDS 8
static double overlap_round(const ovl_t *v, int mask, long calls)
{
    inflight_t f;
    int one = 1, all;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = calib_now(), dt, slowest;
    for (int r = 0; r < ROUNDS; r++) {
        if (mask & 4) MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        unit_body(v, mask, calls, &f);
        while (!inflight_test(&f)) { }
        inflight_end(&f);
    }
    dt = (calib_now() - t0) / ROUNDS;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static double overlap_median(const ovl_t *v, int mask, long calls)
{
    double t[3];
    for (int r = 0; r < 3; r++) t[r] = overlap_round(v, mask, calls);
    return calib_median(t, 3);
}

/* collectives.compute_cost: the compute time a collective costs here, per
 * second of its own. The collectives of mask (a backward's pattern: the
 * 1 MiB all-gather and reduce-scatter together) started nonblocking, then
 * sgemm calls at --shape for about twice their time alone, the requests
 * tested between calls as the runtime's units do, then waited for;
 * against the calls alone (t_s): cost = (t_both - t_s) / t_table, with
 * t_table the pair's seconds by the busbw tables, which are what the
 * planner multiplies by it. 0: they run beside the compute; 1: the compute
 * waits out their time (MPI advances a collective only inside its calls,
 * and its copies and sums take the cores the compute has); above 1 where
 * two in flight, or ranks sharing cores, slow each other more. */
static double compute_cost_of(const ovl_t *v, int mask, double t_table)
{
    double tc = overlap_median(v, mask, 0), t1 = overlap_median(v, 0, 1);
    long calls = t1 > 0 ? (long)(2 * tc / t1) + 1 : 1;
    double ts = overlap_median(v, 0, calls), tb = overlap_median(v, mask, calls);
    return t_table > 0 && tb > ts ? (tb - ts) / t_table : 0;
}

/* The runtime's waits, so that a rank here holds or gives away its core
 * as a training rank does: the check spins for `spin` seconds, then
 * sleeps doubling from 1 to 100 us between tests (comm_wait_spin); a
 * unit's wait tests 64 times, then sleeps 20 us between tests
 * (fsdp/progress.c). */
static void wait_check(MPI_Request *req, double spin)
{
    base_waiter_t w;
    base_waiter_init(&w, spin, 256, 1000, 100000);
    for (;;) {
        int done = 0;
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        base_waiter_pause(&w);
    }
}

static void wait_unit(inflight_t *f)
{
    base_waiter_t w;
    base_waiter_init(&w, 0, 64, 20000, 20000);
    while (!inflight_test(f)) base_waiter_pause(&w);
    inflight_end(f);
}

/* collectives.sync_s: what the compute loses at each collective's start.
 * The runtime's comm_check (on by default) makes a small all-reduce there,
 * and ranks that computed the same work arrive apart: a shared machine's
 * noise, ranks sharing cores, and the copies and sums of the collectives
 * in flight, which MPI runs inside whichever call of a rank happens to
 * test them. The first waits for the last.
 * Each rank on its own core: that wait, and the start itself, are the
 * core's loss. ROUNDS x 3 rounds as backward units of the runtime's step
 * -- the check (an all-reduce waited for as the runtime waits, spinning
 * 1 ms, then sleeping) and the 1 MiB all-gather started, the check and the
 * 1 MiB reduce-scatter started, about 1 ms of sgemm calls with them tested
 * between calls, the wait -- and the mean time a rank spends from the
 * first check to the second start, per collective, over the rounds and
 * the ranks. (As the difference of two runs' medians, rounds with the
 * check and without, it swung from 0 to 100 us between runs here; timed
 * inside the check alone it fell from 64-134 us to 15 us when the
 * reduce-scatter stopped summing everything on rank 0, while train_gpt's
 * units still lost 0.1-0.2 ms each between their compute, checks on or
 * off.)
 * More ranks than cores: a rank that waits sleeps, and the ranks that
 * share its core compute meanwhile, so the time in the check overstates
 * the loss (0.6 ms in the check, 0.05-0.17 ms of the slowest rank's time
 * at 4 ranks on 2 cores here). There: about 1 ms of sgemm
 * calls and a blocking all-reduce, round after round, against the calls
 * alone, the difference per round of the slowest rank's time. */
static double coll_sync(const ovl_t *v)
{
    double t1 = overlap_median(v, 0, 1), check = 0, sum = 0;
    long calls = t1 > 0 ? (long)(1e-3 / t1) + 1 : 1;
    if (base_node_oversubscribed(MPI_COMM_WORLD, NULL, NULL)) {   /* as the runtime decides */
        double ts = overlap_median(v, 0, calls), tb = overlap_median(v, 4, calls);
        return tb > ts ? tb - ts : 0;
    }
    int n;
    long long one[3] = { 1, -1, 0 }, all[3];
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < 3 * ROUNDS; r++) {
        MPI_Request chk;
        inflight_t f;
        double t0 = calib_now();
        MPI_Iallreduce(one, all, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &chk);
        wait_check(&chk, BASE_CHECK_SPIN_S);
        inflight_start(v, 1, &f);
        MPI_Iallreduce(one, all, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &chk);
        wait_check(&chk, BASE_CHECK_SPIN_S);
        inflight_add_rs(v, &f);
        check += calib_now() - t0;
        for (long k = 0; k < calls; k++) {
            calib_sgemm_team_op(v->job);
            inflight_test(&f);
        }
        wait_unit(&f);
    }
    MPI_Allreduce(&check, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / ((double)n * 2 * 3 * ROUNDS);
}

double calib_coll_compute_cost(const copts_t *o, team_t *tm, double t_table, double *sync_p)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t S = (1ul << 20) / (4 * (size_t)n) * 4 * (size_t)n;
    calib_job_t j = shape_job(o, tm);
    ovl_t v = { &j, (int)(S / (size_t)n), calloc(S / (size_t)n, 1), calloc(S, 1), calloc(S, 1),
                calloc(S / (size_t)n, 1) };
    int ok = j.c && v.ag_in && v.ag_out && v.rs_in && v.rs_out, all;
    double cost = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        calib_blas_threads(1);
        cost = compute_cost_of(&v, 3, t_table);
        *sync_p = coll_sync(&v);
    }
    shape_job_free(&j);
    free(v.ag_in); free(v.ag_out); free(v.rs_in); free(v.rs_out);
    return cost;
}

/* host_link.compute_cost: what a host-link copy costs the compute here.
 * On a CPU node the runtime's copy engine is a thread that memcpys beside
 * the rank's compute threads, on the same cores. 1 MiB copies on such a
 * thread while the team runs sgemm calls for about twice their time,
 * against each alone (every rank at once, the slowest rank's time):
 * (t_both - t_s) / t_copy, the median over paired rounds (copy_cost). */
typedef struct { const char *src; char *dst; size_t bytes; long n; } copy_job_t;

static void *copy_main(void *p)
{
    const copy_job_t *c = p;
    for (long i = 0; i < c->n; i++) memcpy(c->dst, c->src, c->bytes);
    return NULL;
}

/* the slowest rank's seconds for `calls` sgemm calls with (copies) the copy thread running */
static double copy_round(calib_job_t *j, copy_job_t *c, long calls, int copies)
{
    pthread_t tid;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = calib_now(), dt, slowest;
    int started = copies && 0 == pthread_create(&tid, NULL, copy_main, c);
    for (long k = 0; k < calls; k++) calib_sgemm_team_op(j);
    if (started) pthread_join(tid, NULL);
    else if (copies) copy_main(c);
    dt = calib_now() - t0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* LINK_PAIRS rounds of the copies alone, the sgemm calls alone and both
 * at once, back to back, each round's cost (t_both - t_s) / t_copy from
 * its own three times, the median of the rounds' costs (a round where
 * the calls alone came out slower counts 0). Paired within a round, a
 * shared machine's drift over seconds moves both times of a difference
 * alike; the difference of two medians taken seconds apart moved
 * calibrations' costs between 0.8 and 5.4 on this node. */
#define LINK_PAIRS 9
static double copy_cost(calib_job_t *j, copy_job_t *c, long calls)
{
    double cost[LINK_PAIRS];
    for (int r = 0; r < LINK_PAIRS; r++) {
        double tc = copy_round(j, c, 0, 1), ts = copy_round(j, c, calls, 0), tb = copy_round(j, c, calls, 1);
        cost[r] = tc > 0 && tb > ts ? (tb - ts) / tc : 0;
    }
    return calib_median(cost, LINK_PAIRS);
}

double calib_link_compute_cost(const copts_t *o, team_t *tm)
{
    size_t mb = 1ul << 20;
    calib_job_t j = shape_job(o, tm);
    char *src = calloc(mb, 1), *dst = calloc(mb, 1);
    int ok = j.c && src && dst, all;
    double cost = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        calib_blas_threads(1);
        copy_job_t c = { src, dst, mb, 16 };
        double tc = copy_round(&j, &c, 0, 1), t1 = copy_round(&j, &c, 1, 0);   /* sizes the rounds */
        cost = copy_cost(&j, &c, t1 > 0 ? (long)(2 * tc / t1) + 1 : 1);
    }
    shape_job_free(&j);
    free(src); free(dst);
    return cost;
}
