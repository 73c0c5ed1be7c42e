/*
 * progress.c - the collectives of the step: all-gathers of flat parameters
 * and the gradient reductions (reduce-scatter over the shard group, then
 * allreduce over the replica group), and what drives them forward.
 *
 * Open MPI advances a nonblocking collective only inside MPI calls of the
 * process. Two things make those calls while compute runs: an optional
 * progress thread that tests every request in flight (sleeping on a
 * condition variable when nothing is in flight, polling every
 * PROGRESS_US otherwise), and strata_call_progress, which callbacks may
 * call between chunks of work. Once a callback has called it, the thread
 * stands down (self_progress): it waits on the condition variable and
 * nothing wakes it but the model's end. Its wake-ups, each a preemption
 * of the compute thread on a busy core, made 2-rank steps of the example
 * GPT (4 layers, dim 128, seq 16) 5-10% longer than with no thread, where
 * the callbacks' own calls already kept the collectives moving. Every MPI
 * call of a model is made under m->lock, so MPI_THREAD_SERIALIZED would
 * suffice.
 *
 * Order: every collective is STARTED by the main thread at a fixed point of
 * the program, the same on every rank; the progress thread and
 * strata_call_progress only test. Starting may block (cfg.comm_check makes
 * each start a small blocking allreduce), and two threads starting
 * collectives on two communicators in timing-dependent order can deadlock
 * across ranks. So the replica allreduce of unit u (hybrid sharding) starts
 * after the backward of unit u-1, not when its reduce-scatter completes.
 *
 * On the cuda backend (NCCL, each group on its own stream) the compute
 * stream and the comm streams are ordered by events, never by host waits:
 * a gather or a reduction starts after the compute stream's work so far
 * (the optimizer wrote the master, backward the gradient); a unit's
 * compute waits for its all-gather's event (fsdp_gather_wait returns at
 * once), and the request is completed later by the progress thread or
 * the step's end. The casts of the 16-bit copies run on the compute
 * stream.
 */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "comm/comm.h"
#include "base/thread.h"
#include "base/nvtx.h"
#include "base/wait.h"

#include <errno.h>
#include <string.h>

#define PROGRESS_US 200  /* progress thread: poll interval while something is in flight */
#define WAIT_US     20   /* a blocked wait tests, then sleeps this long with the lock released */
#define SPIN_TESTS  64   /* ... after this many rounds that only let go of the lock */

/* A blocked wait: the first SPIN_TESTS rounds only let go of the lock (a
 * collective about to finish is caught within microseconds); later ones
 * sleep WAIT_US with the lock released, so on an oversubscribed machine
 * the other ranks get the core instead of a spinning MPI_Wait. */
static void nap_init(base_waiter_t *w)
{
    base_waiter_init(w, 0, SPIN_TESTS, WAIT_US * 1000L, WAIT_US * 1000L);
}

/* One round of a blocked wait, called with m->lock held. */
static void nap(strata_model_t *m, base_waiter_t *w)
{
    pthread_mutex_unlock(&m->lock);
    base_waiter_pause(w);
    pthread_mutex_lock(&m->lock);
}

/* The reduction lands in rs_recv and is widened (or copied) into the
 * gradient shard: it travels in 16 bits, or (cuda) the shard lives off
 * the device, where the collective cannot write. */
static int reduce_wide(const strata_model_t *m, const strata_unit_t *u)
{
    return STRATA_F32 != m->opts.reduce_dtype ||
           (fsdp_dev_on(m->ctx) && STRATA_TIER_DEVICE != u->home[FSDP_SB_GRAD]);
}

/* cuda: the collective sends from device memory; a master shard that
 * lives off the device goes up through gsend first */
static int gather_staged(const strata_model_t *m, const strata_unit_t *u)
{
    return STRATA_BF16 == m->opts.compute_dtype ||
           (fsdp_dev_on(m->ctx) && STRATA_TIER_DEVICE != u->home[FSDP_SB_MASTER]);
}

