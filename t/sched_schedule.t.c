/* sched_schedule.t - the scheduler, simulator and automatic plan:
 * invariants over randomized programs (deps precede ops in simulated time,
 * engines run in issue order, device peak within the bound within the
 * budget, lhs never slower than naive, naive exposes every transfer, none
 * overlaps nothing and is never faster than naive, ample
 * bandwidth hides them), recompute's cost, auto's choices and the
 * smallest-budget message checked against a program built to know it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "sched/sched.h"
#include "tap.h"

#define CASES 60

static unsigned long long rng = 0x5eed;
static double urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static int irand(int lo, int hi) { return lo + (int)(urand() * (hi - lo + 1)); }

static const char *const pool[] = { "x", "qkv", "attn", "mlp_up", "mlp_act" };

static sched_program_t *random_program(int zero_comm)
{
    sched_program_t *p;
    char err[256];
    sched_program_create(&p);
    sched_record_begin(p);
    int L = irand(2, 9), k = irand(1, 5);
    for (int u = 0; u < L; u++) {
        int id;
        if (STRATA_OK != sched_record_unit(p, NULL, (size_t)irand(1, 64) << 10, &id, err, sizeof err)) bail_out("%s", err);
        double f = 1e-3 * irand(1, 10);
        sched_record_cost(p, id, SCHED_COST_FWD, f, NULL, 0);
        sched_record_cost(p, id, SCHED_COST_BWD, 2 * f, NULL, 0);
        sched_record_cost(p, id, SCHED_COST_AG, zero_comm ? 0 : 1e-3 * urand(), NULL, 0);
        sched_record_cost(p, id, SCHED_COST_RS, zero_comm ? 0 : 1e-3 * urand(), NULL, 0);
        for (int n = 0; n < k; n++)
            if (0 == n || urand() < 0.7) sched_record_save(p, pool[n], (size_t)irand(1, 128) << 10, NULL, 0);
    }
    if (STRATA_OK != sched_record_end(p, (size_t)irand(0, 256) << 10, 1e-3, err, sizeof err)) bail_out("%s", err);
    return p;
}

static void random_actions(const sched_program_t *p, sched_actions_t *a)
{
    sched_actions_fill(a, p, SCHED_KEEP);
    for (int n = 0; n < p->nnames; n++) a->action[n] = (sched_action_t)irand(0, SCHED_ACTION_COUNT - 1);
}

static void random_link(sched_opts_t *o)
{
    o->link.d2h_bw = o->link.h2d_bw = (double)irand(4, 64) * (1 << 20);   /* MiB/s: ms per KiB-scale save */
    o->link.storage_bw = o->link.d2h_bw / irand(1, 4);
    o->link.latency = 1e-5 * irand(0, 3);
    o->link.chunk = (size_t)irand(4, 64) << 10;
    o->prefetch = irand(0, 2);
    o->lookahead = irand(1, 8);
}

/* Every op starts after its deps end and after the previous op of its engine. */
static int check_times(const sched_t *s, const double *start, const double *end)
{
    for (int i = 0; i < sched_nops(s); i++) {
        const sched_op_t *o = sched_op(s, i);
        for (int d = 0; d < o->ndeps; d++)
            if (end[o->deps[d]] > start[i] + 1e-12) return 0;
    }
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) {
        int n;
        const int *ord = sched_engine_order(s, (sched_engine_t)e, &n);
        for (int k = 1; k < n; k++)
            if (start[ord[k]] < end[ord[k - 1]] - 1e-12) return 0;
    }
    return 1;
}

static double compute_sum(const sched_program_t *p, int recompute_all)
{
    double t = p->optim_s;
    for (int u = 0; u < p->nunits; u++)
        t += p->units[u].cost_s[SCHED_COST_FWD] * (recompute_all ? 2 : 1) + p->units[u].cost_s[SCHED_COST_BWD];
    return t;
}

static double step_of(const sched_program_t *p, const char *policy)
{
    sched_policy_t pol;
    sched_actions_t a;
    sched_opts_t o;
    sched_t *s = NULL;
    sched_result_t r;
    sched_opts_defaults(&o);
    if (STRATA_OK != sched_policy_parse(policy, &pol, NULL, 0) ||
        STRATA_OK != sched_policy_resolve(&pol, p, &a, NULL, 0) ||
        STRATA_OK != sched_build(p, &a, &o, &s, NULL, 0) ||
        STRATA_OK != sched_simulate(s, &r, NULL, NULL, NULL, 0)) r.step_s = -1;
    sched_destroy(s);
    return r.step_s;
}

/* Recompute at name granularity: a unit whose saves carry producing costs
 * re-runs only its recompute-action saves' producers; one without them
 * its whole forward. */
