/*
 * comm_coll.c - every collective, every dtype, in the world group and in
 * shard/replica groups, checked element by element against values each
 * rank computes on its own. Run on N ranks by t/comm-np*.t.
 *
 *   comm_coll [--max-bytes SIZE] [--max-reduce SIZE] [--shards S1,...] [--quick]
 * --max-bytes:  the largest per-rank contribution (count x element size);
 *               it need only be well past COMM_BLOCKING_MIN_BYTES (1 MiB),
 *               where the blocking wrappers switch to MPI's blocking
 *               collectives. Each rank checks W x that, so the cost grows
 *               as W^2 x size: the scripts pass 16M up to 4 ranks, 4M on 8
 *               (64M on 4 ranks took 10 minutes on a loaded 2-core machine)
 * --max-reduce: the same for reductions, whose send buffer is W times that
 *               (default: --max-bytes); keeps 128-rank runs within memory
 * --shards:     shard sizes to test besides the world group (divisors of W)
 * --quick:      fewer counts (0, 1, 1001, max; subgroups without max), for
 *               heavily oversubscribed runs
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "strata.h"
#include "tap.h"
#include "comm_gen.h"

static int W, R;

/* expected reduction of element j over the group, and whether got is within the rule */
static int check_reduced(strata_dtype_t dt, const grp_t *G, int gsize, strata_redop_t op,
                         size_t j, float got)
{
    double exact = 0;
    for (int m = 0; m < gsize; m++) exact += red_val(dt, member(G, m), j);
    if (STRATA_AVG == op) exact /= gsize;
    if (STRATA_F32 == dt) {
        /* sums are exact integers; the average is the f32 sum divided by n */
        float want = STRATA_AVG == op ? (float)(exact * gsize) / (float)gsize : (float)exact;
        return got == want;
    }
    double bound = half_ulp(dt, exact) + gsize * ldexp(fabs(exact), -24);
    return fabs((double)got - exact) <= bound;
}

static int quick;

static void test_group(const grp_t *G, size_t max_count[3], size_t max_reduce[3], int big)
{
    int gs = strata_group_size(G->g), gr = strata_group_rank(G->g);
    for (int d = 0; d < STRATA_DTYPE_COUNT; d++) {
        strata_dtype_t dt = (strata_dtype_t)d;
        size_t esz = strata_dtype_size(dt);
        size_t all_counts[] = { 0, 1, 3, 1001, 65537, max_count[d] };
        size_t quick_counts[] = { 0, 1, 1001, max_count[d] };
        size_t *counts = quick ? quick_counts : all_counts;
        int ncounts = (quick ? 4 : 6) - !big;
        for (int c = 0; c < ncounts; c++) {
            size_t n = counts[c];
            if (n > max_count[d]) n = max_count[d];
            size_t nred = n > max_reduce[d] ? max_reduce[d] : n;
            unsigned char *send = malloc(gs * n * esz + 1);
            unsigned char *recv = malloc(gs * n * esz + 1);
            if (!send || !recv) bail_out("out of memory for %zu elements", gs * n);
            strata_status_t st;
            int good;

            /* allgather */
            fill_pattern(dt, send, R, n);
            st = strata_allgather(G->g, send, recv, n, dt);
            good = STRATA_OK == st;
            for (int g = 0; good && g < gs; g++) good = check_pattern(dt, recv, g * n, member(G, g), n);
            ok(good, "%s allgather %s count %zu", G->name, strata_dtype_name(dt), n);

            /* reduce-scatter, sum and average */
            for (int op = 0; op < 2; op++) {
                for (size_t j = 0; j < gs * nred; j++) put(dt, send, j, red_val(dt, R, j));
                st = strata_reduce_scatter(G->g, send, recv, nred, dt, (strata_redop_t)op);
                good = STRATA_OK == st;
                for (size_t i = 0; good && i < nred; i++) {
                    good = check_reduced(dt, G, gs, (strata_redop_t)op, gr * nred + i, get(dt, recv, i));
                    if (!good) diag("element %zu: got %g", i, get(dt, recv, i));
                }
                ok(good, "%s reduce_scatter %s %s count %zu", G->name, op ? "avg" : "sum",
                   strata_dtype_name(dt), nred);
            }

            /* allreduce in place, sum and average */
            for (int op = 0; op < 2; op++) {
                for (size_t j = 0; j < nred; j++) put(dt, recv, j, red_val(dt, R, j));
                st = strata_allreduce(G->g, recv, recv, nred, dt, (strata_redop_t)op);
                good = STRATA_OK == st;
                for (size_t i = 0; good && i < nred; i++) {
                    good = check_reduced(dt, G, gs, (strata_redop_t)op, i, get(dt, recv, i));
                    if (!good) diag("element %zu: got %g", i, get(dt, recv, i));
                }
                ok(good, "%s allreduce(in place) %s %s count %zu", G->name, op ? "avg" : "sum",
                   strata_dtype_name(dt), nred);
            }

            /* nonblocking: an all-gather and a reduce-scatter in flight together,
             * polled with test, then waited (the path FSDP uses) */
            {
                unsigned char *ag = malloc(gs * n * esz + 1), *rs_in = malloc(gs * nred * esz + 1);
                unsigned char *rs_out = malloc(nred * esz + 1);
                if (!ag || !rs_in || !rs_out) bail_out("out of memory");
                fill_pattern(dt, send, R, n);
                for (size_t j = 0; j < gs * nred; j++) put(dt, rs_in, j, red_val(dt, R, j));
                strata_request_t *r1 = NULL, *r2 = NULL;
                good = STRATA_OK == strata_allgather_start(G->g, send, ag, n, dt, &r1);
                good &= STRATA_OK == strata_reduce_scatter_start(G->g, rs_in, rs_out, nred, dt,
                                                                 STRATA_AVG, &r2);
                int d1 = 0;
                for (int spin = 0; good && spin < 3 && !d1; spin++)
                    good &= STRATA_OK == strata_request_test(r1, &d1);
                good &= STRATA_OK == strata_request_wait(r1);
                good &= STRATA_OK == strata_request_wait(r2);
                for (int g = 0; good && g < gs; g++) good = check_pattern(dt, ag, g * n, member(G, g), n);
                for (size_t i = 0; good && i < nred; i++)
                    good = check_reduced(dt, G, gs, STRATA_AVG, gr * nred + i, get(dt, rs_out, i));
                ok(good, "%s nonblocking allgather + reduce_scatter %s count %zu", G->name,
                   strata_dtype_name(dt), n);
                free(ag); free(rs_in); free(rs_out);
            }

            /* broadcast from the last rank of the group */
            int root = gs - 1;
            if (gr == root) fill_pattern(dt, recv, member(G, root), n);
            else memset(recv, 0, n * esz);
            st = strata_broadcast(G->g, recv, n, dt, root);
            ok(STRATA_OK == st && check_pattern(dt, recv, 0, member(G, root), n),
               "%s broadcast %s count %zu root %d", G->name, strata_dtype_name(dt), n, root);
            free(send);
            free(recv);
        }
    }
    ok(STRATA_OK == strata_barrier(G->g), "%s barrier", G->name);
}

