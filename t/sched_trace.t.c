/* sched_trace.t - the trace format: what the writer writes (from several
 * threads at once) reads back; the analysis computes a known overlap on a
 * synthetic two-rank trace; unreadable and malformed files get clear
 * errors; a simulated schedule traces to its simulated step time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata.h"
#include "tools/trace.h"
#include "tap.h"

#define THREADS 4
#define PER_THREAD 500
#define MS 1e-3

static sched_trace_t *shared;

static void *writer(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < PER_THREAD; i++)
        sched_trace_op(shared, (sched_engine_t)t, "D2H", 1.0 + t + i * 1e-3, 5e-4, i, "qkv", (size_t)(t * 1000 + i));
    return NULL;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) bail_out("cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static char dir[] = "/tmp/sched_trace.XXXXXX";   /* made by main, removed at its end */

/* writer from threads, read back */
static void test_threads_write(void)
{
    char err[1024] = "", path[4096];
    sched_trace_create(3, &shared);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, writer, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    size_t mem[STRATA_TIER_COUNT] = { 100, 200, 300 };
    sched_trace_memory(shared, 1.5, mem);
    sched_trace_step(shared, 7, 1.0, 4.0);
    snprintf(path, sizeof path, "%s/rank3.json", dir);
    is_int(sched_trace_write(shared, path, err, sizeof err), STRATA_OK, "write");
    sched_trace_destroy(shared);
    sched_trace_events_t evs = { 0 };
    is_int(sched_trace_read(path, &evs, err, sizeof err), STRATA_OK, "read back");
    int ops = 0, steps = 0, counters = 0, bad_rank = 0, found = 0;
    for (int i = 0; i < evs.nevents; i++) {
        const sched_trace_event_t *e = &evs.ev[i];
        if (3 != e->rank) bad_rank++;
        if ('X' == e->ph && e->engine >= 0) ops++;
        if (e->is_step && 'X' == e->ph) { steps++; found += 7 == e->step && e->ts == 1.0 && e->dur == 4.0; }
        if ('C' == e->ph) counters++;
        /* thread 2 wrote engine d2h; its 250th op started at 1 + 2 + 0.25 s */
        if ('X' == e->ph && SCHED_D2H == e->engine && e->ts > 3.25 - 1e-9 && e->ts < 3.25 + 1e-9 &&
            e->dur > 5e-4 - 1e-9 && e->dur < 5e-4 + 1e-9) found++;
    }
    is_int(ops, THREADS * PER_THREAD, "every op event from every thread came back");
    ok(1 == steps && 2 == found, "step event and a chosen op event read back with their times");
    is_int(counters, 1, "memory counter read back");
    is_int(bad_rank, 0, "pid is the rank");
    sched_trace_events_free(&evs);
}

/* known overlap: two ranks
 * rank 0, step 0 [0,10] ms: compute [0,4], comm [5,6], d2h [3,7]
 *   -> transfer 4, hidden 2 ([3,4] and [5,6])
 * rank 1, step 0 [0,10] ms: compute [0,10], h2d [2,6] -> transfer 4, hidden 4
 * rank 0, step 1 [20,30] ms: io [21,23], nothing else -> hidden 0 */
static void test_known_overlap(void)
{
    char err[1024] = "", path[4096], path2[4096];
    sched_trace_events_t evs = { 0 };
    sched_trace_t *r0, *r1;
    sched_trace_create(0, &r0);
    sched_trace_create(1, &r1);
    sched_trace_step(r0, 0, 0, 10 * MS);
    sched_trace_op(r0, SCHED_COMPUTE, "F", 0, 4 * MS, 0, NULL, 0);
    sched_trace_op(r0, SCHED_COMM, "AG", 5 * MS, 1 * MS, 1, NULL, 64);
    sched_trace_op(r0, SCHED_D2H, "D2H", 3 * MS, 2 * MS, 0, "qkv", 32);
    sched_trace_op(r0, SCHED_D2H, "D2H", 5 * MS, 2 * MS, 0, "mlp", 32);
    sched_trace_step(r0, 1, 20 * MS, 10 * MS);
    sched_trace_op(r0, SCHED_IO, "H2S", 21 * MS, 2 * MS, 0, "qkv", 32);
    sched_trace_step(r1, 0, 0, 10 * MS);
    sched_trace_op(r1, SCHED_COMPUTE, "B", 0, 10 * MS, 0, NULL, 0);
    sched_trace_op(r1, SCHED_H2D, "H2D", 2 * MS, 4 * MS, 0, "qkv", 32);
    snprintf(path, sizeof path, "%s/r0.json", dir);
    snprintf(path2, sizeof path2, "%s/r1.json", dir);
    if (sched_trace_write(r0, path, err, sizeof err) || sched_trace_write(r1, path2, err, sizeof err)) bail_out("%s", err);
    sched_trace_destroy(r0);
    sched_trace_destroy(r1);
    if (sched_trace_read(path, &evs, err, sizeof err) || sched_trace_read(path2, &evs, err, sizeof err)) bail_out("%s", err);
    sched_trace_step_t *st = NULL;
    int n = 0;
    is_int(sched_trace_analyze(&evs, &st, &n, err, sizeof err), STRATA_OK, "analyze");
    if (2 != n) bail_out("expected 2 steps, got %d", n);
    ok(0 == st[0].step && 2 == st[0].ranks && 1 == st[1].step && 1 == st[1].ranks, "steps merged across ranks");
    is_double(st[0].transfer_s, 4 * MS, 1e-9, "step 0: transfer time, mean over ranks");
    is_double(st[0].hidden_s, 3 * MS, 1e-9, "step 0: hidden under compute or comm");
    is_double(st[0].overlap_frac, 0.75, 1e-6, "step 0: overlap 75%%");
    is_double(st[0].wait_s[SCHED_COMPUTE], 3 * MS, 1e-9, "step 0: compute waited (6 + 0) / 2 ms");
    is_double(st[0].wait_s[SCHED_H2D], 8 * MS, 1e-9, "step 0: h2d idle (10 + 6) / 2 ms");
    is_double(st[1].overlap_frac, 0.0, 1e-9, "step 1: nothing hidden");
    is_double(st[0].exposed_s, 1.5 * MS, 1e-9, "step 0: exposed = transfer while compute idle, (3 + 0) / 2 ms");
    free(st);
    sched_trace_events_free(&evs);
}

