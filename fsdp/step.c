/*
 * step.c - the training step: forward and backward over the units with
 * all-gather prefetch, gradient accumulation over micro-batches, gradient
 * reductions started per unit on the last micro-batch, clipping and the
 * optimizer (per unit as soon as its gradient arrives when not clipping).
 *
 *   forward  u = 0..L-1:  AG(u+1..u+p) issued, wait AG(u), F(u), free params(u)*
 *   backward u = L-1..0:  AG(u-1..u-p) issued, wait AG(u), B(u), RS(u) [last micro]
 *   step_end:             wait RS/AR, clip, optimizer on the shards
 *   (* unless reshard_after_forward is off; the last unit stays into backward)
 *
 * Training state on storage is read up at the start of the compute
 * positions its fetch plan names (fetch.c), each use waiting for its own.
 *
 * On the cuda backend every buffer here is device memory and every copy,
 * cast and optimizer step is queued on the compute stream (dev.h); the
 * host waits for it once, at the end of step_end.
 */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "sched/sched.h"
#include "base/test_fault.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static strata_status_t need_ready(strata_model_t *m, const char *fn)
{
    if (!m) return STRATA_ERR_INVALID;
    if (MODEL_READY != m->state)
        return base_error(m->ctx, STRATA_ERR_STATE, "%s: the model is not committed; call "
                          "strata_model_commit first", fn);
    return STRATA_OK;
}

/* A device buffer of the step (an input, an output's gradient, a unit's
 * gradient), zeroed if asked, through the door that makes room (mem.c). */
static strata_status_t step_buf(strata_model_t *m, strata_tag_t tag, size_t bytes, int zero,
                                fsdp_buf_t *b)
{
    strata_status_t st = fsdp_buf_alloc_room(m, tag, bytes, b);
    if (STRATA_OK == st && zero && STRATA_OK != (st = fsdp_dev_fill(m->ctx, b->ptr, 0, bytes)))
        fsdp_buf_free(b);
    return st;
}

/* Drop everything the step holds so a new step can begin after an error. */
static void abort_step(strata_model_t *m)
{
    (void)fsdp_optq_drain(m);   /* the step's error is the one returned */
    fsdp_drain(m);
    fsdp_exec_abort(m);
    fsdp_mplan_forget(m);
    for (int i = 0; i <= m->nunits; i++) {
        fsdp_buf_free(&m->acts[i]);
        fsdp_buf_free(&m->gacts[i]);
    }
    for (int i = 0; i < m->nunits; i++) {
        strata_unit_t *u = m->units[i];
        fsdp_free_saves(u);
        fsdp_gather_release(u);
        fsdp_buf_free(&u->grad);
        u->rstate = GRAD_IDLE;
    }
    m->phase = PHASE_IDLE;
}

static void prefetch(strata_model_t *m, int from, int dir, int eval)
{
    /* a failed prefetch is not an error here: the unit's own wait retries
     * the gather and reports it */
    for (int k = 1; k <= m->prefetch; k++) {
        int v = from + dir * k;
        if (v < 0 || v >= m->nunits) break;
        if (STRATA_OK != fsdp_gather_start(m, m->units[v])) break;
    }
    /* an eval's master shards on storage are read a unit further ahead, so
     * that a gather started by the prefetch above at the next unit finds
     * its master up (a training step reads by its fetch plan: fetch.c) */
    int v = from + dir * (m->prefetch + 1);
    if (eval && v >= 0 && v < m->nunits && GATHER_NONE == m->units[v]->gstate &&
        STRATA_OK != fsdp_state_fetch(m, m->units[v], FSDP_SB_MASTER))
        base_clear_error(m->ctx);   /* the gather's own ready says it again */
}

/* The input to the device. On cuda a copy from the caller's (pageable)
 * memory would make the host wait for the transfer, so the bytes go
 * through a pinned-host block first and up asynchronously; the block is
 * released in stream order. A full pinned tier falls back to the direct
 * copy. */
static strata_status_t upload_input(strata_model_t *m, void *dst, const void *input,
                                    size_t bytes)
{
    strata_context_t *ctx = m->ctx;
    void *pinned = NULL;
    fsdp_mem_t *h = NULL;
    if (!fsdp_dev_on(ctx)) return fsdp_dev_copy(ctx, dst, input, bytes);
    if (STRATA_OK != fsdp_mem_alloc(ctx, STRATA_TIER_PINNED_HOST, STRATA_TAG_WORKSPACE, bytes,
                                    &pinned, &h)) {
        base_clear_error(ctx);   /* the tier's message: not this call's failure */
        return fsdp_dev_copy(ctx, dst, input, bytes);
    }
    memcpy(pinned, input, bytes);
    strata_status_t st = fsdp_dev_copy(ctx, dst, pinned, bytes);
    fsdp_dev_free_later(ctx, h);
    return st;
}

