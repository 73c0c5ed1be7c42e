/*
 * exec.c - activation policies made real: the step program recorded on
 * the first step, the plan (policy or auto) and the executor that follows
 * the schedule of sched/ with tiers block moves and events.
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
 * sizing pass) replace the sizing estimates after step 1, averaged over
 * the ranks so that every rank plans the same, and the plan is made again.
 *
 * Memory the schedule does not model is added to the program's resident
 * bytes: what the device holds when the step begins (shards, optimizer
 * state), every activation between units (unit outputs stay on the device
 * from forward to backward), two of them again for the gradients flowing
 * back, the forward's workspace and one activation more, and with several
 * micro-batches every unit's accumulated gradient. The schedule's bound
 * is therefore conservative, and the budget it names is one that works.
 *
 * The executor: per micro-batch every op of the schedule starts not
 * issued. Compute ops (F, RECOMPUTE, B) run in the runtime's own order;
 * before one runs, the transfers it depends on are waited for (that wait
 * is the exposed transfer time); after it, every transfer engine's order
 * is walked and each op whose dependencies completed is issued as one
 * tiers move of the save's block (one move per save: the tiers engines
 * split it into chunk_size pieces, so a small urgent copy can still pass a
 * large one between chunks): D2H = move to host releasing the device copy,
 * H2S = to storage releasing host, S2H = back to host, H2D = to device.
 * Collectives are not driven from the schedule: the runtime starts them in
 * program order (progress.c) and they never wait behind a transfer, which
 * runs on the copy engines. In naive mode each transfer is waited for as
 * soon as it is issued. A move that finds its tier full is retried later;
 * only when compute needs it and nothing in flight can free memory does
 * the step fail with the tiers' message.
 */
#include "config.h"
#include "fsdp.h"
#include "sched/sched.h"
#include "tiers/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(HAVE_CUDA) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define EXEC_NVTX 1
#endif
#endif
#ifndef EXEC_NVTX
#define nvtxRangePushA(s) ((void)(s))
#define nvtxRangePop()    ((void)0)
#define nvtxMarkA(s)      ((void)(s))
#endif

typedef struct fsdp_exec {
    char              policy[512];     /* text in force (config or API) */
    sched_policy_t    pol;
    char              trace_prefix[512];
    int               active;

    sched_program_t  *prog;            /* NULL until the sizing pass */
    size_t           *ubytes;          /* per global save: bytes the callback asked for */
    int              *soff;            /* first global save of unit u (L+1 entries) */
    size_t            base_dev, base_host, base_storage;   /* in use when step 1 began */
    size_t            acts_bytes, max_act, ws_bytes, grads_bytes, max_ag, max_save;
    int               planned_micro;
    int               costs_measured;  /* step-1 costs replaced the estimates */
    double           *fwd_s, *bwd_s;   /* per unit, summed over this step's micro-batches */
    double           *ag_s, *rs_s;     /* per unit: collective times this step (comm_costs) */
    float            *cost_v, *cost_all;   /* a step's costs, in exchange (costs_post) */
    strata_request_t *cost_req;
    int              *ag_n, *rs_n;     /* and their counts */
    struct comm_span { double t0, t1; int unit, ag; } *spans;   /* this step's collectives */
    double            prev_end, prev_comm, prev_xfer;   /* at the last compute op's end */
    int               have_prev;
    int               nspans, cap_spans;
    float            *hist;            /* costs of the last EXEC_HIST steps after step 1,
                                        * 4L+1 each (ring) */
    int               hist_steps;

    sched_opts_t      opts;
    sched_actions_t   acts;
    sched_t          *sched;
    sched_result_t    pred;
    int               print_after;     /* rank 0 prints measured beside predicted */

    /* per micro-batch */
    int               nops;
    unsigned char    *issued, *done;
    strata_event_t  **ev;
    int               next[SCHED_ENGINE_COUNT];
    int              *fid, *bid, *rid; /* compute op per unit (-1 none) */
    strata_status_t   blocked;         /* last move refused for memory */

    /* this step */
    double            t_plan0;         /* step time without the sizing pass starts here */
    double            transfer_s, exposed_s;
    size_t            moved_bytes;
    sched_trace_t    *trace;
    int               step;
} fsdp_exec_t;

#define X(m) ((fsdp_exec_t *)(m)->exec)

static strata_status_t costs_take(strata_model_t *m, float *r);

/* steps whose measured costs the predictions take the median of */
#define EXEC_HIST 32

static size_t blk_bytes(size_t user)
{
    return (user + FSDP_GUARD + 255) / 256 * 256;
}

static int is_transfer(sched_engine_t e)
{
    return SCHED_D2H == e || SCHED_H2D == e || SCHED_IO == e;
}

/* ---- policy ------------------------------------------------------------------------ */

static int pure_keep(const sched_policy_t *p)
{
    if (p->is_auto) return 0;
    if (p->has_default && SCHED_KEEP != p->dflt) return 0;
    for (int i = 0; i < p->nrules; i++)
        if (SCHED_KEEP != p->rules[i].action) return 0;
    return 1;
}

static void update_active(fsdp_exec_t *x)
{
    x->active = !pure_keep(&x->pol) || x->trace_prefix[0];
}

static strata_status_t set_policy(strata_model_t *m, const char *text)
{
    fsdp_exec_t *x = X(m);
    char err[512];
    sched_policy_t p;
    strata_status_t st = sched_policy_parse(text ? text : "", &p, err, sizeof err);
    if (STRATA_OK != st)
        return strata_error(m->ctx, st, "act_policy '%s': %s", text ? text : "", err);
    snprintf(x->policy, sizeof x->policy, "%s", text ? text : "");
    x->pol = p;
    update_active(x);
    return STRATA_OK;
}

