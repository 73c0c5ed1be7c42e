/*
 * exec_plan.c - the plan of the activation executor (exec_step.c): the sizing
 * pass that records the step program on the first step, the plan made
 * from it (policy or auto) for a number of micro-batches, and the public
 * queries of the plan (strata_model_plan_need, strata_model_plan_print).
 *
 * Step 1 begins with a SIZING PASS: on the first micro-batch, before
 * anything else, every unit's forward runs once (forward only, as a
 * training forward) and its saves are recorded (names, sizes) and freed at
 * the end of the unit, so the pass needs no more device memory than the
 * smallest plan (one unit's saves plus the activations between units).
 * With the sizes known the plan is made -- and a device budget too small
 * for any plan fails here, before any backward or update, with the
 * smallest budget that fits -- and then step 1 runs the planned schedule
 * like every later step. (The forward callbacks of step 1's first
 * micro-batch therefore run twice; they must not depend on being called
 * once.) The costs of step 1 (forward, backward; all-gather from the
 * sizing pass) replace the sizing estimates after step 1, combined over
 * the ranks (compute: the slowest rank's; collectives: the least any rank
 * waited, see exec_costs.c) so that every rank plans the same, and the
 * plan is made again.
 *
 * The sizing pass cannot fail for room: what the device cannot hold while
 * it measures goes to the host tier (fsdp_buf_alloc_room), and the sizes
 * it records do not depend on where the bytes went, so a budget too small
 * is refused by the plan, naming the budget that fits, at any budget.
 *
 * Memory the schedule does not model is added to the program's resident
 * bytes, part by part (held_parts: the admission's breakdown): what the
 * device holds when the step begins (shards, optimizer state), the
 * model's output (the units' inputs are saves: SCHED_INPUT_NAME), two
 * activations for the gradients flowing back, the
 * forward's workspace and one activation more, a reserve against
 * fragmentation, and with several micro-batches every unit's accumulated
 * gradient. The budget it names is one that works. The reserve is
 * counted against the budget but is not predicted as used: the predicted
 * device peak printed (sched_device_use) leaves it out, and is the peak a
 * step then uses within about 2% with one micro-batch, 4-8% with two
 * (t/gpt-train-admit.t).
 */
#include "config.h"
#include "exec_impl.h"
#include "comm/comm.h"
#include "tiers/tiers.h"
#include "dev.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t blk_bytes(size_t user)
{
    return (user + FSDP_GUARD + 255) / 256 * 256;
}

/* ---- the plan ------------------------------------------------------------------------- */

/* What the device holds beyond the schedule's own bytes (saves, gathered
 * parameters and their gradients), part by part: the admission's
 * breakdown, whose sum is the program's resident_bytes. */
static void held_parts(const fsdp_exec_t *x, int n_micro, strata_admission_t *a)
{
    a->held = x->base_dev;
    a->between = x->acts_bytes - x->inputs_bytes;   /* the inputs are the units' saves */
    a->flow = 2 * x->max_act;
    a->workspace = x->ws_bytes;
    /* the schedule counts bytes, the tier needs contiguous spans: the
     * slack of one more workspace and the largest save keeps a plan at the
     * budget's edge from failing on fragmentation (blocks of many sizes
     * come and go in a step) */
    size_t slack = x->ws_bytes + x->max_save;
    a->reserve = slack;
    /* several micro-batches: the gradients stay between them, and two
     * more slacks, as the blocks that live across micro-batches split the
     * free spans further, by how the drains land in time (with one more
     * slack, a 2-micro-batch host-lhs run at its named budget still found
     * 8.8 KiB free but no 4.2 KiB span, in 1 of about 20 CI runs) */
    if (n_micro > 1) {
        a->held += x->grads_bytes;
        a->reserve += 2 * slack;
    }
}

/* The program's resident bytes for n_micro, and the part of them kept
 * free against fragmentation (predicted peaks are shown without it). */
