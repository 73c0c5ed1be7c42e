/*
 * unit_fsdp_mem.t.c - the FSDP runtime's one door for memory (fsdp/mem.c)
 * on one process: a full or fragmented device tier retried while kept
 * workspace or the room hook frees something (and not forever), a
 * fragmented one then sending the buffer to the pinned-host tier, the
 * workspace kept between calls only while the executor runs, guards, and
 * bad arguments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/fsdp.h"
#include "tap.h"

#define KiB ((size_t)1024)
#define BLK (16 * KiB)                /* a block's bytes on the tier, guard included */
#define USER (BLK - FSDP_GUARD)       /* what to ask for to take one BLK */

/* What the room hook of the tests does: free held[] blocks in turn (one a
 * call) or, with empty_ones, return 1 that many times without freeing. */
static struct {
    fsdp_buf_t held[4];
    int        next, calls, empty_ones;
} hook;

static int room(strata_model_t *m)
{
    (void)m;
    hook.calls++;
    if (hook.empty_ones > 0) {
        hook.empty_ones--;
        return 1;
    }
    while (hook.next < 4 && !hook.held[hook.next].h) hook.next++;
    if (hook.next >= 4) return 0;
    fsdp_buf_free(&hook.held[hook.next++]);
    return 1;
}

/* Fill the 64 KiB device tier with four blocks the hook may free. */
static void fill(strata_model_t *m)
{
    memset(&hook, 0, sizeof hook);
    for (int i = 0; i < 4; i++)
        if (STRATA_OK != fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_ACTIVATION, USER,
                                        0, &hook.held[i]))
            bail_out("cannot fill the device tier: %s", strata_last_error(m->ctx));
}

static void unfill(void)
{
    for (int i = 0; i < 4; i++) fsdp_buf_free(&hook.held[i]);
}

static size_t dev_used(strata_model_t *m)
{
    strata_tier_usage_t u;
    strata_tier_usage(m->ctx, STRATA_TIER_DEVICE, &u);
    return u.used;
}

static void test_room(strata_model_t *m)
{
    fsdp_buf_t b = { 0 };
    strata_status_t st;

    fill(m);
    fsdp_mem_set_room(m, NULL);
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, USER, &b);
    is_int(st, STRATA_ERR_TIER_FULL, "full tier, no hook: the tiers' error stands");
    ok(NULL != strstr(strata_last_error(m->ctx), "device tier full"),
       "with the tiers' message (%s)", strata_last_error(m->ctx));
    ok(!b.h, "nothing handed out");

    fsdp_mem_set_room(m, room);
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, USER, &b);
    ok(STRATA_OK == st && b.h && 1 == hook.calls, "full tier: the hook frees one block, the "
       "retry succeeds (hook called %d time(s))", hook.calls);
    ok(fsdp_guard_ok(&b) && USER == b.bytes, "the buffer has its bytes and an intact guard");
    fsdp_buf_free(&b);
    unfill();

    /* a hook that says 1 without freeing is asked again; 0 ends it */
    fill(m);
    hook.next = 4;                    /* it will free nothing */
    hook.empty_ones = 2;
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, USER, &b);
    ok(STRATA_ERR_TIER_FULL == st && 3 == hook.calls, "a hook that frees nothing: retried "
       "while it returns 1, then the error stands (%d calls)", hook.calls);
    unfill();

    /* fragmented: half the tier free, no span for 20 KiB until a neighbour goes */
    fill(m);
    fsdp_buf_free(&hook.held[0]);
    fsdp_buf_free(&hook.held[2]);
    fsdp_mem_set_room(m, NULL);
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, 20 * KiB, &b);
    ok(STRATA_OK == st && b.ptr == strata_block_ptr(b.h, STRATA_TIER_PINNED_HOST) &&
       1 == m->frag_spills && 32 * KiB == dev_used(m),
       "free bytes in two pieces, no hook: the buffer goes to the pinned-host tier, counted, "
       "the device's use unchanged (%s)", STRATA_OK == st ? "ok" : strata_last_error(m->ctx));
    ok(fsdp_guard_ok(&b) && 20 * KiB == b.bytes, "with its bytes and an intact guard");
    fsdp_buf_free(&b);
    /* the pinned-host tier full too: the device's error stands, both named */
    fsdp_buf_t hold = { 0 };
    if (STRATA_OK != fsdp_buf_alloc(m->ctx, STRATA_TIER_PINNED_HOST, STRATA_TAG_ACTIVATION,
                                    1024 * KiB - 16 * KiB, 0, &hold))
        bail_out("cannot fill the host tier: %s", strata_last_error(m->ctx));
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, 20 * KiB, &b);
    ok(STRATA_ERR_FRAGMENTED == st && !b.h && NULL != strstr(strata_last_error(m->ctx), "fragmented") &&
       NULL != strstr(strata_last_error(m->ctx), "nor could the pinned-host tier take it"),
       "host tier full too: FRAGMENTED, naming both (%s)", strata_last_error(m->ctx));
    fsdp_buf_free(&hold);
    m->frag_spills = 0;
    fsdp_mem_set_room(m, room);
    st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, 20 * KiB, &b);
    ok(STRATA_OK == st && 1 == hook.calls, "the hook frees the block between them: the retry "
       "finds one span (%d call(s))", hook.calls);
    fsdp_buf_free(&b);
    unfill();
    fsdp_mem_set_room(m, NULL);
}

