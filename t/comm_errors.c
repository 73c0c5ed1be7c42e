/* comm_errors.c - bad input to groups and collectives (run on 3 ranks):
 * every case returns the matching status with a message on every rank,
 * and the group still works afterwards. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tap.h"

int main(int argc, char **argv)
{
    int provided, W, R;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    plan(14);

    strata_context_t *ctx = NULL;
    ok(STRATA_ERR_INVALID == strata_init(MPI_COMM_NULL, NULL, &ctx) && NULL == ctx,
       "init on MPI_COMM_NULL is invalid and leaves ctx_p alone");
    strata_config_t *cfg = NULL;
    strata_config_create(&cfg);
    strata_config_read_env(cfg, NULL, 0);
    strata_config_set(cfg, "backend", "host", NULL, 0);   /* host buffers, also where a GPU answers */
    if (strata_init(MPI_COMM_WORLD, cfg, &ctx)) bail_out("strata_init failed");
    strata_config_destroy(cfg);   /* the context holds a copy */
    strata_group_t *w = strata_world_group(ctx);
    float buf[64] = { 0 }, out[64 * 8];
    strata_group_t *sg = NULL, *rg = NULL;

    ok(STRATA_ERR_INVALID == strata_group_split(ctx, W + 1, &sg, &rg) && NULL == sg &&
       strstr(strata_last_error(ctx), "does not divide"),
       "shard size not dividing the world: %s", strata_last_error(ctx));
    ok(STRATA_ERR_INVALID == strata_group_split(ctx, 0, &sg, &rg), "shard size 0 refused");

    ok(STRATA_ERR_INVALID == strata_allgather(w, NULL, out, 4, STRATA_F32) &&
       strstr(strata_last_error(ctx), "NULL"), "NULL send buffer");
    ok(STRATA_OK == strata_allgather(w, NULL, NULL, 0, STRATA_F32), "count 0 with NULL buffers is fine");
    ok(STRATA_ERR_OVERFLOW == strata_allgather(w, buf, out, SIZE_MAX / 2, STRATA_F32) &&
       strstr(strata_last_error(ctx), "overflow"), "count x ranks x size overflows");
    ok(STRATA_ERR_OVERFLOW == strata_allreduce(w, buf, out, (size_t)1 << 31, STRATA_BF16, STRATA_SUM),
       "count above the MPI int limit");
    ok(STRATA_ERR_INVALID == strata_allgather(w, buf, out, 4, (strata_dtype_t)9), "invalid dtype");
    ok(STRATA_ERR_INVALID == strata_allreduce(w, buf, out, 4, STRATA_F32, (strata_redop_t)5),
       "invalid reduction");
    ok(STRATA_ERR_INVALID == strata_broadcast(w, buf, 4, STRATA_F32, W), "root outside the group");

    /* ranks disagree: rank 0 says f16, the others f32 */
    strata_dtype_t dt = 0 == R ? STRATA_F16 : STRATA_F32;
    ok(STRATA_ERR_MISMATCH == strata_allgather(w, buf, out, 4, dt) &&
       strstr(strata_last_error(ctx), "disagree"), "mismatched dtypes detected on every rank");
    size_t cnt = 0 == R ? 5 : 4;
    ok(STRATA_ERR_MISMATCH == strata_reduce_scatter(w, buf, out, cnt, STRATA_F32, STRATA_SUM),
       "mismatched counts detected on every rank");
    /* only one rank passes a NULL buffer: the others must not hang */
    ok(STRATA_ERR_INVALID == strata_allreduce(w, 1 == R ? NULL : buf, out, 4, STRATA_F32, STRATA_SUM),
       "one rank's bad argument fails the call everywhere");

    for (int i = 0; i < 4; i++) buf[i] = (float)(R + i);
    strata_status_t st = strata_allreduce(w, buf, out, 4, STRATA_F32, STRATA_SUM);
    float want = (float)(W * (W - 1) / 2);
    ok(STRATA_OK == st && out[0] == want && out[3] == want + 3 * W,
       "the group still works after the errors");

    int rc = done_testing();
    strata_finalize(ctx);
    MPI_Finalize();
    return rc;
}
