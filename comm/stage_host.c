/*
 * stage_host.c - the staged backend's mover on the host backend, where
 * "device" memory is host memory: copies are memcpy, but deferred, as on
 * a stream. A copy is queued and runs only when a marker after it is
 * asked about, in the order queued, so a state machine that read its
 * staging before asking would read stale bytes and fail the tests
 * (t/comm-staged-np*.t) as it would corrupt data on a GPU.
 */
#include "config.h"
#include "stage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void       *dst;
    const void *src;
    size_t      bytes;
} host_copy_t;

typedef struct {
    host_copy_t *q;        /* queued, not yet run, oldest first */
    size_t       n, cap;
    uint64_t     queued;   /* copies queued so far; a marker is this + 1 */
    uint64_t     landed;   /* copies run so far */
} host_queue_t;

static strata_status_t host_init(strata_group_t *g, void **state_p)
{
    host_queue_t *hq = calloc(1, sizeof *hq);
    if (!hq) return base_error(g->ctx, STRATA_ERR_NOMEM, "cannot allocate a staged copy queue");
    *state_p = hq;
    return STRATA_OK;
}

static void host_cleanup(strata_group_t *g, void *state)
{
    (void)g;
    host_queue_t *hq = state;
    free(hq->q);
    free(hq);
}

static strata_status_t host_alloc(strata_group_t *g, size_t bytes, void **p)
{
    *p = malloc(bytes);
    if (*p) return STRATA_OK;
    return base_error(g->ctx, STRATA_ERR_NOMEM, "cannot allocate %zu bytes of staging for a "
                      "staged collective", bytes);
}

static void host_free(void *p) { free(p); }

static strata_status_t host_copy(strata_group_t *g, void *state, void *dst, const void *src,
                                 size_t bytes)
{
    host_queue_t *hq = state;
    if (hq->n == hq->cap) {
        size_t cap = hq->cap ? 2 * hq->cap : 16;
        host_copy_t *q = realloc(hq->q, cap * sizeof *q);
        if (!q) return base_error(g->ctx, STRATA_ERR_NOMEM, "cannot grow the staged copy queue");
        hq->q = q;
        hq->cap = cap;
    }
    hq->q[hq->n++] = (host_copy_t){ dst, src, bytes };
    hq->queued++;
    return STRATA_OK;
}

/* A marker is the count of copies before it, plus one (never NULL). */
static strata_status_t host_mark(strata_group_t *g, void *state, void **mark_p)
{
    (void)g;
    *mark_p = (void *)(uintptr_t)(((host_queue_t *)state)->queued + 1);
    return STRATA_OK;
}

/* Runs the copies up to the marker, oldest first: they land when asked. */
static strata_status_t host_done(strata_group_t *g, void *state, void *mark, int *done_p)
{
    (void)g;
    host_queue_t *hq = state;
    uint64_t upto = (uint64_t)(uintptr_t)mark - 1;
    size_t k = 0;
    for (; k < hq->n && hq->landed < upto; k++, hq->landed++)
        memcpy(hq->q[k].dst, hq->q[k].src, hq->q[k].bytes);
    hq->n -= k;
    if (k) memmove(hq->q, hq->q + k, hq->n * sizeof *hq->q);
    *done_p = 1;
    return STRATA_OK;
}

static void host_mark_free(void *mark) { (void)mark; }

const comm_mover_t comm_mover_host = {
    .name       = "host copies",
    .init       = host_init,
    .cleanup    = host_cleanup,
    .host_alloc = host_alloc,
    .host_free  = host_free,
    .copy       = host_copy,
    .mark       = host_mark,
    .done       = host_done,
    .mark_free  = host_mark_free,
};
