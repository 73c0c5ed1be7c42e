/* unit_nccl.t - the NCCL backend's pure decisions (comm/nccl_map.c): type
 * and op mapping, device choice, communicator bootstrap in shard and
 * replica groups, staging sizes, when a group call has settled. Needs NCCL
 * installed, not a GPU. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "comm/nccl_backend.h"
#include "tap.h"

static void test_dtype(void)
{
    static const struct { strata_dtype_t in; ncclDataType_t want; } cases[] = {
        { STRATA_F32, ncclFloat32 }, { STRATA_BF16, ncclBfloat16 }, { STRATA_F16, ncclFloat16 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ncclDataType_t t = ncclInt8;
        ok(STRATA_OK == comm_nccl_dtype(cases[i].in, &t) && cases[i].want == t,
           "dtype %s maps to NCCL type %d", strata_dtype_name(cases[i].in), (int)cases[i].want);
    }
    /* every valid dtype maps to an NCCL type of the same width */
    int good = 1;
    for (int d = 0; d < STRATA_DTYPE_COUNT; d++) {
        ncclDataType_t t;
        good &= STRATA_OK == comm_nccl_dtype((strata_dtype_t)d, &t) &&
                strata_dtype_size((strata_dtype_t)d) == (ncclFloat32 == t ? 4u : 2u);
    }
    ok(good, "every strata dtype has an NCCL type of its width");
    const int bad[] = { STRATA_DTYPE_COUNT, -1, 9, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ncclDataType_t t = ncclInt8;
        ok(STRATA_ERR_INVALID == comm_nccl_dtype((strata_dtype_t)bad[i], &t) && ncclInt8 == t,
           "invalid dtype %d refused, output untouched", bad[i]);
    }
    ok(STRATA_ERR_INVALID == comm_nccl_dtype(STRATA_F32, NULL), "dtype: NULL output refused");
}

static void test_op(void)
{
    ncclRedOp_t o = ncclProd;
    ok(STRATA_OK == comm_nccl_op(STRATA_SUM, &o) && ncclSum == o, "SUM maps to ncclSum");
    o = ncclProd;
    ok(STRATA_OK == comm_nccl_op(STRATA_AVG, &o) && ncclAvg == o, "AVG maps to ncclAvg");
    const int bad[] = { STRATA_REDOP_COUNT, -1, 7 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = ncclProd;
        ok(STRATA_ERR_INVALID == comm_nccl_op((strata_redop_t)bad[i], &o) && ncclProd == o,
           "invalid reduction %d refused, output untouched", bad[i]);
    }
    ok(STRATA_ERR_INVALID == comm_nccl_op(STRATA_SUM, NULL), "op: NULL output refused");
}

static void test_device(void)
{
    is_int(comm_nccl_device(0, 1), 0, "local rank 0, one device");
    is_int(comm_nccl_device(5, 8), 5, "one rank per device");
    is_int(comm_nccl_device(5, 4), 1, "more ranks than devices wrap around");
    /* 8 ranks on 4 devices: each device driven by exactly two ranks */
    int use[4] = { 0 }, good = 1;
    for (int r = 0; r < 8; r++) {
        int d = comm_nccl_device(r, 4);
        if (d < 0 || d >= 4) good = 0; else use[d]++;
    }
    for (int d = 0; d < 4; d++) good &= 2 == use[d];
    ok(good, "8 local ranks spread evenly over 4 devices");
    is_int(comm_nccl_device(0, 0), -1, "no device: -1");
    is_int(comm_nccl_device(-1, 2), -1, "negative local rank: -1");
}

static void test_boot(void)
{
    comm_nccl_boot_t b = { -5, -5, -5 };
    ok(STRATA_OK == comm_nccl_boot(0, 4, &b) && 4 == b.nranks && 0 == b.rank && b.creates_id,
       "group rank 0 creates the unique id");
    ok(STRATA_OK == comm_nccl_boot(3, 4, &b) && 3 == b.rank && !b.creates_id,
       "other members receive it");
    ok(STRATA_OK == comm_nccl_boot(0, 1, &b) && 1 == b.nranks && b.creates_id,
       "a group of one bootstraps itself");
    b.rank = -5;
    ok(STRATA_ERR_INVALID == comm_nccl_boot(4, 4, &b) && -5 == b.rank,
       "rank outside the group refused, output untouched");
    ok(STRATA_ERR_INVALID == comm_nccl_boot(-1, 4, &b), "negative rank refused");
    ok(STRATA_ERR_INVALID == comm_nccl_boot(0, 0, &b), "empty group refused");
    ok(STRATA_ERR_INVALID == comm_nccl_boot(0, 4, NULL), "boot: NULL output refused");
}

