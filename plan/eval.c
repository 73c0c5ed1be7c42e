/*
 * eval.c - the planner's step program (sched_program_t) from the
 * units, with costs in seconds from the hardware file, and its evaluation
 * by sched_build + sched_simulate, the code the runtime schedules with.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

double plan_compute_time(const plan_hw_t *hw, double flops, double mem_bytes)
{
    return flops / (hw->flops * hw->mfu) + mem_bytes / hw->hbm_bw;
}

static strata_status_t check_shape(const plan_model_t *m, const plan_shape_t *sh, char *err, size_t errlen)
{
    if (sh->fsdp < 1 || sh->replicas < 1 || sh->ep < 1 || sh->micro < 1 || sh->seq < 1 || sh->accum < 1 ||
        sh->prefetch < 0)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: --fsdp, --replicas, --ep, --micro, --seq "
                          "and --accum must be >= 1, --prefetch >= 0");
    if (!(sh->moe_imbalance == 0 || (sh->moe_imbalance >= 1 && sh->moe_imbalance <= 64)) ||
        (sh->moe_imbalance > 1 && !m->moe))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: --moe-imbalance %g: a number in "
                          "[1, 64] for a model with experts ('%s' has %s)", sh->moe_imbalance, m->name,
                          m->moe ? "them" : "none");
    if (sh->ep > 1 && !m->moe)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: --ep %ld: model '%s' has no experts", sh->ep, m->name);
    if (sh->ep > 1 && (m->experts % sh->ep || sh->fsdp % sh->ep))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: --ep %ld must divide the routed experts (%ld) "
                          "and --fsdp (%ld)", sh->ep, m->experts, sh->fsdp);
    if (PLAN_GPT == m->family && sh->seq > m->max_seq)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: --seq %ld is longer than the model's max_seq %ld",
                          sh->seq, m->max_seq);
    return STRATA_OK;
}

/* The backward also zeroes its unsharded gradients and its input's
 * gradient before it accumulates into them (one write each): their bytes. */
static double zero_bytes(const plan_t *p, const plan_unit_t *u)
{
    const plan_shape_t *sh = &p->shape;
    int held = sh->accum > 1 && !sh->accum_sharded;   /* the gradients stay between micro-batches */
    return held ? u->gin_bytes : u->gin_bytes + u->params * p->model.grad_b;
}

