/*
 * rs.c - a reduce-scatter of f32 sums over MPI point-to-point messages:
 * what the MPI backend starts for a nonblocking reduce-scatter (comm/mpi.c),
 * and what strata calibrate measures as one.
 *
 * Why not MPI_Ireduce_scatter_block: Open MPI 4.1 runs it by libnbc's one
 * schedule, a binomial reduce of the WHOLE vector to rank 0 followed by a
 * linear scatter from it. Rank 0 receives and sums everything and sends
 * every other rank its block: on 2 ranks it moves and sums twice what it
 * must, and the rank-0 share of the work made that rank's backward units
 * of an 8-layer GPT wait 1-1.5 ms each where its peer's waited 0.4.
 * Here each rank sends block j of its input to rank j and receives its
 * own block from every peer, all at once (the bandwidth-optimal volume,
 * (p-1)/p of the vector each way), then sums its block alone.
 *
 * The sum runs as the same binomial tree over rank order that libnbc
 * builds (level s adds v[i+s] into v[i] for every i that is a multiple of
 * 2s), so every result is bit for bit what MPI_Ireduce_scatter_block gave.
 * The rank's own partial sums live in the result buffer; the last level
 * writes the result there and divides it (an average) in the same pass.
 *
 * Matching: each rank starts its reduce-scatters on a communicator in the
 * same order, and MPI does not let messages between two ranks on one tag
 * overtake each other, so the n-th start's receives match the peers' n-th
 * start's sends; the caller's tag (a sequence number) makes that explicit.
 */
#include "config.h"
#include "comm.h"

#include <stdlib.h>
#include <string.h>

static int slot_of(const comm_rs_t *rs, int j) { return j < rs->rank ? j : j - 1; }

int comm_rs_start(comm_rs_t *rs, MPI_Comm comm, int tag, const float *send, float *recv,
                  size_t count, float div)
{
    int p = 1, rank = 0, rc = MPI_SUCCESS;
    memset(rs, 0, sizeof *rs);
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &rank);
    rs->p = p;
    rs->rank = rank;
    rs->send = send;
    rs->recv = recv;
    rs->count = count;
    rs->div = div;
    if (count > (size_t)INT32_MAX) return MPI_ERR_COUNT;
    if (0 == count || p < 1) { rs->finished = 1; return MPI_SUCCESS; }
    if (1 == p) {
        memcpy(recv, send, count * sizeof(float));
        rs->nreq = 0;
        return MPI_SUCCESS;
    }
    rs->tmp = malloc((size_t)(p - 1) * count * sizeof(float));
    rs->reqs = malloc(2 * (size_t)(p - 1) * sizeof(MPI_Request));
    rs->v = malloc((size_t)p * sizeof *rs->v);
    if (!rs->tmp || !rs->reqs || !rs->v) {
        free(rs->tmp); free(rs->reqs); free(rs->v);
        rs->tmp = NULL; rs->reqs = NULL; rs->v = NULL;
        return MPI_ERR_NO_MEM;
    }
    /* receives first (a matching send then lands directly), then the sends
     * in a ring order from the next rank on, so not every rank's first
     * message goes to rank 0 */
    for (int k = 1; MPI_SUCCESS == rc && k < p; k++) {
        int j = (rank + p - k) % p;
        rc = MPI_Irecv(rs->tmp + (size_t)slot_of(rs, j) * count, (int)count, MPI_FLOAT, j, tag,
                       comm, &rs->reqs[rs->nreq]);
        if (MPI_SUCCESS == rc) rs->nreq++;
    }
    for (int k = 1; MPI_SUCCESS == rc && k < p; k++) {
        int j = (rank + k) % p;
        rc = MPI_Isend(send + (size_t)j * count, (int)count, MPI_FLOAT, j, tag, comm,
                       &rs->reqs[rs->nreq]);
        if (MPI_SUCCESS == rc) rs->nreq++;
    }
    return rc;
}

/* out = a + b (divided by div when div != 0), in blocks of 16: -O2
 * vectorises a fixed inner loop; the block goes through t because out may
 * be a or b (the tree adds in place). */
static void add_into(float *out, const float *a, const float *b, size_t n, float div)
{
    size_t i = 0;
    float t[16];
    if (0.0f != div) {
        for (; i + 16 <= n; i += 16) {
            for (int k = 0; k < 16; k++) t[k] = (a[i + k] + b[i + k]) / div;
            for (int k = 0; k < 16; k++) out[i + k] = t[k];
        }
        for (; i < n; i++) out[i] = (a[i] + b[i]) / div;
        return;
    }
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 16; k++) t[k] = a[i + k] + b[i + k];
        for (int k = 0; k < 16; k++) out[i + k] = t[k];
    }
    for (; i < n; i++) out[i] = a[i] + b[i];
}

void comm_rs_finish(comm_rs_t *rs)
{
    if (rs->finished) return;
    rs->finished = 1;
    const int p = rs->p, rank = rs->rank;
    const size_t n = rs->count;
    if (p < 2) {
        if (0.0f != rs->div)
            for (size_t i = 0; i < n; i++) rs->recv[i] /= rs->div;
        return;
    }
    int top = 1;
    while (2 * top < p) top *= 2;
    /* v[j]: rank j's contribution to this rank's block, or the partial sum
     * the tree has made of it so far */
    const float **v = rs->v;
    for (int j = 0; j < p; j++)
        v[j] = j == rank ? rs->send + (size_t)rank * n : rs->tmp + (size_t)slot_of(rs, j) * n;
    for (int s = 1; s < p; s *= 2)
        for (int i = 0; i + s < p; i += 2 * s) {
            int last = s == top;     /* the last level has one pair: (0, top) */
            float *out;
            if (last) out = rs->recv;
            else if (i == rank) out = rs->recv;
            else out = rs->tmp + (size_t)slot_of(rs, i) * n;
            add_into(out, v[i], v[i + s], n, last ? rs->div : 0.0f);
            v[i] = out;
        }
    free(rs->tmp);
    rs->tmp = NULL;
}

int comm_rs_test(comm_rs_t *rs, int *done_p)
{
    int flag = 1, rc = MPI_SUCCESS;
    if (!rs->finished && rs->nreq > 0) rc = MPI_Testall(rs->nreq, rs->reqs, &flag, MPI_STATUSES_IGNORE);
    *done_p = MPI_SUCCESS == rc && flag;
    return rc;
}

int comm_rs_done(const comm_rs_t *rs)
{
    for (int i = 0; i < rs->nreq; i++)
        if (MPI_REQUEST_NULL != rs->reqs[i]) return 0;
    return 1;
}

void comm_rs_release(comm_rs_t *rs)
{
    /* a buffer MPI may still write into (an abandoned wait) is left, not freed */
    if (comm_rs_done(rs)) free(rs->tmp);
    free(rs->reqs);
    free(rs->v);
    rs->tmp = NULL;
    rs->reqs = NULL;
    rs->v = NULL;
    rs->nreq = 0;
}