static void set_resident(fsdp_exec_t *x, int n_micro)
{
    strata_admission_t a;
    held_parts(x, n_micro, &a);
    x->prog->resident_bytes = a.held + a.between + a.flow + a.workspace + a.reserve;
    x->prog->reserve_bytes = a.reserve;
}

static size_t left(size_t budget, size_t used)
{
    /* 0 would mean unlimited to the scheduler */
    return budget > used ? budget - used : 1;
}

/* The admission of policy p at the device budget of o, for n_micro
 * micro-batches: what it needs, what any plan needs, and the parts. */
static strata_status_t admission(strata_model_t *m, const sched_policy_t *p, const sched_opts_t *o,
                                 int n_micro, strata_admission_t *a)
{
    fsdp_exec_t *x = m->exec;
    char err[1024];
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    held_parts(x, n_micro, a);
    set_resident(x, n_micro);
    a->budget = o->budget[STRATA_TIER_DEVICE];
    a->any = sched_plan_min_device(x->prog, o);
    a->need = a->any;
    if (!p->is_auto) {
        sched_actions_t acts;
        strata_status_t st = sched_policy_resolve(p, x->prog, &acts, err, sizeof err);
        if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
        a->need = sched_min_device(x->prog, &acts, o);
    }
    size_t res = x->prog->resident_bytes;
    a->scheduled = a->need > res ? a->need - res : 0;
    a->refused = a->budget && a->need > a->budget;
    return STRATA_OK;
}

/* The refusal, readable: the budget that fits this policy and any, and
 * what takes the room. */
static strata_status_t refuse(strata_model_t *m, const char *policy, const strata_admission_t *a)
{
    char b[32], n[32], y[32], h[32], w[32], f[32], k[32], r[32], s[32];
    return base_error(m->ctx, STRATA_ERR_TIER_FULL,
                      "device_mem %s is too small for act_policy '%s': it needs %s "
                      "(device_mem=%zu); the smallest any policy needs is %s (device_mem=%zu, "
                      "act_policy=auto). What takes the room at the step's peak: %s held all "
                      "step (parameter shards, optimizer state, gradient shards), %s the "
                      "model's output, %s gradients flowing back, %s workspace, %s kept free "
                      "against fragmentation, %s saved activations (the units' inputs among "
                      "them) and gathered parameters as the schedule holds them",
                      strata_format_size(a->budget, b, sizeof b), policy,
                      strata_format_size(a->need, n, sizeof n), a->need,
                      strata_format_size(a->any, y, sizeof y), a->any,
                      strata_format_size(a->held, h, sizeof h),
                      strata_format_size(a->between, w, sizeof w),
                      strata_format_size(a->flow, f, sizeof f),
                      strata_format_size(a->workspace, k, sizeof k),
                      strata_format_size(a->reserve, r, sizeof r),
                      strata_format_size(a->scheduled, s, sizeof s));
}

static void print_plan(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    if (0 != m->ctx->rank) return;
    printf("strata: activation plan (%s, %s schedule, device budget %zu bytes):\n",
           x->pol.is_auto ? "auto" : x->policy, sched_mode_name(x->opts.mode),
           x->opts.budget[STRATA_TIER_DEVICE]);
    sched_plan_print(x->prog, &x->acts, &x->pred, stdout);
    fflush(stdout);
}

/* A policy that offloads, and a schedule that moves nothing: lhs kept every
 * offload on device because the step fits the budget and is faster so. Said
 * once, on rank 0, for the plan made with step 1's costs: a person who wrote
 * qkv=host and sees host 0 B should know why and how to get the transfers. */
static void say_kept(strata_model_t *m, const sched_t *s)
{
    fsdp_exec_t *x = m->exec;
    int offloads = 0;
    for (int n = 0; n < x->acts.nnames; n++)
        offloads |= SCHED_HOST == x->acts.action[n] || SCHED_STORAGE == x->acts.action[n];
    if (x->said_kept || 0 != m->ctx->rank || !offloads || sched_tail_kept(s) < x->prog->nunits) return;
    x->said_kept = 1;
    char b[32];
    fprintf(stderr, "strata: act_policy '%s': the lhs schedule keeps every offload on device (the step "
            "fits device_mem %s and runs faster so); a smaller device_mem or schedule=naive moves them\n",
            x->policy, strata_format_size(x->opts.budget[STRATA_TIER_DEVICE], b, sizeof b));
}