static void test_save_costs(void)
{
    char err[512];
    sched_program_t *p = NULL;
    const char *text = "unit a fwd=0.010 bwd=0.020\nsave x 1M cost=0.003\nsave y 1M cost=0.004\nsave z 1M\n"
                       "unit b fwd=0.010 bwd=0.020\nsave x 1M\n";
    if (STRATA_OK != sched_program_parse(text, &p, err, sizeof err)) bail_out("save costs: %s", err);
    sched_actions_t all, xkeep;
    sched_actions_fill(&all, p, SCHED_RECOMPUTE);
    xkeep = all;
    xkeep.action[sched_program_name_id(p, "x")] = SCHED_KEEP;
    ok(fabs(sched_recompute_seconds(p, 0, &all) - 0.007) < 1e-12 &&
       fabs(sched_recompute_seconds(p, 0, &xkeep) - 0.004) < 1e-12,
       "RECOMPUTE(a) sums its recompute saves' costs: 7 ms, 4 ms with x kept");
    ok(fabs(sched_recompute_seconds(p, 1, &all) - 0.010) < 1e-12 && 0 == sched_recompute_seconds(p, 1, &xkeep),
       "RECOMPUTE(b) without save costs: its forward, 10 ms; nothing when x is kept");
    double keep = step_of(p, "*=keep");
    is_double(step_of(p, "*=recompute") - keep, 0.017, 1e-9, "*=recompute: the step grows by 7 + 10 ms");
    is_double(step_of(p, "x=host,*=recompute") - keep, 0.004, 1e-9, "x=host,*=recompute: by 4 ms only");
    /* newer costs reach a built schedule through sched_update_costs */
    sched_opts_t o;
    sched_t *s = NULL;
    sched_result_t r;
    sched_opts_defaults(&o);
    sched_build(p, &all, &o, &s, err, sizeof err);
    sched_record_save_cost(p, 0, 2, 0.005, err, sizeof err);
    sched_update_costs(s);
    ok(s && STRATA_OK == sched_simulate(s, &r, NULL, NULL, NULL, 0) && fabs(r.step_s - keep - 0.022) < 1e-9,
       "a save cost recorded later counts after sched_update_costs (+5 ms)");
    sched_destroy(s);
    ok(STRATA_ERR_INVALID == sched_record_save_cost(p, 1, 1, 0.1, err, sizeof err) && strstr(err, "no save 1"),
       "a cost for a save the unit lacks is refused: %s", err);
    ok(STRATA_ERR_INVALID == sched_record_save_cost(p, 0, 0, -1, err, sizeof err), "a negative cost is refused");
    sched_program_destroy(p);
    p = NULL;
    ok(STRATA_ERR_FORMAT == sched_program_parse("unit a\nsave x 1M cost=soon\n", &p, err, sizeof err) &&
       strstr(err, "expected cost=SECONDS"), "bad save cost in text: %s", err);
    sched_program_destroy(p);
}

/* bytes a schedule moves off the device */
static size_t d2h_bytes(const sched_t *s)
{
    size_t b = 0;
    for (int i = 0; i < sched_nops(s); i++)
        if (SCHED_OP_D2H == sched_op(s, i)->kind) b += sched_op(s, i)->bytes;
    return b;
}

/* Counts over the randomized cases, each checked once at the end. */
typedef struct {
    int built, fit_fail, time_bad, peak_bad, slower, naive_hidden, ample_exposed;
    int none_built, none_overlap, none_faster;
    int fitting, refused_ok, refused;
    double worst_gain;
} tally_t;

/* Build and simulate case c's schedule in mode m at this budget (need: its
 * minimum): refused below the minimum, built above it, every op in time
 * order and the peak within bound and budget. Returns whether *r holds a
 * result. */
static int build_mode(int c, sched_program_t *p, const sched_actions_t *a, sched_opts_t *o, size_t need,
                      sched_mode_t m, sched_t **s, sched_result_t *r, tally_t *t)
{
    char err[1024] = "";
    size_t budget = o->budget[STRATA_TIER_DEVICE];
    o->mode = m;
    strata_status_t st = sched_build(p, a, o, s, err, sizeof err);
    if (budget < need) {
        t->refused++;
        if (STRATA_ERR_TIER_FULL == st && strstr(err, "need")) t->refused_ok++;
        return 0;
    }
    t->fitting++;
    if (STRATA_OK != st) { t->fit_fail++; diag("case %d %s: %s", c, sched_mode_name(o->mode), err); return 0; }
    t->built++;
    int n = sched_nops(*s);
    double *start = malloc((size_t)n * sizeof(double) + 8), *end = malloc((size_t)n * sizeof(double) + 8);
    if (STRATA_OK != sched_simulate(*s, r, start, end, err, sizeof err)) {
        diag("case %d: %s", c, err);
        t->time_bad++;
    } else if (!check_times(*s, start, end)) t->time_bad++;
    if (r->peak[STRATA_TIER_DEVICE] > sched_device_bound(*s) || sched_device_bound(*s) > budget) {
        diag("case %d %s: peak %zu bound %zu budget %zu", c, sched_mode_name(o->mode),
             r->peak[STRATA_TIER_DEVICE], sched_device_bound(*s), budget);
        t->peak_bad++;
    }
    free(start);
    free(end);
    return 1;
}

/* ample bandwidth, same budget: lhs hides (nearly) everything */
static void check_ample(int c, sched_program_t *p, const sched_actions_t *a, sched_opts_t o, tally_t *t)
{
    char err[1024] = "";
    o.mode = SCHED_MODE_LHS;
    o.link.d2h_bw = o.link.h2d_bw = o.link.storage_bw = 1e15;
    o.link.latency = 0;
    sched_t *x = NULL;
    sched_result_t rx;
    if (STRATA_OK == sched_build(p, a, &o, &x, err, sizeof err) &&
        STRATA_OK == sched_simulate(x, &rx, NULL, NULL, err, sizeof err)) {
        if (rx.exposed_transfer_s > 1e-6 * rx.step_s) {
            t->ample_exposed++;
            diag("case %d: ample bandwidth exposes %g of %g s", c, rx.exposed_transfer_s, rx.step_s);
        }
    } else t->ample_exposed++;
    sched_destroy(x);
}

