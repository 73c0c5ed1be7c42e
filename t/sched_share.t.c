/* sched_share.t - what ops on different engines share (sched_res_t): the
 * sharing rule alone, then sched_simulate over schedules built by hand
 * (two copies both ways on a link whose both-ways rate is one direction's;
 * a collective on the copy engines beside an offload; a memory-bound
 * compute op beside a copy in HBM). sched_schedule.t checks over random
 * programs that without a capacity the simulation is the plain one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "sched/sched.h"
#include "sched/sched_impl.h"
#include "tap.h"

static void test_rule(void)
{
    double d[3][SCHED_RES_COUNT] = { { 0 } }, cap[SCHED_RES_COUNT] = { 0 }, sp[3];
    /* PCIe: 53 GB/s each way, 50 GB/s both ways at once */
    d[0][SCHED_RES_LINK] = 53e9;
    d[1][SCHED_RES_LINK] = 53e9;
    d[2][SCHED_RES_HBM] = 1e12;          /* a compute op on another resource */
    sched_share_speeds(3, (const double (*)[SCHED_RES_COUNT])d, cap, sp);
    ok(1 == sp[0] && 1 == sp[1] && 1 == sp[2], "no capacity set: every op at full speed");
    cap[SCHED_RES_LINK] = 50e9;
    sched_share_speeds(3, (const double (*)[SCHED_RES_COUNT])d, cap, sp);
    ok(fabs(sp[0] - 50.0 / 106) < 1e-12 && sp[0] == sp[1] && 1 == sp[2],
       "both ways on a 50 GB/s link: each copy at 50/106 of its speed (%.4f, %.4f), the other op untouched", sp[0], sp[1]);
    sched_share_speeds(1, (const double (*)[SCHED_RES_COUNT])d, cap, sp);
    ok(1 == sp[0], "one copy alone runs at its own rate, 53 GB/s, above the both-ways capacity");
    d[1][SCHED_RES_LINK] = 10e9;
    sched_share_speeds(2, (const double (*)[SCHED_RES_COUNT])d, cap, sp);
    ok(fabs(sp[0] - 50.0 / 63) < 1e-12 && sp[0] == sp[1],
       "a 10 GB/s copy beside it: both at 50/63 of their speeds (%.4f)", sp[0]);
    d[1][SCHED_RES_LINK] = 53e9;
    cap[SCHED_RES_LINK] = 200e9;
    sched_share_speeds(2, (const double (*)[SCHED_RES_COUNT])d, cap, sp);
    ok(1 == sp[0] && 1 == sp[1], "capacity above the sum: no slowdown");
    /* an op on two resources goes at the slower one's share */
    double e[2][SCHED_RES_COUNT] = { { 0 } }, c2[SCHED_RES_COUNT] = { 0 };
    e[0][SCHED_RES_CE] = e[0][SCHED_RES_HBM] = 4;
    e[1][SCHED_RES_CE] = 4;
    e[1][SCHED_RES_HBM] = 0;
    c2[SCHED_RES_CE] = 4;
    c2[SCHED_RES_HBM] = 2;
    sched_share_speeds(2, (const double (*)[SCHED_RES_COUNT])e, c2, sp);
    ok(0.5 == sp[0] && 0.5 == sp[1], "two resources: the smaller share wins (%.2f, %.2f)", sp[0], sp[1]);
    ok(!strcmp("link", sched_res_name(SCHED_RES_LINK)) && !strcmp("nic", sched_res_name(SCHED_RES_NIC)) &&
       !strcmp("?", sched_res_name(SCHED_RES_COUNT)), "resource names");
}

/* A schedule by hand: ops as given, each engine in the order listed, no
 * deps unless given; prog supplies the units' recorded resource bytes. */
typedef struct {
    sched_t s;
    sched_op_t ops[8];
    int order[SCHED_ENGINE_COUNT][8];
    int deps[8];
} hand_t;