/* For world W and shard size S, every group of the given kind must have
 * exactly one id creator, which every member names as the id root, and
 * NCCL ranks 0..n-1 each taken once - the communicator is then well formed. */
static int check_layout(int W, int S, int replica)
{
    int ngroups = replica ? S : W / S, gsize = replica ? W / S : S;
    int *creators = calloc((size_t)ngroups, sizeof *creators);
    int *root_of = malloc((size_t)ngroups * sizeof *root_of);
    int *seen = calloc((size_t)W, sizeof *seen);
    int good = creators && root_of && seen;
    for (int g = 0; good && g < ngroups; g++) root_of[g] = -1;
    for (int r = 0; good && r < W; r++) {
        comm_nccl_boot_t b;
        int root;
        comm_layout_t l;
        good = STRATA_OK == comm_nccl_boot_layout(W, S, r, replica, &b, &root) &&
               0 == comm_group_layout(W, S, r, &l) && gsize == b.nranks;
        if (!good) break;
        int g = replica ? l.replica_group : l.shard_group;
        /* the NCCL rank must be the key group.c hands to MPI_Comm_split */
        good = b.rank == (replica ? l.replica_rank : l.shard_rank);
        if (root_of[g] < 0) root_of[g] = root;
        good &= root_of[g] == root;
        if (b.creates_id) { creators[g]++; good &= root == r; }
        seen[g * gsize + b.rank]++;
    }
    for (int g = 0; good && g < ngroups; g++) {
        comm_layout_t l;
        good = 1 == creators[g] && 0 == comm_group_layout(W, S, root_of[g], &l) &&
               g == (replica ? l.replica_group : l.shard_group);
    }
    for (int i = 0; good && i < W; i++) good = 1 == seen[i];
    free(creators);
    free(root_of);
    free(seen);
    return good;
}

static void test_layout(void)
{
    static const int worlds[] = { 1, 2, 6, 8, 12, 128 };
    int good = 1, ncases = 0;
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        int W = worlds[w];
        for (int S = 1; S <= W; S++) {
            if (W % S) continue;
            good &= check_layout(W, S, 0) && check_layout(W, S, 1);
            ncases++;
        }
    }
    ok(good, "%d (W, S) layouts: one id creator per shard/replica group, ranks 0..n-1 once each",
       ncases);
    comm_nccl_boot_t b;
    int root = -7;
    ok(STRATA_OK == comm_nccl_boot_layout(8, 4, 6, 1, &b, &root) && 2 == root && 1 == b.rank &&
       2 == b.nranks, "W=8 S=4 rank 6: replica group {2, 6}, id from world rank 2");
    ok(STRATA_OK == comm_nccl_boot_layout(8, 4, 6, 0, &b, &root) && 4 == root && 2 == b.rank &&
       4 == b.nranks, "W=8 S=4 rank 6: shard group {4..7}, id from world rank 4");
    root = -7;
    ok(STRATA_ERR_INVALID == comm_nccl_boot_layout(6, 4, 0, 0, &b, &root) && -7 == root,
       "S not dividing W refused");
    ok(STRATA_ERR_INVALID == comm_nccl_boot_layout(8, 4, 8, 0, &b, &root), "rank outside the world refused");
    ok(STRATA_ERR_INVALID == comm_nccl_boot_layout(8, 4, 0, 2, &b, &root), "group kind other than 0/1 refused");
    ok(STRATA_ERR_INVALID == comm_nccl_boot_layout(8, 4, 0, 0, NULL, &root) &&
       STRATA_ERR_INVALID == comm_nccl_boot_layout(8, 4, 0, 0, &b, NULL), "layout: NULL outputs refused");
}

static void test_stage(void)
{
    size_t bytes = 12345;
    ok(STRATA_OK == comm_nccl_stage_bytes(COLL_ALLREDUCE, 1001, 3, &bytes) && 1001 * 4 == bytes,
       "allreduce stages count floats (in place)");
    ok(STRATA_OK == comm_nccl_stage_bytes(COLL_REDUCE_SCATTER, 1001, 3, &bytes) &&
       (3 * 1001 + 1001) * 4 == bytes, "reduce-scatter stages n*count inputs + count outputs");
    ok(STRATA_OK == comm_nccl_stage_bytes(COLL_REDUCE_SCATTER, 0, 128, &bytes) && 0 == bytes,
       "count 0 needs no staging");
    bytes = 12345;
    ok(STRATA_ERR_OVERFLOW == comm_nccl_stage_bytes(COLL_REDUCE_SCATTER, SIZE_MAX / 4, 4, &bytes) &&
       12345 == bytes, "reduce-scatter staging overflow detected, output untouched");
    ok(STRATA_ERR_OVERFLOW == comm_nccl_stage_bytes(COLL_ALLREDUCE, SIZE_MAX / 2, 1, &bytes),
       "allreduce staging overflow (x 4 bytes) detected");
    ok(STRATA_ERR_OVERFLOW == comm_nccl_stage_bytes(COLL_REDUCE_SCATTER, SIZE_MAX / 2 + 1, 1, &bytes),
       "count + count overflow detected");
    ok(STRATA_ERR_INVALID == comm_nccl_stage_bytes(COLL_ALLGATHER, 10, 2, &bytes),
       "allgather needs no f32 staging: refused");
    ok(STRATA_ERR_INVALID == comm_nccl_stage_bytes(COLL_ALLREDUCE, 10, 0, &bytes) &&
       STRATA_ERR_INVALID == comm_nccl_stage_bytes(COLL_ALLREDUCE, 10, 2, NULL),
       "group size 0 and NULL output refused");
}