static void test_workspace(strata_model_t *m)
{
    fsdp_buf_t b = { 0 }, w[FSDP_WS_CACHE + 1];
    size_t used0 = dev_used(m);

    m->exec_active = 0;
    fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_WORKSPACE, 1000, 0, &b);
    fsdp_ws_give(m, &b);
    ok(!b.h && 0 == m->nws_cache && used0 == dev_used(m),
       "executor not running: a given block is freed");

    m->exec_active = 1;
    for (int i = 0; i <= FSDP_WS_CACHE; i++) {
        fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_WORKSPACE, (size_t)(i + 1) * KiB,
                       0, &w[i]);
        fsdp_ws_give(m, &w[i]);
    }
    ok(FSDP_WS_CACHE == m->nws_cache && !w[FSDP_WS_CACHE].h,
       "executor running: %d blocks kept, the one more freed", FSDP_WS_CACHE);

    is_int(fsdp_ws_take(m, 1500, &b), 1, "a kept block fits 1500 bytes");
    ok(b.h && 1500 == b.bytes && strata_block_size(b.h) >= 1500 + FSDP_GUARD &&
       strata_block_size(b.h) < 3 * KiB + FSDP_GUARD, "the smallest that fits (%zu bytes)",
       strata_block_size(b.h));
    memset(b.ptr, 1, 1500);
    ok(fsdp_guard_ok(&b), "its guard moved to the new end");
    ((unsigned char *)b.ptr)[1500] = 0;
    ok(!fsdp_guard_ok(&b), "a write one past the end is seen");
    fsdp_buf_free(&b);
    is_int(fsdp_ws_take(m, 64 * KiB, &b), 0, "none fits 64 KiB: 0, nothing handed out");

    /* the whole tier, while blocks are kept: they are dropped before the
     * hook is asked */
    memset(&hook, 0, sizeof hook);
    fsdp_mem_set_room(m, room);
    fsdp_buf_t big = { 0 };
    size_t kept = dev_used(m) - used0;
    strata_status_t st = fsdp_buf_alloc_room(m, STRATA_TAG_WORKSPACE, 4 * BLK - FSDP_GUARD,
                                             &big);
    ok(kept > 0 && STRATA_OK == st && 0 == m->nws_cache && 0 == hook.calls,
       "the kept %zu bytes are dropped first, the hook not asked (%s)", kept,
       STRATA_OK == st ? "ok" : strata_last_error(m->ctx));
    fsdp_buf_free(&big);
    is_int(fsdp_ws_cache_drop(m), 0, "nothing left to drop");
    fsdp_mem_set_room(m, NULL);
    m->exec_active = 0;
}

static void test_bad(strata_model_t *m)
{
    void *p = NULL;
    fsdp_mem_t *h = NULL;
    fsdp_buf_t b = { 0 };
    is_int(fsdp_mem_alloc(m->ctx, STRATA_TIER_STORAGE, STRATA_TAG_ACTIVATION, 10, &p, &h),
           STRATA_ERR_INVALID, "storage is not a memory tier");
    ok(!p && !h, "and nothing is written");
    is_int(fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_ACTIVATION, SIZE_MAX, 0, &b),
           STRATA_ERR_OVERFLOW, "SIZE_MAX plus the guard overflows");
    is_int(fsdp_buf_alloc_room(m, STRATA_TAG_ACTIVATION, SIZE_MAX, &b), STRATA_ERR_OVERFLOW,
           "through the room door too, without retrying");
    fsdp_buf_free(NULL);
    fsdp_buf_free(&b);
    ok(fsdp_guard_ok(NULL) && fsdp_guard_ok(&b), "NULL-safe free and guard check");
}

int main(void)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    strata_config_set(cfg, "device_mem", "64K", NULL, 0);
    strata_config_set(cfg, "host_mem", "1M", NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init failed");
    strata_model_t *m = calloc(1, sizeof *m);
    if (!m) bail_out("calloc");
    m->ctx = ctx;
    plan(10 + 9 + 5);
    test_room(m);
    test_workspace(m);
    test_bad(m);
    fsdp_ws_cache_drop(m);
    free(m);
    strata_finalize(ctx);
    return done_testing();
}
