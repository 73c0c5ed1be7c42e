/* tiers_move.t - blocks on the host backend: bit-exact round trips across
 * every tier pair, concurrent moves, event ordering, a waiter that runs its
 * copy itself, budgets and exact accounting, bad arguments, a transfer
 * larger than the cache. */
#include "strata.h"
#include "tiers/tiers.h"
#include "tap.h"
#include "tiers_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)
#define CHUNK (64 * KiB)

static char spill_root[] = "/tmp/strata-tmove-XXXXXX";

static strata_context_t *make_ctx(const char *device_mem, const char *host_mem)
{
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create");
    /* the test reads and writes every tier from the host: the host backend
     * whatever `auto` would pick (t/tiers_cuda.t covers the cuda tiers) */
    if (STRATA_OK != strata_config_set(cfg, "backend", "host", NULL, 0)) bail_out("backend=host");
    strata_config_set(cfg, "device_mem", device_mem, NULL, 0);
    strata_config_set(cfg, "host_mem", host_mem, NULL, 0);
    strata_config_set(cfg, "chunk_size", "64K", NULL, 0);
    strata_config_set(cfg, "spill_dir", spill_root, NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init failed");
    return ctx;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (uint8_t)(x >> 24);
    }
}

static int same(const uint8_t *p, size_t n, unsigned seed)
{
    uint8_t *q = malloc(n ? n : 1);
    fill(q, n, seed);
    int r = 0 == memcmp(p, q, n);
    free(q);
    return r;
}

/* Every directed pair: D->H, H->S, S->D, D->S, S->H, H->D, each a move
 * (release) with the content checked wherever it can be read. */
static void test_round_trips(strata_context_t *ctx)
{
    static const size_t sizes[] = { 0, 1, 1000003 % (3 * CHUNK), CHUNK, 10 * CHUNK + 17 };
    static const strata_tier_t path[] = { STRATA_TIER_PINNED_HOST, STRATA_TIER_STORAGE,
                                          STRATA_TIER_DEVICE, STRATA_TIER_STORAGE,
                                          STRATA_TIER_PINNED_HOST, STRATA_TIER_DEVICE };
    static const char *const pname[] = { "D->H", "H->S", "S->D", "D->S", "S->H", "H->D" };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        strata_block_t *b = NULL;
        if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, n, STRATA_TAG_ACTIVATION, &b))
            bail_out("alloc %zu", n);
        fill(strata_block_ptr(b, STRATA_TIER_DEVICE), n, (unsigned)k);
        int good = 1;
        char where[256] = "";
        for (int s = 0; s < 6; s++) {
            strata_tier_t dst = path[s];
            int g = STRATA_OK == move_wait(b, dst, 1) && only_in(b, dst);
            if (g && STRATA_TIER_STORAGE != dst) {
                uint8_t *p = strata_block_ptr(b, dst);
                g = p && same(p, n, (unsigned)k);
            }
            if (!g && !where[0]) snprintf(where, sizeof where, " (first failure at %s: %s)",
                                          pname[s], strata_last_error(ctx));
            good &= g;
        }
        /* copies (no release) keep both */
        good &= STRATA_OK == move_wait(b, STRATA_TIER_STORAGE, 0) &&
                strata_block_resident(b, STRATA_TIER_DEVICE) &&
                strata_block_resident(b, STRATA_TIER_STORAGE);
        good &= STRATA_OK == move_wait(b, STRATA_TIER_PINNED_HOST, 0) &&
                strata_block_resident(b, STRATA_TIER_DEVICE) &&
                same(strata_block_ptr(b, STRATA_TIER_PINNED_HOST), n, (unsigned)k);
        ok(good, "size %zu: bit-exact through D->H->S->D->S->H->D and copies%s", n, where);
        strata_block_free(b);
    }
}

/* Many moves in flight at once, in both directions, offload queued right
 * behind prefetch without waiting. */