/* none: no two ops overlap in simulated time (the step is the sum of every
 * op's seconds), and it is never faster than naive. */
static void check_none(int c, const sched_t *s, const sched_result_t *r, const sched_result_t *naive,
                       tally_t *t)
{
    double sum = 0;
    for (int i = 0; i < sched_nops(s); i++) sum += sched_op(s, i)->seconds;
    t->none_built++;
    if (fabs(r->step_s - sum) > 1e-9 * (1 + sum)) {
        t->none_overlap++;
        diag("case %d: none step %g, its ops' sum %g", c, r->step_s, sum);
    }
    if (r->step_s < naive->step_s - 1e-12) {
        t->none_faster++;
        diag("case %d: none %g < naive %g", c, r->step_s, naive->step_s);
    }
}

/* One random program, actions, link and budget (from just below the
 * minimum to above keeping everything), built lhs and naive. */
static void random_case(int c, tally_t *t)
{
    int zero_comm = c % 2;
    sched_program_t *p = random_program(zero_comm);
    sched_actions_t a;
    sched_opts_t o;
    random_actions(p, &a);
    sched_opts_defaults(&o);
    random_link(&o);
    size_t need = sched_min_device(p, &a, &o), all_keep;
    sched_actions_t k;
    sched_actions_fill(&k, p, SCHED_KEEP);
    all_keep = sched_min_device(p, &k, &o);
    size_t budget = need + (size_t)(urand() * 1.2 * (double)(all_keep - need + 1));
    if (c % 7 == 3) budget = need - 1;
    o.budget[STRATA_TIER_DEVICE] = budget;
    sched_result_t r[3];
    sched_t *s[3] = { NULL, NULL, NULL };
    int okb = 1;
    for (int m = 0; m < 3; m++) okb &= build_mode(c, p, &a, &o, need, (sched_mode_t)m, &s[m], &r[m], t);
    if (okb) check_none(c, s[2], &r[2], &r[1], t);
    if (okb) {
        if (r[0].step_s > r[1].step_s + 1e-12) { t->slower++; diag("case %d: lhs %g > naive %g", c, r[0].step_s, r[1].step_s); }
        if (r[1].step_s > 0 && r[1].transfer_s > 0)
            t->worst_gain = fmin(t->worst_gain, (r[1].step_s - r[0].step_s) / r[1].transfer_s);
        if (zero_comm && fabs(r[1].exposed_transfer_s - r[1].transfer_s) > 1e-9 * (1 + r[1].transfer_s)) {
            t->naive_hidden++;
            diag("case %d: naive exposed %g of %g", c, r[1].exposed_transfer_s, r[1].transfer_s);
        }
    }
    sched_destroy(s[0]);
    sched_destroy(s[1]);
    sched_destroy(s[2]);
    if (budget >= need) check_ample(c, p, &a, o, t);
    sched_program_destroy(p);
}

/* randomized invariants */
static void test_random_invariants(void)
{
    tally_t t = { .worst_gain = 1e9 };
    for (int c = 0; c < CASES; c++) random_case(c, &t);
    diag("%d schedules built, %d fitting cases, %d refused; worst lhs gain over naive %.2f of naive transfer",
         t.built, t.fitting, t.refused, t.worst_gain);
    ok(t.built > CASES, "most random cases fit and build (%d)", t.built);
    is_int(t.fit_fail, 0, "every case whose minimum fits the budget builds, lhs and naive");
    is_int(t.refused_ok, t.refused, "every case below its minimum is refused with the need named");
    is_int(t.time_bad, 0, "in simulation every op starts after its deps and its engine's previous op");
    is_int(t.peak_bad, 0, "simulated device peak <= structural bound <= budget");
    is_int(t.slower, 0, "lhs never slower than naive");
    is_int(t.naive_hidden, 0, "naive exposes all of its transfer time (no comm in the way)");
    is_int(t.ample_exposed, 0, "lhs with ample bandwidth exposes ~0");
    ok(t.none_built > CASES / 2, "none builds where naive does (%d)", t.none_built);
    is_int(t.none_overlap, 0, "none: nothing overlaps (the step is the sum of its ops)");
    is_int(t.none_faster, 0, "none never faster than naive");
}

/* recompute adds the forward time */
static void test_recompute_cost(void)
{
    char err[1024] = "";
    rng = 42;
    sched_program_t *p = random_program(1);
    sched_opts_t o;
    sched_actions_t keep, rec;
    sched_opts_defaults(&o);
    sched_actions_fill(&keep, p, SCHED_KEEP);
    sched_actions_fill(&rec, p, SCHED_RECOMPUTE);
    sched_t *s1 = NULL, *s2 = NULL;
    sched_result_t r1, r2;
    sched_build(p, &keep, &o, &s1, err, sizeof err);
    sched_build(p, &rec, &o, &s2, err, sizeof err);
    ok(s1 && s2 && STRATA_OK == sched_simulate(s1, &r1, NULL, NULL, NULL, 0) &&
       STRATA_OK == sched_simulate(s2, &r2, NULL, NULL, NULL, 0), "keep and recompute schedules");
    is_double(r2.step_s - r1.step_s, compute_sum(p, 1) - compute_sum(p, 0), 1e-9,
              "recompute adds each unit's forward time");
    ok(r2.peak[STRATA_TIER_DEVICE] < r1.peak[STRATA_TIER_DEVICE], "and needs less device memory");
    sched_destroy(s1);
    sched_destroy(s2);

    /* auto with room for everything keeps everything */
    sched_actions_t pick;
    sched_result_t pred;
    o.budget[STRATA_TIER_DEVICE] = sched_min_device(p, &keep, &o);
    o.link.d2h_bw = o.link.h2d_bw = o.link.storage_bw = 1e15;
    int all_keep = STRATA_OK == sched_plan_auto(p, &o, &pick, &pred, err, sizeof err);
    for (int n = 0; all_keep && n < p->nnames; n++) all_keep = SCHED_KEEP == pick.action[n];
    ok(all_keep, "auto picks keep for every name when keep fits (even with free transfers)");
    sched_program_destroy(p);
}