strata_status_t fsdp_exec_create(strata_model_t *m)
{
    fsdp_exec_t *x = calloc(1, sizeof *x);
    if (!x) return strata_error(m->ctx, STRATA_ERR_NOMEM, "activation executor");
    m->exec = x;
    x->planned_micro = -1;
    snprintf(x->trace_prefix, sizeof x->trace_prefix, "%s", m->ctx->cfg.trace);
    strata_status_t st = set_policy(m, m->ctx->cfg.act_policy);
    if (STRATA_OK != st) return st;
    /* the schedule name is checked now, not at the first step */
    char err[256];
    sched_opts_t o;
    st = sched_opts_from_config(&m->ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return strata_error(m->ctx, st, "%s", err);
    return STRATA_OK;
}

int fsdp_exec_active(const strata_model_t *m)
{
    return m->exec && X(m)->active;
}

/* ---- per micro-batch state ------------------------------------------------------------ */

static void release_events(fsdp_exec_t *x)
{
    for (int i = 0; i < x->nops && x->ev; i++)
        if (x->ev[i]) {
            strata_event_release(x->ev[i]);
            x->ev[i] = NULL;
        }
}

static void micro_reset(fsdp_exec_t *x)
{
    release_events(x);
    if (x->nops) {
        memset(x->issued, 0, (size_t)x->nops);
        memset(x->done, 0, (size_t)x->nops);
    }
    memset(x->next, 0, sizeof x->next);
    x->blocked = STRATA_OK;
}

static void free_state(fsdp_exec_t *x)
{
    release_events(x);
    free(x->issued); free(x->done); free(x->ev);
    free(x->fid); free(x->bid); free(x->rid);
    x->issued = x->done = NULL;
    x->ev = NULL;
    x->fid = x->bid = x->rid = NULL;
    x->nops = 0;
}

static strata_status_t install(strata_model_t *m, sched_t *s)
{
    fsdp_exec_t *x = X(m);
    int L = m->nunits, n = sched_nops(s);
    free_state(x);
    sched_destroy(x->sched);
    x->sched = s;
    x->issued = calloc((size_t)n + 1, 1);
    x->done = calloc((size_t)n + 1, 1);
    x->ev = calloc((size_t)n + 1, sizeof *x->ev);
    x->fid = malloc((size_t)L * sizeof(int));
    x->bid = malloc((size_t)L * sizeof(int));
    x->rid = malloc((size_t)L * sizeof(int));
    if (!x->issued || !x->done || !x->ev || !x->fid || !x->bid || !x->rid) {
        free_state(x);
        return strata_error(m->ctx, STRATA_ERR_NOMEM, "activation schedule state");
    }
    x->nops = n;
    for (int u = 0; u < L; u++) x->fid[u] = x->bid[u] = x->rid[u] = -1;
    for (int i = 0; i < n; i++) {
        const sched_op_t *o = sched_op(s, i);
        if (o->unit < 0 || o->unit >= L) continue;
        if (SCHED_OP_F == o->kind) x->fid[o->unit] = i;
        else if (SCHED_OP_B == o->kind) x->bid[o->unit] = i;
        else if (SCHED_OP_RECOMPUTE == o->kind) x->rid[o->unit] = i;
    }
    micro_reset(x);
    return STRATA_OK;
}

/* ---- the plan ------------------------------------------------------------------------- */

static size_t resident(const fsdp_exec_t *x, int n_micro)
{
    /* the schedule counts bytes, the tier needs contiguous spans: the
     * slack of one more workspace and the largest save keeps a plan at the
     * budget's edge from failing on fragmentation (blocks of many sizes
     * come and go in a step) */
    size_t slack = x->ws_bytes + x->max_save;
    size_t r = x->base_dev + x->acts_bytes + 2 * x->max_act + x->ws_bytes + slack;
    if (n_micro > 1) r += x->grads_bytes;
    return r;
}

static size_t left(size_t budget, size_t used)
{
    /* 0 would mean unlimited to the scheduler */
    return budget > used ? budget - used : 1;
}

/* Agree over all ranks: a plan that fails anywhere fails everywhere, so no
 * rank walks into a collective that another has left. */
static strata_status_t agree(strata_model_t *m, strata_status_t st)
{
    float mine = STRATA_OK == st ? 0.0f : 1.0f, all = 0.0f;
    pthread_mutex_lock(&m->lock);
    strata_status_t cst = strata_allreduce(m->ctx->world, &mine, &all, 1, STRATA_F32, STRATA_SUM);
    pthread_mutex_unlock(&m->lock);
    if (STRATA_OK != cst) return cst;
    if (STRATA_OK == st && all > 0.0f)
        return strata_error(m->ctx, STRATA_ERR_STATE, "the activation plan failed on %d other "
                            "rank(s); see their message", (int)all);
    return st;
}

static void print_plan(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    if (0 != m->ctx->rank) return;
    printf("strata: activation plan (%s, %s schedule, device budget %zu bytes):\n",
           x->pol.is_auto ? "auto" : x->policy, sched_mode_name(x->opts.mode),
           x->opts.budget[STRATA_TIER_DEVICE]);
    sched_plan_print(x->prog, &x->acts, &x->pred, stdout);
    fflush(stdout);
}

/* Resolve the policy (or choose one) and build the schedule for n_micro. */
static strata_status_t plan(strata_model_t *m, int n_micro, int print)
{
    fsdp_exec_t *x = X(m);
    strata_context_t *ctx = m->ctx;
    char err[1024] = "";
    sched_opts_t o;
    sched_actions_t acts;
    sched_result_t pred;
    sched_t *s = NULL;
    strata_status_t st = sched_opts_from_config(&ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return strata_error(ctx, st, "%s", err);
    o.link.chunk = 0;              /* one move per save; the engines chunk it */
    o.prefetch = m->prefetch;
    strata_tier_usage_t ud, uh, us;
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &ud);
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &uh);
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &us);
    o.budget[STRATA_TIER_DEVICE] = ud.budget;
    o.budget[STRATA_TIER_PINNED_HOST] = left(uh.budget, x->base_host);
    o.budget[STRATA_TIER_STORAGE] = left(us.budget, x->base_storage);
    x->prog->resident_bytes = resident(x, n_micro);

    if (x->pol.is_auto) st = sched_plan_auto(x->prog, &o, &acts, &pred, err, sizeof err);
    else st = sched_policy_resolve(&x->pol, x->prog, &acts, err, sizeof err);
    if (STRATA_OK == st) st = sched_build(x->prog, &acts, &o, &s, err, sizeof err);
    if (STRATA_OK == st) st = sched_simulate(s, &pred, NULL, NULL, err, sizeof err);
    if (STRATA_ERR_TIER_FULL == st) {
        size_t any = sched_plan_min_device(x->prog, &o);
        char a[32], b[32], c[64] = "";
        if (!x->pol.is_auto)
            snprintf(c, sizeof c, " (this policy needs device_mem >= %zu)",
                     sched_min_device(x->prog, &acts, &o));
        st = strata_error(ctx, st, "activation plan for act_policy '%s' (%s schedule): %s. "
                          "Device budget %s%s; the smallest device budget any plan fits is %s "
                          "(device_mem=%zu, e.g. with act_policy=auto)",
                          x->pol.is_auto ? "auto" : x->policy, sched_mode_name(o.mode), err,
                          strata_format_size(ud.budget, a, sizeof a), c,
                          strata_format_size(any, b, sizeof b), any);
    } else if (STRATA_OK != st) {
        st = strata_error(ctx, st, "activation plan: %s", err);
    }
    st = agree(m, st);
    if (STRATA_OK != st) {
        sched_destroy(s);
        return st;
    }
    x->opts = o;
    x->acts = acts;
    x->pred = pred;
    x->planned_micro = n_micro;
    st = install(m, s);
    if (STRATA_OK != st) return st;
    if (print && x->pol.is_auto) print_plan(m);
    char buf[1024];
    strata_info(ctx, "activation plan: %s, %s schedule, predicted step %.3f ms, device bound %zu "
                "of %zu bytes", sched_actions_string(&x->acts, x->prog, buf, sizeof buf),
                sched_mode_name(o.mode), pred.step_s * 1e3, sched_device_bound(s), ud.budget);
    return STRATA_OK;
}