static void test_concurrent(strata_context_t *ctx)
{
    enum { N = 48 };
    strata_block_t *b[N];
    strata_event_t *ev[N];
    size_t sz[N];
    srand(7);
    for (int i = 0; i < N; i++) {
        sz[i] = (size_t)(rand() % (int)(5 * CHUNK)) + 1;
        strata_tier_t t = i % 2 ? STRATA_TIER_DEVICE : STRATA_TIER_PINNED_HOST;
        if (STRATA_OK != strata_block_alloc(ctx, t, sz[i], STRATA_TAG_ACTIVATION, &b[i]))
            bail_out("concurrent alloc: %s", strata_last_error(ctx));
        fill(strata_block_ptr(b[i], t), sz[i], 100u + (unsigned)i);
    }
    int good = 1;
    /* out and straight back, queued without waiting in between */
    for (int i = 0; i < N; i++) {
        strata_tier_t away = i % 2 ? STRATA_TIER_PINNED_HOST : STRATA_TIER_DEVICE;
        if (i % 3 == 0) away = STRATA_TIER_STORAGE;
        strata_tier_t home = i % 2 ? STRATA_TIER_DEVICE : STRATA_TIER_PINNED_HOST;
        good &= STRATA_OK == strata_block_move(b[i], away, 1, NULL, NULL);
        good &= STRATA_OK == strata_block_move(b[i], home, 1, NULL, &ev[i]);
    }
    for (int i = 0; i < N; i++) {
        strata_tier_t home = i % 2 ? STRATA_TIER_DEVICE : STRATA_TIER_PINNED_HOST;
        good &= STRATA_OK == strata_event_wait(ev[i]);
        strata_event_release(ev[i]);
        good &= only_in(b[i], home) && same(strata_block_ptr(b[i], home), sz[i], 100u + (unsigned)i);
    }
    ok(good, "%d blocks moved out and back concurrently (d2h, h2d, storage), all bit-exact", N);
    /* all at once to the device side and back to host, then drain */
    for (int i = 0; i < N; i++) good &= STRATA_OK == strata_block_move(b[i], STRATA_TIER_PINNED_HOST, 1, NULL, NULL);
    for (int i = 0; i < N; i++) good &= STRATA_OK == strata_block_move(b[i], STRATA_TIER_DEVICE, 0, NULL, NULL);
    good &= STRATA_OK == strata_tiers_drain(ctx);
    for (int i = 0; i < N; i++)
        good &= strata_block_resident(b[i], STRATA_TIER_DEVICE) &&
                strata_block_resident(b[i], STRATA_TIER_PINNED_HOST) &&
                same(strata_block_ptr(b[i], STRATA_TIER_DEVICE), sz[i], 100u + (unsigned)i);
    ok(good, "drain waits for every engine; copies land in both tiers");
    for (int i = 0; i < N; i++) strata_block_free(b[i]);
}