static void hand_init(hand_t *h, const sched_program_t *prog, const double share[SCHED_RES_COUNT])
{
    memset(h, 0, sizeof *h);
    h->s.prog = prog;
    h->s.ops = h->ops;
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) h->s.order[e] = h->order[e];
    if (share) memcpy(h->s.share_bw, share, sizeof h->s.share_bw);
}

static int hand_op(hand_t *h, sched_op_kind_t k, sched_engine_t e, int unit, size_t bytes, double seconds)
{
    int id = h->s.nops++;
    h->ops[id] = (sched_op_t){ .kind = k, .engine = e, .unit = unit, .save = -1, .bytes = bytes,
                               .seconds = seconds };
    h->order[e][h->s.norder[e]++] = id;
    return id;
}

static void hand_dep(hand_t *h, int id, int on)
{
    h->deps[id] = on;
    h->ops[id].deps = &h->deps[id];
    h->ops[id].ndeps = 1;
}

static sched_program_t *one_unit(double fwd_s, double ag_s)
{
    sched_program_t *p;
    int id;
    char err[256];
    sched_program_create(&p);
    sched_record_begin(p);
    if (STRATA_OK != sched_record_unit(p, "u", 4096, &id, err, sizeof err)) bail_out("%s", err);
    sched_record_cost(p, id, SCHED_COST_FWD, fwd_s, NULL, 0);
    sched_record_cost(p, id, SCHED_COST_BWD, 2 * fwd_s, NULL, 0);
    sched_record_cost(p, id, SCHED_COST_AG, ag_s, NULL, 0);
    if (STRATA_OK != sched_record_end(p, 0, 0, err, sizeof err)) bail_out("%s", err);
    return p;
}

static double sim(hand_t *h, double *start, double *end)
{
    sched_result_t r;
    char err[256];
    if (STRATA_OK != sched_simulate(&h->s, &r, start, end, err, sizeof err)) bail_out("%s", err);
    return r.step_s;
}

/* A D2H and an H2D of 1e9 bytes at 1e9 B/s each way. */
static void test_both_ways(void)
{
    sched_program_t *p = one_unit(1, 0);
    double share[SCHED_RES_COUNT] = { 0 }, st[8], en[8];
    hand_t h;
    hand_init(&h, p, NULL);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    hand_op(&h, SCHED_OP_H2D, SCHED_H2D, 0, 1000000000, 1.0);
    double free_s = sim(&h, st, en);
    ok(1.0 == free_s, "both ways, link not shared: the pair takes 1 s (%g)", free_s);
    share[SCHED_RES_LINK] = 1e9;   /* both ways together no faster than one */
    hand_init(&h, p, share);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    hand_op(&h, SCHED_OP_H2D, SCHED_H2D, 0, 1000000000, 1.0);
    double shared_s = sim(&h, st, en);
    ok(fabs(shared_s - 2.0) < 1e-9 && fabs(en[0] - 2.0) < 1e-9 && fabs(en[1] - 2.0) < 1e-9,
       "both ways sharing both_bw = one direction's: each at half speed, both end at 2 s (%g, %g)", en[0], en[1]);
    /* apart (the H2D after the D2H) they take 1 s each, shared or not */
    hand_init(&h, p, share);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    int b = hand_op(&h, SCHED_OP_H2D, SCHED_H2D, 0, 1000000000, 1.0);
    hand_dep(&h, b, 0);
    double apart_s = sim(&h, st, en);
    ok(fabs(en[0] - 1.0) < 1e-9 && fabs(apart_s - 2.0) < 1e-9,
       "apart each copy takes its own 1 s; together each took %g s, longer than apart", en[0] > en[1] ? en[0] : en[1]);
    /* a rate above both_bw's half only where both run: 0.5 s of overlap */
    share[SCHED_RES_LINK] = 1.5e9;
    hand_init(&h, p, share);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    hand_op(&h, SCHED_OP_H2D, SCHED_H2D, 0, 500000000, 0.5);
    sim(&h, st, en);
    /* together at 0.75 each: the H2D's 0.5 s of work takes 2/3 s; the D2H
     * has done 0.5 s of its work then and ends 0.5 s later */
    ok(fabs(en[1] - 2.0 / 3) < 1e-9 && fabs(en[0] - (2.0 / 3 + 0.5)) < 1e-9,
       "processor sharing over time: H2D ends at 2/3 s, D2H at 7/6 s (%.6f, %.6f)", en[1], en[0]);
    sched_program_destroy(p);
}