static strata_status_t run_forward(strata_model_t *m, const void *input, size_t in_bytes,
                                   int training)
{
    strata_status_t st;
    int L = m->nunits;
    if (!input && in_bytes)
        return base_error(m->ctx, STRATA_ERR_INVALID, "forward: input is NULL with %zu bytes",
                          in_bytes);
    fsdp_buf_free(&m->acts[L]);   /* an eval output from before */
    st = step_buf(m, STRATA_TAG_ACTIVATION, in_bytes, 0, &m->acts[0]);
    if (STRATA_OK != st) return st;
    if (in_bytes) st = upload_input(m, m->acts[0].ptr, input, in_bytes);
    if (STRATA_OK != st) return st;

    for (int ui = 0; ui < L; ui++) {
        strata_unit_t *u = m->units[ui];
        if (training) fsdp_fetch_at(m, FSDP_POS_F, ui);
        st = fsdp_gather_start(m, u);
        if (STRATA_OK != st) return st;
        prefetch(m, ui, +1, !training);
        st = fsdp_gather_wait(m, u);
        if (STRATA_OK != st) return st;
        fsdp_exec_trace_comm(m, "AG", ui, u->t_gstart, base_now(), 0);
        fsdp_free_saves(u);
        if (training && STRATA_OK != (st = fsdp_exec_before(m, SCHED_OP_F, ui))) return st;
        strata_unit_call_t c = { .unit = u, .backward = 0, .training = training,
                                 .in = &m->acts[ui], .out = &m->acts[ui + 1],
                                 .rec = fsdp_exec_recorded(m, ui) };
        double t0 = base_now();
        st = fsdp_run_callback(&c);
        if (STRATA_OK != st) return st;
        if (training && STRATA_OK != (st = fsdp_exec_after(m, SCHED_OP_F, ui, t0, base_now())))
            return st;
        if (!training) {
            fsdp_free_saves(u);
            fsdp_buf_free(&m->acts[ui]);
        }
        if (m->opts.reshard_after_forward && (ui != L - 1 || !training)) fsdp_gather_release(u);
    }
    return training ? fsdp_exec_forward_end(m) : STRATA_OK;
}

/* The rank_kill test fault (base/test_fault.h): the last rank dies at the
 * start of optimizer step N, as a node failure would; the restarting
 * supervisor (strata run) must go on without it. */
static void kill_point(const strata_model_t *m)
{
    uint64_t at = test_fault_arg("rank_kill");
    if (at && (uint64_t)m->step_count + 1 == at && m->ctx->rank == m->ctx->size - 1)
        raise(SIGKILL);
}

strata_status_t strata_model_step_begin(strata_model_t *m, int n_micro)
{
    strata_status_t st = need_ready(m, "strata_model_step_begin");
    if (STRATA_OK != st) return st;
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "step_begin inside a step (%d of %d "
                          "micro-batches done); finish it with strata_model_step_end",
                          m->micro, m->n_micro);
    if (n_micro < 1)
        return base_error(m->ctx, STRATA_ERR_INVALID, "step_begin: %d micro-batches; need "
                          ">= 1", n_micro);
    st = fsdp_bgsave_poll(m);   /* a checkpoint written in the background failed? */
    if (STRATA_OK != st) return st;
    kill_point(m);
    m->n_micro = n_micro;
    m->micro = 0;
    m->phase = PHASE_STEP;
    m->compute_s = m->exposed_s = m->optim_s = 0;
    m->stats.ckpt_wait_s = 0;
    (void)fsdp_dev_time_take(m->ctx, 0);   /* callbacks timed outside a step */
    m->t_step0 = base_now();
    m->strag.blocked_step0 = m->ctx->comm_blocked_s;
    comm_rec_where(m->ctx, m->step_count + 1, -1);
    for (int i = 0; i < m->nunits; i++) m->units[i]->rstate = GRAD_IDLE;
    m->state_read = m->state_written = m->state_wait_ns = 0;
    /* state on storage: when each read goes up (fetch.c), and the first ones */
    fsdp_fetch_step_begin(m);
    fsdp_mplan_step_begin(m);
    st = fsdp_exec_step_begin(m);
    if (STRATA_OK != st) {
        fsdp_mplan_forget(m);
        m->phase = PHASE_IDLE;
    }
    return st;
}