/* Costs of unit u (seconds): compute from FLOPs, collectives from the tables. */
static void unit_costs(const plan_t *p, const plan_unit_t *u, double c[SCHED_COST_COUNT])
{
    const plan_hw_t *hw = &p->hw;
    const plan_shape_t *sh = &p->shape;
    double a = p->model.compute_b, N = (double)sh->fsdp;
    /* dispatch + combine on the critical path of the unit's compute */
    double a2a = u->a2a_bytes > 0 ? 2 * plan_coll_time(hw, PLAN_A2A, sh->ep, sh->ep, u->a2a_bytes / 2) : 0;
    c[SCHED_COST_FWD] = plan_compute_time(hw, u->fwd_flops, u->fwd_mem_bytes) + a2a;
    double zero = zero_bytes(p, u);
    c[SCHED_COST_BWD] = (u->bwd_factor > 0 ?
        plan_compute_time(hw, u->bwd_factor * u->fwd_flops, u->bwd_factor * u->fwd_mem_bytes) + a2a : 0) +
        zero / hw->hbm_bw;
    double local = sh->fsdp > sh->ep ? u->local_params / (double)sh->ep * a : 0;
    c[SCHED_COST_AG] = plan_coll_time(hw, PLAN_AG, sh->fsdp, sh->fsdp, u->gathered * a) +
                       plan_coll_time(hw, PLAN_AG, sh->fsdp / sh->ep, sh->fsdp, local);
    /* gradients reduce-scattered in the reduce dtype (default their own:
     * the runtime reduces its fp32 gradients in fp32 unless its
     * reduce_dtype says otherwise); EP-local experts over the fsdp/ep
     * ranks that hold the same experts; replicas all-reduce the shard */
    double g = p->model.reduce_b;
    double rs = plan_coll_time(hw, PLAN_RS, sh->fsdp, sh->fsdp, u->gathered * g);
    if (u->local_params > 0)
        rs += plan_coll_time(hw, PLAN_RS, sh->fsdp / sh->ep, sh->fsdp, u->local_params / (double)sh->ep * g);
    if (sh->replicas > 1)
        rs += plan_coll_time(hw, PLAN_AR, sh->replicas, sh->fsdp * sh->replicas, u->params / N * g);
    c[SCHED_COST_RS] = rs;
    /* What a collective costs the compute (collectives.compute_cost, x
     * per second of the collective's own time): where collectives advance
     * only inside the compute thread's calls, or take its cores, as MPI on
     * a CPU node does, the unit's compute is that much longer, and what is
     * left of the collective (1 - x, none from x = 1) runs beside it. The
     * gather before a forward; the re-gather and the reduce-scatter of a
     * backward. */
    double x = hw->coll_compute, beside = x < 1 ? 1 - x : 0;
    c[SCHED_COST_FWD] += x * c[SCHED_COST_AG];
    c[SCHED_COST_BWD] += x * (c[SCHED_COST_AG] + c[SCHED_COST_RS]);
    c[SCHED_COST_AG] *= beside;
    c[SCHED_COST_RS] *= beside;
    /* collectives.sync_s at each collective's start (the runtime's
     * comm_check, where the first rank waits for the last, and the start
     * itself, both on the compute thread): one before a forward, two in a
     * backward, three with replicas */
    if (sh->fsdp > 1) {
        c[SCHED_COST_FWD] += hw->coll_sync;
        c[SCHED_COST_BWD] += (sh->replicas > 1 ? 3 : 2) * hw->coll_sync;
    }
    if (1 == sh->fsdp) {
        /* a group of one: the runtime copies the unit in for each use and
         * its gradients out, right away on the compute thread */
        c[SCHED_COST_AG] = c[SCHED_COST_RS] = 0;
        c[SCHED_COST_FWD] += 2 * u->gathered * a / hw->hbm_bw;
        c[SCHED_COST_BWD] += 2 * u->gathered * (a + p->model.grad_b) / hw->hbm_bw;
    }
}

/* What unit u's ops move through the resources that ops on other engines
 * share (sched_res_t), where the hardware file says they are shared;
 * sched_simulate runs ops drawing on one at once at their share of it. */
static strata_status_t unit_shares(plan_t *p, const plan_unit_t *u, int idx, char *err, size_t errlen)
{
    const plan_hw_t *hw = &p->hw;
    const plan_shape_t *sh = &p->shape;
    /* gradients on the wire in the reduce dtype, as unit_costs times them */
    double a = p->model.compute_b, g = p->model.reduce_b, N = (double)sh->fsdp;
    double b[SCHED_COST_COUNT][SCHED_RES_COUNT] = { { 0 } };
    if (hw->hbm_shared) {
        /* the memory-bound traffic the costs charge at HBM bandwidth */
        b[SCHED_COST_FWD][SCHED_RES_HBM] = u->fwd_mem_bytes;
        b[SCHED_COST_BWD][SCHED_RES_HBM] = u->bwd_factor * u->fwd_mem_bytes + zero_bytes(p, u);
    }
    if (hw->coll_on_ce && sh->fsdp > 1) {
        /* a ring moves (n-1)/n of the gathered bytes through each rank */
        double local = sh->fsdp > sh->ep ? u->local_params / (double)sh->ep : 0;
        b[SCHED_COST_AG][SCHED_RES_CE] = (u->gathered + local) * a * (N - 1) / N;
        b[SCHED_COST_RS][SCHED_RES_CE] = (u->gathered + local) * g * (N - 1) / N;
    }
    if (hw->nic_bw > 0) {
        double d = (double)hw->domain;
        /* a group over n > d ranks brings S (n-d)/n into each domain, over
         * its d devices' NICs; an all-to-all sends (n-d)/n of each rank's
         * bytes out of its domain through its own NIC */
        if (N > d) {
            b[SCHED_COST_AG][SCHED_RES_NIC] = u->gathered * a * (N - d) / (N * d);
            b[SCHED_COST_RS][SCHED_RES_NIC] = u->gathered * g * (N - d) / (N * d);
        }
        /* the replicas' all-reduce of the shard (in RS): a ring sends
         * 2 (R-1)/R of it, to peers in other domains once the groups fill
         * one (fsdp x replicas ranks over domains of d) */
        double R = (double)sh->replicas;
        if (R > 1 && N * R > d)
            b[SCHED_COST_RS][SCHED_RES_NIC] += 2 * (u->params / N) * g * (R - 1) / R;
        if (u->a2a_bytes > 0 && (double)sh->ep > d) {
            double e = (double)sh->ep;
            b[SCHED_COST_FWD][SCHED_RES_NIC] = b[SCHED_COST_BWD][SCHED_RES_NIC] = u->a2a_bytes * (e - d) / e;
        }
    }
    strata_status_t st = STRATA_OK;
    for (int k = 0; STRATA_OK == st && k < SCHED_COST_COUNT; k++)
        for (int r = 0; STRATA_OK == st && r < SCHED_RES_COUNT; r++)
            if (b[k][r] > 0)
                st = sched_record_cost_res(p->prog, idx, (sched_cost_t)k, (sched_res_t)r, b[k][r], err, errlen);
    return st;
}