/* state_place=auto: move `want` bytes of training state off the device
 * (every rank alike: the admission is made from agreed costs, and every
 * rank's shards have one size), and count them out of what the device
 * holds all step. Said once, on rank 0. */
static strata_status_t state_auto(strata_model_t *m, size_t want)
{
    fsdp_exec_t *x = m->exec;
    size_t freed = 0;
    strata_tier_usage_t h0, s0, h1, s1;
    fsdp_drain(m);   /* no collective still reads a master shard */
    strata_tier_usage(m->ctx, STRATA_TIER_PINNED_HOST, &h0);
    strata_tier_usage(m->ctx, STRATA_TIER_STORAGE, &s0);
    strata_status_t st = fsdp_agree(m, fsdp_state_auto_free(m, want, &freed));
    /* state now streamed or updated by the host may want the optimizer's
     * thread, which commit did not start */
    if (STRATA_OK == st) st = fsdp_optq_start(m);
    if (STRATA_OK != st) return st;
    strata_tier_usage(m->ctx, STRATA_TIER_PINNED_HOST, &h1);
    strata_tier_usage(m->ctx, STRATA_TIER_STORAGE, &s1);
    x->base_dev = x->base_dev > freed ? x->base_dev - freed : 0;
    /* what the host and storage now hold all step is not the plan's to
     * use, nor is the room streamed state's working copies take */
    x->base_host += h1.used - h0.used + fsdp_state_stream_reserve(m);
    x->base_storage += s1.used - s0.used;
    char b[512], w[32], f[32];
    if (0 == m->ctx->rank)
        fprintf(stderr, "strata: state_place auto: %s of training state left the device for the "
                "%s the plan lacked: %s\n", strata_format_size(freed, f, sizeof f),
                strata_format_size(want, w, sizeof w), fsdp_state_describe(m, b, sizeof b));
    return STRATA_OK;
}

