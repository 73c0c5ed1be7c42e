/* tiers_mplan.t - the static memory plan of a step: the packing (no two
 * buffers alive at once overlap, and it spans no more than the most bytes
 * alive at once on a step's shapes), and record-then-place through the
 * arena: every buffer at its offset, a sequence that fragments the
 * best-fit allocator placed in the same capacity, a span still held
 * refused until its occupant goes, a step that leaves the recording
 * allocated as before. */
#include "tiers/tiers.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1024)

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* n buffers with random sizes (256 B .. 64 KiB) and lifetimes */
static void random_bufs(mplan_buf_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        b[i].key = i + 1;
        b[i].size = (1 + next_rand() % 256) * TIERS_ALIGN;
        b[i].start = next_rand() % 1000;
        b[i].end = b[i].start + 1 + next_rand() % 200;
    }
}

static void test_pack_random(void)
{
    enum { N = 300, SETS = 20 };
    mplan_buf_t b[N];
    int clash = 0, below = 0;
    double worst = 1;
    for (int set = 0; set < 2 * SETS; set++) {
        random_bufs(b, N);
        size_t extent = mplan_pack(b, N, set % 2);
        size_t live = mplan_live_peak(b, N);
        if (mplan_check(b, N)) clash++;
        if (extent < live) below++;
        for (size_t i = 0; i < N; i++)
            if (b[i].off % TIERS_ALIGN) clash++;
        if ((double)extent / (double)live > worst) worst = (double)extent / (double)live;
    }
    ok(0 == clash, "%d random sets of %d buffers, packed by size and in order: no two alive at "
       "once overlap, offsets aligned", SETS, N);
    ok(0 == below, "the extent is never below the most bytes alive at once");
    ok(worst < 1.5, "random lifetimes: the extent within 1.5x of the most alive at once, either "
       "way (worst %.3fx)", worst);
}

/* A step's shape: L units' forwards each allocate an output and saves
 * and a workspace that goes at once; the backwards free them in reverse,
 * each with a gradient that lives into the next unit's backward. */
static size_t step_shape(mplan_buf_t *b, int L)
{
    size_t n = 0;
    uint64_t t = 0;
    size_t save_of[64], out_of[64];
    for (int u = 0; u < L; u++) {
        size_t ws = n++;
        b[ws] = (mplan_buf_t){ .size = (4 + u % 3) * KiB, .start = t++ };
        out_of[u] = n++;
        b[out_of[u]] = (mplan_buf_t){ .size = 8 * KiB, .start = t++ };
        save_of[u] = n++;
        b[save_of[u]] = (mplan_buf_t){ .size = (16 + 4 * (u % 2)) * KiB, .start = t++ };
        b[ws].end = t++;
    }
    size_t grad = SIZE_MAX;
    for (int u = L - 1; u >= 0; u--) {
        size_t g = n++;
        b[g] = (mplan_buf_t){ .size = 8 * KiB, .start = t++ };
        b[save_of[u]].end = t++;
        b[out_of[u]].end = t++;
        if (SIZE_MAX != grad) b[grad].end = t++;
        grad = g;
    }
    b[grad].end = t++;
    for (size_t i = 0; i < n; i++) b[i].key = i + 1;
    return n;
}

static void test_pack_step(void)
{
    mplan_buf_t b[64 * 4];
    int exact = 1, clash = 0;
    for (int L = 1; L <= 48; L += 7) {
        size_t n = step_shape(b, L);
        size_t extent = mplan_pack(b, n, 0);
        if (mplan_check(b, n)) clash++;
        if (mplan_pack(b, n, 1) < mplan_live_peak(b, n) || mplan_check(b, n)) clash++;
        extent = mplan_pack(b, n, 0);
        if (extent != mplan_live_peak(b, n)) {
            exact = 0;
            diag("L=%d: extent %zu, most alive %zu", L, extent, mplan_live_peak(b, n));
        }
    }
    ok(0 == clash, "a step's shape, 1..43 units, by size and in order: no overlap");
    ok(exact, "a step's shape by size: the extent is the most bytes alive at once");
    is_int((long long)mplan_pack(b, 0, 0), 0, "nothing to pack: extent 0");
}

/* The step: a list of actions replayed on an arena under the plan. */
typedef struct { int alloc; size_t bytes; int id; uint64_t key; } act_t;

static int replay(arena_t *a, const act_t *acts, int n, arena_span_t **span, size_t *off)
{
    char msg[256];
    for (int i = 0; i < n; i++) {
        if (acts[i].alloc) {
            strata_status_t st = arena_alloc_keyed(a, "device", acts[i].bytes, STRATA_TAG_ACTIVATION,
                                                   acts[i].key, &off[acts[i].id],
                                                   &span[acts[i].id], msg, sizeof msg);
            if (STRATA_OK != st) {
                diag("action %d: %s", i, msg);
                return -1;
            }
        } else {
            arena_free(a, span[acts[i].id]);
        }
    }
    return 0;
}