/* ---- the sizing pass ------------------------------------------------------------------ */

static strata_status_t sizing(strata_model_t *m, const void *input, size_t in_bytes)
{
    fsdp_exec_t *x = X(m);
    strata_context_t *ctx = m->ctx;
    int L = m->nunits;
    char err[512];
    strata_status_t st;
    strata_tier_usage_t u0;

    sched_program_destroy(x->prog);
    x->prog = NULL;
    if (x->cost_req) costs_take(m, NULL);   /* an exchange for the old program */
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
        return strata_error(ctx, STRATA_ERR_NOMEM, "program");
    st = sched_program_create(&x->prog);
    if (STRATA_OK != st) return strata_error(ctx, st, "program");
    sched_record_begin(x->prog);
    x->costs_measured = 0;

    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u0);
    x->base_dev = u0.used;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &u0);
    x->base_host = u0.used;
    strata_tier_usage(ctx, STRATA_TIER_STORAGE, &u0);
    x->base_storage = u0.used;
    strata_tiers_reset_peaks(ctx);

    size_t esz = strata_dtype_size(m->opts.compute_dtype), nsaves = 0, cap = 0;
    x->acts_bytes = x->max_act = x->grads_bytes = x->max_ag = x->max_save = 0;
    fsdp_buf_free(&m->acts[L]);
    st = fsdp_buf_alloc(ctx, STRATA_TIER_DEVICE, STRATA_TAG_ACTIVATION, in_bytes, 0, &m->acts[0]);
    if (STRATA_OK != st) goto out;
    if (in_bytes) memcpy(m->acts[0].ptr, input, in_bytes);
    x->acts_bytes = x->max_act = blk_bytes(in_bytes);
    for (int ui = 0; ui < L; ui++) {
        strata_unit_t *u = m->units[ui];
        double t0 = strata_now();
        st = fsdp_gather_start(m, u);
        if (STRATA_OK == st) st = fsdp_gather_wait(m, u);
        if (STRATA_OK != st) goto out;
        double ag = strata_now() - t0;
        size_t agb = blk_bytes(u->npad * esz), gb = blk_bytes(u->npad * sizeof(float));
        if (gb > agb) agb = gb;   /* its gradient takes as much from B(u) */
        int idx;
        st = sched_record_unit(x->prog, u->name, agb, &idx, err, sizeof err);
        if (STRATA_OK != st) { st = strata_error(ctx, st, "%s", err); goto out; }
        fsdp_free_saves(u);
        strata_unit_call_t c = { .unit = u, .backward = 0, .training = 1, .in = &m->acts[ui],
                                 .out = &m->acts[ui + 1], .mode = CALL_SIZING };
        t0 = strata_now();
        st = fsdp_run_callback(&c);
        double f = strata_now() - t0;
        if (STRATA_OK != st) goto out;
        x->soff[ui + 1] = x->soff[ui] + u->nsaves;
        for (int i = 0; i < u->nsaves; i++) {
            st = sched_record_save(x->prog, u->saves[i].name, blk_bytes(u->saves[i].buf.bytes),
                                   err, sizeof err);
            if (STRATA_OK != st) { st = strata_error(ctx, st, "unit '%s': %s", u->name, err); goto out; }
            if (nsaves == cap) {
                cap = cap ? 2 * cap : 64;
                size_t *nb = realloc(x->ubytes, cap * sizeof *nb);
                if (!nb) { st = strata_error(ctx, STRATA_ERR_NOMEM, "program"); goto out; }
                x->ubytes = nb;
            }
            x->ubytes[nsaves++] = u->saves[i].buf.bytes;
            if (blk_bytes(u->saves[i].buf.bytes) > x->max_save)
                x->max_save = blk_bytes(u->saves[i].buf.bytes);
        }
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
    }
    fsdp_buf_free(&m->acts[L]);
    {
        strata_tier_usage_t ud;
        strata_tier_usage(ctx, STRATA_TIER_DEVICE, &ud);
        /* forward workspace, and the backward's at least one activation's worth */
        x->ws_bytes = ud.peak_by_tag[STRATA_TAG_WORKSPACE] + x->max_act;
    }
    st = sched_record_end(x->prog, 0, 0.0, err, sizeof err);
    if (STRATA_OK != st) st = strata_error(ctx, st, "%s", err);
