/*
 * agree.c - agreement over a group. On an error: comm_agree_status, the
 * one helper of base/agree.h on the group, recorded. On a list: do all
 * ranks of a group hold the same list? Each rank hashes
 * its entries (a step program's units and saves, a plan); one small
 * allreduce compares the hashes. Only on a mismatch do two more find the
 * first entry that differs, and an allgather of its descriptions names it
 * and the ranks on each side, the same message on every rank.
 */
#include "config.h"
#include "comm/comm.h"
#include "base/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DESC_LEN 112

uint64_t comm_hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h >> 1;   /* non-negative as a long long */
}

static strata_status_t allreduce_ll(strata_group_t *g, long long *v, int n, MPI_Op op)
{
    strata_context_t *ctx = g->ctx;
    MPI_Request mr = MPI_REQUEST_NULL;
    rec_op_t rop = comm_rec_begin(ctx, g, REC_CHECK, (size_t)n * sizeof *v, STRATA_F32);
    comm_lock(ctx);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, op, g->comm, &mr);
    comm_unlock(ctx);
    comm_rec_waiting(ctx, rop);
    strata_status_t st = MPI_SUCCESS == rc ? comm_wait_backoff(ctx, &mr, "MPI_Wait (agreement)")
                                           : base_mpi_error(ctx, rc, "MPI_Iallreduce (agreement)");
    comm_rec_end(ctx, rop, st);
    return st;
}

/* The message: "what: ranks R,R: DESC; ranks R: DESC" for entry i. */
static strata_status_t name_difference(strata_group_t *g, const char *what, int i,
                                       const uint64_t *h, int n, const char *const *desc)
{
    strata_context_t *ctx = g->ctx;
    int P = g->size;
    char mine[DESC_LEN + 8] = "";
    if (i < n) snprintf(mine, DESC_LEN, "%s", desc[i]);
    else snprintf(mine, DESC_LEN, "(nothing: it has only %d entries)", n);
    long long mh = i < n ? (long long)h[i] : -1;
    char *all = calloc((size_t)P, DESC_LEN + sizeof(long long));
    if (!all) return base_error(ctx, STRATA_ERR_NOMEM, "%s differs between ranks", what);
    char buf[DESC_LEN + sizeof(long long)];
    memcpy(buf, &mh, sizeof mh);
    memcpy(buf + sizeof mh, mine, DESC_LEN);
    MPI_Request mr = MPI_REQUEST_NULL;
    rec_op_t rop = comm_rec_begin(ctx, g, REC_CHECK, sizeof buf, STRATA_F32);
    comm_lock(ctx);
    int rc = MPI_Iallgather(buf, (int)sizeof buf, MPI_BYTE, all, (int)sizeof buf, MPI_BYTE,
                            g->comm, &mr);
    comm_unlock(ctx);
    comm_rec_waiting(ctx, rop);
    strata_status_t st = MPI_SUCCESS == rc ? comm_wait_backoff(ctx, &mr, "MPI_Wait (agreement)")
                                           : base_mpi_error(ctx, rc, "MPI_Iallgather");
    comm_rec_end(ctx, rop, st);
    if (STRATA_OK != st) { free(all); return st; }
    char msg[STRATA_ERRMSG_LEN];
    size_t len = (size_t)snprintf(msg, sizeof msg, "%s differs between ranks at entry %d:", what, i);
    char *done = calloc((size_t)P, 1);
    for (int a = 0; a < P && done && len < sizeof msg; a++) {
        if (done[a]) continue;
        const char *ra = all + (size_t)a * sizeof buf;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s rank ", a ? ";" : "");
        for (int b = a, k = 0; b < P && len < sizeof msg; b++) {
            const char *rb = all + (size_t)b * sizeof buf;
            if (done[b] || memcmp(ra, rb, sizeof mh)) continue;
            done[b] = 1;
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%d", k++ ? "," : "", b);
        }
        if (len < sizeof msg)
            len += (size_t)snprintf(msg + len, sizeof msg - len, ": %s", ra + sizeof mh);
    }
    free(done);
    free(all);
    return base_error(ctx, STRATA_ERR_MISMATCH, "%s", msg);
}

strata_status_t comm_agree_entries(strata_group_t *g, const char *what, const uint64_t *h,
                                   int n, const char *const *desc)
{
    uint64_t all = 0;
    for (int i = 0; i < n; i++) all = (all * 1099511628211ull) ^ h[i];
    all >>= 1;
    long long v[4] = { (long long)all, -(long long)all, n, -n };
    strata_status_t st = allreduce_ll(g, v, 4, MPI_MAX);
    if (STRATA_OK != st) return st;
    if (v[0] == -v[1] && v[2] == -v[3]) return STRATA_OK;
    /* the first entry whose hashes differ (a missing entry hashes as -1) */
    int nmax = (int)v[2];
    long long *lo = malloc(2 * (size_t)nmax * sizeof *lo);
    if (!lo) return base_error(g->ctx, STRATA_ERR_NOMEM, "%s differs between ranks", what);
    long long *hi = lo + nmax;
    for (int i = 0; i < nmax; i++) lo[i] = hi[i] = i < n ? (long long)h[i] : -1;
    st = allreduce_ll(g, lo, nmax, MPI_MIN);
    if (STRATA_OK == st) st = allreduce_ll(g, hi, nmax, MPI_MAX);
    int first = 0;
    while (first < nmax && lo[first] == hi[first]) first++;
    free(lo);
    if (STRATA_OK != st) return st;
    return name_difference(g, what, first, h, n, desc);
}

strata_status_t comm_agree_status(strata_group_t *g, strata_status_t st)
{
    strata_context_t *ctx = g->ctx;
    rec_op_t rop = comm_rec_begin(ctx, g, REC_CHECK, 2 * sizeof(int), STRATA_F32);
    comm_rec_waiting(ctx, rop);
    st = base_agree(ctx, g->comm, st);
    /* an agreed failure is the ranks' answer, not a failure of the check */
    comm_rec_end(ctx, rop, STRATA_ERR_MPI == st ? st : STRATA_OK);
    return st;
}

strata_status_t comm_agree_all(strata_group_t *g, int mine, int *all_p)
{
    long long v = mine ? 1 : 0;
    strata_status_t st = allreduce_ll(g, &v, 1, MPI_MIN);
    *all_p = STRATA_OK == st && 1 == v;
    return st;
}