/* reduce16=native: 16-bit reductions in their own NCCL type, without
 * staging; f32 and the wide rule as before */
static void test_native(void)
{
    size_t bytes = 12345;
    ok(comm_nccl_native(STRATA_BF16, 1) && comm_nccl_native(STRATA_F16, 1) &&
       !comm_nccl_native(STRATA_F32, 1) && !comm_nccl_native(STRATA_BF16, 0),
       "native only for a 16-bit dtype with reduce16=native");
    ok(STRATA_OK == comm_nccl_stage_need(COLL_REDUCE_SCATTER, 1001, 3, STRATA_BF16, 1, &bytes) &&
       0 == bytes, "native bf16 reduce-scatter: no f32 staging");
    ok(STRATA_OK == comm_nccl_stage_need(COLL_REDUCE_SCATTER, 1001, 3, STRATA_BF16, 0, &bytes) &&
       (3 * 1001 + 1001) * 4 == bytes, "wide bf16 reduce-scatter: the f32 staging");
    ok(STRATA_OK == comm_nccl_stage_need(COLL_ALLREDUCE, 1001, 3, STRATA_F16, 0, &bytes) &&
       1001 * 4 == bytes, "wide f16 allreduce: count floats");
    ok(STRATA_OK == comm_nccl_stage_need(COLL_ALLREDUCE, 1001, 3, STRATA_F32, 0, &bytes) &&
       0 == bytes, "f32 needs no staging");
    ok(STRATA_ERR_INVALID == comm_nccl_stage_need(COLL_ALLGATHER, 10, 2, STRATA_BF16, 0, &bytes) &&
       STRATA_ERR_OVERFLOW == comm_nccl_stage_need(COLL_REDUCE_SCATTER, SIZE_MAX / 4, 4,
                                                    STRATA_BF16, 0, &bytes),
       "need: allgather refused, overflow detected");
}

/* a group call settles only when neither answer is "in progress"; the
 * collective's own failure wins over ncclGroupEnd's answer */
static void test_group_pending(void)
{
    static const struct {
        ncclResult_t call, end, want_r;
        int pending;
    } cases[] = {
        { ncclSuccess,       ncclSuccess,       ncclSuccess,       0 },
        { ncclSuccess,       ncclInProgress,    ncclInProgress,    1 },
        { ncclInProgress,    ncclSuccess,       ncclInProgress,    1 },
        { ncclInProgress,    ncclInProgress,    ncclInProgress,    1 },
        { ncclSuccess,       ncclSystemError,   ncclSystemError,   0 },
        { ncclInvalidUsage,  ncclInProgress,    ncclInvalidUsage,  0 },
        { ncclInvalidArgument, ncclSuccess,     ncclInvalidArgument, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ncclResult_t r = ncclNumResults;
        int p = comm_nccl_group_pending(cases[i].call, cases[i].end, &r);
        ok(cases[i].pending == p && (p || cases[i].want_r == r),
           "group call %d then end %d: %s", (int)cases[i].call, (int)cases[i].end,
           cases[i].pending ? "poll until settled" : "settled");
    }
}

static void test_table(void)
{
    const comm_backend_t *b = &comm_nccl_backend;
    ok(b->group_init && b->group_cleanup && b->allgather && b->reduce_scatter && b->allreduce &&
       b->broadcast && b->barrier && b->test && b->wait, "every required op is implemented");
    ok(b->reduce_wide && b->check_buffers && b->request_release,
       "16-bit reductions, buffer checks and request release are the backend's own");
    ok(b->stage_need && b->stage_give, "the 16-bit staging can be given (a device-tier block)");
    is_string(b->name, "nccl", "backend name");
}

int main(void)
{
    plan(9 + 6 + 6 + 7 + 7 + 8 + 6 + 7 + 4);
    test_dtype();
    test_op();
    test_device();
    test_boot();
    test_layout();
    test_stage();
    test_native();
    test_group_pending();
    test_table();
    return done_testing();
}