static void test_events(strata_context_t *ctx)
{
    strata_block_t *a, *c;
    strata_event_t *gate, *ev_a, *ev_c;
    int done = -1;
    strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 3 * CHUNK, STRATA_TAG_PARAM, &a);
    strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 2 * CHUNK + 100, STRATA_TAG_PARAM, &c);
    fill(strata_block_ptr(a, STRATA_TIER_PINNED_HOST), 3 * CHUNK, 1);
    fill(strata_block_ptr(c, STRATA_TIER_PINNED_HOST), 2 * CHUNK + 100, 2);
    is_int(strata_event_create(ctx, &gate), STRATA_OK, "user event");
    ok(STRATA_OK == strata_block_move(a, STRATA_TIER_DEVICE, 0, gate, &ev_a), "move waiting on a user event");
    ok(STRATA_OK == strata_block_move(c, STRATA_TIER_DEVICE, 0, NULL, &ev_c), "a later move (more than one chunk) on the same engine");
    usleep(50000);
    strata_event_query(ev_a, &done);
    ok(0 == done && NULL == strata_block_ptr(a, STRATA_TIER_DEVICE) &&
       !strata_block_resident(a, STRATA_TIER_DEVICE), "not readable in the destination before its event");
    strata_event_query(ev_c, &done);
    ok(0 == done, "the engine is FIFO: the later copy waits too");
    ok(NULL != strata_block_ptr(a, STRATA_TIER_PINNED_HOST), "the source stays readable meanwhile");
    strata_event_complete(gate);
    ok(STRATA_OK == strata_event_wait(ev_c), "gate opened: later copy completes");
    strata_event_query(ev_a, &done);
    ok(1 == done, "...and the gated one completed before it");
    ok(same(strata_block_ptr(a, STRATA_TIER_DEVICE), 3 * CHUNK, 1), "read after the event sees the data");
    is_int(strata_event_complete(gate), STRATA_ERR_STATE, "completing twice is refused");
    strata_event_release(ev_a);
    strata_event_release(ev_c);
    strata_event_release(gate);

    /* cross-engine order: storage leg waits for an h2d copy's event */
    strata_event_t *gate2, *e1, *e2;
    strata_event_create(ctx, &gate2);
    strata_block_move(a, STRATA_TIER_DEVICE, 0, NULL, NULL);        /* already there: no-op */
    strata_block_evict(a, STRATA_TIER_DEVICE);
    strata_block_move(a, STRATA_TIER_DEVICE, 0, gate2, &e1);       /* h2d, gated */
    strata_block_move(c, STRATA_TIER_STORAGE, 0, e1, &e2);         /* io, after e1 */
    usleep(30000);
    strata_event_query(e2, &done);
    ok(0 == done, "wait_for: a storage copy waits for an h2d copy's event");
    strata_event_complete(gate2);
    ok(STRATA_OK == strata_event_wait(e2) && 1 == (strata_event_query(e1, &done), done),
       "...and completes after it");
    strata_event_release(e1);
    strata_event_release(e2);
    strata_event_release(gate2);

    /* offload then prefetch queued back to back: the prefetch reclaims the
     * space the offload would free, and the data is intact */
    strata_event_t *e3;
    fill(strata_block_ptr(a, STRATA_TIER_DEVICE), 3 * CHUNK, 9);
    strata_block_evict(a, STRATA_TIER_PINNED_HOST);
    strata_tier_usage_t u0, u1;
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u0);
    strata_block_move(a, STRATA_TIER_STORAGE, 1, NULL, NULL);
    strata_block_move(a, STRATA_TIER_DEVICE, 1, NULL, &e3);
    ok(STRATA_OK == strata_event_wait(e3) && only_in(a, STRATA_TIER_DEVICE) &&
       same(strata_block_ptr(a, STRATA_TIER_DEVICE), 3 * CHUNK, 9),
       "offload + prefetch queued back to back: only on device, bit-exact");
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u1);
    is_int((long long)u1.used, (long long)u0.used, "device use unchanged after the round trip");
    strata_event_release(e3);
    strata_block_free(a);
    strata_block_free(c);
}

static void test_budgets(void)
{
    strata_context_t *ctx = make_ctx("64M", "16M");
    strata_block_t *p, *act, *x = NULL, *h;
    strata_tier_usage_t u;
    ok(STRATA_OK == strata_block_alloc(ctx, STRATA_TIER_DEVICE, 40 * MiB, STRATA_TAG_PARAM, &p) &&
       STRATA_OK == strata_block_alloc(ctx, STRATA_TIER_DEVICE, 20 * MiB + 1, STRATA_TAG_ACTIVATION, &act),
       "40 MiB param + 20 MiB activation in a 64 MiB device tier");
    is_int(strata_block_alloc(ctx, STRATA_TIER_DEVICE, 10 * MiB, STRATA_TAG_WORKSPACE, &x),
           STRATA_ERR_TIER_FULL, "10 MiB more: TIER_FULL");
    ok(NULL == x, "out-param untouched on failure");
    is_string(strata_last_error(ctx), "device tier full: need 10 MiB, budget 64 MiB, in use 60.0 MiB "
              "(param 40 MiB, activation 20.0 MiB)", "message");
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u);
    ok(u.budget == 64 * MiB && u.used == 60 * MiB + 256 && u.used_by_tag[STRATA_TAG_PARAM] == 40 * MiB &&
       u.used_by_tag[STRATA_TAG_ACTIVATION] == 20 * MiB + 256 && u.used_by_tag[STRATA_TAG_WORKSPACE] == 0 &&
       u.largest_free == 4 * MiB - 256, "exact accounting per tag (rounded to 256 B) and largest free span");
    /* a move into a full tier fails synchronously and leaves the block */
    is_int(strata_block_move(p, STRATA_TIER_PINNED_HOST, 1, NULL, NULL), STRATA_ERR_TIER_FULL,
           "moving 40 MiB into a 16 MiB host tier: TIER_FULL at once");
    ok(only_in(p, STRATA_TIER_DEVICE), "the block stays where it was");
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &u);
    is_int((long long)u.used, 0, "host tier unchanged");
    /* a two-leg move whose second leg does not fit leaves nothing behind */
    strata_block_alloc(ctx, STRATA_TIER_PINNED_HOST, 10 * MiB, STRATA_TAG_OPTIM, &h);
    is_int(strata_block_move(h, STRATA_TIER_DEVICE, 1, NULL, NULL), STRATA_ERR_TIER_FULL,
           "10 MiB host -> full device: TIER_FULL, host copy kept");
    strata_block_free(act);
    ok(STRATA_OK == move_wait(h, STRATA_TIER_DEVICE, 1) && only_in(h, STRATA_TIER_DEVICE),
       "after freeing, the move fits");
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u);
    ok(u.used == 50 * MiB && u.peak == 60 * MiB + 256 && u.peak_by_tag[STRATA_TAG_ACTIVATION] == 20 * MiB + 256,
       "use and peaks per tag after free and move");
    strata_tiers_reset_peaks(ctx);
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u);
    ok(u.peak == 50 * MiB && u.peak_by_tag[STRATA_TAG_ACTIVATION] == 0, "reset peaks");
    char line[512];
    strata_tiers_summary(ctx, line, sizeof line);
    diag("%s", line);
    ok(NULL != strstr(line, "device 50 MiB/64 MiB (peak 50 MiB; param 40 MiB, optim 10 MiB)") &&
       NULL != strstr(line, " | host 0 B/16 MiB") && NULL != strstr(line, " | storage 0 B/64 GiB"),
       "one-line summary");
    strata_block_free(p);
    strata_block_free(h);
    strata_tier_usage(ctx, STRATA_TIER_DEVICE, &u);
    is_int((long long)u.used, 0, "everything freed");
    strata_finalize(ctx);
}

