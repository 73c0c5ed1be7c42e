/*
 * optq.c - the optimizer beside the backward. Without clipping a unit's
 * update needs only its own reduced gradient, so it may run as soon as
 * that has arrived, while the backward goes on with the units below. On
 * the host backend the update is the host's work (AdamW over the shard,
 * and for state on storage, waiting for its reads); done inline it stops
 * the backward for that long. Here it runs on a thread of its own, one
 * unit after the other in the order they arrive, with one worker (it takes
 * no core from the compute's pool), and step_end waits for the queue.
 *
 * When (the option optim_overlap): on, always on the host backend; auto,
 * where the node has a core that the ranks' compute threads leave free
 * (CPUs > ranks on the node x threads), or where some training state
 * lives on storage (the thread then mostly waits for the storage engine);
 * off, inline. The cuda backend queues its update kernels on the stream
 * already, inline; but a unit whose state all lives off the device is
 * updated by the host (fsdp_update_on_host), and those updates go to the
 * thread (started on the rank's device, with the optimizer's pool
 * threads: the host's cores are the compute's only on the host backend),
 * unless optim_overlap is off.
 *
 * The update itself is the same code with the same operands, so every
 * placement of it gives the same bits.
 */
#define _GNU_SOURCE 1   /* pthread_setname_np */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "base/thread.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    int   unit;
    float scale;
} optq_job_t;

struct fsdp_optq {
    strata_model_t *m;
    pthread_t       th;
    pthread_mutex_t lock;
    pthread_cond_t  work, idle;
    optq_job_t     *q;            /* ring of nunits jobs (a unit once a step) */
    int             head, n, busy, stop;
    int             threads;      /* pool threads per update */
    strata_status_t st;           /* the first failure since the last drain */
};

static void *optq_main(void *arg)
{
    struct fsdp_optq *q = arg;
    pthread_setname_np(pthread_self(), "strata-optim");
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->n && !q->stop) pthread_cond_wait(&q->work, &q->lock);
        if (!q->n) break;
        optq_job_t j = q->q[q->head];
        q->head = (q->head + 1) % q->m->nunits;
        q->n--;
        q->busy = 1;
        int failed = STRATA_OK != q->st;
        pthread_mutex_unlock(&q->lock);
        /* after a failure the rest of the queue is dropped: the step fails */
        strata_status_t st = failed ? STRATA_OK
                           : fsdp_unit_update(q->m, q->m->units[j.unit], j.scale, q->threads);
        pthread_mutex_lock(&q->lock);
        if (STRATA_OK != st && STRATA_OK == q->st) q->st = st;
        q->busy = 0;
        if (!q->n) pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* Whether this model's updates go to the thread (the same on every rank
 * of a node; ranks may differ across nodes, which only moves host work). */
static int optq_wanted(const strata_model_t *m)
{
    const strata_context_t *ctx = m->ctx;
    if (0.0f != m->opts.clip_norm) return 0;
    if (2 == ctx->cfg.optim_overlap) return 0;   /* off */
    if (fsdp_dev_on(ctx)) {
        for (int ui = 0; ui < m->nunits; ui++)
            if (fsdp_update_on_host(m, m->units[ui])) return 1;
        return 0;
    }
    if (1 == ctx->cfg.optim_overlap) return 1;   /* on */
    int threads = ctx->cfg.threads > 0 ? ctx->cfg.threads : ctx->node_cpus;
    return ctx->node_cpus > ctx->node_ranks * threads || fsdp_state_any_streamed(m);
}

strata_status_t fsdp_optq_start(strata_model_t *m)
{
    if (m->optq || !optq_wanted(m)) return STRATA_OK;
    struct fsdp_optq *q = calloc(1, sizeof *q);
    if (q) q->q = calloc((size_t)m->nunits, sizeof *q->q);
    if (!q || !q->q) {
        if (q) free(q->q);
        free(q);
        return base_error(m->ctx, STRATA_ERR_NOMEM, "optimizer queue of %d units", m->nunits);
    }
    q->m = m;
    q->threads = fsdp_dev_on(m->ctx) ? fsdp_optim_threads(m) : 1;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->idle, NULL);
    if (base_thread_create(m->ctx, &q->th, optq_main, q)) {
        /* no thread: the updates run inline, as they always could */
        strata_debug(m->ctx, "optim_overlap: no thread could start; updates run inline");
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->work);
        pthread_cond_destroy(&q->idle);
        free(q->q);
        free(q);
        return STRATA_OK;
    }
    m->optq = q;
    strata_debug(m->ctx, "optim_overlap: each unit's update runs on a thread beside the backward");
    return STRATA_OK;
}

strata_status_t fsdp_optq_submit(strata_model_t *m, strata_unit_t *u, float scale)
{
    struct fsdp_optq *q = m->optq;
    /* cuda: only the host's updates; a kernel is queued inline */
    if (!q || (fsdp_dev_on(m->ctx) && !fsdp_update_on_host(m, u)))
        return fsdp_unit_update(m, u, scale, fsdp_optim_threads(m));
    pthread_mutex_lock(&q->lock);
    q->q[(q->head + q->n) % m->nunits] = (optq_job_t){ u->index, scale };
    q->n++;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    return STRATA_OK;
}

strata_status_t fsdp_optq_drain(strata_model_t *m)
{
    struct fsdp_optq *q = m->optq;
    if (!q) return STRATA_OK;
    pthread_mutex_lock(&q->lock);
    while (q->n || q->busy) pthread_cond_wait(&q->idle, &q->lock);
    strata_status_t st = q->st;
    q->st = STRATA_OK;
    pthread_mutex_unlock(&q->lock);
    return st;
}

void fsdp_optq_destroy(strata_model_t *m)
{
    struct fsdp_optq *q = m->optq;
    if (!q) return;
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->th, NULL);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->idle);
    free(q->q);
    free(q);
    m->optq = NULL;
}