out:
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

/* ---- transfers -------------------------------------------------------------------------- */

static fsdp_save_t *op_save(strata_model_t *m, const sched_op_t *o)
{
    strata_unit_t *u = m->units[o->unit];
    return o->save >= 0 && o->save < u->nsaves ? &u->saves[o->save] : NULL;
}

static void trace_memory(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    if (!x->trace) return;
    size_t b[STRATA_TIER_COUNT];
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        strata_tier_usage_t u;
        strata_tier_usage(m->ctx, (strata_tier_t)t, &u);
        b[t] = u.used;
    }
    sched_trace_memory(x->trace, strata_now(), b);
}

/* The transfer completed: its status, its busy time, its trace event. */
static strata_status_t finish(strata_model_t *m, int id)
{
    fsdp_exec_t *x = X(m);
    const sched_op_t *o = sched_op(x->sched, id);
    strata_status_t st = strata_event_wait(x->ev[id]);
    double t0, t1;
    tiers_event_times(x->ev[id], &t0, &t1);
    x->done[id] = 1;
    x->transfer_s += t1 > t0 ? t1 - t0 : 0;
    if (x->trace) {
        fsdp_save_t *s = op_save(m, o);
        sched_trace_op(x->trace, o->engine, sched_op_kind_name(o->kind), t0, t1 - t0, o->unit,
                       s ? s->name : NULL, o->bytes);
    }
    if (STRATA_OK != st) {
        char lab[96];
        return strata_error(m->ctx, st, "activation transfer %s failed: %s",
                            sched_op_label(x->sched, id, lab, sizeof lab), strata_strerror(st));
    }
    return STRATA_OK;
}

/* Whether op id has completed, finishing a transfer seen complete. */
static strata_status_t is_done(strata_model_t *m, int id, int *done_p)
{
    fsdp_exec_t *x = X(m);
    const sched_op_t *o = sched_op(x->sched, id);
    *done_p = 1;
    if (x->done[id] || SCHED_COMM == o->engine) return STRATA_OK;   /* collectives: progress.c */
    *done_p = 0;
    if (SCHED_COMPUTE == o->engine || !x->ev[id]) return STRATA_OK;
    int d = 0;
    strata_event_query(x->ev[id], &d);
    if (!d) return STRATA_OK;
    *done_p = 1;
    return finish(m, id);
}

static strata_status_t issue(strata_model_t *m, int id)
{
    fsdp_exec_t *x = X(m);
    const sched_op_t *o = sched_op(x->sched, id);
    fsdp_save_t *s = op_save(m, o);
    if (!s || !s->buf.h)
        return strata_error(m->ctx, STRATA_ERR_STATE, "activation schedule: %s has no save "
                            "block (unit '%s')", sched_op_kind_name(o->kind),
                            m->units[o->unit]->name);
    strata_tier_t dst = SCHED_OP_D2H == o->kind ? STRATA_TIER_PINNED_HOST
                      : SCHED_OP_H2S == o->kind ? STRATA_TIER_STORAGE
                      : SCHED_OP_S2H == o->kind ? STRATA_TIER_PINNED_HOST : STRATA_TIER_DEVICE;
    strata_event_t *ev = NULL;
    strata_status_t st = strata_block_move(s->buf.h, dst, 1, NULL, &ev);
    if (STRATA_OK != st) return st;
    nvtxMarkA(sched_op_kind_name(o->kind));
    x->ev[id] = ev;
    x->issued[id] = 1;
    if (SCHED_OP_D2H == o->kind) {
        s->buf.ptr = NULL;          /* the device copy goes away */
        x->moved_bytes += strata_block_size(s->buf.h);
    }
    if (SCHED_MODE_NAIVE == x->opts.mode) {   /* in line: compute waits for it now */
        double t0 = strata_now();
        strata_event_wait(ev);
        x->exposed_s += strata_now() - t0;
        return finish(m, id);
    }
    return STRATA_OK;
}

/* Issue, engine by engine in schedule order, every transfer whose
 * dependencies have completed. */
static strata_status_t pump(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    static const sched_engine_t engs[3] = { SCHED_D2H, SCHED_IO, SCHED_H2D };
    strata_status_t st;
    for (int k = 0; k < 3; k++) {
        int n;
        const int *ord = sched_engine_order(x->sched, engs[k], &n);
        while (x->next[engs[k]] < n) {
            int id = ord[x->next[engs[k]]];
            const sched_op_t *o = sched_op(x->sched, id);
            int ready = 1;
            for (int d = 0; d < o->ndeps && ready; d++) {
                st = is_done(m, o->deps[d], &ready);
                if (STRATA_OK != st) return st;
            }
            if (!ready) break;
            st = issue(m, id);
            if (STRATA_ERR_TIER_FULL == st || STRATA_ERR_FRAGMENTED == st) {
                x->blocked = st;    /* memory frees as transfers and compute finish */
                break;
            }
            if (STRATA_OK != st) return st;
            x->blocked = STRATA_OK;
            x->next[engs[k]]++;
        }
    }
    return STRATA_OK;
}

/* Block until transfer op id has completed, issuing what becomes ready. */
static strata_status_t wait_op(strata_model_t *m, int id)
{
    fsdp_exec_t *x = X(m);
    for (;;) {
        int d;
        strata_status_t st = is_done(m, id, &d);
        if (STRATA_OK != st || d) return st;
        if (x->issued[id]) {
            strata_event_wait(x->ev[id]);
            continue;
        }
        st = pump(m);
        if (STRATA_OK != st) return st;
        if (x->issued[id]) continue;
        /* not issuable yet: wait for the oldest transfer in flight */
        int other = -1;
        for (int i = 0; i < x->nops && other < 0; i++)
            if (x->issued[i] && !x->done[i]) other = i;
        if (other < 0) {
            char lab[96];
            if (STRATA_OK != x->blocked) return x->blocked;   /* the tiers' message stands */
            return strata_error(m->ctx, STRATA_ERR_STATE, "activation schedule stuck: %s cannot "
                                "be issued and nothing is in flight",
                                sched_op_label(x->sched, id, lab, sizeof lab));
        }
        strata_event_wait(x->ev[other]);
        st = finish(m, other);
        if (STRATA_OK != st) return st;
    }
}