static void test_bad_args(strata_context_t *ctx)
{
    strata_block_t *b = NULL;
    strata_event_t *ev = NULL;
    is_int(strata_block_alloc(ctx, STRATA_TIER_STORAGE, 10, STRATA_TAG_PARAM, &b), STRATA_ERR_INVALID,
           "alloc in STORAGE refused");
    is_int(strata_block_alloc(ctx, STRATA_TIER_DEVICE, 10, (strata_tag_t)42, &b), STRATA_ERR_INVALID,
           "bad tag refused");
    is_int(strata_block_alloc(NULL, STRATA_TIER_DEVICE, 10, STRATA_TAG_PARAM, &b), STRATA_ERR_INVALID,
           "NULL context");
    is_int(strata_block_alloc(ctx, STRATA_TIER_DEVICE, 10, STRATA_TAG_PARAM, NULL), STRATA_ERR_INVALID,
           "NULL out-param");
    strata_block_alloc(ctx, STRATA_TIER_DEVICE, 10, STRATA_TAG_PARAM, &b);
    is_int(strata_block_move(b, (strata_tier_t)7, 0, NULL, NULL), STRATA_ERR_INVALID, "bad tier");
    is_int(strata_block_move(NULL, STRATA_TIER_DEVICE, 0, NULL, NULL), STRATA_ERR_INVALID, "NULL block");
    is_int(strata_block_evict(b, STRATA_TIER_DEVICE), STRATA_ERR_STATE, "evicting the only copy refused");
    is_int(strata_block_evict(b, STRATA_TIER_PINNED_HOST), STRATA_ERR_STATE, "evicting a missing copy refused");
    ok(NULL == strata_block_ptr(b, STRATA_TIER_STORAGE) && NULL == strata_block_ptr(b, STRATA_TIER_PINNED_HOST),
       "no pointer for storage or a tier without a copy");
    is_int(strata_event_wait(NULL), STRATA_ERR_INVALID, "wait on NULL");
    is_int(strata_event_create(ctx, NULL), STRATA_ERR_INVALID, "event create NULL out");
    ok(STRATA_OK == strata_block_free(NULL) && (strata_event_release(NULL), 1), "NULL free/release are no-ops");
    strata_block_free(b);
    (void)ev;
}

/* wait_copies: a thread waiting on a copy its engine has not started runs
 * it itself; the engine meanwhile still runs a small copy queued behind. */
struct mover { strata_block_t *b; strata_status_t st; };

static void *mover_main(void *arg)
{
    struct mover *m = arg;
    m->st = move_wait(m->b, STRATA_TIER_PINNED_HOST, 0);
    return NULL;
}