/* u's gradient shard is final: back to f32 if it travelled in 16 bits. */
static void arrived(strata_model_t *m, strata_unit_t *u)
{
    /* cuda: the widening kernel is launched by the main thread, where the
     * rank's device is current (fsdp_grad_widen); this may be the progress
     * thread */
    if (reduce_wide(m, u) && !fsdp_dev_on(m->ctx)) {
        fsdp_dev_widen(m->ctx, u->rs_recv.ptr, u->grad_shard.ptr, u->shard_len,
                       m->opts.reduce_dtype);
        fsdp_buf_free(&u->rs_recv);
    }
    u->rstate = GRAD_ARRIVED;
}

strata_status_t fsdp_grad_widen(strata_model_t *m, strata_unit_t *u)
{
    if (GRAD_ARRIVED != u->rstate || !u->rs_recv.h || !reduce_wide(m, u)) return STRATA_OK;
    strata_status_t st = fsdp_dev_widen(m->ctx, u->rs_recv.ptr, u->grad_shard.ptr,
                                        u->shard_len, m->opts.reduce_dtype);
    fsdp_buf_free(&u->rs_recv);
    return st;
}

/* The reduce-scatter of u is complete. */
static void rs_done(strata_model_t *m, strata_unit_t *u)
{
    u->t_rdone = base_now();
    base_nvtx_end(u->nvtx_r);
    u->nvtx_r = 0;
    /* the full gradient was only the send buffer */
    fsdp_buf_free(&u->grad);
    fsdp_buf_free(&u->rs_send);
    if (m->n_replicas > 1) u->rstate = GRAD_RS_DONE;   /* the main thread starts the allreduce */
    else arrived(m, u);
}

/* Finish whichever gradient collective of u is in flight, if it is done
 * (or, with block, once it is). Only completes; never starts one. */
static strata_status_t grad_advance(strata_model_t *m, strata_unit_t *u, int block)
{
    strata_status_t st;
    int done = 1;
    if (GRAD_RS != u->rstate && GRAD_AR != u->rstate) return STRATA_OK;
    if (!block) {
        st = strata_request_test(u->rreq, &done);
        if (STRATA_OK != st) return st;
        if (!done) return STRATA_OK;
    }
    st = strata_request_wait(u->rreq);
    u->rreq = NULL;
    m->inflight--;
    if (STRATA_OK != st) return st;
    if (GRAD_RS == u->rstate) rs_done(m, u);
    else arrived(m, u);
    return STRATA_OK;
}

static strata_status_t gather_advance(strata_model_t *m, strata_unit_t *u, int block)
{
    strata_status_t st;
    int done = 1;
    /* in flight, or (cuda) READY with the compute stream ordered after it */
    if (!u->greq) return STRATA_OK;
    if (!block) {
        st = strata_request_test(u->greq, &done);
        if (STRATA_OK != st) return st;
        if (!done) return STRATA_OK;
    }
    st = strata_request_wait(u->greq);
    u->greq = NULL;
    m->inflight--;
    fsdp_buf_free(&u->gsend);
    if (STRATA_OK != st) return st;
    u->gstate = GATHER_NONE == u->gstate ? GATHER_NONE : GATHER_READY;
    u->t_gdone = base_now();
    base_nvtx_end(u->nvtx_g);
    u->nvtx_g = 0;
    return STRATA_OK;
}

strata_status_t fsdp_poll_locked(strata_model_t *m)
{
    strata_status_t st = STRATA_OK;
    for (int i = 0; i < m->nunits && m->inflight; i++) {
        strata_status_t s1 = gather_advance(m, m->units[i], 0);
        strata_status_t s2 = grad_advance(m, m->units[i], 0);
        if (STRATA_OK == st) st = STRATA_OK != s1 ? s1 : s2;
    }
    return st;
}

/* A collective is in flight: the progress thread polls, unless the
 * callbacks drive progress themselves (then it stays parked). Under m->lock. */
static void wake_progress(strata_model_t *m)
{
    if (!m->self_progress) pthread_cond_signal(&m->cond);
}

