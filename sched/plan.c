/*
 * plan.c - the automatic activation plan: keep, host, storage or recompute
 * per saved name, the lowest predicted step time that fits the budgets.
 */
#include "config.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXHAUSTIVE_MAX 1024   /* plans: 4^5; beyond, greedy + local search */

/* What a plan is ranked by: its predicted step time, plus a small charge
 * per second of transfer, so that of plans the simulator finds (nearly)
 * equally fast the one moving the fewest bytes wins: a transfer the
 * simulator hides can still show on a real machine, one not made cannot. */
static double score(const sched_result_t *r)
{
    return r->step_s + SCHED_TIE * r->transfer_s;
}

/* Score of a plan (its result in *res), or INFINITY when it does not fit. */
static double evaluate(const sched_program_t *prog, const sched_opts_t *opts,
                       const sched_actions_t *acts, sched_result_t *res)
{
    size_t budget = opts->budget[STRATA_TIER_DEVICE] ? opts->budget[STRATA_TIER_DEVICE] : SIZE_MAX;
    if (sched_min_device(prog, acts, opts) > budget) return INFINITY;
    sched_t *s = NULL;
    sched_result_t r;
    double t = INFINITY;
    if (STRATA_OK == sched_build(prog, acts, opts, &s, NULL, 0) &&
        STRATA_OK == sched_simulate(s, &r, NULL, NULL, NULL, 0)) {
        t = score(&r);
        if (res) *res = r;
    }
    sched_destroy(s);
    return t;
}

/* No schedule of a plan is faster than its compute alone. */
static double compute_bound(const sched_program_t *prog, const sched_actions_t *acts)
{
    double t = prog->optim_s;
    for (int u = 0; u < prog->nunits; u++) {
        const sched_unit_t *x = &prog->units[u];
        t += x->cost_s[SCHED_COST_FWD] * (1 + sched_unit_regen(prog, acts, u)) +
             sched_recompute_seconds(prog, u, acts) + x->cost_s[SCHED_COST_BWD];
    }
    return t;
}

static int plans_count(int k)
{
    int n = 1;
    for (int i = 0; i < k; i++) {
        n *= SCHED_ACTION_COUNT;
        if (n > EXHAUSTIVE_MAX) return -1;
    }
    return n;
}

/* Uniform plan number i of UNIFORM_PLANS: every name one action, the
 * units' inputs as the fill leaves them (recompute keeps them), or on
 * host, storage, or recomputed in pairs. 0 when the plan is one already
 * seen (no input name: only the first of each action). */
#define UNIFORM_PLANS (4 * SCHED_ACTION_COUNT)
static int uniform_plan(const sched_program_t *prog, int i, sched_actions_t *a)
{
    static const sched_action_t input_as[4] = { SCHED_KEEP, SCHED_HOST, SCHED_STORAGE, SCHED_RECOMPUTE };
    int act = i / 4, in = i % 4, id = sched_program_name_id(prog, SCHED_INPUT_NAME);
    sched_actions_fill(a, prog, (sched_action_t)act);
    if (0 == in) return 1;
    if (id < 0 || input_as[in] == a->action[id]) return 0;
    a->action[id] = input_as[in];
    return 1;
}

/* The plan with index idx: name 0 is the most significant digit, so
 * counting up visits plans in the tie-break order. */
static void plan_of(int idx, int k, sched_actions_t *a)
{
    for (int n = k - 1; n >= 0; n--) {
        a->action[n] = (sched_action_t)(idx % SCHED_ACTION_COUNT);
        idx /= SCHED_ACTION_COUNT;
    }
}

size_t sched_plan_min_device(const sched_program_t *prog, const sched_opts_t *opts)
{
    sched_actions_t a;
    size_t best = SIZE_MAX;
    if (!prog || !opts) return best;
    int k = prog->nnames, n = plans_count(k);
    sched_actions_fill(&a, prog, SCHED_KEEP);
    if (n > 0) {
        for (int i = 0; i < n; i++) {
            plan_of(i, k, &a);
            size_t m = sched_min_device(prog, &a, opts);
            if (m < best) best = m;
        }
        return best;
    }
    /* too many to enumerate: recompute and offload have the smallest
     * device footprints per save; take the best uniform plan (recompute
     * with the inputs it keeps moved off the device among them) */
    for (int i = 0; i < UNIFORM_PLANS; i++) {
        if (!uniform_plan(prog, i, &a)) continue;
        size_t m = sched_min_device(prog, &a, opts);
        if (m < best) best = m;
    }
    return best;
}

