/*
 * exec_run.c - the activation executor following its schedule: the per
 * micro-batch state, the transfers as tiers block moves and events, the
 * waits of compute ops for them, and the room hook that lets a full device
 * tier wait for an offload in flight.
 *
 * Per micro-batch every op of the schedule starts not issued. Compute ops
 * (F, RECOMPUTE, B) run in the runtime's own order; before one runs, the
 * transfers it depends on are waited for (that wait is the exposed transfer
 * time); after it, every transfer engine's order is walked and each op
 * whose dependencies completed is issued as one tiers move of the save's
 * block (one move per save: the tiers engines split it into chunk_size
 * pieces, so a small urgent copy can still pass a large one between
 * chunks): D2H = move to host releasing the device copy, H2S = to storage
 * releasing host, S2H = back to host, H2D = to device. Collectives are not
 * driven from the schedule: the runtime starts them in program order
 * (progress.c) and they never wait behind a transfer, which runs on the
 * copy engines. In naive mode each transfer is waited for as soon as it is
 * issued. A move that finds its tier full is retried later; only when
 * compute needs it and nothing in flight can free memory does the step fail
 * with the tiers' message.
 */
#include "config.h"
#include "exec_impl.h"
#include "tiers/tiers.h"
#include "dev.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/nvtx.h"
#include "base/test_fault.h"

static int is_transfer(sched_engine_t e)
{
    return SCHED_D2H == e || SCHED_H2D == e || SCHED_IO == e;
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

void fsdp_exec_micro_reset(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
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
    free(x->fid); free(x->bid); free(x->rid); free(x->gid);
    x->issued = x->done = NULL;
    x->ev = NULL;
    x->fid = x->bid = x->rid = x->gid = NULL;
    x->nops = 0;
}

strata_status_t fsdp_exec_install(strata_model_t *m, sched_t *s)
{
    fsdp_exec_t *x = m->exec;
    int L = m->nunits, n = sched_nops(s);
    free_state(x);
    sched_destroy(x->sched);
    x->sched = s;
    m->mplan_gen++;         /* another program: the memory plan records again */
    x->issued = calloc((size_t)n + 1, 1);
    x->done = calloc((size_t)n + 1, 1);
    x->ev = calloc((size_t)n + 1, sizeof *x->ev);
    x->fid = malloc((size_t)L * sizeof(int));
    x->bid = malloc((size_t)L * sizeof(int));
    x->rid = malloc((size_t)L * sizeof(int));
    x->gid = malloc((size_t)L * sizeof(int));
    if (!x->issued || !x->done || !x->ev || !x->fid || !x->bid || !x->rid || !x->gid) {
        free_state(x);
        return base_error(m->ctx, STRATA_ERR_NOMEM, "activation schedule state");
    }
    x->nops = n;
    for (int u = 0; u < L; u++) x->fid[u] = x->bid[u] = x->rid[u] = x->gid[u] = -1;
    for (int i = 0; i < n; i++) {
        const sched_op_t *o = sched_op(s, i);
        if (o->unit < 0 || o->unit >= L) continue;
        if (SCHED_OP_F == o->kind) x->fid[o->unit] = i;
        else if (SCHED_OP_B == o->kind) x->bid[o->unit] = i;
        else if (SCHED_OP_RECOMPUTE == o->kind) x->rid[o->unit] = i;
        else if (SCHED_OP_REGEN == o->kind) x->gid[o->unit] = i;
    }
    fsdp_exec_micro_reset(m);
    return STRATA_OK;
}

void fsdp_exec_uninstall(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    free_state(x);
    sched_destroy(x->sched);
    x->sched = NULL;
    m->mplan_gen++;
}

/* ---- transfers -------------------------------------------------------------------------- */

static fsdp_save_t *op_save(strata_model_t *m, const sched_op_t *o)
{
    strata_unit_t *u = m->units[o->unit];
    return o->save >= 0 && o->save < u->nsaves ? &u->saves[o->save] : NULL;
}

void fsdp_exec_trace_memory(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
    if (!x->trace) return;
    size_t b[STRATA_TIER_COUNT];
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        strata_tier_usage_t u;
        strata_tier_usage(m->ctx, (strata_tier_t)t, &u);
        b[t] = u.used;
    }
    sched_trace_memory(x->trace, base_now(), b);
}