strata_status_t strata_model_forward(strata_model_t *m, const void *input, size_t in_bytes,
                                     void *batch, const void **out_p, size_t *out_bytes_p)
{
    strata_status_t st = need_ready(m, "strata_model_forward");
    if (STRATA_OK != st) return st;
    if (PHASE_IDLE == m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "forward outside a step; call "
                          "strata_model_step_begin first (or strata_model_eval)");
    if (PHASE_FORWARD_DONE == m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "forward of micro-batch %d called twice; "
                          "run its backward first", m->micro);
    if (m->micro >= m->n_micro)
        return base_error(m->ctx, STRATA_ERR_STATE, "forward: all %d micro-batches of the "
                          "step are done; call strata_model_step_end", m->n_micro);
    m->batch = batch;
    /* step 1: the sizing pass and the plan; then a new micro-batch's state */
    st = fsdp_exec_forward_begin(m, input, in_bytes);
    if (STRATA_OK == st) st = run_forward(m, input, in_bytes, 1);
    if (STRATA_OK != st) {
        abort_step(m);
        return st;
    }
    m->phase = PHASE_FORWARD_DONE;
    if (out_p) *out_p = m->acts[m->nunits].ptr;
    if (out_bytes_p) *out_bytes_p = m->acts[m->nunits].bytes;
    return STRATA_OK;
}

strata_status_t strata_model_eval(strata_model_t *m, const void *input, size_t in_bytes,
                                  void *batch, const void **out_p, size_t *out_bytes_p)
{
    strata_status_t st = need_ready(m, "strata_model_eval");
    if (STRATA_OK != st) return st;
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "eval inside a training step; call it "
                          "between steps");
    m->batch = batch;
    m->micro = 0;
    m->n_micro = 1;
    st = run_forward(m, input, in_bytes, 0);
    if (STRATA_OK != st) {
        abort_step(m);
        return st;
    }
    for (int i = 0; i < m->nunits; i++) fsdp_gather_release(m->units[i]);
    if (out_p) *out_p = m->acts[m->nunits].ptr;
    if (out_bytes_p) *out_bytes_p = m->acts[m->nunits].bytes;
    return STRATA_OK;
}

/* The optimizer on one unit's shard; scale multiplies the gradient first
 * (1/M averaging over micro-batches and clipping): its state up from its
 * tier, the update, the state back (written back behind the next work).
 * Inline or on the optimizer's thread (optq.c); thr: the pool's threads. */
int fsdp_update_on_host(const strata_model_t *m, const strata_unit_t *u)
{
    if (!fsdp_dev_on(m->ctx)) return 0;   /* the host backend: it is the host anyway */
    for (int k = 0; k < fsdp_state_count(m); k++)
        if (STRATA_TIER_DEVICE == u->home[k]) return 0;
    return 1;
}

strata_status_t fsdp_unit_update(strata_model_t *m, strata_unit_t *u, float scale, int thr)
{
    int n = fsdp_state_count(m);
    fsdp_bgsave_unit_ready(m, u->index);
    strata_status_t st = STRATA_OK;
    for (int k = 0; STRATA_OK == st && k < n; k++) st = fsdp_state_ready(m, u, k);
    if (STRATA_OK == st) st = fsdp_grad_widen(m, u);
    /* cuda, state all off the device: the host's loops, not a kernel that
     * would read it over the link on the compute stream (stalling the
     * backward); the same element code (strata/elem.h), the same bits.
     * First the device's writes to the gradient shard must have landed. */
    const fsdp_dev_ops_t *ops = m->ctx->dev_ops;
    if (STRATA_OK == st && fsdp_update_on_host(m, u)) {
        ops = &fsdp_dev_host_ops;
        st = fsdp_dev_host_sync(m->ctx);
    }
    if (STRATA_OK == st && 1.0f != scale) st = ops->scale(m->ctx, u->grad_shard.ptr, u->shard_len, scale, thr);
    if (STRATA_OK == st)
        st = ops->optim(m->ctx, &m->opts, m->step_count + 1, u->master.ptr, u->grad_shard.ptr,
                        u->state[0].ptr, u->state[1].ptr, u->shard_len, thr);
    u->keep_master = 0;
    for (int k = 0; STRATA_OK == st && k < n; k++) st = fsdp_state_put(m, u, k, 1);
    return st;
}