/* an unpaced link (the runtime's default) and room: lhs moves nothing:
 * every transfer then takes 0 s, so the variants tie on time; the tie
 * goes to the fewest bytes moved, the variant keeping every offload */
static void test_unpaced_link(void)
{
    char err[1024] = "";
    rng = 11;
    sched_program_t *p = random_program(1);
    sched_opts_t o;
    sched_actions_t host;
    sched_opts_defaults(&o);
    sched_actions_fill(&host, p, SCHED_HOST);
    sched_t *s = NULL;
    int built = STRATA_OK == sched_build(p, &host, &o, &s, err, sizeof err);
    size_t moved = built ? d2h_bytes(s) : 0;
    ok(built && 0 == moved && sched_tail_kept(s) == p->nunits,
       "unpaced link, no budget: lhs of *=host keeps every offload on device (%zu bytes moved, "
       "tail %d of %d)", moved, built ? sched_tail_kept(s) : -1, p->nunits);
    sched_destroy(s);
    /* at the smallest budget *=host fits, something must move */
    o.budget[STRATA_TIER_DEVICE] = sched_min_device(p, &host, &o);
    s = NULL;
    built = STRATA_OK == sched_build(p, &host, &o, &s, err, sizeof err);
    moved = built ? d2h_bytes(s) : 0;
    ok(built && moved > 0 && sched_device_bound(s) <= o.budget[STRATA_TIER_DEVICE],
       "at *=host's minimum budget lhs offloads (%zu bytes) within it", moved);
    sched_destroy(s);
    sched_program_destroy(p);
}

/* new costs, same schedule: sched_update_costs */
static void test_update_costs(void)
{
    char err[1024] = "";
    rng = 7;
    sched_program_t *p = random_program(1);
    sched_opts_t o;
    sched_actions_t keep;
    sched_opts_defaults(&o);
    sched_actions_fill(&keep, p, SCHED_KEEP);
    sched_t *s = NULL;
    sched_result_t r1, r2;
    int built = STRATA_OK == sched_build(p, &keep, &o, &s, err, sizeof err) &&
                STRATA_OK == sched_simulate(s, &r1, NULL, NULL, NULL, 0);
    double add = 0;
    for (int u = 0; u < p->nunits; u++) {
        sched_record_cost(p, u, SCHED_COST_FWD, 2 * p->units[u].cost_s[SCHED_COST_FWD], NULL, 0);
        add += p->units[u].cost_s[SCHED_COST_FWD] / 2;
    }
    sched_update_costs(s);
    sched_update_costs(NULL);   /* NULL-safe */
    built = built && STRATA_OK == sched_simulate(s, &r2, NULL, NULL, NULL, 0);
    ok(built && fabs(r2.step_s - r1.step_s - add) < 1e-9,
       "sched_update_costs: doubled forward costs lengthen the simulated step by their sum "
       "(%g -> %g s, +%g)", r1.step_s, built ? r2.step_s : 0, add);
    sched_destroy(s);
    sched_program_destroy(p);
}

/* lhs with room for everything and a slow link keeps every save:
 * a transfer the simulator would hide is still one a real machine can
 * expose */
static void test_room_keeps_saves(void)
{
    char err[1024] = "";
    const char *text = "resident 1M\nunit b fwd=0.01 bwd=0.02 ag=0.001 rs=0.001 ag_bytes=1M "
                       "repeat=6\nsave a 4M\nsave c 4M\n";
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse(text, &p, err, sizeof err)) bail_out("%s", err);
    sched_opts_t o;
    sched_opts_defaults(&o);
    o.budget[STRATA_TIER_DEVICE] = 1ull << 30;
    o.link.d2h_bw = o.link.h2d_bw = 2e9;   /* 2 ms a save: hidden behind 10 ms forwards */
    sched_actions_t host, keep;
    sched_actions_fill(&host, p, SCHED_HOST);
    sched_actions_fill(&keep, p, SCHED_KEEP);
    sched_t *s = NULL, *k = NULL;
    sched_result_t rh, rk;
    int okb = STRATA_OK == sched_build(p, &host, &o, &s, err, sizeof err) &&
              STRATA_OK == sched_build(p, &keep, &o, &k, err, sizeof err) &&
              STRATA_OK == sched_simulate(s, &rh, NULL, NULL, NULL, 0) &&
              STRATA_OK == sched_simulate(k, &rk, NULL, NULL, NULL, 0);
    ok(okb && p->nunits == sched_tail_kept(s) && 0 == rh.transfer_s &&
       fabs(rh.step_s - rk.step_s) < 1e-12,
       "host-lhs with a budget for everything keeps all %d units (kept %d, %g s moved)",
       p->nunits, okb ? sched_tail_kept(s) : -1, okb ? rh.transfer_s : -1);
    sched_destroy(s);
    sched_destroy(k);
    /* a budget below keep's: it must offload, and hides it */
    o.budget[STRATA_TIER_DEVICE] = sched_min_device(p, &keep, &o) - (4u << 20);
    okb = STRATA_OK == sched_build(p, &host, &o, &s, err, sizeof err) &&
          STRATA_OK == sched_simulate(s, &rh, NULL, NULL, NULL, 0);
    ok(okb && sched_tail_kept(s) < p->nunits && rh.transfer_s > 0 &&
       rh.peak[STRATA_TIER_DEVICE] <= o.budget[STRATA_TIER_DEVICE],
       "below keep's budget it offloads (tail %d of %d units kept) within the budget",
       okb ? sched_tail_kept(s) : -1, p->nunits);
    sched_destroy(s);
    sched_program_destroy(p);
}