/* The transfer completed: its status, its busy time, its trace event. */
static strata_status_t finish(strata_model_t *m, int id)
{
    fsdp_exec_t *x = m->exec;
    const sched_op_t *o = sched_op(x->sched, id);
    strata_status_t st = fsdp_xfer_wait(m, x->ev[id], id);
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
        return base_error(m->ctx, st, "activation transfer %s failed: %s",
                          sched_op_label(x->sched, id, lab, sizeof lab), strata_strerror(st));
    }
    return STRATA_OK;
}

/* Whether op id has completed, finishing a transfer seen complete. */
static strata_status_t is_done(strata_model_t *m, int id, int *done_p)
{
    fsdp_exec_t *x = m->exec;
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

/* ---- verify_transfers ------------------------------------------------------------------ */

/* The save's bytes hashed where they are: on the device (through a host
 * copy on the cuda backend, after the compute stream made them). */
static strata_status_t save_sum(strata_model_t *m, const fsdp_save_t *s, uint64_t *sum_p)
{
    fsdp_exec_t *x = m->exec;
    double t0 = base_now();
    strata_status_t st = STRATA_OK;
    if (!fsdp_dev_on(m->ctx)) {
        *sum_p = XXH3_64bits(s->buf.ptr, s->buf.bytes);
    } else {
        void *h = malloc(s->buf.bytes ? s->buf.bytes : 1);
        if (!h) return base_error(m->ctx, STRATA_ERR_NOMEM, "verify_transfers: %zu bytes",
                                  s->buf.bytes);
        st = fsdp_dev_copy(m->ctx, h, s->buf.ptr, s->buf.bytes);
        if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
        if (STRATA_OK == st) *sum_p = XXH3_64bits(h, s->buf.bytes);
        free(h);
    }
    x->verify_s += base_now() - t0;
    return st;
}

/* The stale_reload test fault: the Nth save brought back arrives with its
 * first 16 bytes not the ones that left. */
static void stale_reload_fault(strata_model_t *m, fsdp_save_t *s)
{
    static uint64_t reloads;
    uint64_t at = test_fault_arg("stale_reload");
    if (!at || ++reloads != at || s->buf.bytes < 32) return;
    /* plausible values (the save's own next 16 bytes), so the loss stays
     * finite and nothing but a checksum notices */
    fsdp_dev_copy(m->ctx, s->buf.ptr, (char *)s->buf.ptr + 16, 16);
    fsdp_dev_wait(m->ctx);
}

/* A save back on the device before unit u's backward or recompute: the
 * same bytes that left, or the step fails naming it. */
static strata_status_t verify_back(strata_model_t *m, strata_unit_t *u, fsdp_save_t *s)
{
    if (!s->left) return STRATA_OK;
    s->left = 0;
    stale_reload_fault(m, s);
    if (!s->summed) return STRATA_OK;
    s->summed = 0;
    uint64_t now = 0;
    strata_status_t st = save_sum(m, s, &now);
    if (STRATA_OK != st) return st;
    if (now == s->sum) return STRATA_OK;
    return base_error(m->ctx, STRATA_ERR_CHECKSUM, "verify_transfers: save '%s' of unit '%s' "
                      "came back to the device changed (step %d, micro-batch %d, rank %d): "
                      "checksum %016llx when it left, %016llx now; a copy was read before it "
                      "landed, or memory on its way was overwritten", s->name, u->name,
                      m->step_count + 1, m->micro, m->ctx->rank, (unsigned long long)s->sum,
                      (unsigned long long)now);
}

static strata_status_t issue(strata_model_t *m, int id)
{
    fsdp_exec_t *x = m->exec;
    const sched_op_t *o = sched_op(x->sched, id);
    fsdp_save_t *s = op_save(m, o);
    if (!s || !s->buf.h)
        return base_error(m->ctx, STRATA_ERR_STATE, "activation schedule: %s has no save "
                          "block (unit '%s')", sched_op_kind_name(o->kind),
                          m->units[o->unit]->name);
    strata_tier_t dst = SCHED_OP_D2H == o->kind ? STRATA_TIER_PINNED_HOST
                      : SCHED_OP_H2S == o->kind ? STRATA_TIER_STORAGE
                      : SCHED_OP_S2H == o->kind ? STRATA_TIER_PINNED_HOST : STRATA_TIER_DEVICE;
    strata_event_t *ev = NULL;
    strata_status_t st = STRATA_OK;
    if (SCHED_OP_D2H == o->kind && m->ctx->cfg.verify_transfers && !s->summed) {
        st = save_sum(m, s, &s->sum);
        if (STRATA_OK != st) return st;
        s->summed = 1;
    }
    /* cuda: the offload starts on the d2h stream after the compute that
     * made the save (its event), not after a host wait */
    if (SCHED_OP_D2H == o->kind) st = tiers_block_after(s->buf.h, m->ctx->compute_stream);
    /* placing by the memory plan, the span a restore lands in may have
     * been freed by compute queued but not yet run (mem.c): the copy
     * starts after it */
    if (SCHED_OP_H2D == o->kind && fsdp_dev_on(m->ctx) && m->mplan_placing &&
        tiers_plan_placing(m->ctx))
        st = tiers_block_after(s->buf.h, m->ctx->compute_stream);
    /* a restore's device space comes when its transfer is issued, a time
     * that varies: the memory plan knows it by the op and micro-batch */
    if (STRATA_TIER_DEVICE == dst)
        tiers_block_plan_key(s->buf.h, MPLAN_KEY_ASYNC | (uint64_t)m->micro << 32 | (uint64_t)id);
    if (STRATA_OK == st) st = strata_block_move(s->buf.h, dst, 1, NULL, &ev);
    if (STRATA_OK != st) return st;
    base_nvtx_mark(sched_op_kind_name(o->kind));
    x->ev[id] = ev;
    x->issued[id] = 1;
    if (SCHED_OP_D2H == o->kind) {
        s->buf.ptr = NULL;          /* the device copy goes away */
        s->left = 1;
        x->moved_bytes += strata_block_size(s->buf.h);
    }
    if (SCHED_MODE_NAIVE == x->opts.mode) {   /* in line: compute waits for it now */
        double t0 = base_now();
        fsdp_xfer_wait(m, ev, id);
        x->exposed_s += base_now() - t0;
        return finish(m, id);
    }
    return STRATA_OK;
}

static int tier_full(strata_status_t st)
{
    return STRATA_ERR_TIER_FULL == st || STRATA_ERR_FRAGMENTED == st;
}

/* issue(), and a restore that finds the device tier full issued again
 * after the stream-ordered releases whose event has fired are reclaimed
 * (fsdp_mem_alloc does the same for the callbacks' buffers): the tiers
 * cannot see those frees themselves. */
static strata_status_t issue_room(strata_model_t *m, int id)
{
    strata_status_t st = issue(m, id);
    int restore = SCHED_OP_H2D == sched_op(m->exec->sched, id)->kind;
    while (restore && tier_full(st) && fsdp_dev_reclaim(m->ctx, 0))
        st = issue(m, id);
    return st;
}

/* Issue, engine by engine in schedule order, every transfer whose
 * dependencies have completed. */
static strata_status_t pump(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
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
            st = issue_room(m, id);
            if (tier_full(st)) {
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
    fsdp_exec_t *x = m->exec;
    for (;;) {
        int d;
        strata_status_t st = is_done(m, id, &d);
        if (STRATA_OK != st || d) return st;
        if (x->issued[id]) {
            fsdp_xfer_wait(m, x->ev[id], id);
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
            /* nothing in flight: the room may be held by releases still
             * waiting for the compute stream; wait for the oldest */
            if (STRATA_OK != x->blocked && fsdp_dev_reclaim(m->ctx, 1)) continue;
            /* the span the memory plan gives a restore is held by what
             * the recording had freed by now: a collective running late,
             * else nothing to wait for and the step leaves the plan */
            strata_status_t cs;
            if (STRATA_ERR_FRAGMENTED == x->blocked && fsdp_mplan_held(m, &cs)) {
                if (STRATA_OK != cs) return cs;
                x->blocked = STRATA_OK;
                continue;
            }
            if (STRATA_OK != x->blocked) return x->blocked;   /* the tiers' message stands */
            return base_error(m->ctx, STRATA_ERR_STATE, "activation schedule stuck: %s cannot "
                              "be issued and nothing is in flight",
                              sched_op_label(x->sched, id, lab, sizeof lab));
        }
        fsdp_xfer_wait(m, x->ev[other], other);
        st = finish(m, other);
        if (STRATA_OK != st) return st;
    }
}

int fsdp_exec_make_room(strata_model_t *m)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x) return 0;
    /* the schedule bounds device bytes, not their layout: a tier that is
     * full by fragmentation, or where a drain runs late (a slow link, a
     * rank behind), gets room as the next offload completes */
    if (STRATA_OK != pump(m)) return 0;
    int n;
    const int *ord = sched_engine_order(x->sched, SCHED_D2H, &n);
    for (int k = 0; k < n; k++) {
        int id = ord[k];
        if (!x->issued[id] || x->done[id]) continue;
        double t0 = base_now();
        fsdp_xfer_wait(m, x->ev[id], id);
        double t1 = base_now();
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
    switch (kind) {
    case SCHED_OP_F:     return x->fid[unit];
    case SCHED_OP_B:     return x->bid[unit];
    case SCHED_OP_REGEN: return x->gid[unit];
    default:             return x->rid[unit];
    }
}

/* Whether the device has free, beyond the plan's slack, what compute op o
 * allocates (its saves), a workspace, an activation and the next unit's
 * gathered parameters: then a drain in flight need not hold it back. */
static int has_room(strata_model_t *m, const sched_op_t *o)
{
    const fsdp_exec_t *x = m->exec;
    strata_tier_usage_t u;
    if (STRATA_OK != strata_tier_usage(m->ctx, STRATA_TIER_DEVICE, &u) || u.used > u.budget)
        return 0;
    size_t need = o->mem_alloc[STRATA_TIER_DEVICE] + 2 * x->ws_bytes + x->max_act +
                  x->max_ag + x->max_save;
    return u.budget - u.used >= need;
}

strata_status_t fsdp_exec_before(strata_model_t *m, int kind, int unit)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x) return STRATA_OK;
    int id = compute_op(x, kind, unit);
    if (id < 0) return STRATA_OK;
    const sched_op_t *o = sched_op(x->sched, id);
    /* naive transfers waited for inside pump count once, in this span */
    double t0 = base_now(), e0 = x->exposed_s;
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
        double t1 = base_now();
        x->exposed_s = e0 + (t1 - t0);
        if (x->trace)   /* the exposed transfer time, on the compute track */
            sched_trace_op(x->trace, SCHED_COMPUTE, "WAIT", t0, t1 - t0, unit, NULL, 0);
    }
    if (STRATA_OK != st) return st;
    if (SCHED_OP_F != kind && SCHED_OP_REGEN != kind) {
        /* the unit's saves are on the device again: their addresses */
        strata_unit_t *u = m->units[unit];
        for (int i = 0; i < u->nsaves; i++) {
            fsdp_save_t *s = &u->saves[i];
            if (!s->buf.h) continue;    /* dropped for recompute */
            s->buf.ptr = strata_block_ptr(s->buf.h, STRATA_TIER_DEVICE);
            if (!s->buf.ptr)
                return base_error(m->ctx, STRATA_ERR_STATE, "unit '%s' save '%s' is not on "
                                  "the device before its %s", u->name, s->name,
                                  sched_op_kind_name((sched_op_kind_t)kind));
            st = verify_back(m, u, s);
            if (STRATA_OK != st) return st;
        }
        /* its input is back: the unit's again, to the end of the
         * backward of the unit before, which reads it as its output */
        int in = sched_unit_input(&x->prog->units[unit]);
        if (in >= 0 && in < u->nsaves && u->saves[in].buf.h) {
            m->acts[unit] = u->saves[in].buf;
            memset(&u->saves[in].buf, 0, sizeof u->saves[in].buf);
        }
    }
    base_nvtx_push(sched_op_kind_name((sched_op_kind_t)kind));
    return STRATA_OK;
}

