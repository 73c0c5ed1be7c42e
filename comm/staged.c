/*
 * staged.c - the staged collective backend: for device buffers where NCCL
 * cannot run (ranks sharing a GPU, a build without NCCL, NCCL failing to
 * start, or comm_backend=staged). Open MPI here is not CUDA-aware, so each
 * collective is three steps of one request:
 *
 *   IN   the send buffer copied into host staging (a mover, stage.h:
 *        cudaMemcpyAsync on the group's stream, then an event)
 *   MPI  once that copy has landed, the MPI backend's own collective on
 *        the host buffers (mpi.c, the same calls, blocking or not as
 *        comm.c chose), so the results are the MPI backend's bit for bit
 *   OUT  the result copied back into the receive buffer, then a marker;
 *        the request completes when that copy has landed
 *
 * test advances the steps as far as they have got without waiting; wait
 * advances them with back-off. Stream order mirrors nccl.c's contract:
 * the group's stream waits for the compute stream (stream_wait), so the
 * copy in reads what compute produced; request_order makes a stream wait
 * for the copy back's event. That event exists only once MPI has finished,
 * so request_order first drives the request to its copy back: the host
 * waits for the MPI part, never for the copy back itself.
 *
 * The 16-bit rule (comm.c): a bf16/f16 reduction travels as its 16-bit
 * values into host staging, is widened there to f32, reduced in f32 by
 * MPI, averaged (comm_divide) and rounded once, then copied back as 16
 * bits: comm.c's own host code, on the host copies.
 */
#include "config.h"
#include "stage.h"
#include "base/wait.h"

#include <stdlib.h>
#include <string.h>

/* host staging kept per group for reuse: pinned allocations cost
 * milliseconds, and a training step runs the same few sizes */
#define POOL_SLOTS 8

typedef struct {
    void  *p;
    size_t bytes;
    int    busy;
} stage_slot_t;

typedef struct {
    const comm_mover_t *mv;
    void               *state;    /* the mover's: stream, copy queue */
    pthread_mutex_t     lock;     /* mover calls and the pool (two threads may test) */
    stage_slot_t        pool[POOL_SLOTS];
} staged_group_t;

typedef enum { PH_IN, PH_MPI, PH_OUT, PH_DONE } stage_phase_t;

typedef struct {
    stage_phase_t phase;
    void         *mark;        /* the marker after the last copy queued */
    void         *host;        /* staging: send part, then receive part */
    int           slot;        /* its pool slot, or -1 (freed with the request) */
    void         *hsend, *hrecv;
    void         *dev_recv;    /* where the result goes back; NULL: nowhere */
    size_t        out_bytes;
    float        *wide;        /* 16-bit reductions: f32 inputs, then f32 result */
    size_t        in_count;    /* elements in (wide reductions) */
    strata_dtype_t wide_dtype; /* STRATA_BF16/F16 for a wide reduction, else F32 */
    strata_redop_t op;
    int           root;
    size_t        count;
    strata_request_t inner;    /* the MPI backend's request on the host buffers */
} staged_req_t;

static const char *const kind_name[] = {
    "allgather", "reduce_scatter", "allreduce", "broadcast", "barrier"
};

/* ------------------------------------------------------------ groups --- */

static const comm_mover_t *mover_for(strata_context_t *ctx)
{
#ifdef HAVE_CUDA
    if (0 == strcmp(ctx->backend_name, "cuda")) return &comm_mover_cuda;
#endif
    (void)ctx;
    return &comm_mover_host;
}

static void group_free(strata_group_t *g, staged_group_t *sg)
{
    for (int i = 0; i < POOL_SLOTS; i++)
        if (sg->pool[i].p) sg->mv->host_free(sg->pool[i].p);
    if (sg->state) sg->mv->cleanup(g, sg->state);
    pthread_mutex_destroy(&sg->lock);
    free(sg);
}

/* Every rank takes part in the agreement whatever its set-up did, so one
 * rank's failure (no device, no stream) fails the group on all of them
 * instead of leaving the others in its first collective. */