/* smallest budget, by construction
 * 3 units, one save S each, params A, resident R, prefetch 0. Per
 * position the live bytes are: keep R+2A+3S (B of the last unit:
 * params, grads, all saves); host R+max(2A+S, A+2S) (a save drains into
 * the next op); recompute R+2A+S. With S > A: recompute is smallest. */
static void test_smallest_budget(void)
{
    char err[1024] = "";
    const size_t R = 500, A = 1000, S = 3000;
    char text[512];
    snprintf(text, sizeof text, "resident %zu\nunit b fwd=0.01 bwd=0.02 ag_bytes=%zu repeat=3\nsave s %zu\n", R, A, S);
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse(text, &p, err, sizeof err)) bail_out("%s", err);
    sched_opts_t o;
    sched_opts_defaults(&o);
    o.prefetch = 0;
    o.link.d2h_bw = o.link.h2d_bw = 1e9;
    sched_actions_t a, pick;
    sched_result_t pred;
    sched_actions_fill(&a, p, SCHED_KEEP);
    size_t keep = sched_min_device(p, &a, &o);
    sched_actions_fill(&a, p, SCHED_HOST);
    size_t host = sched_min_device(p, &a, &o);
    sched_actions_fill(&a, p, SCHED_RECOMPUTE);
    size_t rec = sched_min_device(p, &a, &o);
    ok(R + 2 * A + 3 * S == keep && R + A + 2 * S == host && R + 2 * A + S == rec,
       "minimum per policy as constructed (keep %zu, host %zu, recompute %zu)", keep, host, rec);
    is_int((long long)sched_plan_min_device(p, &o), (long long)(R + 2 * A + S), "smallest budget over plans");
    o.budget[STRATA_TIER_DEVICE] = R + 2 * A + S - 1;
    char want[64];
    snprintf(want, sizeof want, "(%zu bytes)", R + 2 * A + S);
    ok(STRATA_ERR_TIER_FULL == sched_plan_auto(p, &o, &pick, &pred, err, sizeof err) && strstr(err, want),
       "one byte short: auto fails naming the smallest budget: %s", err);
    o.budget[STRATA_TIER_DEVICE] = R + 2 * A + S;
    ok(STRATA_OK == sched_plan_auto(p, &o, &pick, &pred, err, sizeof err) && SCHED_RECOMPUTE == pick.action[0] &&
       pred.peak[STRATA_TIER_DEVICE] <= R + 2 * A + S, "at the smallest budget: recompute, within budget");
    o.budget[STRATA_TIER_DEVICE] = host;
    ok(STRATA_OK == sched_plan_auto(p, &o, &pick, &pred, err, sizeof err) && SCHED_HOST == pick.action[0],
       "room for host offload and a fast link: auto picks host over recompute");
    o.budget[STRATA_TIER_DEVICE] = keep;
    ok(STRATA_OK == sched_plan_auto(p, &o, &pick, &pred, err, sizeof err) && SCHED_KEEP == pick.action[0],
       "room for everything: keep");
    sched_program_destroy(p);
}

/* the published ordering, in simulation: a GPT-like step whose
 * offloaded bytes take ~0.5x the step's compute at the link speed, a
 * budget where keep does not fit: host-lhs > recompute > host-naive */