/* A unit's update, on the optimizer's thread where the model has one
 * (then optim_s counts only what the main thread spends). */
static strata_status_t unit_optim(strata_model_t *m, strata_unit_t *u, float scale)
{
    double t0 = base_now();
    /* cuda: a 16-bit gradient widens here, on the main thread, whose
     * kernels and frees the device layer orders (the thread then only
     * waits for them) */
    strata_status_t st = fsdp_dev_on(m->ctx) ? fsdp_grad_widen(m, u) : STRATA_OK;
    if (STRATA_OK != st) return st;
    u->rstate = GRAD_STEPPED;   /* before the thread may take it: submitted once */
    st = fsdp_optq_submit(m, u, scale);
    m->optim_s += base_now() - t0;
    return st;
}

/* The backward of unit ui: its parameters gathered (the next units'
 * prefetched), its forward run again if it recomputes, its gradient
 * buffers, its callback; what it consumed is freed. */
static strata_status_t backward_unit(strata_model_t *m, int ui, int last)
{
    strata_unit_t *u = m->units[ui];
    /* the last micro-batch without clipping: the unit's optimizer follows
     * its reduction, so its gather keeps a master on storage up for it */
    u->keep_master = last && 0.0f == m->opts.clip_norm;
    fsdp_fetch_at(m, FSDP_POS_B, ui);
    strata_status_t st = fsdp_gather_start(m, u);
    if (STRATA_OK != st) return st;
    prefetch(m, ui, -1, 0);
    st = fsdp_gather_wait(m, u);
    if (STRATA_OK != st) return st;
    fsdp_exec_trace_comm(m, "AG", ui, u->t_gstart, base_now(), 0);
    /* a recomputed input is made again first, by the unit before, with
     * the parameters its own backward gathers (prefetched) */
    if (ui > 0 && fsdp_exec_regens(m, ui - 1)) {
        strata_unit_t *v = m->units[ui - 1];
        st = fsdp_gather_start(m, v);
        if (STRATA_OK == st) st = fsdp_gather_wait(m, v);
        if (STRATA_OK == st) st = fsdp_exec_regen(m, v);
        if (STRATA_OK != st) return st;
    }
    /* a recomputed unit runs its forward again first; the gradient
     * buffers come after it, which needs none of them */
    st = fsdp_exec_recompute(m, u);
    if (STRATA_OK != st) return st;
    if (!u->grad.ptr) {   /* first micro-batch of the step */
        st = step_buf(m, STRATA_TAG_GRAD, u->npad * sizeof(float), 1, &u->grad);
        if (STRATA_OK != st) return st;
    }
    if (ui > 0) {
        st = step_buf(m, STRATA_TAG_ACTIVATION, m->acts[ui].bytes, 1, &m->gacts[ui]);
        if (STRATA_OK != st) return st;
    }
    st = fsdp_exec_before(m, SCHED_OP_B, ui);
    if (STRATA_OK != st) return st;
    strata_unit_call_t c = { .unit = u, .backward = 1, .training = 1,
                             .in = &m->acts[ui], .out_ro = &m->acts[ui + 1],
                             .gout = m->gacts[ui + 1].ptr ? &m->gacts[ui + 1] : NULL,
                             .gin = ui > 0 ? &m->gacts[ui] : NULL };
    double t0 = base_now();
    st = fsdp_run_callback(&c);
    if (STRATA_OK != st) return st;
    double t1 = base_now();
    fsdp_free_saves(u);
    st = fsdp_exec_after(m, SCHED_OP_B, ui, t0, t1);
    if (STRATA_OK != st) return st;
    fsdp_buf_free(&m->gacts[ui + 1]);
    fsdp_buf_free(&m->acts[ui + 1]);
    /* unit 0 stays gathered for the next micro-batch's forward */
    if ((m->opts.reshard_after_forward && !(0 == ui && !last)) || last)
        fsdp_gather_release(u);
    return STRATA_OK;
}

/* After the last micro-batch's backward of unit ui: its gradient's
 * reduce-scatter starts, and the units above whose gradients arrived
 * step (without clipping, which needs every unit's norm first). */