strata_status_t fsdp_exec_after(strata_model_t *m, int kind, int unit, double t0, double t1)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x) return STRATA_OK;
    strata_unit_t *u = m->units[unit];
    base_nvtx_pop();
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
        int want = ru->nsaves - (sched_unit_input(ru) >= 0);
        if (u->nsaves != want)
            return base_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saved %d "
                              "activations; the recorded step program has %d (first missing: "
                              "'%s'). The program changed: call strata_model_replan between "
                              "steps to record it again", u->name, u->nsaves, want,
                              u->nsaves < want ? ru->saves[u->nsaves].name : "?");
        /* its input waits for its backward as its last save, kept or
         * moved by the policy like the others */
        if (want < ru->nsaves) {
            strata_status_t st = fsdp_save_adopt(u, &m->acts[unit]);
            if (STRATA_OK != st) return st;
        }
        for (int i = 0; i < u->nsaves; i++)
            if (SCHED_RECOMPUTE == sched_save_action(x->sched, unit, i)) {
                fsdp_buf_free(&u->saves[i].buf);   /* the re-run makes it again */
                u->saves[i].dropped = 1;
            }
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
        fsdp_exec_trace_memory(m);
    }
    return pump(m);
}

fsdp_recorded_t fsdp_exec_recorded(const strata_model_t *m, int unit)
{
    const fsdp_exec_t *x = exec_following(m);
    fsdp_recorded_t r = { NULL, NULL };
    if (x && unit >= 0 && unit < m->nunits) {
        r.unit = &x->prog->units[unit];
        r.bytes = x->ubytes ? x->ubytes + x->soff[unit] : NULL;   /* NULL: no saves */
    }
    return r;
}