static strata_status_t staged_group_init(strata_group_t *g)
{
    strata_context_t *ctx = g->ctx;
    staged_group_t *sg = calloc(1, sizeof *sg);
    if (!sg) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate staged group state");
    pthread_mutex_init(&sg->lock, NULL);
    sg->mv = mover_for(ctx);
    strata_status_t st = sg->mv->init(g, &sg->state);
    int local_ok = STRATA_OK == st, all_ok = 0;
    comm_lock(ctx);
    int rc = MPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
    comm_unlock(ctx);
    if (STRATA_OK == st && MPI_SUCCESS != rc)
        st = base_mpi_error(ctx, rc, "MPI_Allreduce (staged group set-up)");
    if (STRATA_OK == st && !all_ok)
        st = base_error(ctx, STRATA_ERR_STATE, "staged collectives: another rank of the group "
                        "of %d failed to set up (see its message)", g->size);
    if (STRATA_OK != st) {
        group_free(g, sg);
        return st;
    }
    g->backend_data = sg;
    strata_debug(ctx, "staged group: rank %d of %d, copies by %s", g->rank, g->size, sg->mv->name);
    return STRATA_OK;
}

static void staged_group_cleanup(strata_group_t *g)
{
    if (!g->backend_data) return;
    group_free(g, g->backend_data);
    g->backend_data = NULL;
}

/* ------------------------------------------------------ host staging --- */

/* A free slot that holds bytes, else one grown to it, else none (-1:
 * allocated for this request alone). Under sg->lock. */
static strata_status_t stage_get(strata_group_t *g, staged_group_t *sg, size_t bytes,
                                 void **p_p, int *slot_p)
{
    int fit = -1, spare = -1;
    for (int i = 0; i < POOL_SLOTS && fit < 0; i++) {
        if (sg->pool[i].busy) continue;
        if (sg->pool[i].p && sg->pool[i].bytes >= bytes) fit = i;
        else if (spare < 0) spare = i;
    }
    if (fit < 0 && spare >= 0) {
        stage_slot_t *s = &sg->pool[spare];
        if (s->p) sg->mv->host_free(s->p);
        s->p = NULL;
        s->bytes = 0;
        strata_status_t st = sg->mv->host_alloc(g, bytes, &s->p);
        if (STRATA_OK != st) return st;
        s->bytes = bytes;
        fit = spare;
    }
    *slot_p = fit;
    if (fit >= 0) {
        sg->pool[fit].busy = 1;
        *p_p = sg->pool[fit].p;
        return STRATA_OK;
    }
    return sg->mv->host_alloc(g, bytes, p_p);
}

static void stage_put(staged_group_t *sg, void *p, int slot)
{
    if (slot >= 0) sg->pool[slot].busy = 0;
    else if (p) sg->mv->host_free(p);
}

/* ------------------------------------------------------------ copies --- */

/* Queue a copy and the marker after it (none for 0 bytes). */
static strata_status_t queue_copy(strata_group_t *g, staged_req_t *sr, void *dst,
                                  const void *src, size_t bytes)
{
    staged_group_t *sg = g->backend_data;
    if (0 == bytes) return STRATA_OK;
    pthread_mutex_lock(&sg->lock);
    strata_status_t st = sg->mv->copy(g, sg->state, dst, src, bytes);
    if (STRATA_OK == st) {
        if (sr->mark) sg->mv->mark_free(sr->mark);
        sr->mark = NULL;
        st = sg->mv->mark(g, sg->state, &sr->mark);
    }
    pthread_mutex_unlock(&sg->lock);
    return st;
}

static strata_status_t copies_done(strata_group_t *g, staged_req_t *sr, int *done_p)
{
    staged_group_t *sg = g->backend_data;
    *done_p = 1;
    if (!sr->mark) return STRATA_OK;
    pthread_mutex_lock(&sg->lock);
    strata_status_t st = sg->mv->done(g, sg->state, sr->mark, done_p);
    pthread_mutex_unlock(&sg->lock);
    return st;
}

/* --------------------------------------------------------- the steps --- */

/* IN -> MPI: the copy in has landed; widen a 16-bit reduction's inputs
 * and start the MPI backend's collective on the host buffers. */
static strata_status_t start_mpi(strata_request_t *req, staged_req_t *sr)
{
    strata_group_t *g = req->group;
    const comm_backend_t *be = &comm_mpi_backend;
    strata_request_t *in = &sr->inner;
    const void *send = sr->hsend;
    void *recv = sr->hrecv;
    if (sr->wide) {
        if (STRATA_BF16 == sr->wide_dtype) strata_bf16_to_f32(sr->hsend, sr->wide, sr->in_count);
        else strata_f16_to_f32(sr->hsend, sr->wide, sr->in_count);
        send = sr->wide;
        recv = sr->wide + sr->in_count;
    }
    sr->phase = PH_MPI;
    switch (req->kind) {
    case COLL_ALLGATHER: return be->allgather(g, send, recv, sr->count, in->dtype, in);
    case COLL_BROADCAST: return be->broadcast(g, recv, sr->count, in->dtype, sr->root, in);
    case COLL_BARRIER: return be->barrier(g, in);
    case COLL_REDUCE_SCATTER: return be->reduce_scatter(g, send, recv, sr->count, sr->op, in);
    case COLL_ALLREDUCE: return be->allreduce(g, send, recv, sr->count, sr->op, in);
    }
    return STRATA_OK;
}