strata_status_t sched_plan_auto(const sched_program_t *prog, const sched_opts_t *opts,
                                sched_actions_t *acts_p, sched_result_t *pred_p,
                                char *err, size_t errlen)
{
    if (!prog || !opts || !acts_p)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: NULL argument");
    if (prog->recording || prog->nunits < 1)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: no recorded program");
    int k = prog->nnames, n = plans_count(k);
    sched_actions_t cur, best;
    sched_result_t r, best_r = { 0 };
    double best_t = INFINITY;
    sched_actions_fill(&cur, prog, SCHED_KEEP);
    best = cur;

    if (n > 0) {
        for (int i = 0; i < n; i++) {
            plan_of(i, k, &cur);
            if (compute_bound(prog, &cur) >= best_t) continue;
            double t = evaluate(prog, opts, &cur, &r);
            if (t < best_t) {
                best_t = t;
                best = cur;
                best_r = r;
            }
        }
    } else {
        /* start from the best uniform plan, then move one name at a time
         * while that makes the step faster */
        for (int i = 0; i < UNIFORM_PLANS; i++) {
            if (!uniform_plan(prog, i, &cur)) continue;
            double t = evaluate(prog, opts, &cur, &r);
            if (t < best_t) {
                best_t = t;
                best = cur;
                best_r = r;
            }
        }
        for (int improved = isfinite(best_t); improved;) {
            improved = 0;
            sched_actions_t round = best;
            for (int name = 0; name < k; name++)
                for (int act = 0; act < SCHED_ACTION_COUNT; act++) {
                    if ((sched_action_t)act == round.action[name]) continue;
                    cur = round;
                    cur.action[name] = (sched_action_t)act;
                    if (compute_bound(prog, &cur) >= best_t) continue;
                    double t = evaluate(prog, opts, &cur, &r);
                    if (t < best_t - 1e-12) {
                        best_t = t;
                        best = cur;
                        best_r = r;
                        improved = 1;
                    }
                }
        }
    }
    if (!isfinite(best_t)) {
        char a[32], b[32];
        size_t need = sched_plan_min_device(prog, opts);
        size_t budget = opts->budget[STRATA_TIER_DEVICE];
        if (need <= (budget ? budget : SIZE_MAX))
            return sched_fail(err, errlen, STRATA_ERR_TIER_FULL,
                              "no activation plan fits: the device would fit, but the host "
                              "(budget %s) or storage (budget %s) tier is too small",
                              strata_format_size(opts->budget[STRATA_TIER_PINNED_HOST], a, sizeof a),
                              strata_format_size(opts->budget[STRATA_TIER_STORAGE], b, sizeof b));
        return sched_fail(err, errlen, STRATA_ERR_TIER_FULL,
                          "no activation plan fits a device budget of %s: the smallest device "
                          "budget that fits is %s (%zu bytes)",
                          strata_format_size(budget, a, sizeof a), strata_format_size(need, b, sizeof b),
                          need);
    }
    *acts_p = best;
    if (pred_p) *pred_p = best_r;
    return STRATA_OK;
}

void sched_plan_print(const sched_program_t *prog, const sched_actions_t *acts,
                      const sched_result_t *pred, FILE *out)
{
    char a[32], b[32], c[32], r[32];
    fprintf(out, "activation plan:\n  %-16s %-10s %12s\n", "name", "action", "bytes/step");
    for (int n = 0; n < prog->nnames; n++)
        fprintf(out, "  %-16s %-10s %12s\n", prog->names[n], sched_action_name(acts->action[n]),
                strata_format_size(sched_program_name_bytes(prog, n), a, sizeof a));
    if (!pred) return;
    fprintf(out, "predicted: step %.3f ms, peak device %s, host %s, storage %s\n", pred->step_s * 1e3,
            strata_format_size(sched_device_use(pred), a, sizeof a),
            strata_format_size(pred->peak[STRATA_TIER_PINNED_HOST], b, sizeof b),
            strata_format_size(pred->peak[STRATA_TIER_STORAGE], c, sizeof c));
    if (pred->device_reserve)
        fprintf(out, "           device budget needed %s: that peak and %s kept free against "
                "fragmentation\n", strata_format_size(pred->peak[STRATA_TIER_DEVICE], a, sizeof a),
                strata_format_size(pred->device_reserve, r, sizeof r));
    fprintf(out, "           transfer %.3f ms, exposed %.3f ms, overlap %.1f%%\n",
            pred->transfer_s * 1e3, pred->exposed_transfer_s * 1e3, pred->overlap_frac * 100);
}

void sched_plan_print_measured(const sched_result_t *pred, const sched_result_t *meas, FILE *out)
{
    char a[32], b[32];
    static const char *const tier[STRATA_TIER_COUNT] = { "peak device", "peak host", "peak storage" };
    fprintf(out, "  %-18s %14s %14s %8s\n", "", "predicted", "measured", "error");
#define ROW_S(label, f)                                                                           \
    fprintf(out, "  %-18s %11.3f ms %11.3f ms %7.1f%%\n", label, pred->f * 1e3, meas->f * 1e3,       \
            pred->f > 0 ? 100.0 * (meas->f - pred->f) / pred->f : 0.0)
    ROW_S("step", step_s);
    ROW_S("transfer", transfer_s);
    ROW_S("exposed transfer", exposed_transfer_s);
#undef ROW_S
    fprintf(out, "  %-18s %13.1f%% %13.1f%%\n", "overlap", pred->overlap_frac * 100, meas->overlap_frac * 100);
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        const size_t p = STRATA_TIER_DEVICE == t ? sched_device_use(pred) : pred->peak[t];
        fprintf(out, "  %-18s %14s %14s %7.1f%%\n", tier[t], strata_format_size(p, a, sizeof a),
                strata_format_size(meas->peak[t], b, sizeof b),
                p ? 100.0 * ((double)meas->peak[t] - (double)p) / (double)p : 0.0);
    }
}