static void test_record_place(void)
{
    /* four of 1 KiB fill the arena, the first and third go, one of 2 KiB
     * comes: best fit finds 2 KiB free in two pieces */
    static const act_t step[] = {
        { 1, KiB, 0, 0 }, { 1, KiB, 1, 0 }, { 1, KiB, 2, 0 }, { 1, KiB, 3, 0 },
        { 0, 0, 0, 0 }, { 0, 0, 2, 0 }, { 1, 2 * KiB, 4, 0 },
        { 0, 0, 1, 0 }, { 0, 0, 3, 0 }, { 0, 0, 4, 0 },
    };
    const int n = (int)(sizeof step / sizeof step[0]);
    arena_span_t *span[5];
    size_t off[5];
    arena_t a;
    char msg[256];

    arena_init(&a, 4 * KiB);
    ok(replay(&a, step, 4, span, off) == 0, "without a plan: four of 1 KiB fill 4 KiB");
    arena_free(&a, span[0]);
    arena_free(&a, span[2]);
    is_int(arena_alloc(&a, "device", 2 * KiB, STRATA_TAG_ACTIVATION, &off[4], &span[4], msg,
                       sizeof msg), STRATA_ERR_FRAGMENTED,
           "without a plan: 2 KiB free in two pieces fails as fragmented");
    arena_cleanup(&a);

    /* record in a roomy arena, then place in the 4 KiB one */
    mplan_t p;
    memset(&p, 0, sizeof p);
    arena_init(&a, 64 * KiB);
    a.plan = &p;
    p.mode = MPLAN_RECORD;
    ok(0 == replay(&a, step, n, span, off), "recorded in 64 KiB");
    ok(0 == mplan_finish(&p) && p.packed && 5 == p.n && p.recorded_layout && 6 * KiB == p.extent,
       "the plan: 5 buffers where the recording had them, in 6 KiB (best fit went above)");
    mplan_use_packing(&p);
    ok(!p.recorded_layout && 5 == p.n, "where that does not fit: the packing by size");
    is_int((long long)p.extent, 4 * KiB, "by size: the plan spans 4 KiB, the most alive at once");
    arena_cleanup(&a);

    arena_init(&a, 4 * KiB);
    a.plan = &p;
    p.mode = MPLAN_PLACE;
    p.clock = 0;
    ok(0 == arena_find_free(&a, p.extent, &p.base) && 0 == p.base, "a free span holds the plan");
    int placed_ok = 0 == replay(&a, step, n, span, off);
    ok(placed_ok && 5 == p.placed && 0 == p.unplanned && MPLAN_PLACE == p.mode,
       "placed in 4 KiB: the step that fragmented best fit runs, every buffer at its offset");
    int at = 1;
    for (int k = 0; k < 5; k++) at = at && off[k] == p.base + mplan_find(&p, (uint64_t)k + 1)->off;
    ok(at && 0 == arena_check(&a), "each offset is the plan's; the arena's invariants hold");

    /* again, with the first buffer's occupant freed late */
    p.clock = 0;
    p.placed = 0;
    ok(0 == replay(&a, step, 4, span, off), "a second step places its first four");
    arena_free(&a, span[0]);    /* the third stays: its span is the fifth's too */
    strata_status_t st = arena_alloc_keyed(&a, "device", 2 * KiB, STRATA_TAG_ACTIVATION, 0,
                                           &off[4], &span[4], msg, sizeof msg);
    ok(STRATA_ERR_FRAGMENTED == st && strstr(msg, "still held by an activation buffer of 1 KiB")
       && 4 == p.clock && 1 == p.waits,
       "a planned span still held: refused, naming its occupant, the buffer not counted (%s)", msg);
    arena_free(&a, span[2]);
    st = arena_alloc_keyed(&a, "device", 2 * KiB, STRATA_TAG_ACTIVATION, 0, &off[4], &span[4],
                           msg, sizeof msg);
    ok(STRATA_OK == st && 5 == p.placed, "once the occupant is freed the buffer takes its span");
    arena_free(&a, span[1]);
    arena_free(&a, span[3]);
    arena_free(&a, span[4]);
    arena_cleanup(&a);

    /* held for good: with room beside the plan's span the buffer goes
     * there and the step stays on the plan; without, the plan is left */
    arena_init(&a, 8 * KiB);
    a.plan = &p;
    p.clock = p.placed = p.waits = 0;
    p.base = 4 * KiB;   /* the plan in the top half */
    ok(0 == replay(&a, step, 4, span, off), "a third step places its first four");
    arena_free(&a, span[0]);
    p.go_aside = 1;
    st = arena_alloc_keyed(&a, "device", 2 * KiB, STRATA_TAG_ACTIVATION, 0, &off[4], &span[4],
                           msg, sizeof msg);
    ok(STRATA_OK == st && off[4] + 2 * KiB <= p.base && 1 == p.aside && 5 == p.clock &&
       MPLAN_PLACE == p.mode, "held for good: put beside the plan's span (at %zu), still placing",
       off[4]);
    arena_free(&a, span[1]);
    arena_free(&a, span[2]);
    arena_free(&a, span[3]);
    arena_free(&a, span[4]);
    arena_cleanup(&a);
    arena_init(&a, 4 * KiB);
    a.plan = &p;
    p.clock = p.placed = 0;
    p.base = 0;
    ok(0 == replay(&a, step, 4, span, off), "a fourth step, no room beside the plan");
    arena_free(&a, span[0]);
    p.go_aside = 1;
    st = arena_alloc_keyed(&a, "device", 2 * KiB, STRATA_TAG_ACTIVATION, 0, &off[4], &span[4],
                           msg, sizeof msg);
    ok(STRATA_ERR_TIER_FULL == st && MPLAN_OFF == p.mode && p.broken,
       "held for good and no room beside it: the plan is left, best fit says full");
    arena_free(&a, span[1]);
    arena_free(&a, span[2]);
    arena_free(&a, span[3]);
    p.mode = MPLAN_PLACE;
    p.broken = 0;
    p.why[0] = 0;

    /* a step that goes another way leaves the plan and allocates as before */
    p.clock = 0;
    st = arena_alloc_keyed(&a, "device", 3 * KiB, STRATA_TAG_ACTIVATION, 0, &off[0], &span[0],
                           msg, sizeof msg);
    ok(STRATA_OK == st && MPLAN_OFF == p.mode && p.broken &&
       strstr(p.why, "allocation 1 of the step (an activation of 3 KiB) is not the recorded one"),
       "another size than recorded: allocated by best fit, the plan left (%s)", p.why);
    arena_free(&a, span[0]);
    ok(0 == arena_check(&a) && 0 == a.acct.used, "all freed");
    arena_cleanup(&a);
    mplan_clear(&p);
}