static void test_published_ordering(void)
{
    char err[1024] = "";
    const char *gpt = "resident 512M\noptim 0.004\n"
                      "unit embed fwd=0.002 bwd=0.004 ag=0.001 rs=0.001 ag_bytes=32M\nsave x 8M\n"
                      "unit block fwd=0.010 bwd=0.020 ag=0.002 rs=0.002 ag_bytes=64M repeat=12\n"
                      "save x 8M\nsave ln1 8M\nsave qkv 24M\nsave attn_out 8M\nsave ln2 8M\n"
                      "save mlp_up 32M\nsave mlp_act 32M\n"
                      "unit head fwd=0.004 bwd=0.008 ag=0.001 rs=0.001 ag_bytes=48M\nsave logits 16M\n";
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse(gpt, &p, err, sizeof err)) bail_out("%s", err);
    sched_opts_t o;
    sched_opts_defaults(&o);
    o.budget[STRATA_TIER_DEVICE] = 1200ull << 20;
    o.link.d2h_bw = o.link.h2d_bw = 8.0 * (1 << 30);
    o.link.chunk = 4 << 20;
    o.link.latency = 20e-6;
    sched_actions_t a;
    sched_result_t lhs, naive, rec;
    sched_t *s = NULL;
    int okk = 1;
    sched_actions_fill(&a, p, SCHED_KEEP);
    okk &= STRATA_ERR_TIER_FULL == sched_build(p, &a, &o, &s, err, sizeof err);
    sched_actions_fill(&a, p, SCHED_HOST);
    okk &= STRATA_OK == sched_build(p, &a, &o, &s, err, sizeof err) && STRATA_OK == sched_simulate(s, &lhs, NULL, NULL, NULL, 0);
    sched_destroy(s);
    o.mode = SCHED_MODE_NAIVE;
    okk &= STRATA_OK == sched_build(p, &a, &o, &s, err, sizeof err) && STRATA_OK == sched_simulate(s, &naive, NULL, NULL, NULL, 0);
    sched_destroy(s);
    sched_actions_fill(&a, p, SCHED_RECOMPUTE);
    okk &= STRATA_OK == sched_build(p, &a, &o, &s, err, sizeof err) && STRATA_OK == sched_simulate(s, &rec, NULL, NULL, NULL, 0);
    sched_destroy(s);
    sched_actions_fill(&a, p, SCHED_HOST);
    o.mode = SCHED_MODE_LHS;
    int consistent = STRATA_OK == sched_build(p, &a, &o, &s, err, sizeof err);
    for (int u = 0; consistent && u < p->nunits; u++)
        for (int i = 0; i < p->units[u].nsaves; i++) {
            int d2h = 0;
            for (int id = 0; id < sched_nops(s); id++)
                d2h += SCHED_OP_D2H == sched_op(s, id)->kind && u == sched_op(s, id)->unit && i == sched_op(s, id)->save;
            int act = sched_save_action(s, u, i);
            if ((SCHED_HOST == act) != (d2h > 0) || (SCHED_KEEP == act) != (u >= p->nunits - sched_tail_kept(s)))
                consistent = 0;
        }
    ok(consistent && -1 == sched_save_action(s, p->nunits, 0),
       "save actions: host where the schedule offloads, keep for the %d tail unit(s) it keeps", sched_tail_kept(s));
    sched_destroy(s);
    diag("host-lhs %.1f ms (overlap %.2f), recompute %.1f ms, host-naive %.1f ms", lhs.step_s * 1e3,
         lhs.overlap_frac, rec.step_s * 1e3, naive.step_s * 1e3);
    /* measured beside predicted: a step 10% slower than predicted */
    sched_result_t meas = lhs;
    meas.step_s *= 1.1;
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    sched_plan_print_measured(&lhs, &meas, mf);
    fclose(mf);
    ok(buf && strstr(buf, "predicted") && strstr(buf, "measured") && strstr(buf, "10.0%") &&
       strstr(buf, "peak device"), "measured values print beside predictions");
    free(buf);
    ok(okk && lhs.step_s * 1.2 <= rec.step_s && rec.step_s < naive.step_s && lhs.overlap_frac >= 0.9,
       "keep does not fit; host-lhs >= 1.2x faster than recompute, which beats host-naive; overlap >= 0.9");
    sched_program_destroy(p);
}

/* a unit's input as a save (SCHED_INPUT_NAME): kept it costs what the
 * output between units always cost; moved, the device needs less;
 * recompute keeps it (the re-run starts from it) */
static void test_unit_inputs(void)
{
    char err[1024] = "";
    const char *text = "resident 4k\nunit b fwd=0.01 bwd=0.02 ag_bytes=1k repeat=4\n"
                       "save s 8k\nsave unit_input 64k\n";
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse(text, &p, err, sizeof err)) bail_out("%s", err);
    ok(1 == sched_unit_input(&p->units[2]) && p->units[2].saves[1].is_input &&
       !p->units[2].saves[0].is_input, "a save named %s is the unit's input", SCHED_INPUT_NAME);
    sched_opts_t o;
    sched_opts_defaults(&o);
    o.prefetch = 0;
    o.link.d2h_bw = o.link.h2d_bw = 1e9;
    sched_policy_t pol;
    sched_actions_t keep, in_host, rec, rec_keep;
    sched_actions_fill(&keep, p, SCHED_KEEP);
    sched_actions_fill(&rec, p, SCHED_RECOMPUTE);
    int okp = STRATA_OK == sched_policy_parse("unit_input=host,*=keep", &pol, err, sizeof err) &&
              STRATA_OK == sched_policy_resolve(&pol, p, &in_host, err, sizeof err) &&
              STRATA_OK == sched_policy_parse("unit_input=keep,*=recompute", &pol, err, sizeof err) &&
              STRATA_OK == sched_policy_resolve(&pol, p, &rec_keep, err, sizeof err);
    size_t k = sched_min_device(p, &keep, &o), h = sched_min_device(p, &in_host, &o);
    size_t r = sched_min_device(p, &rec, &o), rk = sched_min_device(p, &rec_keep, &o);
    /* keep: all four inputs (the outputs before them) are on the device at
     * the first backward; moved, only what the backwards around need */
    ok(okp && k >= 4 * 65536 && h + 65536 <= k,
       "unit_input=host needs at least an input's worth less than keep (%zu vs %zu)", h, k);
    ok(okp && r == rk, "*=recompute keeps the inputs: the budget of unit_input=keep,*=recompute (%zu)", r);
    char buf[256];
    ok(strstr(sched_actions_string(&rec, p, buf, sizeof buf), "unit_input=keep") != NULL,
       "*=recompute prints unit_input=keep (%s)", buf);
    /* every action of the input, simulated: within the structural bound */
    int within = 1;
    for (int a = SCHED_KEEP; a <= SCHED_STORAGE; a++) {
        sched_actions_t x = keep;
        x.action[sched_program_name_id(p, SCHED_INPUT_NAME)] = (sched_action_t)a;
        o.budget[STRATA_TIER_DEVICE] = sched_min_device(p, &x, &o);
        sched_t *s = NULL;
        sched_result_t res;
        within = within && STRATA_OK == sched_build(p, &x, &o, &s, err, sizeof err) &&
                 STRATA_OK == sched_simulate(s, &res, NULL, NULL, NULL, 0) &&
                 res.peak[STRATA_TIER_DEVICE] <= sched_device_bound(s);
        sched_destroy(s);
    }
    ok(within, "keep, host, storage of the input: the simulated peak within the bound (%s)", err);
    o.budget[STRATA_TIER_DEVICE] = 0;
    sched_program_destroy(p);
}