/* The opts' shared resources from the hardware file: each 0 (the plain
 * simulation) unless its field is set. The host link's both-ways rate
 * binds only where it is below the sum of the two directions (PCIe); a
 * CPU's tiers have no link, and its paced copy engines run each
 * direction on its own. */
static void share_opts(const plan_hw_t *hw, sched_opts_t *o)
{
    o->share_bw[SCHED_RES_LINK] = !hw->cpu && hw->both_bw < hw->d2h_bw + hw->h2d_bw ? hw->both_bw : 0;
    o->share_bw[SCHED_RES_CE] = hw->ce_bw;
    o->share_bw[SCHED_RES_HBM] = hw->hbm_shared ? hw->hbm_bw : 0;
    o->share_bw[SCHED_RES_NIC] = hw->nic_bw;
}

double plan_save_cost(const plan_t *p, const plan_save_t *s)
{
    double a2a = s->a2a_bytes > 0 ? plan_coll_time(&p->hw, PLAN_A2A, p->shape.ep, p->shape.ep, s->a2a_bytes) : 0;
    return plan_compute_time(&p->hw, s->flops, s->mem_bytes) + a2a;
}

static strata_status_t build_program(plan_t *p, char *err, size_t errlen)
{
    strata_status_t st = sched_program_create(&p->prog);
    if (STRATA_OK == st) st = sched_record_begin(p->prog);
    for (int i = 0; STRATA_OK == st && i < p->nunits; i++) {
        const plan_unit_t *u = &p->units[i];
        int idx;
        double c[SCHED_COST_COUNT];
        /* every buffer as the runtime allocates it (plan_buf): the
         * gathered copy and the unsharded gradients of the padded unit,
         * the latter held all step with --accum > 1 (resident) unless
         * they are reduce-scattered after each micro-batch */
        double pad = ceil(plan_unit_gathered(u, &p->shape) / (double)p->shape.fsdp) * (double)p->shape.fsdp;
        double grads = p->shape.accum > 1 && !p->shape.accum_sharded ? 0 : plan_buf(pad * p->model.grad_b);
        st = sched_record_unit(p->prog, u->name, (size_t)plan_buf(pad * p->model.compute_b), &idx, err, errlen);
        if (STRATA_OK == st)
            st = sched_record_unit_mem(p->prog, idx, (size_t)grads, (size_t)plan_buf(u->out_bytes),
                                       u->gin_bytes > 0 ? (size_t)plan_buf(u->gin_bytes) : 0, NULL, err, errlen);
        for (int s = 0; STRATA_OK == st && s < u->nsaves; s++)
            st = sched_record_save(p->prog, u->saves[s].name, (size_t)plan_buf(u->saves[s].bytes), err, errlen);
        /* its input, the output of the unit before, a save as the runtime
         * records it (the first unit's, the step's tokens, is left out) */
        if (STRATA_OK == st && i > 0 && p->units[i - 1].out_bytes > 0)
            st = sched_record_save(p->prog, SCHED_INPUT_NAME, (size_t)plan_buf(p->units[i - 1].out_bytes),
                                   err, errlen);
        /* recompute at name granularity: RECOMPUTE(u) sums these */
        for (int s = 0; STRATA_OK == st && s < u->nsaves; s++)
            st = sched_record_save_cost(p->prog, idx, s, plan_save_cost(p, &u->saves[s]), err, errlen);
        unit_costs(p, u, c);
        for (int k = 0; STRATA_OK == st && k < SCHED_COST_COUNT; k++)
            st = sched_record_cost(p->prog, idx, (sched_cost_t)k, c[k], err, errlen);
        if (STRATA_OK == st) st = unit_shares(p, u, idx, err, errlen);
    }
    /* AdamW on the local shards: memory-bound, each state read and written */
    const plan_model_t *m = &p->model;
    double per = m->param_b + m->grad_b + m->master_b + m->optim_b * m->optim_states;
    double optim_s = 2 * p->mem.params_total / (double)p->shape.fsdp * per / p->hw.hbm_bw;
    if (STRATA_OK == st) st = sched_record_end(p->prog, (size_t)(p->mem.resident + p->mem.ws_cached +
                                                                 p->mem.reserve), optim_s, err, errlen);
    if (STRATA_OK == st) p->prog->reserve_bytes = (size_t)p->mem.reserve;
    return st;
}

