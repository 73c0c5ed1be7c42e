/*
 * engine.c - copy engines and events.
 *
 * Three engines, one thread each: d2h, h2d and the I/O engine of the
 * storage tier (the only thread of the process that calls HDF5). Each runs
 * its queue in issue order, one chunk (config chunk_size) at a time. The
 * one exception to FIFO: between two chunks of a started copy, one small
 * copy queued behind it (at most one chunk long, its dependencies met) may
 * run first, so a large transfer delays an urgent small one by one chunk,
 * not by its whole length. Head and small copies alternate, so a stream of
 * small copies cannot starve a large one.
 *
 * An op whose dependencies (the block's previous op, the caller's
 * wait_for event) have not completed holds its engine, as a CUDA stream
 * waiting on an event does.
 *
 * Link model: with a bandwidth set, each chunk occupies the modelled link
 * for n / bw seconds (plus the latency once per copy) and the engine
 * sleeps to that absolute deadline with clock_nanosleep, using no CPU.
 *
 * Wake-ups: a copy costs two thread hops (caller to engine, engine to
 * waiter). Each engine sleeps on its own condition variable, so queueing
 * work wakes that engine alone and a completion wakes the waiters and only
 * an engine whose queued head waits for a dependency; with one shared
 * condition variable every hop woke all three engines as well, which on a
 * small machine cost 28 us per copy instead of 7.
 *
 * Waiters run copies (config wait_copies, default on): strata_event_wait
 * on a copy its engine has not started runs it on the waiting thread (see
 * wait_copy): device<->host copies where the backend allows, storage ops
 * that need no HDF5 call, since all HDF5 calls stay on the I/O thread.
 *
 * Spinning (config spin_time, default off): an engine out of work polls for
 * more, and strata_event_wait polls its event, for spin_time before
 * sleeping; a hop then costs a cache-line transfer instead of a scheduler
 * wake-up. That pays only where the polling thread does not hold a core
 * the other side needs: measured on 2 busy cores, 20-50 us of polling made
 * a 4 MiB copy 40-50% slower, as the engine waited for the poller's core.
 */
#include "config.h"
#include "tiers/tiers.h"
#include "base/nvtx.h"
#include "base/thread.h"
#include "base/wait.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- spinning ----------------------------------------------------------- */

