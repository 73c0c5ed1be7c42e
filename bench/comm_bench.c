/*
 * comm_bench.c - strata all-gather and reduce-scatter against the raw MPI
 * collectives on the same buffers, in the same run, interleaved A B A B
 * so machine noise hits both alike; medians over the repeats.
 *
 *   comm_bench [--json] [--min SIZE] [--max SIZE] [--repeats N] [--header]
 *
 * Bandwidths as nccl-tests define them: algbw = S / t with S the bytes of
 * the full (gathered or reduced) buffer, busbw = algbw * (n-1)/n.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "stats.h"

static int W, R;

typedef enum { OP_ALLGATHER, OP_REDUCE_SCATTER } op_t;

/* One timed sample: iters back-to-back operations, slowest rank's time. */
static double sample(strata_group_t *g, op_t op, int use_strata, float *send, float *recv,
                     size_t count, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (OP_ALLGATHER == op) {
            if (use_strata) strata_allgather(g, send, recv, count, STRATA_F32);
            else MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        } else {
            if (use_strata) strata_reduce_scatter(g, send, recv, count, STRATA_F32, STRATA_SUM);
            else MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    double dt = (MPI_Wtime() - t0) / iters, worst;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    int json = 0, repeats = 7, header = 0;
    size_t min_bytes = 4 << 10, max_bytes = 256u << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--header")) header = 1;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min") && i + 1 < argc) strata_parse_size(argv[++i], &min_bytes);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) strata_parse_size(argv[++i], &max_bytes);
        else {
            fprintf(stderr, "usage: comm_bench [--json] [--header] [--min SIZE] [--max SIZE] [--repeats N]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > 101) repeats = 7;

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    strata_context_t *ctx;
    strata_config_t *cfg = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", "host", NULL, 0);   /* the buffers below are host memory */
    if (strata_init(MPI_COMM_WORLD, cfg, &ctx)) {
        fprintf(stderr, "comm_bench: strata_init failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    strata_config_destroy(cfg);   /* the context holds a copy */
    strata_group_t *g = strata_world_group(ctx);

    if (0 == R && header && !json) {
        printf("# strata vs raw MPI collectives, f32, medians of %d interleaved repeats\n", repeats);
        printf("%-15s %5s %12s %14s %12s %7s\n", "op", "ranks", "bytes/rank", "strata busbw", "MPI busbw", "ratio");
    }
    static const char *const opname[] = { "allgather", "reduce_scatter" };
    for (int op = 0; op < 2; op++) {
        for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
            size_t count = bytes / sizeof(float);
            float *send = malloc(OP_ALLGATHER == op ? bytes : bytes * W);
            float *recv = malloc(OP_ALLGATHER == op ? bytes * W : bytes);
            if (!send || !recv) { fprintf(stderr, "comm_bench: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            /* touch every page before timing */
            memset(send, 1, OP_ALLGATHER == op ? bytes : bytes * W);
            memset(recv, 0, OP_ALLGATHER == op ? bytes * W : bytes);
            int iters = (int)((64u << 20) / (bytes * W));
            if (iters < 1) iters = 1;
            if (iters > 200) iters = 200;
            sample(g, op, 1, send, recv, count, iters);   /* warm-up both */
            sample(g, op, 0, send, recv, count, iters);
            double ts[101], tm[101];
            for (int r = 0; r < repeats; r++) {
                /* alternate which side goes first so neither always follows the other */
                if (r % 2) {
                    tm[r] = sample(g, op, 0, send, recv, count, iters);
                    ts[r] = sample(g, op, 1, send, recv, count, iters);
                } else {
                    ts[r] = sample(g, op, 1, send, recv, count, iters);
                    tm[r] = sample(g, op, 0, send, recv, count, iters);
                }
            }
            double s = median(ts, repeats), m = median(tm, repeats);
            double factor = W > 1 ? (double)(W - 1) / W : 1.0;
            double total = (double)bytes * W;
            double sbw = total / s * factor / 1e9, mbw = total / m * factor / 1e9;
            if (0 == R) {
                if (json)
                    printf("{\"op\":\"%s\",\"ranks\":%d,\"bytes_per_rank\":%zu,\"strata_busbw_gbs\":%.4f,"
                           "\"mpi_busbw_gbs\":%.4f,\"ratio\":%.4f,\"strata_s\":%.6g,\"mpi_s\":%.6g,"
                           "\"repeats\":%d}\n", opname[op], W, bytes, sbw, mbw, m / s, s, m, repeats);
                else
                    printf("%-15s %5d %12zu %11.3f GB/s %7.3f GB/s %7.3f\n", opname[op], W, bytes,
                           sbw, mbw, m / s);
                fflush(stdout);
            }
            free(send);
            free(recv);
        }
    }
    strata_finalize(ctx);
    MPI_Finalize();
    return 0;
}