int main(int argc, char **argv)
{
    size_t max_bytes = 1 << 20, max_red_bytes = 0;
    int shards[16], nshards = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            if (strata_parse_size(argv[++i], &max_bytes)) { fprintf(stderr, "bad --max-bytes\n"); return 2; }
        } else if (!strcmp(argv[i], "--max-reduce") && i + 1 < argc) {
            if (strata_parse_size(argv[++i], &max_red_bytes)) { fprintf(stderr, "bad --max-reduce\n"); return 2; }
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--shards") && i + 1 < argc) {
            for (char *p = strtok(argv[++i], ","); p && nshards < 16; p = strtok(NULL, ","))
                shards[nshards++] = atoi(p);
        } else {
            fprintf(stderr, "usage: comm_coll [--max-bytes SIZE] [--max-reduce SIZE] [--shards S1,...] [--quick]\n");
            return 2;
        }
    }

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);

    strata_config_t *cfg = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", "host", NULL, 0);   /* host buffers; t/comm_nccl.c covers devices */
    strata_context_t *ctx;
    if (strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    strata_config_destroy(cfg);   /* the context holds a copy */

    int valid = 0;
    for (int s = 0; s < nshards; s++) if (shards[s] > 0 && 0 == W % shards[s]) valid++;
    /* per dtype: counts x 7 checks, +1 barrier; shard/replica groups skip the max count */
    int nc = quick ? 4 : 6;
    plan((3 * nc * 7 + 1) + valid * 2 * (3 * (nc - 1) * 7 + 1));

    if (0 == max_red_bytes) max_red_bytes = max_bytes;
    size_t max_count[3], max_reduce[3];
    for (int d = 0; d < 3; d++) {
        max_count[d] = max_bytes / strata_dtype_size((strata_dtype_t)d);
        max_reduce[d] = max_red_bytes / strata_dtype_size((strata_dtype_t)d);
    }

    grp_t world = { "world", strata_world_group(ctx), 0, 1 };
    if (0 == R) diag("%d ranks, per-rank contribution up to %zu bytes, MPI thread level %d",
                     W, max_bytes, strata_thread_level(ctx));
    test_group(&world, max_count, max_reduce, 1);

    size_t small[3] = { 65537, 65537, 65537 };
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
        test_group(&shard, small, small, 0);
        test_group(&replica, small, small, 0);
        strata_group_destroy(sg);
        strata_group_destroy(rg);
    }

    int rc = done_testing();
    strata_finalize(ctx);
    MPI_Finalize();
    return rc;
}