int fsdp_exec_make_room(strata_model_t *m)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return 0;
    fsdp_exec_t *x = X(m);
    /* the schedule bounds device bytes, not their layout: a tier that is
     * full by fragmentation, or where a drain runs late (a slow link, a
     * rank behind), gets room as the next offload completes */
    if (STRATA_OK != pump(m)) return 0;
    int n;
    const int *ord = sched_engine_order(x->sched, SCHED_D2H, &n);
    for (int k = 0; k < n; k++) {
        int id = ord[k];
        if (!x->issued[id] || x->done[id]) continue;
        double t0 = strata_now();
        strata_event_wait(x->ev[id]);
        double t1 = strata_now();
        x->exposed_s += t1 - t0;
        if (x->trace)   /* an allocation waited for room */
            sched_trace_op(x->trace, SCHED_COMPUTE, "WAIT", t0, t1 - t0,
                           sched_op(x->sched, id)->unit, NULL, 0);
        return STRATA_OK == finish(m, id) ? 1 : 0;
    }
    return 0;
}

static int compute_op(const fsdp_exec_t *x, int kind, int unit)
{
    if (unit < 0 || !x->fid) return -1;
    return SCHED_OP_F == kind ? x->fid[unit] : SCHED_OP_B == kind ? x->bid[unit] : x->rid[unit];
}

/* Whether the device has free, beyond the plan's slack, what compute op o
 * allocates (its saves), a workspace, an activation and the next unit's
 * gathered parameters: then a drain in flight need not hold it back. */
static int has_room(strata_model_t *m, const sched_op_t *o)
{
    const fsdp_exec_t *x = X(m);
    strata_tier_usage_t u;
    if (STRATA_OK != strata_tier_usage(m->ctx, STRATA_TIER_DEVICE, &u) || u.used > u.budget)
        return 0;
    size_t need = o->mem_alloc[STRATA_TIER_DEVICE] + 2 * x->ws_bytes + x->max_act +
                  x->max_ag + x->max_save;
    return u.budget - u.used >= need;
}

strata_status_t fsdp_exec_before(strata_model_t *m, int kind, int unit)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    int id = compute_op(x, kind, unit);
    if (id < 0) return STRATA_OK;
    const sched_op_t *o = sched_op(x->sched, id);
    /* naive transfers waited for inside pump count once, in this span */
    double t0 = strata_now(), e0 = x->exposed_s;
    int waited = 0;
    strata_status_t st = pump(m);
    int room = -1;   /* computed at the first drain met */
    for (int d = 0; STRATA_OK == st && d < o->ndeps; d++) {
        const sched_op_t *p = sched_op(x->sched, o->deps[d]);
        if (!is_transfer(p->engine)) continue;
        int done;
        st = is_done(m, o->deps[d], &done);
        if (STRATA_OK != st || done) continue;
        if (SCHED_OP_D2H == p->kind && SCHED_MODE_LHS == x->opts.mode) {
            /* a drain: compute waits only so that the device stays within
             * the budget in any timing. Where the device has room now for
             * all this op and the next may take, the wait would only expose
             * the transfer; an allocation that still finds the tier full
             * waits for the offloads in flight then (fsdp_exec_make_room). */
            if (room < 0) room = has_room(m, o);
            if (room) continue;
        }
        waited = 1;
        st = wait_op(m, o->deps[d]);
    }
    if (waited) {
        double t1 = strata_now();
        x->exposed_s = e0 + (t1 - t0);
        if (x->trace)   /* the exposed transfer time, on the compute track */
            sched_trace_op(x->trace, SCHED_COMPUTE, "WAIT", t0, t1 - t0, unit, NULL, 0);
    }
    if (STRATA_OK != st) return st;
    if (SCHED_OP_F != kind) {
        /* the unit's saves are on the device again: their addresses */
        strata_unit_t *u = m->units[unit];
        for (int i = 0; i < u->nsaves; i++) {
            fsdp_save_t *s = &u->saves[i];
            if (!s->buf.h) continue;    /* dropped for recompute */
            s->buf.ptr = strata_block_ptr(s->buf.h, STRATA_TIER_DEVICE);
            if (!s->buf.ptr)
                return strata_error(m->ctx, STRATA_ERR_STATE, "unit '%s' save '%s' is not on "
                                    "the device before its %s", u->name, s->name,
                                    sched_op_kind_name((sched_op_kind_t)kind));
        }
    }
    nvtxRangePushA(sched_op_kind_name((sched_op_kind_t)kind));
    return STRATA_OK;
}

strata_status_t fsdp_exec_after(strata_model_t *m, int kind, int unit, double t0, double t1)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    strata_unit_t *u = m->units[unit];
    nvtxRangePop();
    /* the main thread's time between two compute ops that no wait for a
     * collective or a transfer explains (the runtime's own work: buffers,
     * checks, issuing) belongs to the op's cost: the simulator's compute
     * engine is that thread */
    double over = 0;
    if (x->have_prev) {
        over = t0 - x->prev_end - (m->exposed_s - x->prev_comm) - (x->exposed_s - x->prev_xfer);
        if (over < 0) over = 0;
    }
    x->have_prev = 1;
    x->prev_end = t1;
    x->prev_comm = m->exposed_s;
    x->prev_xfer = x->exposed_s;
    if (SCHED_OP_F == kind) {
        const sched_unit_t *ru = &x->prog->units[unit];
        if (u->nsaves != ru->nsaves)
            return strata_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saved %d "
                                "activations; the recorded step program has %d (first missing: "
                                "'%s'). The program changed: call strata_model_replan between "
                                "steps to record it again", u->name, u->nsaves, ru->nsaves,
                                u->nsaves < ru->nsaves ? ru->saves[u->nsaves].name : "?");
        for (int i = 0; i < u->nsaves; i++)
            if (SCHED_RECOMPUTE == sched_save_action(x->sched, unit, i))
                fsdp_buf_free(&u->saves[i].buf);   /* the re-run makes it again */
        x->fwd_s[unit] += t1 - t0 + over;
    } else if (SCHED_OP_B == kind) {
        x->bwd_s[unit] += t1 - t0 + over;
    }
    int id = compute_op(x, kind, unit);
    if (id < 0) return STRATA_OK;
    x->done[id] = 1;
    if (x->trace) {
        const sched_op_t *o = sched_op(x->sched, id);
        sched_trace_op(x->trace, SCHED_COMPUTE, sched_op_kind_name(o->kind), t0, t1 - t0, unit,
                       NULL, 0);
        trace_memory(m);
    }
    return pump(m);
}