static void test_async_keys(void)
{
    /* a restore (its own key) comes before or after a program-order
     * allocation depending on a transfer: placed either way */
    const uint64_t R = MPLAN_KEY_ASYNC | 7;
    static act_t rec[] = { { 1, KiB, 0, 0 }, { 1, 2 * KiB, 1, 0 }, { 1, KiB, 2, 0 },
                           { 0, 0, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 2, 0 } };
    static act_t run[] = { { 1, KiB, 0, 0 }, { 1, KiB, 2, 0 }, { 1, 2 * KiB, 1, 0 },
                           { 0, 0, 0, 0 }, { 0, 0, 1, 0 }, { 0, 0, 2, 0 } };
    rec[2].key = R;
    run[1].key = R;
    mplan_t p;
    memset(&p, 0, sizeof p);
    arena_t a;
    arena_span_t *span[3];
    size_t off[3];
    arena_init(&a, 16 * KiB);
    a.plan = &p;
    p.mode = MPLAN_RECORD;
    replay(&a, rec, 6, span, off);
    ok(0 == mplan_finish(&p) && 3 == p.n && mplan_find(&p, R) && mplan_find(&p, 2) &&
       !mplan_find(&p, 3), "recorded: keys 1, 2 and the restore's");
    p.mode = MPLAN_PLACE;
    p.clock = 0;
    arena_find_free(&a, p.extent, &p.base);
    char msg[256];
    ok(0 == replay(&a, run, 1, span, off), "the first allocation placed");
    ok(STRATA_ERR_FRAGMENTED == arena_alloc_keyed(&a, "device", KiB, STRATA_TAG_ACTIVATION, R,
                                                  &off[2], &span[2], msg, sizeof msg) &&
       strstr(msg, "after allocation 2 of the step comes at 1: it waits"),
       "the restore before the allocation it followed in the recording waits (%s)", msg);
    ok(0 == replay(&a, run + 2, 1, span, off) && 0 == replay(&a, run + 1, 1, span, off) &&
       0 == replay(&a, run + 3, 3, span, off) && 3 == p.placed && 0 == p.unplanned,
       "once the program has caught up it is placed, and so is the rest");
    arena_cleanup(&a);
    mplan_clear(&p);
}

int main(void)
{
    plan(28);
    test_pack_random();
    test_pack_step();
    test_record_place();
    test_async_keys();
    return done_testing();
}
