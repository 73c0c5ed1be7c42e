/*
 * comm_staged.c - the staged collective backend (comm/staged.c) on the
 * host backend, where its device copies are deferred host copies
 * (comm/stage_host.c: a copy lands only when its marker is asked about),
 * against the MPI backend: two contexts on the same ranks, one with
 * comm_backend=staged and one with comm_backend=mpi, run every collective
 * on the same inputs and the results must be the same bytes. Blocking
 * (below and above COMM_BLOCKING_MIN_BYTES, where the blocking MPI calls
 * take over) and nonblocking with several requests in flight, f32 and the
 * 16-bit reductions, counts that do not divide evenly, the world group and
 * shard groups; then the failure paths each return a message. Run on 2 and
 * 4 ranks by t/comm-staged-np2.t and t/comm-staged-np4.t.
 *
 *   comm_staged [--device cuda]
 * --device cuda (a CUDA build, t/gpu/device-check.sh on one GPU): the
 * staged context runs backend=cuda on cudaMalloc'd buffers, its copies
 * cudaMemcpyAsync on its own stream; the MPI context stays on host memory.
 */
#include "config.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "strata.h"
#include "tap.h"

static int W, R;
static int on_dev;   /* --device cuda: the staged context's buffers on the device */

/* The staged context's buffers: host memory, or device memory. */
static void *buf_new(size_t bytes)
{
#ifdef HAVE_CUDA
    void *d = NULL;
    if (on_dev) {
        if (cudaSuccess != cudaMalloc(&d, bytes) || cudaSuccess != cudaMemset(d, 0, bytes))
            bail_out("cudaMalloc/cudaMemset of %zu bytes failed", bytes);
        return d;
    }
#endif
    return calloc(1, bytes);
}

static void buf_free(void *p)
{
#ifdef HAVE_CUDA
    if (on_dev) { cudaFree(p); return; }
#endif
    free(p);
}

/* memcpy, or cudaMemcpy where either side may be device memory */
static void buf_copy(void *dst, const void *src, size_t bytes)
{
#ifdef HAVE_CUDA
    if (on_dev) {
        if (bytes && cudaSuccess != cudaMemcpy(dst, src, bytes, cudaMemcpyDefault))
            bail_out("cudaMemcpy of %zu bytes failed", bytes);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

/* arbitrary values, so sums and averages round: the bits must still agree */
static void fill(strata_dtype_t dt, void *buf, size_t n, int salt)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)(R * 7919 + salt) * 2654435761u + (uint32_t)i * 40503u;
        float v = (float)(h % 200003u) / 1013.0f - 97.0f;
        if (STRATA_F32 == dt) ((float *)buf)[i] = v;
        else if (STRATA_BF16 == dt) strata_f32_to_bf16(&v, (uint16_t *)buf + i, 1);
        else strata_f32_to_f16(&v, (uint16_t *)buf + i, 1);
    }
}

typedef enum { K_ALLGATHER, K_RS_SUM, K_RS_AVG, K_AR_SUM, K_AR_AVG, K_AR_INPLACE, K_BCAST,
               K_COUNT } kind_t;
static const char *const kname[K_COUNT] = {
    "allgather", "reduce_scatter sum", "reduce_scatter avg", "allreduce sum", "allreduce avg",
    "allreduce avg in place", "broadcast"
};

/* Start (or with blocking, run) collective k on g: recv is filled */
static strata_status_t start(strata_group_t *g, kind_t k, const void *send, void *recv,
                             size_t n, strata_dtype_t dt, int blocking, strata_request_t **rq,
                             void (*cp)(void *, const void *, size_t))
{
    int gs = strata_group_size(g);
    *rq = NULL;
    switch (k) {
    case K_ALLGATHER:
        return blocking ? strata_allgather(g, send, recv, n, dt)
                        : strata_allgather_start(g, send, recv, n, dt, rq);
    case K_RS_SUM: case K_RS_AVG: {
        strata_redop_t op = K_RS_SUM == k ? STRATA_SUM : STRATA_AVG;
        return blocking ? strata_reduce_scatter(g, send, recv, n, dt, op)
                        : strata_reduce_scatter_start(g, send, recv, n, dt, op, rq);
    }
    case K_AR_SUM: case K_AR_AVG: {
        strata_redop_t op = K_AR_SUM == k ? STRATA_SUM : STRATA_AVG;
        return blocking ? strata_allreduce(g, send, recv, n, dt, op)
                        : strata_allreduce_start(g, send, recv, n, dt, op, rq);
    }
    case K_AR_INPLACE:
        cp(recv, send, n * strata_dtype_size(dt));
        return blocking ? strata_allreduce(g, recv, recv, n, dt, STRATA_AVG)
                        : strata_allreduce_start(g, recv, recv, n, dt, STRATA_AVG, rq);
    case K_BCAST:
        cp(recv, send, n * strata_dtype_size(dt));
        return blocking ? strata_broadcast(g, recv, n, dt, gs - 1)
                        : strata_broadcast_start(g, recv, n, dt, gs - 1, rq);
    default:
        return STRATA_ERR_INVALID;
    }
}