/* bad files */
static void test_bad_files(void)
{
    char err[1024] = "", path[4096];
    sched_trace_events_t evs = { 0 };
    snprintf(path, sizeof path, "%s/missing.json", dir);
    ok(STRATA_ERR_IO == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "missing.json"),
       "missing file: %s", err);
    snprintf(path, sizeof path, "%s/garbage.json", dir);
    write_file(path, "hello\n");
    ok(STRATA_ERR_FORMAT == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "line 1"),
       "not JSON: %s", err);
    write_file(path, "{\"traceEvents\":[\n{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":1,\"dur\":2},\n{\"ph\":\"X\",\"ts\":\n");
    ok(STRATA_ERR_FORMAT == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "line 4") && strstr(err, "end of file"),
       "cut inside an event: %s", err);
    write_file(path, "{\"traceEvents\":[\n{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":1,\"dur\":2},\n{\"ph\":\"X\" \"ts\":3}]}");
    ok(STRATA_ERR_FORMAT == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "line 3"),
       "missing comma: %s", err);
    write_file(path, "[{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":1,\"dur\":2},\n{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":\"soon\"}]");
    ok(STRATA_ERR_FORMAT == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "event 2") &&
       strstr(err, "\"ts\" a number") && 0 == evs.nevents, "a field of the wrong type, nothing kept: %s", err);
    write_file(path, "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":1,\"dur\":2}, 7]}");
    ok(STRATA_ERR_FORMAT == sched_trace_read(path, &evs, err, sizeof err) && strstr(err, "event 2 is not an object"),
       "an event that is not an object: %s", err);
    write_file(path, "[{\"ph\":\"X\",\"cat\":\"d2h\",\"ts\":1,\"dur\":2,\"extra\":{\"a\":[1,true,null]}},\n"
                     "{\"ph\":\"X\",\"name\":\"other\",\"cat\":\"python\",\"ts\":1,\"dur\":2},\n");
    err[0] = '\0';
    is_int(sched_trace_read(path, &evs, err, sizeof err), STRATA_OK,
           "a bare array, unknown keys, foreign events and no closing bracket are tolerated%s%s", *err ? ": " : "", err);
    is_int(evs.nevents, 1, "... and only our event is kept");
    sched_trace_events_free(&evs);
}

/* a simulated schedule traces to its simulated time */
static void test_sim_trace(void)
{
    char err[1024] = "", path[4096];
    sched_trace_events_t evs = { 0 };
    sched_trace_t *r0;
    sched_trace_step_t *st;
    int n;
    sched_program_t *p;
    sched_opts_t o;
    sched_actions_t a;
    sched_t *s = NULL;
    sched_result_t r;
    if (sched_program_parse("unit b fwd=0.01 bwd=0.02 ag=0.001 rs=0.001 ag_bytes=1M repeat=4\nsave h 4M\n", &p, err, sizeof err))
        bail_out("%s", err);
    sched_opts_defaults(&o);
    o.mode = SCHED_MODE_NAIVE;
    o.link.d2h_bw = o.link.h2d_bw = 1e9;
    sched_actions_fill(&a, p, SCHED_HOST);
    if (sched_build(p, &a, &o, &s, err, sizeof err) || sched_simulate(s, &r, NULL, NULL, err, sizeof err)) bail_out("%s", err);
    sched_trace_create(0, &r0);
    snprintf(path, sizeof path, "%s/sim.json", dir);
    err[0] = '\0';
    is_int(sched_trace_add_sim(r0, s, 0, 2.0, err, sizeof err) || sched_trace_write(r0, path, err, sizeof err), 0,
           "simulated step traced%s%s", *err ? ": " : "", err);
    sched_trace_read(path, &evs, err, sizeof err);
    n = 0;
    st = NULL;
    sched_trace_analyze(&evs, &st, &n, err, sizeof err);
    ok(1 == n && st[0].step_s > 0 && st[0].step_s - r.step_s < 1e-6 && r.step_s - st[0].step_s < 1e-6 &&
       st[0].transfer_s - r.transfer_s < 1e-6 && st[0].exposed_s - r.exposed_transfer_s < 1e-6 &&
       r.exposed_transfer_s - st[0].exposed_s < 1e-6,
       "trace step %.4f s = simulated %.4f s; exposed %.4f s = simulated %.4f s", n ? st[0].step_s : 0, r.step_s,
       n ? st[0].exposed_s : 0, r.exposed_transfer_s);
    free(st);
    sched_trace_events_free(&evs);
    sched_trace_destroy(r0);
    sched_destroy(s);
    sched_program_destroy(p);
}

int main(void)
{
    plan(25);
    if (!mkdtemp(dir)) bail_out("mkdtemp");

    test_threads_write();
    test_known_overlap();
    test_bad_files();
    test_sim_trace();

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) diag("could not remove %s", dir);
    return done_testing();
}