/* ---- hooks of the step ------------------------------------------------------------------- */

strata_status_t fsdp_exec_step_begin(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    strata_tiers_reset_peaks(m->ctx);
    if (!m->exec) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    x->transfer_s = x->exposed_s = 0;
    x->moved_bytes = 0;
    x->t_plan0 = strata_now();
    if (x->fwd_s)
        for (int u = 0; u < m->nunits; u++) {
            x->fwd_s[u] = x->bwd_s[u] = x->ag_s[u] = x->rs_s[u] = 0;
            x->ag_n[u] = x->rs_n[u] = 0;
        }
    x->nspans = 0;
    x->have_prev = 0;
    if (x->active && x->trace_prefix[0] && !x->trace) {
        strata_status_t st = sched_trace_create(m->ctx->rank, &x->trace);
        if (STRATA_OK != st) return strata_error(m->ctx, st, "trace");
    }
    return STRATA_OK;
}

strata_status_t fsdp_exec_forward_begin(strata_model_t *m, const void *input, size_t in_bytes)
{
    if (!fsdp_exec_active(m)) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    strata_status_t st;
    if (!x->prog) {
        st = sizing(m, input, in_bytes);
        st = agree(m, st);
        if (STRATA_OK != st) return st;
        st = plan(m, m->n_micro, 1);
        if (STRATA_OK != st) return st;
        x->print_after = x->pol.is_auto;
        x->t_plan0 = strata_now();
    } else if (!x->sched || (0 == m->micro && x->planned_micro != m->n_micro)) {
        st = plan(m, m->n_micro, !x->sched);
        if (STRATA_OK != st) return st;
    }
    micro_reset(x);
    return STRATA_OK;
}

strata_status_t fsdp_exec_forward_end(strata_model_t *m)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    char err[512];
    strata_status_t st = sched_check_end(x->prog, m->nunits, err, sizeof err);
    if (STRATA_OK != st) return strata_error(m->ctx, st, "%s", err);
    return STRATA_OK;
}

strata_status_t fsdp_exec_recompute(strata_model_t *m, strata_unit_t *u)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return STRATA_OK;
    fsdp_exec_t *x = X(m);
    int ui = u->index;
    if (compute_op(x, SCHED_OP_RECOMPUTE, ui) < 0) return STRATA_OK;
    strata_status_t st = fsdp_exec_before(m, SCHED_OP_RECOMPUTE, ui);
    if (STRATA_OK != st) return st;
    strata_unit_call_t c = { .unit = u, .backward = 0, .training = 1, .in = &m->acts[ui],
                             .out = &m->acts[ui + 1], .mode = CALL_RECOMPUTE };
    double t0 = strata_now();
    st = fsdp_run_callback(&c);
    double t1 = strata_now();
    if (STRATA_OK == st && c.save_calls != x->prog->units[ui].nsaves)
        st = strata_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' recompute made %d saves; the "
                          "recorded forward made %d (a forward must save the same every time)",
                          u->name, c.save_calls, x->prog->units[ui].nsaves);
    if (STRATA_OK != st) return st;
    return fsdp_exec_after(m, SCHED_OP_RECOMPUTE, ui, t0, t1);
}

strata_status_t fsdp_exec_check_save(strata_unit_call_t *c, const char *name, size_t bytes)
{
    strata_model_t *m = c->unit->model;
    if (CALL_SIZING == c->mode || !c->training || !fsdp_exec_active(m) || !X(m)->sched)
        return STRATA_OK;
    fsdp_exec_t *x = X(m);
    int ui = c->unit->index, i = c->save_calls;
    const sched_unit_t *ru = &x->prog->units[ui];
    if (i >= ru->nsaves)
        return strata_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saves '%s' (%zu "
                            "bytes) as its save #%d; the recorded step program has only %d saves "
                            "for it. The program changed: call strata_model_replan between steps "
                            "to record it again", c->unit->name, name, bytes, i + 1, ru->nsaves);
    size_t want = x->ubytes[x->soff[ui] + i];
    if (strcmp(ru->saves[i].name, name) || want != bytes)
        return strata_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saves '%s' of %zu "
                            "bytes as its save #%d; the recorded step program has '%s' of %zu "
                            "bytes there. The program changed: call strata_model_replan between "
                            "steps to record it again", c->unit->name, name, bytes, i + 1,
                            ru->saves[i].name, want);
    return STRATA_OK;
}

/* Wait for whatever is still in flight (the backward consumed every
 * prefetch, but an error path may leave transfers behind). */
static strata_status_t drain(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    strata_status_t st = STRATA_OK;
    for (int i = 0; i < x->nops; i++)
        if (x->issued[i] && !x->done[i]) {
            strata_status_t s1 = finish(m, i);
            if (STRATA_OK == st) st = s1;
        }
    return st;
}

strata_status_t fsdp_exec_micro_end(strata_model_t *m)
{
    if (!fsdp_exec_active(m) || !X(m)->sched) return STRATA_OK;
    strata_status_t st = drain(m);
    micro_reset(X(m));
    return st;
}

void fsdp_exec_abort(strata_model_t *m)
{
    if (!m->exec || !X(m)->sched) return;
    drain(m);
    micro_reset(X(m));
}

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
 * (costs_take), so that it adds no synchronisation to the step. */