/* MPI -> OUT: average and round as comm.c does, then copy the result back. */
static strata_status_t finish_mpi(strata_request_t *req, staged_req_t *sr)
{
    float *res = sr->wide ? sr->wide + sr->in_count : sr->hrecv;
    if (sr->inner.div_pending) comm_divide(res, sr->count, req->group->size);
    if (STRATA_BF16 == sr->wide_dtype) strata_f32_to_bf16(res, sr->hrecv, sr->count);
    else if (STRATA_F16 == sr->wide_dtype) strata_f32_to_f16(res, sr->hrecv, sr->count);
    sr->phase = PH_OUT;
    return sr->dev_recv ? queue_copy(req->group, sr, sr->dev_recv, sr->hrecv, sr->out_bytes)
                        : STRATA_OK;
}

/* One step forward if its condition holds; *moved_p says whether it did.
 * block: the MPI step waits for its collective (the MPI backend's wait,
 * with its back-off) instead of testing it. */
static strata_status_t step(strata_request_t *req, int block, int *moved_p)
{
    staged_req_t *sr = req->backend_data;
    int done = 0;
    strata_status_t st = STRATA_OK;
    *moved_p = 0;
    switch (sr->phase) {
    case PH_IN:
    case PH_OUT:
        st = copies_done(req->group, sr, &done);
        if (STRATA_OK != st || !done) return st;
        *moved_p = 1;
        if (PH_OUT == sr->phase) {
            sr->phase = PH_DONE;
            return STRATA_OK;
        }
        return start_mpi(req, sr);
    case PH_MPI:
        if (block) {
            st = comm_mpi_backend.wait(&sr->inner);
            done = STRATA_OK == st;
        } else {
            st = comm_mpi_backend.test(&sr->inner, &done);
        }
        if (STRATA_OK != st || !done) return st;
        *moved_p = 1;
        return finish_mpi(req, sr);
    case PH_DONE:
        break;
    }
    return STRATA_OK;
}

/* Steps until the request reaches phase `until`; without block, only
 * those ready now. */
static strata_status_t advance(strata_request_t *req, int block, stage_phase_t until)
{
    staged_req_t *sr = req->backend_data;
    base_waiter_t w;
    base_waiter_init(&w, req->group->ctx->cfg.spin_time, 256, 1000, 100000);
    while (sr->phase < until) {
        int moved = 0;
        strata_status_t st = step(req, block, &moved);
        if (STRATA_OK != st) return st;
        if (moved) continue;
        if (!block) break;
        base_waiter_pause(&w);
    }
    return STRATA_OK;
}

/* ------------------------------------------------------------ starts --- */

/* What a collective stages: bytes in (from send) and back (into recv),
 * and whether both share one host buffer (in place, broadcast). */
typedef struct {
    size_t in_bytes, out_bytes;
    int    shared;
} stage_size_t;

static stage_size_t stage_size(strata_group_t *g, coll_kind_t kind, const void *send,
                               const void *recv, size_t count, size_t esz)
{
    stage_size_t s = { count * esz, count * esz, 0 };
    switch (kind) {
    case COLL_ALLGATHER: s.out_bytes *= (size_t)g->size; break;
    case COLL_REDUCE_SCATTER: s.in_bytes *= (size_t)g->size; break;
    case COLL_ALLREDUCE: s.shared = send == recv; break;   /* MPI_IN_PLACE, as mpi.c */
    case COLL_BROADCAST: s.shared = 1; break;
    case COLL_BARRIER: s.in_bytes = s.out_bytes = 0; break;
    }
    return s;
}

/* A collective as staged.c starts it: the wire dtype is what MPI moves
 * (f32 for every reduction); wide is the caller's 16-bit dtype of a wide
 * reduction, else STRATA_F32. */