/* The runtime keeps workspace blocks between calls unless every name is
 * kept (and no trace is written): then each call's workspace lives while
 * it runs; else the kept blocks are resident (plan_memory). */
static void workspace_model(plan_t *p, int all_keep)
{
    for (int i = 0; i < p->nunits; i++) {
        sched_unit_t *x = &p->prog->units[i];
        const plan_unit_t *u = &p->units[i];
        x->work_bytes[0] = all_keep && u->workspace > 0 ? (size_t)plan_buf(u->workspace) : 0;
        x->work_bytes[1] = all_keep && u->bwd_workspace > 0 ? (size_t)plan_buf(u->bwd_workspace) : 0;
    }
    p->prog->resident_bytes = (size_t)(p->mem.resident + (all_keep ? 0 : p->mem.ws_cached) + p->mem.reserve);
    p->prog->reserve_bytes = (size_t)p->mem.reserve;
}

static int all_keep(const plan_t *p, const sched_actions_t *acts)
{
    for (int n = 0; n < p->prog->nnames; n++)
        if (SCHED_KEEP != acts->action[n]) return 0;
    return 1;
}

strata_status_t plan_create(const plan_model_t *m, const plan_hw_t *hw, const plan_shape_t *sh,
                            plan_t **plan_p, char *err, size_t errlen)
{
    strata_status_t st = check_shape(m, sh, err, errlen);
    if (STRATA_OK != st) return st;
    plan_t *p = calloc(1, sizeof *p);
    if (!p) return sched_fail(err, errlen, STRATA_ERR_NOMEM, "plan: out of memory");
    p->model = *m;
    p->hw = *hw;
    p->shape = *sh;
    if (sh->hbm_override > 0) {
        p->hw.hbm_bytes = sh->hbm_override;
        p->hw.hbm_derived = 0;
    }
    st = plan_units(m, sh, &p->units, &p->nunits, err, errlen);
    if (STRATA_OK == st) {
        plan_memory(m, sh, p->units, p->nunits, &p->mem);
        for (int i = 0; i < p->nunits; i++) p->model_flops_step += p->units[i].model_flops;
        st = build_program(p, err, errlen);
    }
    if (STRATA_OK != st) {
        plan_destroy(p);
        return st;
    }
    sched_opts_defaults(&p->opts);
    p->opts.link.d2h_bw = hw->d2h_bw;
    p->opts.link.h2d_bw = hw->h2d_bw;
    p->opts.link.storage_bw = hw->storage_bw;
    p->opts.link.latency = hw->link_latency;
    p->opts.link.chunk = hw->chunk;
    p->opts.prefetch = (int)sh->prefetch;
    share_opts(&p->hw, &p->opts);
    /* the training state's placement takes its bytes out of these */
    p->resident_all = p->mem.resident;
    p->optim_all_s = p->prog->optim_s;
    p->home = calloc((size_t)p->nunits, sizeof *p->home);
    st = p->home ? plan_state_reset(p, err, errlen)
                 : sched_fail(err, errlen, STRATA_ERR_NOMEM, "plan: out of memory");
    if (STRATA_OK != st) {
        plan_destroy(p);
        return st;
    }
    *plan_p = p;
    return STRATA_OK;
}