/* the op ids of kind k in compute order */
static int compute_ops(const sched_t *s, sched_op_kind_t k, int *ids, int max)
{
    int n = 0, norder;
    const int *ord = sched_engine_order(s, SCHED_COMPUTE, &norder);
    for (int i = 0; i < norder; i++)
        if (sched_op(s, ord[i])->kind == k && n < max) ids[n++] = ord[i];
    return n;
}

/* unit_input=recompute: the odd units' inputs made again, each by REGEN of
 * the unit before (its whole forward) right before the odd unit's
 * backward, after that unit's parameters are gathered; the device needs
 * less than with the inputs kept; every timing stays within the bound */
static void test_unit_input_regen(void)
{
    char err[1024] = "";
    const char *text = "resident 4k\nunit b fwd=0.01 bwd=0.02 ag=0.001 ag_bytes=1k repeat=4\n"
                       "save s 8k\nsave unit_input 64k\n";
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse(text, &p, err, sizeof err)) bail_out("%s", err);
    sched_policy_t pol;
    sched_actions_t rec, regen;
    sched_actions_fill(&rec, p, SCHED_RECOMPUTE);
    int okp = STRATA_OK == sched_policy_parse("unit_input=recompute,*=recompute", &pol, err, sizeof err) &&
              STRATA_OK == sched_policy_resolve(&pol, p, &regen, err, sizeof err);
    char buf[256] = "";
    ok(okp && strstr(sched_actions_string(&regen, p, buf, sizeof buf), "unit_input=recompute"),
       "unit_input=recompute resolves and prints back (%s%s)", buf, err);
    ok(sched_unit_regen(p, &regen, 0) && !sched_unit_regen(p, &regen, 1) && sched_unit_regen(p, &regen, 2) &&
       !sched_unit_regen(p, &regen, 3) && !sched_unit_regen(p, &rec, 0),
       "in pairs: units 0 and 2 run again for the inputs of 1 and 3; not under *=recompute");
    sched_opts_t o;
    sched_opts_defaults(&o);
    o.prefetch = 1;
    o.link.d2h_bw = o.link.h2d_bw = 1e9;
    size_t r = sched_min_device(p, &rec, &o), g = sched_min_device(p, &regen, &o);
    ok(g + 65536 <= r, "recomputing half the inputs needs an input's worth less (%zu vs %zu)", g, r);
    int fine = 1;
    for (int m = 0; m < 2; m++) {
        o.mode = m ? SCHED_MODE_NAIVE : SCHED_MODE_LHS;
        o.budget[STRATA_TIER_DEVICE] = sched_min_device(p, &regen, &o);
        sched_t *s = NULL;
        sched_result_t res, base;
        int ids[8], bw[8];
        if (STRATA_OK != sched_build(p, &regen, &o, &s, err, sizeof err) ||
            STRATA_OK != sched_simulate(s, &res, NULL, NULL, NULL, 0)) { fine = 0; break; }
        int n = compute_ops(s, SCHED_OP_REGEN, ids, 8), nb = compute_ops(s, SCHED_OP_B, bw, 8);
        /* backward order 3 2 1 0: REGEN(2) then RECOMPUTE(3) then B(3);
         * REGEN(0) after B(2), then RECOMPUTE(1), B(1) */
        fine = fine && 2 == n && 4 == nb && 2 == sched_op(s, ids[0])->unit && 0 == sched_op(s, ids[1])->unit &&
               sched_op(s, ids[0])->pos + 2 == sched_op(s, bw[0])->pos &&
               sched_op(s, bw[1])->pos + 1 == sched_op(s, ids[1])->pos &&
               sched_op(s, ids[1])->pos + 2 == sched_op(s, bw[2])->pos &&
               fabs(sched_op(s, ids[0])->seconds - 0.01) < 1e-12 &&
               res.peak[STRATA_TIER_DEVICE] <= sched_device_bound(s);
        /* it waits for the gather of its unit's backward use */
        const sched_op_t *op = sched_op(s, ids[0]);
        int ag = 0;
        for (int d = 0; d < op->ndeps; d++)
            ag |= SCHED_OP_AG == sched_op(s, op->deps[d])->kind && 2 == sched_op(s, op->deps[d])->unit;
        fine = fine && ag;
        sched_destroy(s);
        o.budget[STRATA_TIER_DEVICE] = 0;
        if (STRATA_OK != sched_build(p, &rec, &o, &s, err, sizeof err) ||
            STRATA_OK != sched_simulate(s, &base, NULL, NULL, NULL, 0)) { fine = 0; break; }
        /* two forwards more than *=recompute, and at most the two gathers
         * a REGEN waits for that a backward would have hidden */
        fine = fine && res.step_s >= base.step_s + 0.02 - 1e-9 && res.step_s <= base.step_s + 0.022 + 1e-9;
        sched_destroy(s);
    }
    ok(fine, "two REGEN ops, each right before the odd unit's backward, after its unit's gather, "
       "one forward each; step +2 forwards; peak within the bound, lhs and naive (%s)", err);
    o.mode = SCHED_MODE_LHS;
    o.budget[STRATA_TIER_DEVICE] = 0;
    sched_actions_t best;
    /* no room off the device: the inputs cannot move, only be made again */
    o.budget[STRATA_TIER_DEVICE] = g;
    o.budget[STRATA_TIER_PINNED_HOST] = o.budget[STRATA_TIER_STORAGE] = 1024;
    okp = STRATA_OK == sched_plan_auto(p, &o, &best, NULL, err, sizeof err);
    if (okp) sched_actions_string(&best, p, buf, sizeof buf);
    ok(okp && SCHED_RECOMPUTE == best.action[sched_program_name_id(p, SCHED_INPUT_NAME)],
       "auto at that budget with no host or storage room recomputes the inputs (%s%s)", buf, err);
    sched_program_destroy(p);
}