static strata_status_t costs_post(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    int L = m->nunits, M = m->n_micro > 0 ? m->n_micro : 1;
    size_t n = (size_t)(4 * L + 1);
    int W = strata_group_size(m->ctx->world);
    if (x->cost_req) return strata_error(m->ctx, STRATA_ERR_STATE, "costs: an exchange is pending");
    if (!x->cost_v) {
        x->cost_v = malloc(n * sizeof *x->cost_v);
        x->cost_all = malloc(n * (size_t)W * sizeof *x->cost_all);
        if (!x->cost_v || !x->cost_all) return strata_error(m->ctx, STRATA_ERR_NOMEM, "costs");
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
    strata_status_t st = strata_allgather_start(m->ctx->world, v, x->cost_all, n, STRATA_F32,
                                                &x->cost_req);
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* Complete the pending exchange; r (may be NULL) receives the costs. */
static strata_status_t costs_take(strata_model_t *m, float *r)
{
    fsdp_exec_t *x = X(m);
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
    fsdp_exec_t *x = X(m);
    int L = m->nunits;
    for (int u = 0; u < L; u++) {
        sched_record_cost(x->prog, u, SCHED_COST_FWD, c[u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_BWD, c[L + u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_AG, c[2 * L + u], NULL, 0);
        sched_record_cost(x->prog, u, SCHED_COST_RS, c[3 * L + u], NULL, 0);
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
    fsdp_exec_t *x = X(m);
    int L = m->nunits, n = 4 * L + 1;
    float *r = malloc((size_t)n * sizeof *r);
    double *c = malloc((size_t)n * sizeof *c);
    strata_status_t st = r && c ? STRATA_OK : STRATA_ERR_NOMEM;
    int have = 0;
    if (STRATA_OK == st && first) {
        /* the plan needs them now */
        if (x->cost_req) costs_take(m, NULL);
        st = costs_post(m);
        if (STRATA_OK == st) st = costs_take(m, r);
        have = STRATA_OK == st;
    } else if (STRATA_OK == st) {
        /* the previous step's, exchanged meanwhile; this step's go out */
        if (x->cost_req) {
            st = costs_take(m, r);
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
        st = strata_error(m->ctx, st, "costs");
    }
    free(r);
    free(c);
    return st;
}

strata_status_t fsdp_exec_step_end(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    strata_model_stats_t *s = &m->stats;
    fsdp_exec_t *x = X(m);
    s->transfer_s = s->exposed_transfer_s = 0;
    s->overlap_frac = 1.0;
    s->offload_bytes = 0;
    s->predicted_step_s = 0;
    if (!x) return STRATA_OK;
    double now = strata_now();
    x->step++;
    s->transfer_s = x->transfer_s;
    s->exposed_transfer_s = x->exposed_s < x->transfer_s ? x->exposed_s : x->transfer_s;
    s->overlap_frac = x->transfer_s > 0 ? 1.0 - s->exposed_transfer_s / x->transfer_s : 1.0;
    s->offload_bytes = x->moved_bytes;
    if (!fsdp_exec_active(m) || !x->sched) return STRATA_OK;
    s->predicted_step_s = x->pred.step_s * (m->n_micro > 0 ? m->n_micro : 1);
    if (x->trace) {
        sched_trace_step(x->trace, x->step, m->t_step0, now - m->t_step0);
        trace_memory(m);
    }
    if (x->print_after && 0 == m->ctx->rank) {
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
    x->print_after = 0;
    if (x->costs_measured) {
        /* the plan in force predicts again with the costs measured so far:
         * predicted_step_s follows what the steps cost, and the schedule
         * does not change under the run */
        strata_status_t st = measured_costs(m, 0);
        if (STRATA_OK != st) return st;
        sched_result_t r;
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
                         "AG %.1f RS %.1f optim %.1f)", m->step_count, 1e3 * s->step_s,
                         1e3 * r.step_s, 1e3 * r.transfer_s, 1e3 * r.exposed_transfer_s,
                         1e3 * r.comm_wait_s, 1e3 * f, 1e3 * b, 1e3 * ag, 1e3 * rs,
                         1e3 * x->prog->optim_s);
        }
        return STRATA_OK;
    }
    {
        /* plan again with what step 1 measured */
        x->costs_measured = 1;
        strata_status_t st = measured_costs(m, 1);
        if (STRATA_OK == st) st = plan(m, m->n_micro, 1);
        if (STRATA_OK != st) {
            /* the step itself succeeded: keep the plan it ran with */
            strata_warn(m->ctx, "activation plan with step 1's costs failed (%s); keeping "
                        "the first plan", strata_last_error(m->ctx));
            return STRATA_OK;
        }
        x->print_after = x->pol.is_auto;
    }
    return STRATA_OK;
}

void fsdp_exec_trace_comm(strata_model_t *m, const char *name, int unit, double t0, double t1,
                          size_t bytes)
{
    fsdp_exec_t *x = X(m);
    if (x && x->ag_s && unit >= 0 && unit < m->nunits && t0 > 0 && PHASE_IDLE != m->phase) {
        /* a collective of the step, from its start to when it was seen
         * complete (by the progress thread; else when compute waited for
         * it: t1); comm_costs turns them into costs */
        const strata_unit_t *u = m->units[unit];
        int ag = 'A' == name[0];
        double done = ag ? u->t_gdone : u->t_rdone;
        if (x->nspans == x->cap_spans) {
            int cap = x->cap_spans ? 2 * x->cap_spans : 64;
            struct comm_span *n = realloc(x->spans, (size_t)cap * sizeof *n);
            if (n) {
                x->spans = n;
                x->cap_spans = cap;
            }
        }
        if (x->nspans < x->cap_spans)
            x->spans[x->nspans++] = (struct comm_span){ t0, done >= t0 && done <= t1 ? done : t1,
                                                        unit, ag };
    }
    if (!m->exec || !X(m)->trace || t0 <= 0) return;
    sched_trace_op(X(m)->trace, SCHED_COMM, name, t0, t1 - t0, unit, NULL, bytes);
}

static void write_trace(strata_model_t *m)
{
    fsdp_exec_t *x = X(m);
    if (!x->trace || !x->trace_prefix[0]) return;
    char path[600], err[256];
    snprintf(path, sizeof path, "%s.%d.json", x->trace_prefix, m->ctx->rank);
    if (STRATA_OK != sched_trace_write(x->trace, path, err, sizeof err))
        strata_warn(m->ctx, "trace %s not written: %s", path, err);
}

void fsdp_exec_destroy(strata_model_t *m)
{
    fsdp_ws_cache_drop(m);
    fsdp_exec_t *x = X(m);
    if (!x) return;
    if (x->cost_req) costs_take(m, NULL);   /* every rank posted it */
    free(x->cost_v);
    free(x->cost_all);
    write_trace(m);
    free_state(x);
    sched_destroy(x->sched);
    sched_program_destroy(x->prog);
    sched_trace_destroy(x->trace);
    free(x->ubytes); free(x->soff); free(x->fwd_s); free(x->bwd_s);
    free(x->ag_s); free(x->ag_n); free(x->rs_s); free(x->rs_n); free(x->hist);
    free(x->spans);
    free(x);
    m->exec = NULL;
}

/* ---- public API ------------------------------------------------------------------------- */

static strata_status_t between_steps(strata_model_t *m, const char *fn)
{
    if (!m) return STRATA_ERR_INVALID;
    if (MODEL_READY != m->state || !m->exec)
        return strata_error(m->ctx, STRATA_ERR_STATE, "%s: finalize the model first", fn);
    if (PHASE_IDLE != m->phase)
        return strata_error(m->ctx, STRATA_ERR_STATE, "%s: only between steps", fn);
    return STRATA_OK;
}

strata_status_t strata_model_set_act_policy(strata_model_t *m, const char *policy)
{
    strata_status_t st = between_steps(m, "strata_model_set_act_policy");
    if (STRATA_OK != st) return st;
    fsdp_exec_t *x = X(m);
    char old[512];
    sched_policy_t oldp = x->pol;
    snprintf(old, sizeof old, "%s", x->policy);
    st = set_policy(m, policy ? policy : m->ctx->cfg.act_policy);
    if (STRATA_OK != st) return st;
    if (x->prog && x->active) {
        /* a program is known: resolve now, so unknown names fail here */
        char err[1024];
        sched_actions_t acts;
        if (!x->pol.is_auto &&
            STRATA_OK != (st = sched_policy_resolve(&x->pol, x->prog, &acts, err, sizeof err))) {
            snprintf(x->policy, sizeof x->policy, "%s", old);
            x->pol = oldp;
            update_active(x);
            return strata_error(m->ctx, st, "%s", err);
        }
        /* the next step plans (collectively, at its first forward) */
        free_state(x);
        sched_destroy(x->sched);
        x->sched = NULL;
    }
    return STRATA_OK;
}

strata_status_t strata_model_replan(strata_model_t *m)
{
    strata_status_t st = between_steps(m, "strata_model_replan");
    if (STRATA_OK != st) return st;
    fsdp_exec_t *x = X(m);
    free_state(x);
    sched_destroy(x->sched);
    x->sched = NULL;
    sched_program_destroy(x->prog);
    x->prog = NULL;
    return STRATA_OK;
}

strata_status_t strata_model_trace(strata_model_t *m, const char *prefix)
{
    if (!m) return STRATA_ERR_INVALID;
    if (!m->exec)
        return strata_error(m->ctx, STRATA_ERR_STATE, "strata_model_trace: finalize the model "
                            "first");
    fsdp_exec_t *x = X(m);
    if (prefix && strlen(prefix) >= sizeof x->trace_prefix)
        return strata_error(m->ctx, STRATA_ERR_INVALID, "trace prefix longer than %zu bytes",
                            sizeof x->trace_prefix - 1);
    write_trace(m);
    snprintf(x->trace_prefix, sizeof x->trace_prefix, "%s", prefix ? prefix : "");
    int was = x->active;
    update_active(x);
    if (was != x->active && PHASE_IDLE != m->phase) {
        x->active = was;   /* takes effect with the next step */
    }
    return STRATA_OK;
}

strata_status_t strata_model_plan_need(strata_model_t *m, const char *policy, size_t *need_p,
                                       size_t *any_p)
{
    if (!m) return STRATA_ERR_INVALID;
    fsdp_exec_t *x = X(m);
    if (!x || !x->prog)
        return strata_error(m->ctx, STRATA_ERR_STATE, "strata_model_plan_need: no step program "
                            "recorded yet (it is recorded by the first step when a policy other "
                            "than keep, or a trace, is set)");
    char err[1024];
    sched_policy_t p = x->pol;
    strata_status_t st;
    if (policy && STRATA_OK != (st = sched_policy_parse(policy, &p, err, sizeof err)))
        return strata_error(m->ctx, st, "act_policy '%s': %s", policy, err);
    sched_opts_t o;
    st = sched_opts_from_config(&m->ctx->cfg, &o, err, sizeof err);
    if (STRATA_OK != st) return strata_error(m->ctx, st, "%s", err);
    o.link.chunk = 0;
    o.prefetch = m->prefetch;
    x->prog->resident_bytes = resident(x, x->planned_micro > 0 ? x->planned_micro : 1);
    size_t any = sched_plan_min_device(x->prog, &o), need = any;
    if (!p.is_auto) {
        sched_actions_t acts;
        st = sched_policy_resolve(&p, x->prog, &acts, err, sizeof err);
        if (STRATA_OK != st) return strata_error(m->ctx, st, "%s", err);
        need = sched_min_device(x->prog, &acts, &o);
    }
    if (need_p) *need_p = need;
    if (any_p) *any_p = any;
    return STRATA_OK;
}

strata_status_t strata_model_plan_print(const strata_model_t *m, FILE *out)
{
    if (!m || !out) return STRATA_ERR_INVALID;
    const fsdp_exec_t *x = X(m);
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
