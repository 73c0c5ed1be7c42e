/*
 * comm_rs.c - comm/rs.c's point-to-point reduce-scatter against Open MPI's
 * MPI_Ireduce_scatter_block (libnbc), bit for bit, on floats whose sums round
 * differently in different orders; several in flight at once, completed
 * in reverse order; averages; empty and odd-sized blocks. Run on N ranks
 * by t/comm-rs-np*.t.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "tap.h"

#define INFLIGHT 3

/* a float of varied sign and magnitude from (rank, j, salt) */
/* what the runtime called before: libnbc's schedule (the blocking
 * MPI_Reduce_scatter_block is coll tuned's, with other sums) */
static void mpi_rs(const float *send, float *recv, size_t n)
{
    MPI_Request q;
    MPI_Ireduce_scatter_block(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
}

static float val(int rank, size_t j, int salt)
{
    uint64_t x = (uint64_t)rank * 0x9e3779b97f4a7c15ull ^ (j + 1) * 0xbf58476d1ce4e5b9ull ^
                 (uint64_t)salt * 0x94d049bb133111ebull;
    x ^= x >> 31; x *= 0xd6e9f9b5ad8ef2c5ull; x ^= x >> 29;
    float m = (float)(x & 0xffffff) / 16777216.0f - 0.5f;
    return m * (float)(1u << (x >> 59));      /* times 2^0 .. 2^31 */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tap_use_comm(MPI_COMM_WORLD);
    int W, R;
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    const size_t counts[] = { 0, 1, 17, 1000, 65537 };
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    plan(3 * nc + 2);

    size_t maxc = counts[nc - 1];
    float *send[INFLIGHT], *mine[INFLIGHT], *ref = malloc(maxc * sizeof(float) + 4);
    for (int k = 0; k < INFLIGHT; k++) {
        send[k] = malloc((size_t)W * maxc * sizeof(float) + 4);
        mine[k] = malloc(maxc * sizeof(float) + 4);
    }
    long order_differs = 0;
    for (int c = 0; c < nc; c++) {
        size_t n = counts[c];
        for (int k = 0; k < INFLIGHT; k++)
            for (size_t j = 0; j < (size_t)W * n; j++) send[k][j] = val(R, j, 10 * c + k);
        /* INFLIGHT reduce-scatters started back to back, finished last first */
        comm_rs_t rs[INFLIGHT];
        int started = 1, same = 1, same_avg = 1;
        for (int k = 0; k < INFLIGHT; k++)
            started &= MPI_SUCCESS == comm_rs_start(&rs[k], MPI_COMM_WORLD, 1 + k, send[k], mine[k],
                                                    n, 0.0f);
        for (int k = INFLIGHT - 1; k >= 0; k--) {
            int done = 0;
            while (started && !done) started &= MPI_SUCCESS == comm_rs_test(&rs[k], &done);
            comm_rs_finish(&rs[k]);
            comm_rs_release(&rs[k]);
        }
        for (int k = 0; k < INFLIGHT; k++) {
            mpi_rs(send[k], ref, n);
            same &= 0 == memcmp(ref, mine[k], n * sizeof(float));
            /* the sum in plain rank order: different bits somewhere, or the
             * data could not tell the tree's order from another */
            for (size_t j = 0; j < n; j++) {
                float s = 0;
                for (int r = 0; r < W; r++) s += val(r, (size_t)R * n + j, 10 * c + k);
                order_differs += s != ref[j];
            }
        }
        ok(started, "%d ranks: %d reduce-scatters of %zu floats in flight complete", W, INFLIGHT, n);
        ok(same, "%d ranks, %zu floats: the sums are MPI_Ireduce_scatter_block's, bit for bit", W, n);
        /* the average: MPI's sum divided by the group size */
        int done = 0;
        started = MPI_SUCCESS == comm_rs_start(&rs[0], MPI_COMM_WORLD, 7, send[0], mine[0], n, (float)W);
        while (started && !done) started &= MPI_SUCCESS == comm_rs_test(&rs[0], &done);
        comm_rs_finish(&rs[0]);
        comm_rs_release(&rs[0]);
        mpi_rs(send[0], ref, n);
        for (size_t j = 0; j < n; j++) same_avg &= ref[j] / (float)W == mine[0][j];
        ok(started && same_avg, "%d ranks, %zu floats: the average is MPI's sum / %d", W, n, W);
    }
    long all = 0;
    MPI_Allreduce(&order_differs, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* up to 3 ranks the tree adds in rank order; from 4 on it pairs first */
    if (W >= 4)
        ok(all > 0, "%d ranks: summing in rank order instead gives other bits in %ld places", W, all);
    else
        ok(0 == all, "%d ranks: the tree is rank order, the same bits", W);
    /* a block count MPI cannot send is refused before any message */
    comm_rs_t big;
    ok(MPI_SUCCESS != comm_rs_start(&big, MPI_COMM_WORLD, 9, send[0], mine[0],
                                    (size_t)INT32_MAX + 1, 0.0f),
       "a block of 2^31 floats is refused with an error");
    comm_rs_release(&big);
    for (int k = 0; k < INFLIGHT; k++) { free(send[k]); free(mine[k]); }
    free(ref);
    int rc = done_testing();
    MPI_Finalize();
    return rc;
}