static int head_helped(strata_context_t *ctx)
{
    tiers_state_t *ts = ctx->tiers;
    pthread_mutex_lock(&ts->lock);
    int h = ts->eng[ENG_D2H].head && ts->eng[ENG_D2H].head->helped;
    tiers_unlock(ts);
    return h;
}

static void test_wait_copies(strata_context_t *ctx)
{
    const size_t big_n = 48 * MiB;
    strata_block_t *big, *small;
    if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, big_n, STRATA_TAG_PARAM, &big) ||
        STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, CHUNK, STRATA_TAG_PARAM, &small))
        bail_out("alloc for test_wait_copies");
    fill(strata_block_ptr(big, STRATA_TIER_DEVICE), big_n, 77);
    fill(strata_block_ptr(small, STRATA_TIER_DEVICE), CHUNK, 78);
    int helped = 0, overtook = 0;
    /* the engine may win the race to the copy now and then: a few tries */
    for (int attempt = 0; attempt < 5 && !(helped && overtook); attempt++) {
        struct mover m = { big, STRATA_ERR_STATE };
        pthread_t th;
        if (0 != pthread_create(&th, NULL, mover_main, &m)) bail_out("pthread_create");
        double t0 = base_now();
        while (!(helped = head_helped(ctx)) && !strata_block_resident(big, STRATA_TIER_PINNED_HOST) &&
               base_now() - t0 < 2.0) { }
        if (helped) {
            overtook = STRATA_OK == move_wait(small, STRATA_TIER_PINNED_HOST, 0) &&
                       !strata_block_resident(big, STRATA_TIER_PINNED_HOST);
        }
        pthread_join(th, NULL);
        if (STRATA_OK != m.st) bail_out("the large copy failed");
        strata_block_evict(big, STRATA_TIER_PINNED_HOST);
        if (strata_block_resident(small, STRATA_TIER_PINNED_HOST))
            strata_block_evict(small, STRATA_TIER_PINNED_HOST);
    }
    ok(helped, "a thread waiting on an unstarted copy at the head of its engine runs it itself");
    ok(overtook, "meanwhile the engine ran a small copy queued behind it");
    move_wait(big, STRATA_TIER_PINNED_HOST, 0);
    move_wait(small, STRATA_TIER_PINNED_HOST, 0);
    ok(same(strata_block_ptr(big, STRATA_TIER_PINNED_HOST), big_n, 77) &&
       same(strata_block_ptr(small, STRATA_TIER_PINNED_HOST), CHUNK, 78), "both copies intact");
    strata_block_free(big);
    strata_block_free(small);
}

/* A transfer too large for any cache (over 64 MiB) goes with stores
 * that bypass it: bit-exact both ways, the tail past the last 64-byte
 * group included. */
static void test_large_copy(void)
{
    const size_t n = 64 * MiB + 4099;
    strata_context_t *ctx = make_ctx("80M", "80M");
    strata_block_t *b = NULL;
    if (STRATA_OK != strata_block_alloc(ctx, STRATA_TIER_DEVICE, n, STRATA_TAG_ACTIVATION, &b))
        bail_out("alloc %zu", n);
    fill(strata_block_ptr(b, STRATA_TIER_DEVICE), n, 77);
    int g = STRATA_OK == move_wait(b, STRATA_TIER_PINNED_HOST, 1) &&
            same(strata_block_ptr(b, STRATA_TIER_PINNED_HOST), n, 77);
    g &= STRATA_OK == move_wait(b, STRATA_TIER_DEVICE, 1) &&
         same(strata_block_ptr(b, STRATA_TIER_DEVICE), n, 77);
    ok(g, "64 MiB + 4099 B: bit-exact D->H->D");
    strata_block_free(b);
    strata_finalize(ctx);
}

int main(void)
{
    if (!mkdtemp(spill_root)) bail_out("mkdtemp");
    strata_context_t *ctx = make_ctx("64M", "64M");
    plan(5 + 2 + 14 + 3 + 14 + 12 + 1);
    test_round_trips(ctx);
    test_concurrent(ctx);
    test_events(ctx);
    test_wait_copies(ctx);
    test_budgets();
    test_bad_args(ctx);
    test_large_copy();
    strata_finalize(ctx);        /* the first context started MPI and finalizes it */
    rmdir(spill_root);
    return done_testing();
}