/* Resource bytes recorded on every op (sched_record_cost_res): without a
 * capacity (share_bw all 0, as the runtime's opts are) the simulation is
 * the plain one bit for bit; with capacities no op reaches, the
 * event-driven shared run agrees with it within rounding. */
static void test_unchanged(void)
{
    int same = 0, close = 0, cases = 0;
    for (int c = 0; c < 40; c++) {
        unsigned long long seed = rng;
        sched_program_t *plain = random_program(0);
        rng = seed;
        sched_program_t *res = random_program(0);
        for (int u = 0; u < res->nunits; u++)
            for (int k = 0; k < SCHED_COST_COUNT; k++)
                for (int r = 0; r < SCHED_RES_COUNT; r++)
                    sched_record_cost_res(res, u, (sched_cost_t)k, (sched_res_t)r, 1e6 * urand(), NULL, 0);
        sched_actions_t a;
        sched_actions_fill(&a, plain, SCHED_HOST);
        sched_opts_t o;
        sched_opts_defaults(&o);
        o.mode = c % 2 ? SCHED_MODE_NAIVE : SCHED_MODE_LHS;
        random_link(&o);
        sched_t *s1 = NULL, *s2 = NULL, *s3 = NULL;
        if (STRATA_OK != sched_build(plain, &a, &o, &s1, NULL, 0) || STRATA_OK != sched_build(res, &a, &o, &s2, NULL, 0)) {
            sched_destroy(s1);
            sched_destroy(s2);
            sched_program_destroy(plain);
            sched_program_destroy(res);
            continue;
        }
        cases++;
        int n = sched_nops(s1);
        double *st1 = malloc(3 * (size_t)n * sizeof(double)), *st2 = malloc(3 * (size_t)n * sizeof(double));
        double *en1 = st1 + n, *en2 = st2 + n;
        sched_result_t r1, r2, r3;
        sched_simulate(s1, &r1, st1, en1, NULL, 0);
        sched_simulate(s2, &r2, st2, en2, NULL, 0);
        if (n == sched_nops(s2) && r1.step_s == r2.step_s && !memcmp(st1, st2, 2 * (size_t)n * sizeof(double)))
            same++;
        /* the same program under capacities far above any demand: the
         * event-driven run, which must agree with the plain one */
        for (int r = 0; r < SCHED_RES_COUNT; r++) o.share_bw[r] = 1e18;
        if (STRATA_OK == sched_build(res, &a, &o, &s3, NULL, 0) && STRATA_OK == sched_simulate(s3, &r3, NULL, NULL, NULL, 0)) {
            int agree = fabs(r3.step_s - r2.step_s) <= 1e-9 * r2.step_s;
            for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
                agree = agree && fabs(r3.busy_s[e] - r2.busy_s[e]) <= 1e-9 * (r2.step_s + 1e-30);
            if (agree) close++;
        }
        free(st1);
        free(st2);
        sched_destroy(s1);
        sched_destroy(s2);
        sched_destroy(s3);
        sched_program_destroy(plain);
        sched_program_destroy(res);
    }
    ok(cases >= 20 && same == cases, "no capacity set: resource bytes recorded or not, the same simulation bit for "
       "bit (%d of %d)", same, cases);
    ok(cases >= 20 && close == cases, "capacities no op reaches: the shared run agrees with the plain one "
       "(%d of %d)", close, cases);
}

int main(void)
{
    plan(49);
    test_save_costs();
    test_random_invariants();
    test_recompute_cost();
    test_unpaced_link();
    test_update_costs();
    test_room_keeps_saves();
    test_smallest_budget();
    test_published_ordering();
    test_unit_inputs();
    test_unit_input_regen();
    test_unchanged();
    return done_testing();
}