/* bytes of k's result on one rank */
static size_t result_bytes(kind_t k, size_t n, size_t esz, int gs)
{
    return (K_ALLGATHER == k ? (size_t)gs : 1) * n * esz;
}

/* Every collective of kind list on staged group a and MPI group b, one
 * dtype and count: blocking, then nonblocking all at once (waited for in
 * reverse, the staged ones tested in between). */
static void compare(const char *gname, strata_group_t *a, strata_group_t *b, strata_dtype_t dt,
                    size_t n)
{
    int gs = strata_group_size(a);
    size_t esz = strata_dtype_size(dt), in_n = (size_t)gs * n, all = (size_t)gs * n * esz + 1;
    unsigned char *send = malloc(in_n * esz + 1), *got = malloc(all);
    unsigned char *dsend = buf_new(in_n * esz + 1);   /* the staged context's send */
    void *ra[K_COUNT];
    unsigned char *rb[K_COUNT];
    if (!send || !got) bail_out("out of memory");
    for (int k = 0; k < K_COUNT; k++) {
        ra[k] = buf_new(all);
        rb[k] = calloc(1, all);
        if (!ra[k] || !rb[k]) bail_out("out of memory");
    }
    fill(dt, send, in_n, (int)n);
    buf_copy(dsend, send, in_n * esz);
    for (int blocking = 1; blocking >= 0; blocking--) {
        strata_request_t *qa[K_COUNT], *qb[K_COUNT];
        strata_status_t sa[K_COUNT], sb[K_COUNT];
        for (int k = 0; k < K_COUNT; k++) {
            sa[k] = start(a, (kind_t)k, dsend, ra[k], n, dt, blocking, &qa[k], buf_copy);
            sb[k] = start(b, (kind_t)k, send, rb[k], n, dt, blocking, &qb[k],
                          (void (*)(void *, const void *, size_t))memcpy);
        }
        for (int k = K_COUNT - 1; !blocking && k >= 0; k--) {
            int done = 0;
            if (STRATA_OK == sa[k] && qa[k]) strata_request_test(qa[k], &done);
            if (STRATA_OK == sa[k]) sa[k] = strata_request_wait(qa[k]);
            if (STRATA_OK == sb[k]) sb[k] = strata_request_wait(qb[k]);
        }
        for (int k = 0; k < K_COUNT; k++) {
            size_t bytes = result_bytes((kind_t)k, n, esz, gs);
            buf_copy(got, ra[k], bytes);
            ok(STRATA_OK == sa[k] && STRATA_OK == sb[k] && 0 == memcmp(got, rb[k], bytes),
               "%s %s %s count %zu %s: staged = mpi bit for bit", gname, kname[k],
               strata_dtype_name(dt), n, blocking ? "blocking" : "nonblocking");
        }
    }
    for (int k = 0; k < K_COUNT; k++) { buf_free(ra[k]); free(rb[k]); }
    buf_free(dsend);
    free(got);
    free(send);
}

static void compare_group(const char *gname, strata_group_t *a, strata_group_t *b, int big)
{
    for (int d = 0; d < STRATA_DTYPE_COUNT; d++) {
        strata_dtype_t dt = (strata_dtype_t)d;
        /* past 1 MiB a rank's part takes the blocking MPI calls; odd counts
         * leave the reduce-scatter blocks and the sums' vector tails uneven */
        size_t counts[] = { 0, 1, 3, 1001, ((size_t)1 << 20) / strata_dtype_size(dt) + 7 };
        for (int c = 0; c < (big ? 5 : 4); c++) compare(gname, a, b, dt, counts[c]);
    }
    strata_request_t *q = NULL;
    ok(STRATA_OK == strata_barrier_start(a, &q) && STRATA_OK == strata_request_wait(q) &&
       STRATA_OK == strata_barrier(a), "%s barrier, nonblocking and blocking", gname);
}