/* Resolve the policy (or choose one) and build the schedule for n_micro. */
strata_status_t fsdp_exec_plan(strata_model_t *m, int n_micro, int print)
{
    fsdp_exec_t *x = m->exec;
    strata_context_t *ctx = m->ctx;
    char err[1024] = "";
    sched_opts_t o;
    sched_actions_t acts;
    sched_result_t pred;
    sched_t *s = NULL;
    strata_status_t st = sched_opts_from_config(&ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return base_error(ctx, st, "%s", err);
    o.link.chunk = 0;              /* one move per save; the engines chunk it */
    o.prefetch = m->prefetch;
    strata_tier_usage_t ud, uh, us;
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &ud);
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &uh);
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &us);
    o.budget[STRATA_TIER_DEVICE] = ud.budget;
    o.budget[STRATA_TIER_PINNED_HOST] = left(uh.budget, x->base_host);
    o.budget[STRATA_TIER_STORAGE] = left(us.budget, x->base_storage);
    set_resident(x, n_micro);

    if (x->pol.is_auto) st = sched_plan_auto(x->prog, &o, &acts, &pred, err, sizeof err);
    else st = sched_policy_resolve(&x->pol, x->prog, &acts, err, sizeof err);
    if (STRATA_OK == st) st = sched_build(x->prog, &acts, &o, &s, err, sizeof err);
    if (STRATA_OK == st) st = sched_simulate(s, &pred, NULL, NULL, err, sizeof err);
    if (STRATA_ERR_TIER_FULL == st) {
        st = admission(m, &x->pol, &o, n_micro, &x->adm);
        if (STRATA_OK == st && x->adm.refused && m->state_auto && !x->state_tried) {
            /* state_place=auto: training state leaves the device for the
             * room the plan lacks, and the plan is made again */
            x->state_tried = 1;
            st = state_auto(m, x->adm.need - x->adm.budget);
            if (STRATA_OK == st) return fsdp_exec_plan(m, n_micro, print);
        }
        if (STRATA_OK == st && x->adm.refused)
            st = refuse(m, x->pol.is_auto ? "auto" : x->policy, &x->adm);
        else if (STRATA_OK == st) {   /* the host or storage tier, or the schedule's timing */
            const char *hw = tiers_limit_why(ctx, STRATA_TIER_PINNED_HOST),
                       *sw = tiers_limit_why(ctx, STRATA_TIER_STORAGE);
            st = base_error(ctx, STRATA_ERR_TIER_FULL, "activation plan for act_policy '%s' "
                            "(%s schedule): %s%s%s%s%s", x->pol.is_auto ? "auto" : x->policy,
                            sched_mode_name(o.mode), err, hw[0] ? " (" : "", hw,
                            sw[0] ? "; " : hw[0] ? ")" : "", sw[0] ? sw : "");
        }
    } else if (STRATA_OK != st) {
        st = base_error(ctx, st, "activation plan: %s", err);
    }
    st = fsdp_agree(m, st);
    if (STRATA_OK != st) {
        sched_destroy(s);
        return st;
    }
    x->opts = o;
    x->acts = acts;
    m->coll_agreed = 0;
    st = fsdp_check_program(m);
    if (STRATA_OK != st) {
        sched_destroy(s);
        return st;
    }
    m->coll_agreed = 1;     /* every rank gathers and reduces the same units alike */
    x->pred = pred;
    x->planned_micro = n_micro;
    st = fsdp_exec_install(m, s);
    if (STRATA_OK != st) return st;
    if (print && x->pol.is_auto) print_plan(m);
    else if (print && x->costs_measured) say_kept(m, s);
    char buf[1024];
    strata_info(ctx, "activation plan: %s, %s schedule, predicted step %.3f ms, device bound %zu "
                "of %zu bytes", sched_actions_string(&x->acts, x->prog, buf, sizeof buf),
                sched_mode_name(o.mode), pred.step_s * 1e3, sched_device_bound(s), ud.budget);
    return STRATA_OK;
}

/* ---- the sizing pass ------------------------------------------------------------------ */

/* A fresh program to record into, the per-unit arrays the measurements
 * fill, and the tiers' use before the pass. */
static strata_status_t sizing_reset(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    strata_context_t *ctx = m->ctx;
    int L = m->nunits;
    sched_program_destroy(x->prog);
    x->prog = NULL;
    if (x->cost_req) fsdp_exec_costs_take(m, NULL);   /* an exchange for the old program */
    free(x->cost_v);
    free(x->cost_all);
    x->cost_v = x->cost_all = NULL;
    free(x->ubytes); free(x->soff); free(x->fwd_s); free(x->bwd_s);
    free(x->ag_s); free(x->ag_n); free(x->rs_s); free(x->rs_n); free(x->hist);
    x->ubytes = NULL;
    x->soff = calloc((size_t)L + 1, sizeof(int));
    x->fwd_s = calloc((size_t)L, sizeof(double));
    x->bwd_s = calloc((size_t)L, sizeof(double));
    x->ag_s = calloc((size_t)L, sizeof(double));
    x->ag_n = calloc((size_t)L, sizeof(int));
    x->rs_s = calloc((size_t)L, sizeof(double));
    x->rs_n = calloc((size_t)L, sizeof(int));
    x->hist = calloc((size_t)EXEC_HIST * (size_t)(4 * L + 1), sizeof(float));
    x->hist_steps = 0;
    if (!x->soff || !x->fwd_s || !x->bwd_s || !x->ag_s || !x->ag_n || !x->rs_s || !x->rs_n ||
        !x->hist)
        return base_error(ctx, STRATA_ERR_NOMEM, "program");
    strata_status_t st = sched_program_create(&x->prog);
    if (STRATA_OK != st) return base_error(ctx, st, "program");
    sched_record_begin(x->prog);
    x->costs_measured = 0;

    strata_tier_usage_t u0;
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u0);
    x->base_dev = u0.used;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &u0);
    x->base_host = u0.used;
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &u0);
    x->base_storage = u0.used;
    strata_tiers_reset_peaks(ctx);
    return STRATA_OK;
}

