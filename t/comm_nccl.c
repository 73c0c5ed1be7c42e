/*
 * comm_nccl.c - the NCCL backend on real devices: every collective, every
 * dtype, on cudaMalloc'd buffers, in the world group and in shard/replica
 * groups, copied back and checked element by element against values each
 * rank computes on its own; plus the nonblocking path and the refusal of
 * host buffers. Skips (1..0 # SKIP) where no CUDA device answers or a node
 * has more ranks than devices (NCCL wants one device per rank).
 *
 *   comm_nccl [--max-bytes SIZE] [--shards S1,S2,...]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "strata.h"
#include "tap.h"
#include "comm_gen.h"

static int W, R;

/*
 * The rule (comm/nccl.c): reduce in f32, AVG as ncclAvg (each input times
 * 1/n, then summed), round 16-bit results once. f32 sums of these inputs
 * are exact; an f32 average is within (n + 2) ulps of sum/n; a 16-bit
 * result within half a 16-bit ulp of that.
 */
static int check_reduced(strata_dtype_t dt, const grp_t *G, int n, strata_redop_t op,
                         size_t j, float got)
{
    double exact = 0, sumabs = 0;
    for (int m = 0; m < n; m++) {
        double v = red_val(dt, member(G, m), j);
        exact += v;
        sumabs += fabs(v);
    }
    if (STRATA_F32 == dt && STRATA_SUM == op) return got == (float)exact;
    if (STRATA_AVG == op) { exact /= n; sumabs /= n; }
    double err = (n + 2) * ldexp(sumabs, -24);
    if (STRATA_F32 != dt) err += half_ulp(dt, fabs(exact) + err);
    return fabs((double)got - exact) <= err;
}

static void h2d(void *d, const void *h, size_t bytes)
{
    if (bytes && cudaSuccess != cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice))
        bail_out("cudaMemcpy to the device failed");
}

static void d2h(void *h, const void *d, size_t bytes)
{
    if (bytes && cudaSuccess != cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost))
        bail_out("cudaMemcpy from the device failed");
}

#define NCOUNTS 4
static void test_group(const grp_t *G, size_t max_count)
{
    int gs = strata_group_size(G->g), gr = strata_group_rank(G->g);
    for (int d = 0; d < STRATA_DTYPE_COUNT; d++) {
        strata_dtype_t dt = (strata_dtype_t)d;
        size_t esz = strata_dtype_size(dt);
        size_t counts[NCOUNTS] = { 0, 1, 1001, max_count };
        for (int c = 0; c < NCOUNTS; c++) {
            size_t n = counts[c], bytes = gs * n * esz + 4;
            unsigned char *hs = malloc(bytes), *hr = malloc(bytes);
            void *ds = NULL, *dr = NULL;
            if (!hs || !hr || cudaSuccess != cudaMalloc(&ds, bytes) ||
                cudaSuccess != cudaMalloc(&dr, bytes))
                bail_out("cannot allocate %zu bytes on the host and the device", bytes);
            strata_status_t st;
            int good;

            fill_pattern(dt, hs, R, n);
            h2d(ds, hs, n * esz);
            st = strata_allgather(G->g, ds, dr, n, dt);
            d2h(hr, dr, gs * n * esz);
            good = STRATA_OK == st;
            if (!good) diag("%s", strata_strerror(st));
            for (int g = 0; good && g < gs; g++) good = check_pattern(dt, hr, g * n, member(G, g), n);
            ok(good, "%s allgather %s count %zu", G->name, strata_dtype_name(dt), n);

            for (int op = 0; op < 2; op++) {
                for (size_t j = 0; j < gs * n; j++) put(dt, hs, j, red_val(dt, R, j));
                h2d(ds, hs, gs * n * esz);
                st = strata_reduce_scatter(G->g, ds, dr, n, dt, (strata_redop_t)op);
                d2h(hr, dr, n * esz);
                good = STRATA_OK == st;
                for (size_t i = 0; good && i < n; i++) {
                    good = check_reduced(dt, G, gs, (strata_redop_t)op, gr * n + i, get(dt, hr, i));
                    if (!good) diag("element %zu: got %.9g", i, get(dt, hr, i));
                }
                ok(good, "%s reduce_scatter %s %s count %zu", G->name, op ? "avg" : "sum",
                   strata_dtype_name(dt), n);
            }

            for (int op = 0; op < 2; op++) {
                for (size_t j = 0; j < n; j++) put(dt, hr, j, red_val(dt, R, j));
                h2d(dr, hr, n * esz);
                st = strata_allreduce(G->g, dr, dr, n, dt, (strata_redop_t)op);
                d2h(hr, dr, n * esz);
                good = STRATA_OK == st;
                for (size_t i = 0; good && i < n; i++) {
                    good = check_reduced(dt, G, gs, (strata_redop_t)op, i, get(dt, hr, i));
                    if (!good) diag("element %zu: got %.9g", i, get(dt, hr, i));
                }
                ok(good, "%s allreduce(in place) %s %s count %zu", G->name, op ? "avg" : "sum",
                   strata_dtype_name(dt), n);
            }

            int root = gs - 1;
            if (gr == root) fill_pattern(dt, hr, member(G, root), n);
            else memset(hr, 0, n * esz);
            h2d(dr, hr, n * esz);
            st = strata_broadcast(G->g, dr, n, dt, root);
            d2h(hr, dr, n * esz);
            ok(STRATA_OK == st && check_pattern(dt, hr, 0, member(G, root), n),
               "%s broadcast %s count %zu root %d", G->name, strata_dtype_name(dt), n, root);
            cudaFree(ds);
            cudaFree(dr);
            free(hs);
            free(hr);
        }
    }
    ok(STRATA_OK == strata_barrier(G->g), "%s barrier", G->name);
}