void plan_destroy(plan_t *p)
{
    if (!p) return;
    sched_program_destroy(p->prog);
    free(p->home);
    free(p->units);
    free(p);
}

/* ------------------------------------------------------------ evaluation */

/* Copies that take the compute's cores (host_link.compute_cost y, a CPU
 * node's copy engine): the unit's compute pays y of each chunk the
 * schedule moves, a D2H in the forward of the unit that saved it, an H2D
 * in its backward. Applied to the program's costs once the schedule is
 * built (it knows which saves move), where y > 0. Returns the costs
 * before, for copy_costs_restore; NULL: out of memory. */
static double *copy_costs(plan_t *p, sched_t *s)
{
    double y = p->hw.link_compute;
    double *saved = malloc(2 * (size_t)p->prog->nunits * sizeof *saved);
    if (!saved) return NULL;
    for (int u = 0; u < p->prog->nunits; u++) {
        saved[2 * u] = p->prog->units[u].cost_s[SCHED_COST_FWD];
        saved[2 * u + 1] = p->prog->units[u].cost_s[SCHED_COST_BWD];
    }
    for (int i = 0, nops = sched_nops(s); i < nops; i++) {
        const sched_op_t *op = sched_op(s, i);
        if (op->unit < 0) continue;
        double *c = p->prog->units[op->unit].cost_s;
        if (SCHED_OP_D2H == op->kind) c[SCHED_COST_FWD] += y * op->seconds;
        else if (SCHED_OP_H2D == op->kind) c[SCHED_COST_BWD] += y * op->seconds;
    }
    sched_update_costs(s);
    return saved;
}

static void copy_costs_restore(plan_t *p, double *saved)
{
    if (!saved) return;
    for (int u = 0; u < p->prog->nunits; u++) {
        p->prog->units[u].cost_s[SCHED_COST_FWD] = saved[2 * u];
        p->prog->units[u].cost_s[SCHED_COST_BWD] = saved[2 * u + 1];
    }
    free(saved);
}

static strata_status_t run_one(plan_t *p, const sched_actions_t *acts, const sched_opts_t *o,
                               plan_row_t *row, char *err, size_t errlen)
{
    sched_t *s = NULL;
    sched_result_t r, r0;
    strata_status_t st = sched_build(p->prog, acts, o, &s, err, errlen);
    double *saved = NULL;
    if (STRATA_OK == st && p->hw.link_compute > 0 && !(saved = copy_costs(p, s)))
        st = sched_fail(err, errlen, STRATA_ERR_NOMEM, "plan: out of memory");
    if (STRATA_OK == st) st = sched_simulate(s, &r, NULL, NULL, err, errlen);
    if (STRATA_OK == st && p->shape.accum > 1) {
        /* the other micro-batches: the same program without the optimizer */
        double optim = p->prog->optim_s;
        p->prog->optim_s = 0;
        sched_update_costs(s);
        st = sched_simulate(s, &r0, NULL, NULL, err, errlen);
        p->prog->optim_s = optim;
        r.step_s += (double)(p->shape.accum - 1) * r0.step_s;
        r.busy_s[SCHED_COMPUTE] += (double)(p->shape.accum - 1) * r0.busy_s[SCHED_COMPUTE];
        r.comm_wait_s += (double)(p->shape.accum - 1) * r0.comm_wait_s;
    }
    if (STRATA_OK == st) {
        row->step_s = r.step_s;
        /* the peak the step uses; the reserve is budget, not use */
        row->device_bytes = (double)sched_device_use(&r);
        row->device_reserve = (double)r.device_reserve;
        row->host_bytes = (double)r.peak[STRATA_TIER_PINNED_HOST] + (double)r.peak[STRATA_TIER_STORAGE];
        row->exposed_s = r.exposed_transfer_s;
        row->comm_wait_s = r.comm_wait_s;
        row->compute_s = r.busy_s[SCHED_COMPUTE];
        row->tail_kept = sched_tail_kept(s);
        memset(row->kept_by_name, 0, sizeof row->kept_by_name);
        memset(row->offloaded_by_name, 0, sizeof row->offloaded_by_name);
        for (int u = 0; u < p->prog->nunits; u++)
            for (int i = 0; i < p->prog->units[u].nsaves; i++) {
                const sched_save_t *sv = &p->prog->units[u].saves[i];
                int act = sched_save_action(s, u, i);
                if (SCHED_KEEP == act) row->kept_by_name[sv->name_id] += (double)sv->bytes;
                else if (SCHED_HOST == act || SCHED_STORAGE == act) row->offloaded_by_name[sv->name_id] += (double)sv->bytes;
            }
    }
    copy_costs_restore(p, saved);
    sched_destroy(s);
    return st;
}

