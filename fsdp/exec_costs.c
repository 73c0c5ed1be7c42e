/*
 * exec_costs.c - the costs the activation executor measures in every
 * step: the spans of the step's collectives, the exchange that makes the
 * costs the same on every rank, and what becomes of them at the step's end
 * (exec_step.c): they go into the step program in place of the sizing pass's
 * estimates (exec_plan.c). After step 1 its costs replace the estimates and
 * exec_step.c plans again; after every later step the plan in force predicts
 * again with each cost's median over the last EXEC_HIST steps, and the
 * schedule does not change under the run.
 */
#include "config.h"
#include "exec_impl.h"
#include "comm/comm.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- measured costs ------------------------------------------------------------------- */

static int cmp_span(const void *a, const void *b)
{
    const struct comm_span *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* The step's collectives as the simulator's comm engine, which runs one
 * at a time, would have run them: each in start order costs from its
 * start or the previous one's end, whichever is later, to its end, so the
 * costs add up to the time some collective was in flight (MPI runs them
 * side by side; the simulator one after the other). */
static void comm_costs(fsdp_exec_t *x)
{
    qsort(x->spans, (size_t)x->nspans, sizeof *x->spans, cmp_span);
    double last = 0;
    for (int i = 0; i < x->nspans; i++) {
        const struct comm_span *c = &x->spans[i];
        double from = c->t0 > last ? c->t0 : last, d = c->t1 > from ? c->t1 - from : 0;
        if (c->ag) { x->ag_s[c->unit] += d; x->ag_n[c->unit]++; }
        else { x->rs_s[c->unit] += d; x->rs_n[c->unit]++; }
        if (c->t1 > last) last = c->t1;
    }
    x->nspans = 0;
}

/* This step's costs, the same on every rank, into r[0..4L]: per unit
 * forward, backward (per micro-batch), all-gather and reduce-scatter (per
 * use; the program's value where none was timed), then the optimizer.
 * Every unit ends with a collective that waits for the last rank, so the
 * ranks advance at the pace of the slowest: compute costs are the maximum
 * over ranks, and a collective's the minimum (what the last rank to
 * arrive saw of it: the rest is waiting for that rank). The exchange is
 * posted at one step's end (costs_post) and taken at the next's
 * (fsdp_exec_costs_take), so that it adds no synchronisation to the step. */
static strata_status_t costs_post(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    int L = m->nunits, M = m->n_micro > 0 ? m->n_micro : 1;
    size_t n = (size_t)(4 * L + 1);
    int W = strata_group_size(m->ctx->world);
    if (x->cost_req) return base_error(m->ctx, STRATA_ERR_STATE, "costs: an exchange is pending");
    if (!x->cost_v) {
        x->cost_v = malloc(n * sizeof *x->cost_v);
        x->cost_all = malloc(n * (size_t)W * sizeof *x->cost_all);
        if (!x->cost_v || !x->cost_all) return base_error(m->ctx, STRATA_ERR_NOMEM, "costs");
    }
    float *v = x->cost_v;
    comm_costs(x);
    for (int u = 0; u < L; u++) {
        v[u] = (float)(x->fwd_s[u] / M);
        v[L + u] = (float)(x->bwd_s[u] / M);
        v[2 * L + u] = (float)(x->ag_n[u] ? x->ag_s[u] / x->ag_n[u]
                                          : x->prog->units[u].cost_s[SCHED_COST_AG]);
        v[3 * L + u] = (float)(x->rs_n[u] ? x->rs_s[u] / x->rs_n[u]
                                          : x->prog->units[u].cost_s[SCHED_COST_RS]);
    }
    v[4 * L] = (float)m->optim_s;
    pthread_mutex_lock(&m->lock);
    /* n follows the unit count, agreed at commit */
    strata_status_t st = comm_start(m->ctx->world, COLL_ALLGATHER, v, x->cost_all, n, STRATA_F32,
                                    STRATA_SUM, m->coll_agreed, &x->cost_req);
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* Complete the pending exchange; r (may be NULL) receives the costs. */
strata_status_t fsdp_exec_costs_take(strata_model_t *m, float *r)
{
    fsdp_exec_t *x = m->exec;
    if (!x->cost_req) return STRATA_ERR_STATE;
    int L = m->nunits;
    size_t n = (size_t)(4 * L + 1);
    int W = strata_group_size(m->ctx->world);
    pthread_mutex_lock(&m->lock);
    strata_status_t st = strata_request_wait(x->cost_req);
    pthread_mutex_unlock(&m->lock);
    x->cost_req = NULL;
    if (STRATA_OK != st || !r) return st;
    const float *all = x->cost_all;
    for (size_t i = 0; i < n; i++) {
        int comm = i >= (size_t)(2 * L) && i < (size_t)(4 * L);
        r[i] = all[i];
        for (int g = 1; g < W; g++) {
            float y = all[(size_t)g * n + i];
            if (comm ? y < r[i] : y > r[i]) r[i] = y;
        }
    }
    return STRATA_OK;
}

static void set_costs(strata_model_t *m, const double *c)
{
    fsdp_exec_t *x = m->exec;
    int L = m->nunits;
    for (int u = 0; u < L; u++) {
        sched_record_cost(x->prog, u, SCHED_COST_FWD, c[u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_BWD, c[L + u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_AG, c[2 * L + u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_RS, c[3 * L + u], NULL, 0);
        /* declared work (strata_save_work): each save's share of the
         * measured forward is its producing cost, what a recompute of it
         * alone is predicted to take */
        const strata_unit_t *su = m->units[u];
        for (int i = 0; su->fwd_work > 0 && i < su->nsave_work && i < x->prog->units[u].nsaves; i++)
            sched_record_save_cost(x->prog, u, i, c[u] * su->save_work[i] / su->fwd_work, NULL, 0);
    }
    x->prog->optim_s = c[4 * L];
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* After step 1 (first = 1): its costs replace the sizing pass's estimates.
 * After every later step: each cost becomes its median over the last
 * EXEC_HIST steps since step 1 (which is not typical: first touches, the
 * sizing pass); a median, as one step slowed by something else on the
 * machine should not move the plan's predictions. */
static strata_status_t measured_costs(strata_model_t *m, int first)
{
    fsdp_exec_t *x = m->exec;
    int L = m->nunits, n = 4 * L + 1;
    float *r = malloc((size_t)n * sizeof *r);
    double *c = malloc((size_t)n * sizeof *c);
    strata_status_t st = r && c ? STRATA_OK : STRATA_ERR_NOMEM;
    int have = 0;
    if (STRATA_OK == st && first) {
        /* the plan needs them now */
        if (x->cost_req) fsdp_exec_costs_take(m, NULL);
        st = costs_post(m);
        if (STRATA_OK == st) st = fsdp_exec_costs_take(m, r);
        have = STRATA_OK == st;
    } else if (STRATA_OK == st) {
        /* the previous step's, exchanged meanwhile; this step's go out */
        if (x->cost_req) {
            st = fsdp_exec_costs_take(m, r);
            have = STRATA_OK == st;
        }
        if (STRATA_OK == st) st = costs_post(m);
    }
    if (STRATA_OK == st && have) {
        if (first) {
            for (int i = 0; i < n; i++) c[i] = r[i];
        } else {
            memcpy(x->hist + (size_t)(x->hist_steps % EXEC_HIST) * n, r, (size_t)n * sizeof *r);
            x->hist_steps++;
            int k = x->hist_steps < EXEC_HIST ? x->hist_steps : EXEC_HIST;
            float col[EXEC_HIST];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < k; j++) col[j] = x->hist[(size_t)j * n + i];
                qsort(col, (size_t)k, sizeof *col, cmp_float);
                c[i] = k % 2 ? col[k / 2] : 0.5 * (col[k / 2 - 1] + col[k / 2]);
            }
        }
        set_costs(m, c);
    } else if (STRATA_ERR_NOMEM == st) {
        st = base_error(m->ctx, st, "costs");
    }
    free(r);
    free(c);
    return st;
}

strata_status_t fsdp_exec_costs_first(strata_model_t *m)
{
    return measured_costs(m, 1);
}

strata_status_t fsdp_exec_costs_repredict(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    strata_status_t st = measured_costs(m, 0);
    if (STRATA_OK != st) return st;
    sched_result_t r = { 0 };
    sched_update_costs(x->sched);
    if (STRATA_OK == sched_simulate(x->sched, &r, NULL, NULL, NULL, 0)) x->pred = r;
    if (0 == m->ctx->rank) {
        double f = 0, b = 0, ag = 0, rs = 0;
        for (int u = 0; u < m->nunits; u++) {
            f += x->prog->units[u].cost_s[SCHED_COST_FWD];
            b += x->prog->units[u].cost_s[SCHED_COST_BWD];
            ag += x->prog->units[u].cost_s[SCHED_COST_AG];
            rs += x->prog->units[u].cost_s[SCHED_COST_RS];
        }
        strata_debug(m->ctx, "step %d: measured %.1f ms; the plan now predicts %.1f ms "
                     "(transfers %.1f, exposed %.1f, comm wait %.1f; costs F %.1f B %.1f "
                     "AG %.1f RS %.1f optim %.1f)", m->step_count, 1e3 * m->stats.step_s,
                     1e3 * r.step_s, 1e3 * r.transfer_s, 1e3 * r.exposed_transfer_s,
                     1e3 * r.comm_wait_s, 1e3 * f, 1e3 * b, 1e3 * ag, 1e3 * rs,
                     1e3 * x->prog->optim_s);
    }
    return STRATA_OK;
}

void fsdp_exec_trace_comm(strata_model_t *m, const char *name, int unit, double t0, double t1,
                          size_t bytes)
{
    fsdp_exec_t *x = m->exec;
    int ag = 'A' == name[0], known = unit >= 0 && unit < m->nunits && t0 > 0;
    /* a collective of the step, from its start to when it was seen
     * complete (by the progress thread or a callback's progress call;
     * else when compute waited for it: t1) */
    if (known) {
        double done = ag ? m->units[unit]->t_gdone : m->units[unit]->t_rdone;
        if (done >= t0 && done <= t1) t1 = done;
    }
    if (x && x->ag_s && known && PHASE_IDLE != m->phase) {
        /* comm_costs turns the spans into costs */
        if (x->nspans == x->cap_spans) {
            int cap = x->cap_spans ? 2 * x->cap_spans : 64;
            struct comm_span *n = realloc(x->spans, (size_t)cap * sizeof *n);
            if (n) {
                x->spans = n;
                x->cap_spans = cap;
            }
        }
        if (x->nspans < x->cap_spans)
            x->spans[x->nspans++] = (struct comm_span){ t0, t1, unit, ag };
    }
    if (!x || !x->trace || t0 <= 0) return;
    sched_trace_op(x->trace, SCHED_COMM, name, t0, t1 - t0, unit, NULL, bytes);
}
