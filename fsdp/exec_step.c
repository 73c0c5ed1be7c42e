/*
 * exec_step.c - activation policies made real: the executor's life with
 * the model and over a step. It holds the policy in force, is created and
 * destroyed with the model, plans at a step's first forward and again at
 * its end, and gives the user the public API between steps. The work is in
 * three files below it (exec_impl.h has their state and draws who calls
 * whom): exec_plan.c makes the sizing pass and the plan, exec_costs.c
 * measures what each step cost, exec_run.c follows the schedule of sched/
 * with tiers block moves and events.
 *
 * Step 1 begins with a sizing pass that records the step program, and the
 * plan is made from it before any backward or update (exec_plan.c: the
 * forward callbacks of step 1's first micro-batch therefore run twice);
 * step 1 then runs the planned schedule like every later step. The costs
 * step 1 measures replace the sizing estimates and the plan is made again
 * (exec_costs.c, then here at the step's end).
 */
#include "config.h"
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- policy ------------------------------------------------------------------------ */

static int pure_keep(const sched_policy_t *p)
{
    if (p->is_auto) return 0;
    if (p->has_default && SCHED_KEEP != p->dflt) return 0;
    for (int i = 0; i < p->nrules; i++)
        if (SCHED_KEEP != p->rules[i].action) return 0;
    return 1;
}

static void update_active(strata_model_t *m)
{
    const fsdp_exec_t *x = m->exec;
    m->exec_active = !pure_keep(&x->pol) || x->trace_prefix[0];
}

static strata_status_t set_policy(strata_model_t *m, const char *text)
{
    fsdp_exec_t *x = m->exec;
    char err[512];
    sched_policy_t p;
    strata_status_t st = sched_policy_parse(text ? text : "", &p, err, sizeof err);
    if (STRATA_OK != st)
        return base_error(m->ctx, st, "act_policy '%s': %s", text ? text : "", err);
    snprintf(x->policy, sizeof x->policy, "%s", text ? text : "");
    x->pol = p;
    update_active(m);
    m->mplan_gen++;
    return STRATA_OK;
}

strata_status_t fsdp_exec_create(strata_model_t *m)
{
    fsdp_exec_t *x = calloc(1, sizeof *x);
    if (!x) return base_error(m->ctx, STRATA_ERR_NOMEM, "activation executor");
    m->exec = x;
    fsdp_mem_set_room(m, fsdp_exec_make_room);
    x->planned_micro = -1;
    snprintf(x->trace_prefix, sizeof x->trace_prefix, "%s", m->ctx->cfg.trace);
    strata_status_t st = set_policy(m, m->ctx->cfg.act_policy);
    if (STRATA_OK != st) return st;
    /* the schedule name is checked now, not at the first step */
    char err[256];
    sched_opts_t o;
    st = sched_opts_from_config(&m->ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
    return STRATA_OK;
}

/* ---- hooks of the step ------------------------------------------------------------------- */

strata_status_t fsdp_exec_step_begin(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    strata_tiers_reset_peaks(m->ctx);
    fsdp_exec_t *x = m->exec;
    if (!x) return STRATA_OK;
    x->transfer_s = x->exposed_s = x->verify_s = 0;
    x->moved_bytes = 0;
    x->t_plan0 = base_now();
    if (x->fwd_s)
        for (int u = 0; u < m->nunits; u++) {
            x->fwd_s[u] = x->bwd_s[u] = x->ag_s[u] = x->rs_s[u] = 0;
            x->ag_n[u] = x->rs_n[u] = 0;
        }
    x->nspans = 0;
    x->have_prev = 0;
    if (m->exec_active && x->trace_prefix[0] && !x->trace) {
        strata_status_t st = sched_trace_create(m->ctx->rank, &x->trace);
        if (STRATA_OK != st) return base_error(m->ctx, st, "trace");
    }
    return STRATA_OK;
}

/* Every name kept and no trace: the executor does not run, but the first
 * step is admitted all the same. The sizing pass records the program and
 * the keep plan is made, so a device budget too small is refused here,
 * before any backward or update, with the budget that fits, and not by an
 * allocation in the middle of the step. */
static strata_status_t admit_keep(strata_model_t *m, const void *input, size_t in_bytes)
{
    strata_status_t st = fsdp_exec_sizing(m, input, in_bytes);
    st = fsdp_agree(m, st);
    if (STRATA_OK == st) st = fsdp_exec_sizing_agree(m);
    if (STRATA_OK == st) st = fsdp_exec_plan(m, m->n_micro, 0);
    fsdp_exec_uninstall(m);   /* admitted: the keep path runs without a schedule */
    return st;
}

strata_status_t fsdp_exec_forward_begin(strata_model_t *m, const void *input, size_t in_bytes)
{
    fsdp_exec_t *x = m->exec;
    if (!m->exec_active) return x && !x->prog ? admit_keep(m, input, in_bytes) : STRATA_OK;
    strata_status_t st;
    if (!x->prog) {
        st = fsdp_exec_sizing(m, input, in_bytes);
        st = fsdp_agree(m, st);
        if (STRATA_OK == st) st = fsdp_exec_sizing_agree(m);
        if (STRATA_OK != st) return st;
        st = fsdp_exec_plan(m, m->n_micro, 1);
        if (STRATA_OK != st) return st;
        x->print_after = x->pol.is_auto;
        x->t_plan0 = base_now();
    } else if (!x->sched || (0 == m->micro && x->planned_micro != m->n_micro)) {
        st = fsdp_exec_plan(m, m->n_micro, !x->sched);
        if (STRATA_OK != st) return st;
    }
    fsdp_exec_micro_reset(m);
    return STRATA_OK;
}

strata_status_t fsdp_exec_forward_end(strata_model_t *m)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x) return STRATA_OK;
    char err[512];
    strata_status_t st = sched_check_end(x->prog, m->nunits, err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
    return STRATA_OK;
}