/* Unlimited, lhs keeps every offload on device: the host would hold what
 * the policy offloads. */
static void policy_offload(const plan_t *p, const sched_actions_t *acts, plan_row_t *row)
{
    row->host_bytes = 0;
    row->tail_kept = 0;
    memset(row->offloaded_by_name, 0, sizeof row->offloaded_by_name);
    for (int n = 0; n < p->prog->nnames; n++)
        if (SCHED_HOST == acts->action[n] || SCHED_STORAGE == acts->action[n]) {
            row->offloaded_by_name[n] = (double)sched_program_name_bytes(p->prog, n);
            row->host_bytes += row->offloaded_by_name[n];
        }
}

/* The host room the schedule's offloads may use: the host less the
 * training state there and the working copies of streamed state (at
 * least a byte where the state takes it all: a budget of 0 is no limit). */
static size_t offload_room(const plan_t *p)
{
    double held = p->state.tier[STRATA_TIER_PINNED_HOST] + p->state.host_work;
    if (!(p->hw.host_bytes > 0)) return 0;
    return p->hw.host_bytes > held ? (size_t)(p->hw.host_bytes - held) : 1;
}

/* The training state's share of the row: its host bytes, and the part of
 * its streams (storage, a GPU's staging copies) that the step's compute
 * does not cover -- they run beside it on their own engines. */
static void state_row(const plan_t *p, plan_row_t *row)
{
    row->state = p->state;
    row->host_bytes += p->state.tier[STRATA_TIER_PINNED_HOST] + p->state.host_work;
    row->fits_host = 0 == row->host_capacity || row->host_bytes <= row->host_capacity;
    row->fits = row->fits && row->fits_host;
    row->state.exposed_s = fmax(0, fmax(p->state.storage_s, p->state.link_stream_s) - row->compute_s);
    row->step_s += row->state.exposed_s;
}

strata_status_t plan_evaluate(plan_t *p, const sched_actions_t *acts, sched_mode_t mode,
                              plan_row_t *row_p, char *err, size_t errlen)
{
    plan_row_t row = { .acts = *acts, .mode = mode };
    sched_opts_t o = p->opts;
    o.mode = mode;
    row.device_capacity = p->hw.hbm_bytes;
    row.host_capacity = p->hw.host_bytes;
    workspace_model(p, all_keep(p, acts));
    o.budget[STRATA_TIER_DEVICE] = (size_t)p->hw.hbm_bytes;
    o.budget[STRATA_TIER_PINNED_HOST] = offload_room(p);
    strata_status_t st = run_one(p, acts, &o, &row, err, errlen);
    if (STRATA_OK == st) {
        row.fits = row.fits_device = row.fits_host = 1;
    } else if (STRATA_ERR_TIER_FULL == st) {
        /* no schedule fits: first the device alone (the host may be what
         * is short), then unlimited, to time it and say how much it needs */
        o.budget[STRATA_TIER_PINNED_HOST] = 0;
        st = run_one(p, acts, &o, &row, err, errlen);
        int unlimited = STRATA_ERR_TIER_FULL == st;
        if (unlimited) {
            o.budget[STRATA_TIER_DEVICE] = 0;
            st = run_one(p, acts, &o, &row, err, errlen);
        }
        if (STRATA_OK != st) return st;
        if (unlimited) policy_offload(p, acts, &row);
        /* the budget it needs: the admission's bound, or the peak and
         * the reserve; its use, the smaller of the bound and the peak */
        double need = (double)sched_min_device(p->prog, acts, &o);
        row.need_bytes = fmax(need, row.device_bytes + row.device_reserve);
        row.fits_device = row.device_bytes + row.device_reserve <= row.device_capacity;
        row.fits_host = 0 == row.host_capacity || row.host_bytes <= row.host_capacity;
        if (!row.fits_device && need - row.device_reserve < row.device_bytes)
            row.device_bytes = need - row.device_reserve;
    } else {
        return st;
    }
    state_row(p, &row);
    for (int u = 0; u < p->nunits; u++) {
        const sched_unit_t *x = &p->prog->units[u];
        for (int i = 0; i < p->units[u].nsaves && i < x->nsaves; i++)
            if (!x->saves[i].is_input && SCHED_RECOMPUTE == acts->action[x->saves[i].name_id])
                row.recompute_flops += p->units[u].saves[i].flops * (double)p->shape.accum;
        /* a recomputed input: the unit before runs its whole forward again */
        if (sched_unit_regen(p->prog, acts, u))
            row.recompute_flops += p->units[u].fwd_flops * (double)p->shape.accum;
    }
    double tokens = (double)(p->shape.micro * p->shape.seq * p->shape.accum);
    row.tokens_per_s = tokens * (double)(p->shape.fsdp * p->shape.replicas) / row.step_s;
    row.tflops_per_device = p->model_flops_step * (double)p->shape.accum / row.step_s / 1e12;
    *row_p = row;
    return STRATA_OK;
}