typedef struct {
    coll_kind_t    kind;
    const void    *send;
    void          *recv;
    size_t         count;
    strata_dtype_t wire, wide;
    strata_redop_t op;
    int            root;
} stage_args_t;

/* Host staging for a: the 16-bit or f32 host copies, and for a wide
 * reduction its f32 inputs and result beside them. */
static strata_status_t stage_alloc(strata_group_t *g, staged_req_t *sr, const stage_args_t *a,
                                   stage_size_t sz)
{
    staged_group_t *sg = g->backend_data;
    size_t bytes = sz.in_bytes + (sz.shared ? 0 : sz.out_bytes);
    pthread_mutex_lock(&sg->lock);
    strata_status_t st = stage_get(g, sg, bytes ? bytes : 1, &sr->host, &sr->slot);
    pthread_mutex_unlock(&sg->lock);
    if (STRATA_OK != st) return st;
    sr->hsend = sr->host;
    sr->hrecv = (char *)sr->host + (sz.shared ? 0 : sz.in_bytes);
    if (STRATA_F32 == a->wide) return STRATA_OK;
    sr->in_count = sz.in_bytes / strata_dtype_size(a->wide);
    sr->wide = malloc((sr->in_count + a->count) * sizeof(float) + 1);
    if (sr->wide) return STRATA_OK;
    return base_error(g->ctx, STRATA_ERR_NOMEM, "%s: cannot allocate %zu bytes of f32 staging "
                      "for a 16-bit reduction", kind_name[a->kind],
                      (sr->in_count + a->count) * sizeof(float));
}

/* A staged request: staging taken, the copy in queued, and the steps run
 * as far as they go now (a blocking one through its MPI collective, so
 * comm.c's wait only waits for the copy back). Sizes were checked by
 * comm.c (check_args) against size_t and INT_MAX. */
static strata_status_t stage_start(strata_group_t *g, const stage_args_t *a,
                                   strata_request_t *req)
{
    staged_req_t *sr = calloc(1, sizeof *sr);
    if (!sr) return base_error(g->ctx, STRATA_ERR_NOMEM, "%s: cannot allocate a staged request",
                               kind_name[a->kind]);
    req->backend_data = sr;   /* released with the request, also after a failed start */
    sr->slot = -1;
    sr->count = a->count;
    sr->wide_dtype = a->wide;
    sr->op = a->op;
    sr->root = a->root;
    sr->inner.group = g;
    sr->inner.be = &comm_mpi_backend;
    sr->inner.kind = a->kind;
    sr->inner.dtype = a->wire;
    sr->inner.op = a->op;
    sr->inner.mpi_req = MPI_REQUEST_NULL;
    sr->inner.blocking = req->blocking;

    stage_size_t sz = stage_size(g, a->kind, a->send, a->recv, a->count,
                                 strata_dtype_size(STRATA_F32 != a->wide ? a->wide : a->wire));
    strata_status_t st = stage_alloc(g, sr, a, sz);
    if (STRATA_OK != st) return st;
    /* a broadcast's root sends and keeps its buffer; the others only receive */
    int root = g->rank == a->root;
    sr->out_bytes = COLL_BROADCAST != a->kind || !root ? sz.out_bytes : 0;
    sr->dev_recv = sr->out_bytes ? a->recv : NULL;
    st = queue_copy(g, sr, sr->hsend, a->send, COLL_BROADCAST != a->kind || root ? sz.in_bytes : 0);
    if (STRATA_OK != st) return st;
    sr->phase = PH_IN;
    return advance(req, req->blocking, req->blocking ? PH_OUT : PH_DONE);
}

static strata_status_t staged_allgather(strata_group_t *g, const void *send, void *recv,
                                        size_t count, strata_dtype_t dtype, strata_request_t *req)
{
    stage_args_t a = { COLL_ALLGATHER, send, recv, count, dtype, STRATA_F32, STRATA_SUM, 0 };
    return stage_start(g, &a, req);
}

static strata_status_t staged_reduce_scatter(strata_group_t *g, const float *send, float *recv,
                                             size_t count, strata_redop_t op,
                                             strata_request_t *req)
{
    stage_args_t a = { COLL_REDUCE_SCATTER, send, recv, count, STRATA_F32, STRATA_F32, op, 0 };
    return stage_start(g, &a, req);
}

static strata_status_t staged_allreduce(strata_group_t *g, const float *send, float *recv,
                                        size_t count, strata_redop_t op, strata_request_t *req)
{
    stage_args_t a = { COLL_ALLREDUCE, send, recv, count, STRATA_F32, STRATA_F32, op, 0 };
    return stage_start(g, &a, req);
}