/* An all-gather drawing on the copy engines (zero-CTA collectives) beside
 * an offload copy. */
static void test_ce_collective(void)
{
    sched_program_t *p = one_unit(1, 1.0);
    char err[256];
    if (STRATA_OK != sched_record_cost_res(p, 0, SCHED_COST_AG, SCHED_RES_CE, 1e9, err, sizeof err)) bail_out("%s", err);
    double share[SCHED_RES_COUNT] = { 0 }, st[8], en[8];
    hand_t h;
    share[SCHED_RES_CE] = 1e9;
    hand_init(&h, p, share);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    sim(&h, st, en);
    double alone = en[0];
    hand_init(&h, p, share);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    hand_op(&h, SCHED_OP_AG, SCHED_COMM, 0, 4096, 1.0);
    sim(&h, st, en);
    ok(fabs(alone - 1.0) < 1e-9 && en[0] > alone + 0.5,
       "a collective on the copy engines delays the offload copy: %.3f s, alone %.3f s", en[0], alone);
    /* recorded but not shared (no capacity): no delay */
    hand_init(&h, p, NULL);
    hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 1000000000, 1.0);
    hand_op(&h, SCHED_OP_AG, SCHED_COMM, 0, 4096, 1.0);
    sim(&h, st, en);
    ok(1.0 == en[0] && 1.0 == en[1], "the same without copy_engine_bw: no delay");
    ok(STRATA_ERR_INVALID == sched_record_cost_res(p, 0, SCHED_COST_AG, SCHED_RES_COUNT, 1, NULL, 0) &&
       STRATA_ERR_INVALID == sched_record_cost_res(p, 0, SCHED_COST_AG, SCHED_RES_CE, -1, NULL, 0) &&
       STRATA_ERR_INVALID == sched_record_cost_res(p, 3, SCHED_COST_AG, SCHED_RES_CE, 1, NULL, 0),
       "record_cost_res refuses a bad resource, negative bytes, a bad unit");
    sched_program_destroy(p);
}

/* A compute op that reads and writes HBM at its full bandwidth, and one
 * that barely touches it, each beside a copy. */
static void test_hbm(void)
{
    sched_program_t *p = one_unit(1.0, 0);
    char err[256];
    double hbm = 8e12, share[SCHED_RES_COUNT] = { 0 }, st[8], en[8];
    share[SCHED_RES_HBM] = hbm;
    hand_t h;
    for (int bound = 1; bound >= 0; bound--) {
        /* memory-bound: 1 s of HBM traffic; compute-bound: 1% of it */
        if (STRATA_OK != sched_record_cost_res(p, 0, SCHED_COST_FWD, SCHED_RES_HBM, bound ? hbm : hbm / 100, err,
                                               sizeof err)) bail_out("%s", err);
        hand_init(&h, p, share);
        hand_op(&h, SCHED_OP_F, SCHED_COMPUTE, 0, 0, 1.0);
        hand_op(&h, SCHED_OP_D2H, SCHED_D2H, 0, 450000000000ull, 1.0);   /* 450 GB/s, GB200's C2C */
        sim(&h, st, en);
        if (bound)
            ok(fabs(en[0] - 8.45 / 8) < 1e-9, "HBM contention slows a memory-bound forward beside a 450 GB/s "
               "copy to %.4f s (8.45/8)", en[0]);
        else
            ok(1.0 == en[0] && 1.0 == en[1], "a compute-bound forward beside the copy: 1 s, unchanged");
    }
    sched_program_destroy(p);
}

int main(void)
{
    plan(16);
    test_rule();
    test_both_ways();
    test_ce_collective();
    test_hbm();
    return done_testing();
}