static strata_status_t reduce_and_step_above(strata_model_t *m, int ui)
{
    strata_status_t st = fsdp_reduce_start(m, m->units[ui]);
    if (STRATA_OK != st) return st;
    /* hybrid: the unit above had a whole backward to reduce-scatter */
    if (ui + 1 < m->nunits) st = fsdp_reduce_replicas(m, m->units[ui + 1]);
    if (STRATA_OK != st) return st;
    /* units whose gradients already arrived may step now */
    if (0 == pthread_mutex_trylock(&m->lock)) {
        fsdp_poll_locked(m);
        pthread_mutex_unlock(&m->lock);
    }
    if (0.0f == m->opts.clip_norm)
        for (int v = m->nunits - 1; STRATA_OK == st && v > ui; v--)
            if (GRAD_ARRIVED == m->units[v]->rstate)
                st = unit_optim(m, m->units[v], 1.0f / (float)m->n_micro);
    return st;
}

strata_status_t strata_model_backward(strata_model_t *m, const void *grad_out, size_t grad_bytes)
{
    strata_status_t st = need_ready(m, "strata_model_backward");
    if (STRATA_OK != st) return st;
    if (PHASE_FORWARD_DONE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "backward before forward: call "
                          "strata_model_forward for micro-batch %d first", m->micro);
    int L = m->nunits, last = m->micro == m->n_micro - 1;
    if (grad_out || grad_bytes) {
        if (!grad_out || grad_bytes != m->acts[L].bytes)
            return base_error(m->ctx, STRATA_ERR_MISMATCH, "backward: grad_out has %zu bytes "
                              "but the model's output has %zu", grad_bytes, m->acts[L].bytes);
        st = step_buf(m, STRATA_TAG_ACTIVATION, grad_bytes, 0, &m->gacts[L]);
        if (STRATA_OK != st) goto fail;
        st = fsdp_dev_copy(m->ctx, m->gacts[L].ptr, grad_out, grad_bytes);
        if (STRATA_OK != st) goto fail;
    }
    for (int ui = L - 1; ui >= 0; ui--) {
        st = backward_unit(m, ui, last);
        if (STRATA_OK == st && last) st = reduce_and_step_above(m, ui);
        if (STRATA_OK != st) goto fail;
    }
    st = fsdp_exec_micro_end(m);
    if (STRATA_OK != st) goto fail;
    fsdp_buf_free(&m->acts[0]);
    m->micro++;
    m->phase = PHASE_STEP;
    return STRATA_OK;
fail:
    abort_step(m);
    return st;
}

/* The nan_grad test fault (base/test_fault.h): at step N the last shard
 * rank of every replica puts a NaN into its shard of the last unit's
 * reduced gradient, as an overflow in the backward would. */
static void poison_grad(strata_model_t *m)
{
    uint64_t at = test_fault_arg("nan_grad");
    strata_unit_t *u = m->units[m->nunits - 1];
    if (at && (uint64_t)m->step_count + 1 == at && m->shard_rank == m->S - 1 && u->shard_len &&
        !fsdp_dev_on(m->ctx))    /* a host pointer only */
        ((float *)u->grad_shard.ptr)[0] = NAN;
}

/* The gradient norm is not finite: the first unit whose gradient is not,
 * agreed over the shard group (each rank sees its own shards only). The
 * update is skipped, so the model stays that of the step before. */
static strata_status_t find_nonfinite_unit(strata_model_t *m)
{
    int thr = fsdp_optim_threads(m), L = m->nunits;
    float *bad = calloc(2 * (size_t)L, sizeof *bad);
    if (!bad) return base_error(m->ctx, STRATA_ERR_NOMEM, "no memory for %d unit flags", L);
    for (int ui = 0; ui < L; ui++) {
        strata_unit_t *u = m->units[ui];
        bad[ui] = !isfinite(fsdp_sqnorm(u->grad_shard.ptr, u->shard_len, thr));
    }
    pthread_mutex_lock(&m->lock);
    strata_status_t st = strata_allreduce(m->shard, bad, bad + L, (size_t)L, STRATA_F32, STRATA_SUM);
    pthread_mutex_unlock(&m->lock);
    for (int ui = 0; STRATA_OK == st && ui < L && 0 > m->stats.grad_nonfinite_unit; ui++)
        if (0 != bad[L + ui]) m->stats.grad_nonfinite_unit = ui;
    free(bad);
    return st;
}