static void *progress_main(void *arg)
{
    strata_model_t *m = arg;
    base_waiter_t poll;   /* no spinning: every poll sleeps PROGRESS_US */
    base_waiter_init(&poll, 0, 0, PROGRESS_US * 1000L, PROGRESS_US * 1000L);
    pthread_mutex_lock(&m->lock);
    while (!m->progress_stop) {
        if (!m->inflight || m->self_progress) {
            pthread_cond_wait(&m->cond, &m->lock);
            continue;
        }
        fsdp_poll_locked(m);   /* errors surface again when the owner waits */
        pthread_mutex_unlock(&m->lock);
        base_waiter_pause(&poll);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

strata_status_t fsdp_progress_start(strata_model_t *m)
{
    if (!m->opts.progress_thread || m->progress_running) return STRATA_OK;
    m->progress_stop = 0;
    int rc = base_thread_create(m->ctx, &m->progress, progress_main, m);
    if (rc) return base_error(m->ctx, STRATA_ERR_NOMEM, "cannot start the progress thread: %s",
                              strerror(rc));
    m->progress_running = 1;
    return STRATA_OK;
}

void fsdp_progress_stop(strata_model_t *m)
{
    if (!m->progress_running) return;
    pthread_mutex_lock(&m->lock);
    m->progress_stop = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->progress, NULL);
    m->progress_running = 0;
}

strata_status_t fsdp_gather_start(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st;
    strata_dtype_t dt = m->opts.compute_dtype;
    size_t esz = strata_dtype_size(dt);
    if (u->greq) {   /* cuda: a released gather not completed yet */
        pthread_mutex_lock(&m->lock);
        st = gather_advance(m, u, 1);
        pthread_mutex_unlock(&m->lock);
        if (STRATA_OK != st) return st;
    }
    if (GATHER_NONE != u->gstate) return STRATA_OK;
    st = fsdp_state_ready(m, u, FSDP_SB_MASTER);   /* up from storage if it lives there */
    if (STRATA_OK != st) return st;
    u->t_gstart = base_now();
    u->nvtx_g = base_nvtx_start("AG");
    /* a full tier may have room once kept workspace goes or an
     * activation offload in flight completes (mem.c makes room) */
    st = fsdp_buf_alloc_room(m, STRATA_TAG_PARAM, u->npad * esz, &u->gathered);
    if (STRATA_OK != st) return st;
    const void *send = u->master.ptr;
    if (gather_staged(m, u)) {
        st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, u->shard_len * esz, &u->gsend);
        if (STRATA_OK != st) goto err;
        st = fsdp_dev_round(m->ctx, u->master.ptr, u->gsend.ptr, u->shard_len, dt);
        if (STRATA_OK != st) goto err;
        send = u->gsend.ptr;
    }
    if (1 == m->S) {   /* a group of one: the shard is the whole vector */
        st = fsdp_dev_copy(m->ctx, u->gathered.ptr, send, u->npad * esz);
        fsdp_buf_free(&u->gsend);
        if (STRATA_OK != st) goto err;
        u->gstate = GATHER_READY;
        return STRATA_OK;
    }
    /* the comm stream after the compute stream's master (and its cast) */
    st = comm_stream_wait(m->shard, m->ctx->compute_stream);
    if (STRATA_OK != st) goto err;
    /* starting is communication time too (it may wait for the lock, and
     * the first rounds of a collective may run inside the start) */
    double t0 = base_now();
    pthread_mutex_lock(&m->lock);
    comm_rec_where(m->ctx, -1, u->index);
    st = comm_start(m->shard, COLL_ALLGATHER, send, u->gathered.ptr, u->shard_len, dt,
                    STRATA_SUM, m->coll_agreed, &u->greq);
    if (STRATA_OK == st) {
        u->gstate = GATHER_INFLIGHT;
        m->inflight++;
        wake_progress(m);
    }
    pthread_mutex_unlock(&m->lock);
    m->exposed_s += base_now() - t0;
    if (STRATA_OK != st) goto err;
    return STRATA_OK;
err:
    fsdp_buf_free(&u->gsend);
    fsdp_buf_free(&u->gathered);
    return st;
}

/* The gather has read the master shard: one that lives on storage goes
 * down again, unless the unit's optimizer comes next (u->keep_master) */