/* Unit u's forward once more (kind RECOMPUTE or REGEN) from in into out,
 * checked against the recording: the same number of saves. */
static strata_status_t forward_again(strata_model_t *m, strata_unit_t *u, int kind,
                                     const fsdp_buf_t *in)
{
    int ui = u->index;
    const sched_unit_t *ru = &m->exec->prog->units[ui];
    strata_unit_call_t c = { .unit = u, .backward = 0, .training = 1, .in = in,
                             .out = &m->acts[ui + 1],
                             .mode = SCHED_OP_REGEN == kind ? CALL_REGEN : CALL_RECOMPUTE,
                             .rec = fsdp_exec_recorded(m, ui) };
    double t0 = base_now();
    strata_status_t st = fsdp_run_callback(&c);
    double t1 = base_now();
    int want = ru->nsaves - (sched_unit_input(ru) >= 0);
    if (STRATA_OK == st && c.save_calls != want)
        st = base_error(m->ctx, STRATA_ERR_MISMATCH, "unit '%s' forward, run again (%s), made "
                        "%d saves; the recorded forward made %d (a forward must save the same "
                        "every time)", u->name, SCHED_OP_REGEN == kind ? "for its output" :
                        "to recompute", c.save_calls, want);
    if (STRATA_OK != st) return st;
    return fsdp_exec_after(m, kind, ui, t0, t1);
}