/* Rank 0, at the end of the first step a plan of policy auto ran: what the
 * step measured beside what the plan predicted. */
static void print_measured(strata_model_t *m, double now)
{
    const fsdp_exec_t *x = m->exec;
    const strata_model_stats_t *s = &m->stats;
    sched_result_t meas = { 0 };
    fsdp_mem_stats_t ms;
    fsdp_mem_stats(m->ctx, &ms);
    meas.step_s = (now - x->t_plan0) / (m->n_micro > 0 ? m->n_micro : 1);
    meas.transfer_s = s->transfer_s;
    meas.exposed_transfer_s = s->exposed_transfer_s;
    meas.overlap_frac = s->overlap_frac;
    for (int t = 0; t < STRATA_TIER_COUNT; t++) meas.peak[t] = ms.peak[t];
    printf("strata: step %d, measured beside the plan's prediction:\n", m->step_count);
    sched_plan_print_measured(&x->pred, &meas, stdout);
    fflush(stdout);
}

strata_status_t fsdp_exec_step_end(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    strata_model_stats_t *s = &m->stats;
    fsdp_exec_t *x = m->exec;
    s->transfer_s = s->exposed_transfer_s = 0;
    s->overlap_frac = 1.0;
    s->offload_bytes = 0;
    s->predicted_step_s = 0;
    if (!x) return STRATA_OK;
    double now = base_now();
    x->step++;
    s->transfer_s = x->transfer_s;
    s->exposed_transfer_s = x->exposed_s < x->transfer_s ? x->exposed_s : x->transfer_s;
    s->overlap_frac = x->transfer_s > 0 ? 1.0 - s->exposed_transfer_s / x->transfer_s : 1.0;
    s->offload_bytes = x->moved_bytes;
    if (!exec_following(m)) return STRATA_OK;
    s->predicted_step_s = x->pred.step_s * (m->n_micro > 0 ? m->n_micro : 1);
    if (x->trace) {
        sched_trace_step(x->trace, x->step, m->t_step0, now - m->t_step0);
        fsdp_exec_trace_memory(m);
    }
    if (x->print_after && 0 == m->ctx->rank) print_measured(m, now);
    x->print_after = 0;
    /* after later steps the plan in force predicts again with the costs
     * measured so far: predicted_step_s follows what the steps cost, and
     * the schedule does not change under the run */
    if (x->costs_measured) return fsdp_exec_costs_repredict(m);
    /* plan again with what step 1 measured */
    x->costs_measured = 1;
    strata_status_t st = fsdp_exec_costs_first(m);
    if (STRATA_OK == st) st = fsdp_exec_plan(m, m->n_micro, 1);
    if (STRATA_OK != st) {
        /* the step itself succeeded: keep the plan it ran with */
        strata_warn(m->ctx, "activation plan with step 1's costs failed (%s); keeping "
                    "the first plan", strata_last_error(m->ctx));
        return STRATA_OK;
    }
    x->print_after = x->pol.is_auto;
    return STRATA_OK;
}