/* Record one save of unit u; its exact size goes to x->ubytes (nsaves_p
 * of them so far, room for cap_p). */
static strata_status_t record_save(strata_model_t *m, strata_unit_t *u, const char *name,
                                   size_t bytes, size_t *nsaves_p, size_t *cap_p)
{
    fsdp_exec_t *x = m->exec;
    char err[512];
    strata_status_t st = sched_record_save(x->prog, name, blk_bytes(bytes), err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "unit '%s': %s", u->name, err);
    if (*nsaves_p == *cap_p) {
        size_t cap = *cap_p ? 2 * *cap_p : 64;
        size_t *nb = realloc(x->ubytes, cap * sizeof *nb);
        if (!nb) return base_error(m->ctx, STRATA_ERR_NOMEM, "program");
        x->ubytes = nb;
        *cap_p = cap;
    }
    x->ubytes[(*nsaves_p)++] = bytes;
    if (blk_bytes(bytes) > x->max_save) x->max_save = blk_bytes(bytes);
    return STRATA_OK;
}

/* Record the saves unit u made in its sizing call, then its input, which
 * the runtime makes the unit's last save after each forward. */
static strata_status_t record_saves(strata_model_t *m, strata_unit_t *u, size_t *nsaves_p, size_t *cap_p)
{
    strata_status_t st = STRATA_OK;
    for (int i = 0; STRATA_OK == st && i < u->nsaves; i++)
        st = record_save(m, u, u->saves[i].name, u->saves[i].buf.bytes, nsaves_p, cap_p);
    if (STRATA_OK != st) return st;
    size_t in = m->acts[u->index].bytes;
    m->exec->inputs_bytes += blk_bytes(in);
    return record_save(m, u, SCHED_INPUT_NAME, in, nsaves_p, cap_p);
}

/* One unit of the sizing pass: gather its parameters and run its forward
 * in sizing mode, timing both, and record the unit, its saves and its
 * first costs (backward twice the forward, reduce-scatter as long as the
 * gather, until measured). */