static strata_status_t gather_read(strata_model_t *m, strata_unit_t *u)
{
    return u->keep_master ? STRATA_OK : fsdp_state_put(m, u, FSDP_SB_MASTER, 0);
}

strata_status_t fsdp_gather_wait(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st = STRATA_OK;
    if (GATHER_NONE == u->gstate) st = fsdp_gather_start(m, u);
    if (STRATA_OK != st) return st;
    if (GATHER_READY == u->gstate) return gather_read(m, u);
    double t0 = base_now();
    pthread_mutex_lock(&m->lock);
    if (fsdp_dev_on(m->ctx) && u->greq) {
        /* the compute stream waits for the gather's event; the host does not */
        st = comm_request_order(u->greq, m->ctx->compute_stream);
        if (STRATA_OK == st) u->gstate = GATHER_READY;
    }
    /* the state, not the request, is tested after every nap: the progress
     * thread may have completed and released the request meanwhile */
    base_waiter_t w;
    nap_init(&w);
    while (STRATA_OK == st && GATHER_INFLIGHT == u->gstate) {
        st = gather_advance(m, u, 0);
        if (STRATA_OK == st && GATHER_INFLIGHT == u->gstate) nap(m, &w);
    }
    pthread_mutex_unlock(&m->lock);
    m->exposed_s += base_now() - t0;
    if (STRATA_OK == st && GATHER_READY != u->gstate)
        st = base_error(m->ctx, STRATA_ERR_STATE, "unit '%s': all-gather failed earlier",
                        u->name);
    return STRATA_OK == st ? gather_read(m, u) : st;
}

void fsdp_gather_release(strata_unit_t *u)
{
    if (GATHER_READY != u->gstate) return;
    fsdp_buf_free(&u->gathered);
    u->gstate = GATHER_NONE;
}

strata_status_t fsdp_reduce_start(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st;
    strata_dtype_t rd = m->opts.reduce_dtype;
    size_t esz = strata_dtype_size(rd);
    /* the shard's values are the reduction's: up from storage without a read */
    st = fsdp_state_fresh(m, u, FSDP_SB_GRAD);
    if (STRATA_OK != st) return st;
    const void *send = u->grad.ptr;
    void *recv = u->grad_shard.ptr;
    u->t_rstart = base_now();
    u->nvtx_r = base_nvtx_start("RS");
    if (reduce_wide(m, u)) {
        /* an f32 reduction sends the gradient itself: only the shard is staged */
        if (STRATA_F32 != rd)
            st = fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_GRAD, u->npad * esz, 0,
                                &u->rs_send);
        if (STRATA_OK != st) return st;
        st = fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_GRAD, u->shard_len * esz, 0,
                            &u->rs_recv);
        if (STRATA_OK != st) {
            fsdp_buf_free(&u->rs_send);
            return st;
        }
        if (STRATA_F32 != rd) st = fsdp_dev_round(m->ctx, u->grad.ptr, u->rs_send.ptr, u->npad, rd);
        if (STRATA_OK != st) {
            fsdp_buf_free(&u->rs_send);
            fsdp_buf_free(&u->rs_recv);
            return st;
        }
        if (STRATA_F32 != rd) send = u->rs_send.ptr;
        recv = u->rs_recv.ptr;
    }
    if (1 == m->S) {   /* a group of one: the average is the gradient itself */
        st = fsdp_dev_copy(m->ctx, recv, send, u->shard_len * esz);
        if (STRATA_OK != st) return st;
        pthread_mutex_lock(&m->lock);
        rs_done(m, u);
        pthread_mutex_unlock(&m->lock);
        return STRATA_OK;
    }
    /* the comm stream after backward's work on the compute stream */
    st = comm_stream_wait(m->shard, m->ctx->compute_stream);
    if (STRATA_OK != st) return st;
    double t0 = base_now();
    pthread_mutex_lock(&m->lock);
    comm_rec_where(m->ctx, -1, u->index);
    st = comm_start(m->shard, COLL_REDUCE_SCATTER, send, recv, u->shard_len, rd, STRATA_AVG,
                    m->coll_agreed, &u->rreq);
    if (STRATA_OK == st) {
        u->rstate = GRAD_RS;
        m->inflight++;
        wake_progress(m);
    }
    pthread_mutex_unlock(&m->lock);
    m->exposed_s += base_now() - t0;
    if (STRATA_OK != st) {
        fsdp_buf_free(&u->rs_send);
        fsdp_buf_free(&u->rs_recv);
    }
    return st;
}