/* The 16-bit rule on the host copies (the file's comment says how). */
static strata_status_t staged_reduce_wide(strata_group_t *g, coll_kind_t kind, const void *send,
                                          void *recv, size_t count, strata_dtype_t dtype,
                                          strata_redop_t op, strata_request_t *req)
{
    stage_args_t a = { kind, send, recv, count, STRATA_F32, dtype, op, 0 };
    return stage_start(g, &a, req);
}

static strata_status_t staged_broadcast(strata_group_t *g, void *buf, size_t count,
                                        strata_dtype_t dtype, int root, strata_request_t *req)
{
    stage_args_t a = { COLL_BROADCAST, buf, buf, count, dtype, STRATA_F32, STRATA_SUM, root };
    return stage_start(g, &a, req);
}

static strata_status_t staged_barrier(strata_group_t *g, strata_request_t *req)
{
    stage_args_t a = { COLL_BARRIER, NULL, NULL, 0, STRATA_F32, STRATA_F32, STRATA_SUM, 0 };
    return stage_start(g, &a, req);
}

/* ---------------------------------------------------------- requests --- */

static strata_status_t staged_test(strata_request_t *req, int *done_p)
{
    staged_req_t *sr = req->backend_data;
    strata_status_t st = advance(req, 0, PH_DONE);
    *done_p = PH_DONE == sr->phase;
    return st;
}

static strata_status_t staged_wait(strata_request_t *req)
{
    return advance(req, 1, PH_DONE);
}

/* The staging goes back only after the last copy queued on it has landed
 * (a failed request may leave one in flight); the MPI part is released as
 * the MPI backend releases its own. */
static void staged_request_release(strata_request_t *req)
{
    staged_req_t *sr = req->backend_data;
    if (!sr) return;
    strata_group_t *g = req->group;
    staged_group_t *sg = g->backend_data;
    base_waiter_t w;
    base_waiter_init(&w, 0, 0, 1000, 100000);
    for (int done = 0; sr->mark && !done;) {
        if (STRATA_OK != copies_done(g, sr, &done)) break;
        if (!done) base_waiter_pause(&w);
    }
    comm_mpi_backend.request_release(&sr->inner);
    pthread_mutex_lock(&sg->lock);
    if (sr->mark) sg->mv->mark_free(sr->mark);
    if (sr->host) stage_put(sg, sr->host, sr->slot);
    pthread_mutex_unlock(&sg->lock);
    free(sr->wide);
    free(sr);
    req->backend_data = NULL;
}

/* ------------------------------------------------- stream ordering --- */

static int staged_host_buffers(strata_group_t *g, const void *send, const void *recv)
{
    staged_group_t *sg = g->backend_data;
    return sg && sg->mv->host_buffers && sg->mv->host_buffers(send, recv);
}

static strata_status_t staged_stream_wait(strata_group_t *g, void *stream)
{
    staged_group_t *sg = g->backend_data;
    if (!sg->mv->stream_wait) return STRATA_OK;
    pthread_mutex_lock(&sg->lock);
    strata_status_t st = sg->mv->stream_wait(g, sg->state, stream);
    pthread_mutex_unlock(&sg->lock);
    return st;
}

/* `stream` waits for the copy back's event: the host drives the request
 * until that copy is queued (its MPI part done), not until it lands. */
static strata_status_t staged_request_order(strata_request_t *req, void *stream)
{
    staged_req_t *sr = req->backend_data;
    staged_group_t *sg = req->group->backend_data;
    strata_status_t st = advance(req, 1, PH_OUT);
    if (STRATA_OK != st || !sr->mark || !sg->mv->order) return st;
    return sg->mv->order(req->group, sr->mark, stream);
}

const comm_backend_t comm_staged_backend = {
    .name            = "staged",
    .group_init      = staged_group_init,
    .group_cleanup   = staged_group_cleanup,
    .allgather       = staged_allgather,
    .reduce_scatter  = staged_reduce_scatter,
    .allreduce       = staged_allreduce,
    .broadcast       = staged_broadcast,
    .barrier         = staged_barrier,
    .reduce_wide     = staged_reduce_wide,
    .request_release = staged_request_release,
    .test            = staged_test,
    .wait            = staged_wait,
    .host_buffers    = staged_host_buffers,
    .stream_wait     = staged_stream_wait,
    .request_order   = staged_request_order,
};