static strata_status_t size_unit(strata_model_t *m, int ui, size_t *nsaves_p, size_t *cap_p)
{
    fsdp_exec_t *x = m->exec;
    strata_unit_t *u = m->units[ui];
    size_t esz = strata_dtype_size(m->opts.compute_dtype);
    char err[512];
    double t0 = base_now();
    strata_status_t st = fsdp_gather_start(m, u);
    if (STRATA_OK == st) st = fsdp_gather_wait(m, u);
    if (STRATA_OK != st) return st;
    double ag = base_now() - t0;
    size_t agb = blk_bytes(u->npad * esz), gb = blk_bytes(u->npad * sizeof(float));
    if (gb > agb) agb = gb;   /* its gradient takes as much from B(u) */
    int idx;
    st = sched_record_unit(x->prog, u->name, agb, &idx, err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
    fsdp_free_saves(u);
    strata_unit_call_t c = { .unit = u, .backward = 0, .training = 1, .in = &m->acts[ui],
                             .out = &m->acts[ui + 1], .mode = CALL_SIZING };
    /* cuda: the forward's work on the device, from an idle stream to an
     * idle stream (a one-off pass: the waits cost nothing that matters) */
    st = fsdp_dev_wait(m->ctx);
    if (STRATA_OK != st) return st;
    t0 = base_now();
    st = fsdp_run_callback(&c);
    if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
    double f = base_now() - t0;
    if (STRATA_OK == st && m->sizing_over) st = fsdp_dev_wait(m->ctx);   /* host blocks free now */
    if (STRATA_OK != st) return st;
    x->soff[ui + 1] = x->soff[ui] + u->nsaves + 1;   /* and its input */
    st = record_saves(m, u, nsaves_p, cap_p);
    if (STRATA_OK != st) return st;
    fsdp_free_saves(u);
    fsdp_buf_free(&m->acts[ui]);
    fsdp_gather_release(u);
    size_t ab = blk_bytes(m->acts[ui + 1].bytes);
    x->acts_bytes += ab;
    if (ab > x->max_act) x->max_act = ab;
    x->grads_bytes += gb;
    if (agb > x->max_ag) x->max_ag = agb;
    sched_record_cost(x->prog, idx, SCHED_COST_FWD, f, NULL, 0);
    sched_record_cost(x->prog, idx, SCHED_COST_BWD, 2 * f, NULL, 0);
    sched_record_cost(x->prog, idx, SCHED_COST_AG, ag, NULL, 0);
    sched_record_cost(x->prog, idx, SCHED_COST_RS, ag, NULL, 0);
    return STRATA_OK;
}

strata_status_t fsdp_exec_sizing(strata_model_t *m, const void *input, size_t in_bytes)
{
    fsdp_exec_t *x = m->exec;
    strata_context_t *ctx = m->ctx;
    int L = m->nunits;
    char err[512];
    strata_status_t st = sizing_reset(m);
    if (STRATA_OK != st) return st;

    size_t nsaves = 0, cap = 0;
    x->acts_bytes = x->max_act = x->grads_bytes = x->max_ag = x->max_save = 0;
    x->inputs_bytes = 0;
    fsdp_buf_free(&m->acts[L]);
    m->sizing = 1;
    m->sizing_over = 0;
    m->sizing_ws = 0;
    x->max_gsend = 0;
    st = fsdp_buf_alloc_room(m, STRATA_TAG_ACTIVATION, in_bytes, &m->acts[0]);
    if (STRATA_OK != st) goto out;
    if (in_bytes) st = fsdp_dev_copy(m->ctx, m->acts[0].ptr, input, in_bytes);
    if (STRATA_OK != st) goto out;
    x->acts_bytes = x->max_act = blk_bytes(in_bytes);
    for (int ui = 0; ui < L; ui++) {
        st = size_unit(m, ui, &nsaves, &cap);
        if (STRATA_OK != st) goto out;
    }
    fsdp_buf_free(&m->acts[L]);
    /* the largest forward workspace (counted per call, wherever the pass
     * put it, so the sizes do not depend on the budget), a 16-bit
     * gather's send copy, and the backward's at least one activation's
     * worth */
    x->ws_bytes = m->sizing_ws + x->max_act;
    if (strata_dtype_size(m->opts.compute_dtype) < sizeof(float))
        for (int ui = 0; ui < L; ui++) {
            size_t g = blk_bytes(m->units[ui]->shard_len * strata_dtype_size(m->opts.compute_dtype));
            if (g > x->max_gsend) x->max_gsend = g;
        }
    x->ws_bytes += x->max_gsend;
    st = sched_record_end(x->prog, 0, 0.0, err, sizeof err);
    if (STRATA_OK != st) st = base_error(ctx, st, "%s", err);
out:
    if (m->sizing_over) fsdp_dev_wait(ctx);   /* the compute stream is done with host blocks */
    m->sizing = 0;
    for (int i = 0; i <= L; i++) fsdp_buf_free(&m->acts[i]);
    for (int i = 0; i < L; i++) {
        fsdp_free_saves(m->units[i]);
        fsdp_gather_release(m->units[i]);
    }
    if (STRATA_OK != st) {
        sched_program_destroy(x->prog);
        x->prog = NULL;
    }
    return st;
}

/* The sizing pass's costs, the same on every rank (rank 0's, as f32):
 * each rank timed its own pass, and auto, planning from them, must choose
 * the same plan everywhere. A broadcast, not a max: it goes through the
 * recorded collectives (a deadline, a flight record) and gives every rank
 * the same bits, which a floating-point reduction need not. Collective;
 * after the pass succeeded on every rank. */
strata_status_t fsdp_exec_sizing_agree(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    int L = m->nunits;
    if (m->ctx->size < 2) return STRATA_OK;
    size_t n = (size_t)L * SCHED_COST_COUNT;
    float *c = malloc(n * sizeof *c);
    if (!c) return base_error(m->ctx, STRATA_ERR_NOMEM, "sizing costs");
    for (int u = 0; u < L; u++)
        for (int k = 0; k < SCHED_COST_COUNT; k++)
            c[u * SCHED_COST_COUNT + k] = (float)x->prog->units[u].cost_s[k];
    strata_status_t st = strata_broadcast(m->ctx->world, c, n, STRATA_F32, 0);
    for (int u = 0; STRATA_OK == st && u < L; u++)
        for (int k = 0; k < SCHED_COST_COUNT; k++)
            sched_record_cost(x->prog, u, (sched_cost_t)k, c[u * SCHED_COST_COUNT + k], NULL, 0);
    free(c);
    return st;
}

/* ---- public queries of the plan ------------------------------------------------------- */

strata_status_t strata_model_plan_need(strata_model_t *m, const char *policy, size_t *need_p,
                                       size_t *any_p)
{
    if (!m) return STRATA_ERR_INVALID;
    fsdp_exec_t *x = m->exec;
    if (!x || !x->prog)
        return base_error(m->ctx, STRATA_ERR_STATE, "strata_model_plan_need: no step program "
                          "recorded yet (it is recorded by the first step when a policy other "
                          "than keep, or a trace, is set)");
    char err[1024];
    sched_policy_t p = x->pol;
    strata_status_t st;
    if (policy && STRATA_OK != (st = sched_policy_parse(policy, &p, err, sizeof err)))
        return base_error(m->ctx, st, "act_policy '%s': %s", policy, err);
    sched_opts_t o;
    st = sched_opts_from_config(&m->ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
    o.link.chunk = 0;
    o.prefetch = m->prefetch;
    strata_admission_t a;
    st = admission(m, &p, &o, x->planned_micro > 0 ? x->planned_micro : m->n_micro, &a);
    if (STRATA_OK != st) return st;
    if (need_p) *need_p = a.need;
    if (any_p) *any_p = a.any;
    return STRATA_OK;
}

strata_status_t strata_model_admission(strata_model_t *m, strata_admission_t *a_p)
{
    if (!m || !a_p || a_p->size < offsetof(strata_admission_t, any) + sizeof a_p->any)
        return m ? base_error(m->ctx, STRATA_ERR_INVALID, "strata_model_admission: NULL, or "
                              "its size member not set to sizeof(strata_admission_t)")
                 : STRATA_ERR_INVALID;
    fsdp_exec_t *x = m->exec;
    if (!x || !x->prog)
        return base_error(m->ctx, STRATA_ERR_STATE, "strata_model_admission: no step program "
                          "recorded yet (the first forward records it)");
    char err[1024];
    sched_opts_t o;
    strata_status_t st = sched_opts_from_config(&m->ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s", err);
    o.link.chunk = 0;
    o.prefetch = m->prefetch;
    strata_tier_usage_t ud;
    strata_tier_usage(m->ctx, STRATA_TIER_DEVICE, &ud);
    o.budget[STRATA_TIER_DEVICE] = ud.budget;
    strata_admission_t a;
    st = admission(m, &x->pol, &o, x->planned_micro > 0 ? x->planned_micro : m->n_micro, &a);
    if (STRATA_OK != st) return st;
    size_t n = a_p->size < sizeof a ? a_p->size : sizeof a;
    memcpy((char *)a_p + sizeof a.size, (char *)&a + sizeof a.size, n - sizeof a.size);
    return STRATA_OK;
}

strata_status_t strata_model_plan_print(const strata_model_t *m, FILE *out)
{
    if (!m || !out) return STRATA_ERR_INVALID;
    const fsdp_exec_t *x = m->exec;
    if (!x || !x->sched) {
        fprintf(out, "no activation plan (every saved name kept, or no step ran yet)\n");
        return STRATA_OK;
    }
    fprintf(out, "activation plan (%s, %s schedule):\n", x->pol.is_auto ? "auto" : x->policy,
            sched_mode_name(x->opts.mode));
    sched_plan_print(x->prog, &x->acts, &x->pred, out);
    sched_print(x->sched, out);
    return STRATA_OK;
}