strata_status_t fsdp_exec_recompute(strata_model_t *m, strata_unit_t *u)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x || compute_op(x, SCHED_OP_RECOMPUTE, u->index) < 0) return STRATA_OK;
    strata_status_t st = fsdp_exec_before(m, SCHED_OP_RECOMPUTE, u->index);
    if (STRATA_OK != st) return st;
    return forward_again(m, u, SCHED_OP_RECOMPUTE, &m->acts[u->index]);
}

int fsdp_exec_regens(const strata_model_t *m, int unit)
{
    const fsdp_exec_t *x = exec_following(m);
    return x && unit >= 0 && unit < m->nunits && x->gid && x->gid[unit] >= 0;
}

int fsdp_exec_save_kept(const strata_model_t *m, int unit, int save)
{
    const fsdp_exec_t *x = exec_following(m);
    return x && SCHED_KEEP == sched_save_action(x->sched, unit, save);
}

/* The device address of unit u's input, which a REGEN starts from: its
 * input save (kept: the schedule never recomputes or moves the input of
 * a unit whose forward runs again), or acts[u] once B(u) took it back. */
static const fsdp_buf_t *regen_input(strata_model_t *m, strata_unit_t *u, fsdp_buf_t *tmp)
{
    int in = sched_unit_input(&m->exec->prog->units[u->index]);
    if (in < 0 || in >= u->nsaves || !u->saves[in].buf.h) return &m->acts[u->index];
    *tmp = u->saves[in].buf;
    tmp->ptr = strata_block_ptr(tmp->h, STRATA_TIER_DEVICE);
    return tmp->ptr ? tmp : NULL;
}

strata_status_t fsdp_exec_regen(strata_model_t *m, strata_unit_t *u)
{
    fsdp_exec_t *x = exec_following(m);
    if (!x || compute_op(x, SCHED_OP_REGEN, u->index) < 0) return STRATA_OK;
    strata_status_t st = fsdp_exec_before(m, SCHED_OP_REGEN, u->index);
    if (STRATA_OK != st) return st;
    fsdp_buf_t tmp;
    const fsdp_buf_t *in = regen_input(m, u, &tmp);
    if (!in)
        return base_error(m->ctx, STRATA_ERR_STATE, "unit '%s': its input is not on the device "
                          "for the forward that makes the next unit's input again", u->name);
    return forward_again(m, u, SCHED_OP_REGEN, in);
}

/* Wait for whatever is still in flight (the backward consumed every
 * prefetch, but an error path may leave transfers behind). */
static strata_status_t drain(strata_model_t *m)
{
    fsdp_exec_t *x = m->exec;
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
    fsdp_exec_t *x = exec_following(m);
    if (!x) return STRATA_OK;
    strata_status_t st = drain(m);
    fsdp_exec_micro_reset(m);
    return st;
}

void fsdp_exec_abort(strata_model_t *m)
{
    /* whatever is in flight, active or not (without a schedule there are no ops) */
    if (!m->exec) return;
    drain(m);
    fsdp_exec_micro_reset(m);
}