static strata_context_t *context(const char *backend, const char *comm_backend,
                                 strata_status_t *st_p)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", backend, NULL, 0);
    strata_config_set(cfg, "comm_backend", comm_backend, NULL, 0);
    *st_p = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    return ctx;
}

/* Bad arguments fail on every rank with a message, and nothing hangs. */
static void failures(strata_context_t *ctx)
{
    strata_group_t *g = strata_world_group(ctx);
    float x[4] = { 0 }, y[64] = { 0 };
    strata_status_t st = strata_allgather(g, x, y, (size_t)INT_MAX + 1, STRATA_F32);
    ok(STRATA_ERR_OVERFLOW == st && strstr(strata_last_error(ctx), "exceeds the MPI limit"),
       "staged: a count over INT_MAX is refused: %s", strata_last_error(ctx));
    strata_request_t *q = NULL;
    st = strata_broadcast_start(g, x, 4, STRATA_F32, W, &q);
    ok(STRATA_ERR_INVALID == st && !q && strstr(strata_last_error(ctx), "outside the group"),
       "staged: a broadcast root outside the group is refused: %s", strata_last_error(ctx));
    st = strata_allreduce(g, x, y, 4, (strata_dtype_t)7, STRATA_SUM);
    ok(STRATA_ERR_INVALID == st && strstr(strata_last_error(ctx), "invalid dtype"),
       "staged: an invalid dtype is refused: %s", strata_last_error(ctx));
    /* one rank's bad count fails the call on all of them (comm_check) */
    st = strata_allreduce(g, x, y, 0 == R ? (size_t)INT_MAX + 1 : 4, STRATA_F32, STRATA_SUM);
    ok(STRATA_OK != st && strlen(strata_last_error(ctx)) > 0,
       "staged: one rank's bad count fails every rank: %s", strata_last_error(ctx));
    /* the group still works after the refusals */
    y[0] = 1.0f;
    st = strata_allreduce(g, y, y, 1, STRATA_F32, STRATA_SUM);
    ok(STRATA_OK == st && y[0] == (float)W, "staged: collectives run after the refusals");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cuda")) {
            on_dev = 1;
            i++;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "host")) {
            i++;
        } else {
            fprintf(stderr, "usage: comm_staged [--device host|cuda]\n");
            return 2;
        }
    }
#ifndef HAVE_CUDA
    if (on_dev) skip_all("--device cuda: this build has no CUDA");
#endif
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);

    strata_status_t st;
    strata_context_t *cs = context(on_dev ? "cuda" : "host", "staged", &st);
    if (STRATA_OK != st) bail_out("strata_init, comm_backend=staged: %s", strata_strerror(st));
    strata_context_t *cm = context("host", "mpi", &st);
    if (STRATA_OK != st) bail_out("strata_init, comm_backend=mpi: %s", strata_strerror(st));

    int shard = W > 2 ? 2 : 0;
    /* per group: 3 dtypes x counts x 2 forms x K_COUNT, + a barrier */
    plan(3 + (3 * 5 * 2 * K_COUNT + 1) + (shard ? 2 * (3 * 4 * 2 * K_COUNT + 1) : 0) + 5);
    is_string(strata_comm_backend_name(cs), "staged", "comm_backend=staged: the staged backend");
    is_string(strata_comm_backend_name(cm), "mpi", "comm_backend=mpi: the MPI backend");
    strata_context_t *cn = context("host", "nccl", &st);
    ok(STRATA_OK != st && !cn, "comm_backend=nccl with backend=host is refused");

    compare_group("world", strata_world_group(cs), strata_world_group(cm), 1);
    if (shard) {
        strata_group_t *sa, *ra, *sb, *rb;
        if (strata_group_split(cs, shard, &sa, &ra) || strata_group_split(cm, shard, &sb, &rb))
            bail_out("group split %d", shard);
        compare_group("shard", sa, sb, 0);
        compare_group("replica", ra, rb, 0);
        strata_group_destroy(sa); strata_group_destroy(ra);
        strata_group_destroy(sb); strata_group_destroy(rb);
    }
    failures(cs);

    int rc = done_testing();
    strata_finalize(cm);
    strata_finalize(cs);
    MPI_Finalize();
    return rc;
}