strata_status_t plan_auto(plan_t *p, sched_mode_t mode, plan_row_t *row_p, char *err, size_t errlen)
{
    sched_opts_t o = p->opts;
    sched_actions_t acts;
    o.mode = mode;
    o.budget[STRATA_TIER_DEVICE] = (size_t)p->hw.hbm_bytes;
    o.budget[STRATA_TIER_PINNED_HOST] = offload_room(p);
    workspace_model(p, 0);   /* the plans it weighs; the chosen one is evaluated with its own */
    strata_status_t st = sched_plan_auto(p->prog, &o, &acts, NULL, err, errlen);
    if (STRATA_ERR_TIER_FULL == st) {
        /* nothing fits: report the plan that needs the least device memory */
        sched_actions_fill(&acts, p->prog, SCHED_RECOMPUTE);
        st = STRATA_OK;
    }
    if (STRATA_OK != st) return st;
    return plan_evaluate(p, &acts, mode, row_p, err, errlen);
}

static strata_status_t eval_text(plan_t *p, const char *policy, sched_mode_t mode, plan_row_t *row,
                                 char *err, size_t errlen)
{
    sched_policy_t pol;
    sched_actions_t acts;
    strata_status_t st = sched_policy_parse(policy, &pol, err, errlen);
    if (STRATA_OK != st) return st;
    if (pol.is_auto) return plan_auto(p, mode, row, err, errlen);
    st = sched_policy_resolve(&pol, p->prog, &acts, err, errlen);
    return STRATA_OK == st ? plan_evaluate(p, &acts, mode, row, err, errlen) : st;
}

strata_status_t plan_policy(plan_t *p, const char *policy, sched_mode_t mode, plan_row_t *row_p,
                            char *err, size_t errlen)
{
    strata_status_t st = plan_state_reset(p, err, errlen);
    if (STRATA_OK == st) st = eval_text(p, policy, mode, row_p, err, errlen);
    /* state_place=auto: a plan refused for device room moves state out by
     * what it lacks, and is made again (the bytes a move frees come off
     * what is held all step, so once is the rule; a few more tries for a
     * schedule that changes with the room). Where all the state would not
     * make up the lack, none moves: the row does not fit either way, and
     * says so with the state where it was. */
    for (int i = 0; STRATA_OK == st && p->shape.state_auto && !row_p->fits && i < 4; i++) {
        double lack = row_p->need_bytes - row_p->device_capacity;
        if (!(lack > 0) || lack > p->state.tier[STRATA_TIER_DEVICE] || !(plan_state_free(p, lack) > 0))
            break;
        st = plan_state_check(p, err, errlen);
        if (STRATA_OK == st) st = eval_text(p, policy, mode, row_p, err, errlen);
    }
    return st;
}