/* start / test / wait: the request completes through its event */
static void test_nonblocking(strata_group_t *w)
{
    for (int d = 0; d < STRATA_DTYPE_COUNT; d++) {
        strata_dtype_t dt = (strata_dtype_t)d;
        size_t n = 4097, esz = strata_dtype_size(dt);
        void *h = malloc(n * esz), *dbuf = NULL;
        if (!h || cudaSuccess != cudaMalloc(&dbuf, n * esz)) bail_out("cannot allocate");
        grp_t G = { "world", w, 0, 1 };
        for (size_t j = 0; j < n; j++) put(dt, h, j, red_val(dt, R, j));
        h2d(dbuf, h, n * esz);
        strata_request_t *req = NULL;
        int done = 0, polls = 0;
        strata_status_t st = strata_allreduce_start(w, dbuf, dbuf, n, dt, STRATA_SUM, &req);
        while (STRATA_OK == st && !done && polls++ < 100000000) st = strata_request_test(req, &done);
        strata_status_t st2 = strata_request_wait(req);
        d2h(h, dbuf, n * esz);
        int good = STRATA_OK == st && STRATA_OK == st2 && done;
        for (size_t i = 0; good && i < n; i++) good = check_reduced(dt, &G, W, STRATA_SUM, i, get(dt, h, i));
        ok(good, "nonblocking allreduce %s: test until done, then wait", strata_dtype_name(dt));
        cudaFree(dbuf);
        free(h);
    }
}

int main(int argc, char **argv)
{
    size_t max_bytes = 4 << 20;
    int shards[16], nshards = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            if (strata_parse_size(argv[++i], &max_bytes)) { fprintf(stderr, "bad --max-bytes\n"); return 2; }
        } else if (!strcmp(argv[i], "--shards") && i + 1 < argc) {
            for (char *p = strtok(argv[++i], ","); p && nshards < 16; p = strtok(NULL, ","))
                shards[nshards++] = atoi(p);
        } else {
            fprintf(stderr, "usage: comm_nccl [--max-bytes SIZE] [--shards S1,S2,...]\n");
            return 2;
        }
    }

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);

    /* every rank must reach the same verdict, so the skip is agreed on */
    int ndev = 0, local = 0, nlocal = 1, mindev, maxlocal;
    if (cudaSuccess != cudaGetDeviceCount(&ndev)) { ndev = 0; (void)cudaGetLastError(); }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, R, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_free(&node);
    MPI_Allreduce(&ndev, &mindev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int over = nlocal - ndev;
    MPI_Allreduce(&over, &maxlocal, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (mindev <= 0) skip_all("no CUDA device");
    if (maxlocal > 0) skip_all("%d ranks on a node with %d CUDA devices; NCCL needs one device per rank", nlocal, ndev);

    strata_config_t *cfg = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", "cuda", NULL, 0);
    strata_context_t *ctx;
    if (strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init with backend=cuda failed");
    strata_config_destroy(cfg);   /* the context holds a copy */

    int valid = 0;
    for (int s = 0; s < nshards; s++) if (shards[s] > 0 && 0 == W % shards[s]) valid++;
    int per_group = STRATA_DTYPE_COUNT * NCOUNTS * 6 + 1;
    plan(2 + per_group + STRATA_DTYPE_COUNT + valid * 2 * per_group);

    is_string(strata_comm_backend_name(ctx), "nccl", "backend=cuda collectives run on NCCL");
    strata_group_t *w = strata_world_group(ctx);
    float host[8] = { 0 }, host_out[8 * 64];
    strata_status_t st = strata_allgather(w, host, host_out, 8, STRATA_F32);
    ok(STRATA_ERR_INVALID == st && strstr(strata_last_error(ctx), "device memory"),
       "host buffers refused on every rank with a message: %s", strata_last_error(ctx));

    size_t max_count = max_bytes / 4;
    grp_t world = { "world", w, 0, 1 };
    if (0 == R) diag("%d ranks, %d devices per node, per-rank contribution up to %zu elements",
                     W, ndev, max_count);
    test_group(&world, max_count);
    test_nonblocking(w);

    for (int s = 0; s < nshards; s++) {
        int S = shards[s];
        if (S <= 0 || W % S) continue;
        strata_group_t *sg, *rg;
        if (strata_group_split(ctx, S, &sg, &rg)) bail_out("group split %d: %s", S, strata_last_error(ctx));
        char sname[64], rname[64];
        snprintf(sname, sizeof sname, "shard(S=%d)", S);
        snprintf(rname, sizeof rname, "replica(S=%d)", S);
        grp_t shard = { sname, sg, R - R % S, 1 };
        grp_t replica = { rname, rg, R % S, S };
        test_group(&shard, 65537);
        test_group(&replica, 65537);
        strata_group_destroy(sg);
        strata_group_destroy(rg);
    }

    int rc = done_testing();
    strata_finalize(ctx);
    MPI_Finalize();
    return rc;
}