strata_status_t fsdp_reduce_replicas(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st = STRATA_OK;
    if (m->n_replicas < 2 || GRAD_ARRIVED <= u->rstate || GRAD_AR == u->rstate) return STRATA_OK;
    if (GRAD_IDLE == u->rstate)
        return base_error(m->ctx, STRATA_ERR_STATE, "unit '%s': no gradient reduction was "
                          "started", u->name);
    double t0 = base_now();
    pthread_mutex_lock(&m->lock);
    base_waiter_t w;
    nap_init(&w);
    while (STRATA_OK == st && GRAD_RS == u->rstate) {
        st = grad_advance(m, u, 0);
        if (STRATA_OK == st && GRAD_RS == u->rstate) nap(m, &w);
    }
    if (STRATA_OK == st && GRAD_RS_DONE == u->rstate) {
        void *buf = reduce_wide(m, u) ? u->rs_recv.ptr : u->grad_shard.ptr;
        comm_rec_where(m->ctx, -1, u->index);
        st = comm_start(m->replica, COLL_ALLREDUCE, buf, buf, u->shard_len, m->opts.reduce_dtype,
                        STRATA_AVG, m->coll_agreed, &u->rreq);
        if (STRATA_OK == st) {
            u->rstate = GRAD_AR;
            m->inflight++;
            wake_progress(m);
        }
    }
    pthread_mutex_unlock(&m->lock);
    m->exposed_s += base_now() - t0;
    return st;
}

strata_status_t fsdp_reduce_wait(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st = fsdp_reduce_replicas(m, u);
    if (STRATA_OK != st || GRAD_ARRIVED <= u->rstate) return st;
    double t0 = base_now();
    pthread_mutex_lock(&m->lock);
    base_waiter_t w;
    nap_init(&w);
    while (STRATA_OK == st && (GRAD_RS == u->rstate || GRAD_AR == u->rstate)) {
        st = grad_advance(m, u, 0);
        if (STRATA_OK == st && (GRAD_RS == u->rstate || GRAD_AR == u->rstate)) nap(m, &w);
    }
    pthread_mutex_unlock(&m->lock);
    m->exposed_s += base_now() - t0;
    if (STRATA_OK == st && GRAD_ARRIVED > u->rstate)
        st = base_error(m->ctx, STRATA_ERR_STATE, "unit '%s': gradient reduction stalled",
                        u->name);
    return st;
}

void fsdp_drain(strata_model_t *m)
{
    pthread_mutex_lock(&m->lock);
    for (int i = m->nunits - 1; i >= 0; i--) {
        strata_unit_t *u = m->units[i];
        if (u->greq) gather_advance(m, u, 1);
        if (u->rreq) {
            strata_request_wait(u->rreq);
            u->rreq = NULL;
            m->inflight--;
        }
        u->rstate = GRAD_IDLE;
        fsdp_buf_free(&u->rs_send);
        fsdp_buf_free(&u->rs_recv);
    }
    pthread_mutex_unlock(&m->lock);
}

int fsdp_progress_settle(strata_model_t *m, strata_status_t *st_p)
{
    /* every collective in flight was started by every rank at the same
     * point of the program, so waiting for one cannot wait on this rank */
    int done = 0;
    *st_p = STRATA_OK;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nunits && !done; i++) {
        strata_unit_t *u = m->units[i];
        if (GRAD_RS == u->rstate || GRAD_AR == u->rstate) {
            *st_p = grad_advance(m, u, 1);
            done = 1;
        } else if (u->greq) {
            *st_p = gather_advance(m, u, 1);
            done = 1;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return done;
}

strata_status_t fsdp_gather_settle(strata_model_t *m)
{
    strata_status_t st = STRATA_OK;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nunits; i++) {
        strata_status_t s1 = gather_advance(m, m->units[i], 1);
        if (STRATA_OK == st) st = s1;
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}