const sched_program_t *fsdp_exec_program(const strata_model_t *m)
{
    return m->exec && m->exec->prog && !m->exec->prog->recording ? m->exec->prog : NULL;
}

static void write_trace(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    if (!x->trace || !x->trace_prefix[0]) return;
    char path[600], err[256];
    snprintf(path, sizeof path, "%s.%d.json", x->trace_prefix, m->ctx->rank);
    if (STRATA_OK != sched_trace_write(x->trace, path, err, sizeof err))
        strata_warn(m->ctx, "trace %s not written: %s", path, err);
}

void fsdp_exec_destroy(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    fsdp_exec_t *x = m->exec;
    if (!x) return;
    if (x->cost_req) fsdp_exec_costs_take(m, NULL);   /* every rank posted it */
    free(x->cost_v);
    free(x->cost_all);
    write_trace(m);
    fsdp_exec_uninstall(m);
    sched_program_destroy(x->prog);
    sched_trace_destroy(x->trace);
    free(x->ubytes); free(x->soff); free(x->fwd_s); free(x->bwd_s);
    free(x->ag_s); free(x->ag_n); free(x->rs_s); free(x->rs_n); free(x->hist);
    free(x->spans);
    free(x);
    m->exec = NULL;
    m->exec_active = 0;
    fsdp_mem_set_room(m, NULL);
}

/* ---- public API ------------------------------------------------------------------------- */

static strata_status_t between_steps(strata_model_t *m, const char *fn)
{
    if (!m) return STRATA_ERR_INVALID;
    if (MODEL_READY != m->state || !m->exec)
        return base_error(m->ctx, STRATA_ERR_STATE, "%s: commit the model first", fn);
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "%s: only between steps", fn);
    return STRATA_OK;
}

strata_status_t strata_model_set_act_policy(strata_model_t *m, const char *policy)
{
    strata_status_t st = between_steps(m, "strata_model_set_act_policy");
    if (STRATA_OK != st) return st;
    fsdp_exec_t *x = m->exec;
    char old[512];
    sched_policy_t oldp = x->pol;
    snprintf(old, sizeof old, "%s", x->policy);
    st = set_policy(m, policy ? policy : m->ctx->cfg.act_policy);
    if (STRATA_OK != st) return st;
    if (x->prog && m->exec_active) {
        /* a program is known: resolve now, so unknown names fail here */
        char err[1024];
        sched_actions_t acts;
        if (!x->pol.is_auto &&
            STRATA_OK != (st = sched_policy_resolve(&x->pol, x->prog, &acts, err, sizeof err))) {
            snprintf(x->policy, sizeof x->policy, "%s", old);
            x->pol = oldp;
            update_active(m);
            return base_error(m->ctx, st, "%s", err);
        }
        /* the next step plans (collectively, at its first forward) */
        fsdp_exec_uninstall(m);
    }
    return STRATA_OK;
}

strata_status_t strata_model_replan(strata_model_t *m)
{
    strata_status_t st = between_steps(m, "strata_model_replan");
    if (STRATA_OK != st) return st;
    fsdp_exec_t *x = m->exec;
    fsdp_exec_uninstall(m);
    sched_program_destroy(x->prog);
    x->prog = NULL;
    m->coll_agreed = 0;     /* checked per call again until the next program check */
    return STRATA_OK;
}

strata_status_t strata_model_trace(strata_model_t *m, const char *prefix)
{
    if (!m) return STRATA_ERR_INVALID;
    if (!m->exec)
        return base_error(m->ctx, STRATA_ERR_STATE, "strata_model_trace: commit the model "
                          "first");
    fsdp_exec_t *x = m->exec;
    if (prefix && strlen(prefix) >= sizeof x->trace_prefix)
        return base_error(m->ctx, STRATA_ERR_INVALID, "trace prefix longer than %zu bytes",
                          sizeof x->trace_prefix - 1);
    write_trace(m);
    snprintf(x->trace_prefix, sizeof x->trace_prefix, "%s", prefix ? prefix : "");
    int was = m->exec_active;
    update_active(m);
    if (PHASE_IDLE != m->phase) m->exec_active = was;   /* takes effect with the next step */
    return STRATA_OK;
}
