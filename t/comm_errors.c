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
    plan(22);

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
    strata_status_t st_nb;
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

    /* Nonblocking starts are not held for the check: the data goes out
     * from a later test or wait, once every rank agreed. A disagreement
     * then surfaces there, still on every rank and still before any data
     * moved. */
    strata_request_t *q[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 64 * 8; i++) out[i] = -7.0f;
    ok(STRATA_OK == strata_allgather_start(w, buf, out, 4, dt, &q[0]),
       "a nonblocking start with mismatched dtypes returns at once");
    ok(STRATA_ERR_MISMATCH == strata_request_wait(q[0]) &&
       strstr(strata_last_error(ctx), "disagree"), "its wait reports the mismatch on every rank");
    int untouched = 1;
    for (int i = 0; i < 4 * W; i++) untouched &= -7.0f == out[i];
    ok(untouched, "and the receive buffer was not written");

    /* one rank's bad argument in a nonblocking start: it fails there at
     * once, and the others' waits fail instead of hanging */
    q[0] = NULL;
    st_nb = strata_allgather_start(w, 2 == R % 3 ? NULL : buf, out, 4, STRATA_F32, &q[0]);
    if (2 == R % 3) ok(STRATA_ERR_INVALID == st_nb && NULL == q[0], "bad rank: start fails");
    else ok(STRATA_OK == st_nb && STRATA_ERR_INVALID == strata_request_wait(q[0]) &&
            strstr(strata_last_error(ctx), "another rank"), "the others: their wait fails");

    /* three queued starts waited in reverse order, then a blocking call
     * behind a queued one: the data collectives keep start order */
    float a[8], ag[8 * 8], rs_in[2 * 8], rs[2], ar[3];
    for (int i = 0; i < 8; i++) a[i] = (float)(100 * R + i);
    for (int i = 0; i < 2 * W; i++) rs_in[i] = (float)(i + R);
    for (int i = 0; i < 3; i++) ar[i] = (float)(R * i);
    int started = STRATA_OK == strata_allgather_start(w, a, ag, 8, STRATA_F32, &q[0]) &&
                  STRATA_OK == strata_reduce_scatter_start(w, rs_in, rs, 2, STRATA_F32,
                                                           STRATA_SUM, &q[1]) &&
                  STRATA_OK == strata_allreduce_start(w, ar, ar, 3, STRATA_F32, STRATA_SUM, &q[2]);
    int done = 0;
    while (started && !done && STRATA_OK == strata_request_test(q[2], &done)) {}
    ok(started && done, "three nonblocking starts; the last one's tests complete it");
    strata_status_t s2 = strata_request_wait(q[2]), s1 = strata_request_wait(q[1]),
                    s0 = strata_request_wait(q[0]);
    int good = STRATA_OK == s0 && STRATA_OK == s1 && STRATA_OK == s2;
    for (int g = 0; g < W; g++)
        for (int i = 0; i < 8; i++) good &= ag[g * 8 + i] == (float)(100 * g + i);
    for (int i = 0; i < 2; i++)   /* sum over ranks r of (2R + i + r) */
        good &= rs[i] == (float)(W * (2 * R + i) + W * (W - 1) / 2);
    for (int i = 0; i < 3; i++) good &= ar[i] == (float)(i * W * (W - 1) / 2);
    ok(good, "waited in reverse order, all three results are right");
    float b[4] = { 1, 2, 3, 4 }, bg[4 * 8], sum[4];
    started = STRATA_OK == strata_allgather_start(w, b, bg, 4, STRATA_F32, &q[0]);
    ok(started && STRATA_OK == strata_allreduce(w, b, sum, 4, STRATA_F32, STRATA_SUM) &&
       sum[3] == 4.0f * W, "a blocking call behind a queued start");
    ok(STRATA_OK == strata_request_wait(q[0]) && bg[4 * W - 1] == 4.0f,
       "and the queued one completes after it");

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