static inline int load_int(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* Bump the generation that idle engines poll (lock held). */
static inline void bump_gen(tiers_state_t *ts)
{
    __atomic_store_n(&ts->gen, ts->gen + 1, __ATOMIC_RELEASE);
}

/* Poll ev without the lock for ts->spin seconds (see tiers.h). No
 * sched_yield: under load it gives the core away for a whole time slice. */
static void spin_on_event(tiers_state_t *ts, strata_event_t *ev)
{
    if (ts->spin <= 0) return;
    base_waiter_t w;
    base_waiter_init(&w, ts->spin, 0, 0, 0);
    while (!load_int(&ev->done) && base_waiter_spin(&w)) { }
}

/* An idle engine polls for new work (lock not held); 1 if something changed. */
static int spin_for_work(tiers_state_t *ts, unsigned gen)
{
    base_waiter_t w;
    base_waiter_init(&w, ts->spin, 0, 0, 0);
    do {
        if (__atomic_load_n(&ts->gen, __ATOMIC_ACQUIRE) != gen) return 1;
    } while (base_waiter_spin(&w));
    return 0;
}

/* ---- events ------------------------------------------------------------- */

strata_event_t *tiers_event_new(tiers_state_t *ts)
{
    strata_event_t *ev = calloc(1, sizeof *ev);
    if (!ev) return NULL;
    ev->ts = ts;
    ev->refs = 1;
    return ev;
}

void tiers_event_complete_locked(strata_event_t *ev, strata_status_t st)
{
    tiers_state_t *ts = ev->ts;
    ev->status = st;
    ev->t_end = base_now();
    if (0 == ev->t_start) ev->t_start = ev->t_end;
    __atomic_store_n(&ev->done, 1, __ATOMIC_RELEASE);
    bump_gen(ts);
    ts->wake_waiters = 1;
    /* an engine asleep with work queued waits for a dependency: maybe this one */
    for (int i = 0; i < ENG_COUNT; i++)
        if (ts->eng[i].asleep && ts->eng[i].head) ts->wake_engines |= 1u << i;
}

void tiers_unlock(tiers_state_t *ts)
{
    int waiters = ts->wake_waiters;
    unsigned engines = ts->wake_engines;
    ts->wake_waiters = 0;
    ts->wake_engines = 0;
    pthread_mutex_unlock(&ts->lock);
    if (waiters) pthread_cond_broadcast(&ts->cond);
    for (int i = 0; i < ENG_COUNT; i++)
        if (engines & (1u << i)) pthread_cond_signal(&ts->eng[i].cond);
}

void tiers_cond_wait(tiers_state_t *ts, pthread_cond_t *cond)
{
    if (ts->wake_waiters || ts->wake_engines) {
        /* send the wake-ups first; to the caller this is a spurious wake-up */
        tiers_unlock(ts);
        pthread_mutex_lock(&ts->lock);
        return;
    }
    pthread_cond_wait(cond, &ts->lock);
}

void tiers_event_times(strata_event_t *ev, double *start_p, double *end_p)
{
    tiers_state_t *ts = ev->ts;
    pthread_mutex_lock(&ts->lock);
    *start_p = ev->t_start;
    *end_p = ev->done ? ev->t_end : 0;
    tiers_unlock(ts);
}

void tiers_event_unref_locked(strata_event_t *ev)
{
    if (ev && 0 == --ev->refs) free(ev);
}

strata_status_t strata_event_create(strata_context_t *ctx, strata_event_t **ev_p)
{
    if (!ctx || !ctx->tiers || !ev_p) return STRATA_ERR_INVALID;
    strata_event_t *ev = tiers_event_new(ctx->tiers);
    if (!ev) return base_error(ctx, STRATA_ERR_NOMEM, "strata_event_create: out of memory");
    *ev_p = ev;
    return STRATA_OK;
}

strata_status_t strata_event_complete(strata_event_t *ev)
{
    if (!ev) return STRATA_ERR_INVALID;
    tiers_state_t *ts = ev->ts;
    pthread_mutex_lock(&ts->lock);
    strata_status_t st = STRATA_OK;
    if (ev->done) st = STRATA_ERR_STATE;
    else tiers_event_complete_locked(ev, STRATA_OK);
    tiers_unlock(ts);
    if (STRATA_OK != st)
        return base_error(ts->ctx, st, "strata_event_complete: event already complete");
    return st;
}

strata_status_t strata_event_query(strata_event_t *ev, int *done_p)
{
    if (!ev || !done_p) return STRATA_ERR_INVALID;
    pthread_mutex_lock(&ev->ts->lock);
    *done_p = ev->done;
    tiers_unlock(ev->ts);
    return STRATA_OK;
}

static void wait_copy(tiers_state_t *ts, strata_event_t *ev);

strata_status_t strata_event_wait(strata_event_t *ev)
{
    if (!ev) return STRATA_ERR_INVALID;
    tiers_state_t *ts = ev->ts;
    pthread_mutex_lock(&ts->lock);
    if (!ev->done) wait_copy(ts, ev);
    if (!ev->done && ts->spin > 0) {
        tiers_unlock(ts);
        spin_on_event(ts, ev);
        pthread_mutex_lock(&ts->lock);
    }
    while (!ev->done) tiers_cond_wait(ts, &ts->cond);
    strata_status_t st = ev->status;
    tiers_unlock(ts);
    return st;
}

void strata_event_release(strata_event_t *ev)
{
    if (!ev) return;
    tiers_state_t *ts = ev->ts;
    pthread_mutex_lock(&ts->lock);
    tiers_event_unref_locked(ev);
    tiers_unlock(ts);
}

strata_status_t strata_tiers_drain(strata_context_t *ctx)
{
    if (!ctx || !ctx->tiers) return STRATA_ERR_INVALID;
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    while (ts->outstanding > 0) tiers_cond_wait(ts, &ts->cond);
    tiers_unlock(ts);
    return STRATA_OK;
}

/* ---- engines ------------------------------------------------------------ */

double tiers_link_time(double bytes, double bw, double latency)
{
    if (bw <= 0) return 0;
    return bytes / bw + latency;
}

void tiers_enqueue(tiers_state_t *ts, int engine, tiers_op_t *op)
{
    tiers_engine_t *e = &ts->eng[engine];
    op->next = NULL;
    op->t_queued = base_now();
    if (e->tail) e->tail->next = op;
    else e->head = op;
    e->tail = op;
    ts->outstanding++;
    bump_gen(ts);
    if (e->asleep) ts->wake_engines |= 1u << engine;
}

static void unlink_op(tiers_engine_t *e, tiers_op_t *op)
{
    tiers_op_t **pp = &e->head, *prev = NULL;
    while (*pp != op) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    *pp = op->next;
    if (e->tail == op) e->tail = prev;
}

static int deps_ready(const tiers_op_t *op)
{
    return (!op->prev || op->prev->done) && (!op->wait_for || op->wait_for->done);
}

static size_t op_bytes(const tiers_op_t *op)
{
    return op->blk->bytes;
}

/* The op to give the next chunk to, or NULL when the engine must wait. */
static tiers_op_t *pick(tiers_state_t *ts, tiers_engine_t *e)
{
    tiers_op_t *head = e->head;
    if (!head) return NULL;
    /* a head run by a waiter leaves the engine free for small copies only */
    if (head->started && (!e->overtook || head->helped)) {
        for (tiers_op_t *o = head->next; o; o = o->next) {
            if (!o->started && op_bytes(o) <= ts->chunk && deps_ready(o)) {
                e->overtook = 1;
                return o;
            }
        }
    }
    e->overtook = 0;
    if (head->helped) return NULL;
    if (!head->started && !deps_ready(head)) return NULL;
    return head;
}

static void sleep_until(double t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    while (EINTR == clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) { }
}

static int is_storage_op(const tiers_op_t *op)
{
    return STRATA_TIER_STORAGE == op->src || STRATA_TIER_STORAGE == op->dst;
}

/* the op's name in the Chrome trace, for its NVTX range */
static const char *op_nvtx_name(const tiers_op_t *op)
{
    return STRATA_TIER_STORAGE == op->src ? "S2H" : STRATA_TIER_STORAGE == op->dst ? "H2S"
         : STRATA_TIER_DEVICE == op->src ? "D2H" : "H2D";
}

/* One chunk of n bytes of a device<->host transfer of total bytes. */
static strata_status_t copy_chunk(tiers_state_t *ts, tiers_engine_t *e, void *dst,
                                  const void *src, size_t n, size_t total)
{
    if (NULL != ts->be->copy_part)
        return ts->be->copy_part(ts, e->kind, e->backend_data, dst, src, n, total);
    return ts->be->copy(ts, e->kind, e->backend_data, dst, src, n);
}

/* Run one chunk of op; called and returns with the lock held. */
static void run_chunk(tiers_state_t *ts, tiers_engine_t *e, tiers_op_t *op)
{
    strata_status_t st = STRATA_OK;
    strata_block_t *blk = op->blk;
    size_t bytes = blk->bytes;
    int first = !op->started;
    if (first) {
        op->started = 1;
        op->nvtx = base_nvtx_start(op_nvtx_name(op));
        if (op->ev) op->ev->t_start = base_now();
        /* a failed predecessor on the block: the data this op needs is not there */
        if (op->prev && STRATA_OK != op->prev->status) st = op->prev->status;
        if (ts->shutdown) st = STRATA_ERR_CANCELLED;
        if (STRATA_OK != st || op->nocopy) {
            unlink_op(e, op);
            tiers_op_finish_locked(ts, op, st);
            return;
        }
    }
    size_t n = bytes - op->done;
    if (n > ts->chunk) n = ts->chunk;
    void *dptr = blk->slot[op->dst].ptr;
    const void *sptr = blk->slot[op->src].ptr;
    int storage = is_storage_op(op);
    double deadline = 0;
    tiers_unlock(ts);

    if (e->bw > 0) {
        /* a gap shorter than the engine's own wake-up is not idle link
         * time: a DMA engine would have streamed through it */
        double start = base_now();
        if (e->link_free > start - 0.002) start = e->link_free;
        deadline = start + (first ? e->latency : 0) + (double)n / e->bw;
        e->link_free = deadline;
    }
    if (storage) {
        if (first) st = tiers_storage_start(ts, op);
        if (STRATA_OK == st && n > 0) st = tiers_storage_chunk(ts, op, op->done, n);
        if (STRATA_OK == st && op->done + n == bytes) st = tiers_storage_finish(ts, op);
    } else if (n > 0) {
        if (first && op->after && ts->be->order)   /* after the producer's stream work */
            st = ts->be->order(ts, e->kind, e->backend_data, op->after);
        if (STRATA_OK == st)
            st = copy_chunk(ts, e, (char *)dptr + op->done, (const char *)sptr + op->done, n,
                            bytes);
        if (STRATA_OK == st && op->done + n == bytes && ts->be->drain)
            st = ts->be->drain(ts, e->kind, e->backend_data);
    }
    if (deadline > 0) sleep_until(deadline);

    pthread_mutex_lock(&ts->lock);
    op->done += n;
    if (STRATA_OK == st && op->done < bytes && ts->shutdown) st = STRATA_ERR_CANCELLED;
    if (STRATA_OK != st || op->done == bytes) {
        unlink_op(e, op);
        tiers_op_finish_locked(ts, op, st);
    }
}

/* A waiter runs a storage op (lock not held; the op is marked helped).
 * The I/O thread stays free for small ops meanwhile, so the waiter need not
 * stop at chunk_size: reads go in chunks of up to WAIT_READ_CHUNK, inside
 * which storage.c grows its pread calls (large calls pay for reads of
 * hundreds of MiB); writes in chunk_size calls, which were as fast as
 * larger ones (see storage.c). */
#define WAIT_READ_CHUNK ((size_t)64 << 20)

static strata_status_t help_storage(tiers_state_t *ts, tiers_op_t *op, size_t *done_p)
{
    size_t bytes = op->blk->bytes, done = 0, max = ts->chunk;
    if (STRATA_TIER_STORAGE == op->src && max < WAIT_READ_CHUNK) max = WAIT_READ_CHUNK;
    strata_status_t st = tiers_storage_begin(ts, op);
    while (STRATA_OK == st && done < bytes) {
        size_t n = bytes - done < max ? bytes - done : max;
        st = tiers_storage_chunk(ts, op, done, n);
        if (STRATA_OK == st) done += n;
        if (STRATA_OK == st && done < bytes && __atomic_load_n(&ts->shutdown, __ATOMIC_ACQUIRE))
            st = STRATA_ERR_CANCELLED;
    }
    if (STRATA_OK == st) st = tiers_storage_finish(ts, op);
    *done_p = done;
    return st;
}

/*
 * strata_event_wait on a copy that its engine has not started (lock held;
 * returns with it held): when the copy is at the head of its engine's queue
 * (so FIFO holds), its dependencies are met and the engine is not paced,
 * the waiting thread runs it instead of sleeping through two hand-offs
 * (wake the engine, then be woken by it), each of which, on a busy machine,
 * can lose the core to another process for a time slice. Meanwhile the
 * engine stays free to run small copies queued behind it, as it would
 * between chunks. Device<->host copies: when the backend's copy may run on
 * any thread. Storage ops: when they need no HDF5 call (HDF5 stays on the
 * I/O thread), i.e. the spill file is open and the block has a dataset.
 */
static void wait_copy(tiers_state_t *ts, strata_event_t *ev)
{
    tiers_op_t *op = ev->op;
    if (!op || op->started || ts->shutdown) return;
    int storage = is_storage_op(op);
    if (!(storage ? ts->wait_storage : ts->wait_copies)) return;
    tiers_engine_t *e = &ts->eng[storage ? ENG_IO
                                         : STRATA_TIER_DEVICE == op->src ? ENG_D2H : ENG_H2D];
    if (e->head != op || e->bw > 0 || !deps_ready(op)) return;
    strata_block_t *blk = op->blk;
    strata_status_t st = STRATA_OK;
    if (op->prev && STRATA_OK != op->prev->status) st = op->prev->status;
    int copy = STRATA_OK == st && !op->nocopy && blk->bytes > 0;
    if (copy && storage && !tiers_storage_no_hdf5_locked(ts, op)) return;
    op->started = 1;
    op->nvtx = base_nvtx_start(op_nvtx_name(op));
    op->helped = 1;
    if (storage) ts->helped_storage++;
    if (op->ev) op->ev->t_start = base_now();
    if (copy) {
        /* no other thread touches a helped op's bytes or progress: copy
         * without the lock, which a thread blocked on would need a wake-up
         * to get back */
        size_t done = 0;
        tiers_unlock(ts);
        if (storage) {
            st = help_storage(ts, op, &done);
        } else {
            char *dptr = blk->slot[op->dst].ptr;
            const char *sptr = blk->slot[op->src].ptr;
            size_t bytes = blk->bytes;
            while (STRATA_OK == st && done < bytes) {
                size_t n = bytes - done < ts->chunk ? bytes - done : ts->chunk;
                st = copy_chunk(ts, e, dptr + done, sptr + done, n, bytes);
                done += n;
                if (STRATA_OK == st && done < bytes &&
                    __atomic_load_n(&ts->shutdown, __ATOMIC_ACQUIRE))
                    st = STRATA_ERR_CANCELLED;
            }
            if (ts->be->drain) {
                strata_status_t sd = ts->be->drain(ts, e->kind, e->backend_data);
                if (STRATA_OK == st) st = sd;
            }
        }
        pthread_mutex_lock(&ts->lock);
        op->done = done;
    }
    unlink_op(e, op);
    tiers_op_finish_locked(ts, op, st);
}

/*
 * The I/O engine, woken for a storage op that a thread may be about to wait
 * for, leaves that thread HELPER_GRACE seconds from the enqueue to claim
 * it: the caller of strata_block_move usually reaches strata_event_wait a
 * few microseconds later, but an engine thread that finds a core free
 * at once wins the race often (measured: 23 of 66 16 MiB spills on 2 busy
 * cores), and the waiter then sleeps through the op and needs a wake-up
 * at its end, which on a busy machine can cost a time slice: the 16 MiB
 * h2s row fell from ~0.9 to ~0.7 of pwrite. Only ops of HELPER_GRACE_MIN
 * bytes or more, which take a millisecond or more, so the delay is at
 * most a few percent of an op nobody waits for. Returns the time to sleep
 * until, 0 to run op now.
 */
#define HELPER_GRACE 100e-6
#define HELPER_GRACE_MIN ((size_t)1 << 20)

static double helper_grace(tiers_state_t *ts, const tiers_engine_t *e, const tiers_op_t *op)
{
    /* only the head: a waiter runs nothing else */
    if (!ts->wait_storage || op != e->head || op->started || e->bw > 0 || !is_storage_op(op) ||
        op_bytes(op) < HELPER_GRACE_MIN || op->nocopy)
        return 0;
    double until = op->t_queued + HELPER_GRACE;
    return base_now() < until ? until : 0;
}

static void *engine_main(void *arg)
{
    tiers_engine_t *e = arg;
    tiers_state_t *ts = e->ts;
    pthread_mutex_lock(&ts->lock);
    for (;;) {
        if (ts->shutdown) {
            /* cancel everything not started; a started op stops at its
             * next chunk boundary inside run_chunk */
            for (tiers_op_t *op = e->head, *next; op; op = next) {
                next = op->next;
                if (op->helped) continue;       /* its waiter finishes it */
                unlink_op(e, op);
                tiers_op_finish_locked(ts, op, STRATA_ERR_CANCELLED);
            }
            /* a waiter still running an op stops at its next chunk; wait
             * for it (its storage I/O uses the file the I/O thread closes) */
            while (e->head) {
                tiers_unlock(ts);
                sleep_until(base_now() + 1e-3);
                pthread_mutex_lock(&ts->lock);
            }
            break;
        }
        tiers_op_t *op = pick(ts, e);
        if (!op) {
            unsigned gen = ts->gen;
            if (ts->spin > 0) {
                tiers_unlock(ts);
                int changed = spin_for_work(ts, gen);
                pthread_mutex_lock(&ts->lock);
                if (changed || gen != ts->gen) continue;
            }
            e->asleep = 1;
            tiers_cond_wait(ts, &e->cond);
            e->asleep = 0;
            continue;
        }
        double until = helper_grace(ts, e, op);
        if (until > 0) {
            tiers_unlock(ts);
            sleep_until(until);
            pthread_mutex_lock(&ts->lock);
            continue;
        }
        run_chunk(ts, e, op);
    }
    tiers_unlock(ts);
    if (ENG_IO == e->kind) tiers_storage_cleanup(ts);   /* HDF5 close on this thread */
    return NULL;
}

strata_status_t tiers_engines_start(tiers_state_t *ts)
{
    static const char *const names[ENG_COUNT] = { "d2h", "h2d", "io" };
    const strata_config_t *cfg = &ts->ctx->cfg;
    const double bw[ENG_COUNT] = { cfg->link_d2h_bw, cfg->link_h2d_bw, cfg->link_storage_bw };
    /* all first: tiers_engines_stop signals every engine */
    for (int i = 0; i < ENG_COUNT; i++) pthread_cond_init(&ts->eng[i].cond, NULL);
    for (int i = 0; i < ENG_COUNT; i++) {
        tiers_engine_t *e = &ts->eng[i];
        e->ts = ts;
        e->kind = i;
        e->name = names[i];
        e->bw = bw[i];
        e->latency = bw[i] > 0 ? cfg->link_latency : 0;
        strata_status_t st = ts->be->engine_init(ts, i, &e->backend_data);
        if (STRATA_OK != st) goto err;
        int rc = base_thread_create(ts->ctx, &e->thread, engine_main, e);
        if (0 != rc) {
            ts->be->engine_cleanup(ts, i, e->backend_data);
            base_error(ts->ctx, STRATA_ERR_NOMEM, "cannot start the %s copy engine thread: %s",
                       names[i], strerror(rc));
            goto err;
        }
        e->running = 1;
        if (e->bw > 0) {
            char s[32];
            strata_info(ts->ctx, "%s engine paced to %s/s + %.1f us per copy", names[i],
                        strata_format_size((size_t)e->bw, s, sizeof s), e->latency * 1e6);
        }
    }
    return STRATA_OK;
err:
    tiers_engines_stop(ts);
    return STRATA_ERR_NOMEM;
}

void tiers_engines_stop(tiers_state_t *ts)
{
    pthread_mutex_lock(&ts->lock);
    __atomic_store_n(&ts->shutdown, 1, __ATOMIC_RELEASE);   /* waiters copying read it unlocked */
    bump_gen(ts);
    pthread_cond_broadcast(&ts->cond);
    for (int i = 0; i < ENG_COUNT; i++) pthread_cond_broadcast(&ts->eng[i].cond);
    tiers_unlock(ts);
    for (int i = 0; i < ENG_COUNT; i++) {
        tiers_engine_t *e = &ts->eng[i];
        if (!e->running) continue;
        pthread_join(e->thread, NULL);
        ts->be->engine_cleanup(ts, i, e->backend_data);
        e->running = 0;
    }
    for (int i = 0; i < ENG_COUNT; i++) pthread_cond_destroy(&ts->eng[i].cond);
}