strata_status_t strata_model_step_end(strata_model_t *m)
{
    strata_status_t st = need_ready(m, "strata_model_step_end");
    if (STRATA_OK != st) return st;
    if (PHASE_STEP != m->phase || m->micro != m->n_micro)
        return base_error(m->ctx, STRATA_ERR_STATE, "step_end after %d of %d micro-batches "
                          "(each needs a forward and a backward)%s",
                          PHASE_IDLE == m->phase ? 0 : m->micro, m->n_micro,
                          PHASE_IDLE == m->phase ? "; no step was begun" : "");
    int L = m->nunits;
    float inv_m = 1.0f / (float)m->n_micro;
    int clip = 0.0f != m->opts.clip_norm;
    if (!clip) fsdp_fetch_at(m, FSDP_POS_END, 0);   /* the updates still to come */
    for (int ui = L - 1; ui >= 0; ui--) {
        strata_unit_t *u = m->units[ui];
        st = fsdp_reduce_wait(m, u);
        if (STRATA_OK == st) st = fsdp_grad_widen(m, u);   /* before the norm reads it */
        if (STRATA_OK != st) goto fail;
        fsdp_exec_trace_comm(m, "RS", ui, u->t_rstart, base_now(), 0);
        if (!clip && GRAD_ARRIVED == u->rstate) st = unit_optim(m, u, inv_m);
        if (STRATA_OK != st) goto fail;
    }
    /* every update queued beside the backward is done before the step is */
    {
        double t0 = base_now();
        st = fsdp_optq_drain(m);
        m->optim_s += base_now() - t0;
        if (STRATA_OK != st) goto fail;
    }
    m->stats.grad_norm = -1.0;
    m->stats.grad_nonfinite_unit = -1;
    if (clip) {
        poison_grad(m);
        /* every replica holds the same reduced shard: summing the squared
         * norms over the shard group gives the global norm */
        double t0 = base_now();
        float total = 0;
        if (fsdp_dev_on(m->ctx)) {
            st = fsdp_dev_global_sqnorm(m, &total);   /* the host needs the norm */
        } else {
            int thr = fsdp_optim_threads(m);
            double sq = 0;
            for (int ui = 0; ui < L; ui++)
                sq += fsdp_sqnorm(m->units[ui]->grad_shard.ptr, m->units[ui]->shard_len, thr);
            float local = (float)sq;
            pthread_mutex_lock(&m->lock);
            st = strata_allreduce(m->shard, &local, &total, 1, STRATA_F32, STRATA_SUM);
            pthread_mutex_unlock(&m->lock);
        }
        m->optim_s += base_now() - t0;
        if (STRATA_OK != st) goto fail;
        double norm = sqrt((double)total) * inv_m;
        float scale = inv_m;
        if (norm > m->opts.clip_norm) scale = (float)(inv_m * m->opts.clip_norm / norm);
        m->stats.grad_norm = norm;
        if (!isfinite(norm)) {      /* the same on every rank: the total is reduced */
            /* the search reads the shards on the host; on a device the
             * unit stays unknown (-1) and the message says less */
            st = fsdp_dev_on(m->ctx) ? STRATA_OK : find_nonfinite_unit(m);
            if (STRATA_OK != st) goto fail;
        } else {
            for (int ui = L - 1; STRATA_OK == st && ui >= 0; ui--) {
                fsdp_fetch_at(m, FSDP_POS_OPT, ui);
                st = unit_optim(m, m->units[ui], scale);
            }
            if (STRATA_OK != st) goto fail;
        }
    }
    /* the master shards changed: every gathered copy is stale */
    for (int ui = 0; ui < L; ui++) fsdp_gather_release(m->units[ui]);
    /* the one host wait of a step on the cuda backend (no-ops on the host) */
    st = fsdp_gather_settle(m);
    if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
    if (STRATA_OK != st) goto fail;
    /* cuda: the callbacks' time on the device, not their launches' */
    double dev_s = fsdp_dev_time_take(m->ctx, 1);
    if (dev_s >= 0) m->compute_s = dev_s;
    m->step_count++;
    m->phase = PHASE_IDLE;
    m->stats.steps = m->step_count;
    m->stats.step_s = base_now() - m->t_step0;
    m->stats.compute_s = m->compute_s;
    m->stats.exposed_comm_s = m->exposed_s;
    m->stats.optim_s = m->optim_s;
    m->stats.state_read_bytes = m->state_read;
    m->stats.state_written_bytes = m->state_written;
    m->stats.state_wait_s = (double)m->state_wait_ns * 1e-9;
    fsdp_ws_cache_drop(m);   /* a step begins with nothing of the last one on the device */
    st = fsdp_exec_step_end(m);
    fsdp_mplan_step_end(m);
    if (STRATA_OK == st) st = fsdp_straggler_step(m);
    return st;
fail:
    abort_step(m);
    return st;
}
