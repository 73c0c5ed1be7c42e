/* tiers_arena.t - the pure allocator and accounting of the tiers: best fit,
 * coalescing, budget vs fragmentation errors, exact per-tag accounting. */
#include "tiers/tiers.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

static void test_basics(void)
{
    arena_t a;
    char msg[512];
    size_t off1, off2, off3;
    arena_span_t *s1, *s2, *s3;
    ok(0 == arena_init(&a, 1 * MiB), "init 1 MiB");
    is_int(arena_alloc(&a, "device", 1, STRATA_TAG_PARAM, &off1, &s1, msg, sizeof msg),
           STRATA_OK, "1 byte");
    is_int(arena_alloc(&a, "device", 1000, STRATA_TAG_GRAD, &off2, &s2, msg, sizeof msg),
           STRATA_OK, "1000 bytes");
    is_int(arena_alloc(&a, "device", 0, STRATA_TAG_GRAD, &off3, &s3, msg, sizeof msg),
           STRATA_OK, "0 bytes");
    ok(0 == off1 % TIERS_ALIGN && 0 == off2 % TIERS_ALIGN && off1 != off2, "256-byte aligned, distinct");
    is_int((long long)a.acct.used, 256 + 1024, "used counts rounded sizes (0 uses nothing)");
    is_int((long long)a.acct.used_by_tag[STRATA_TAG_PARAM], 256, "param bytes");
    is_int((long long)a.acct.used_by_tag[STRATA_TAG_GRAD], 1024, "grad bytes");
    ok(0 == arena_check(&a), "invariants hold");
    arena_free(&a, s1);
    arena_free(&a, s3);
    is_int((long long)a.acct.used, 1024, "free returns the bytes");
    is_int((long long)a.acct.peak, 256 + 1024, "peak stays");
    tier_acct_reset_peaks(&a.acct);
    is_int((long long)a.acct.peak, 1024, "reset peak = current");
    is_int((long long)a.acct.peak_by_tag[STRATA_TAG_PARAM], 0, "reset per-tag peak");
    arena_free(&a, s2);
    ok(0 == arena_check(&a) && 1 == a.nspans && arena_largest_free(&a) == 1 * MiB,
       "all freed: one free span of the whole capacity");
    is_int(arena_alloc(&a, "device", SIZE_MAX, STRATA_TAG_PARAM, &off1, &s1, msg, sizeof msg),
           STRATA_ERR_OVERFLOW, "SIZE_MAX overflows");
    arena_cleanup(&a);
}

static void test_full_message(void)
{
    arena_t a;
    char msg[512];
    size_t off;
    arena_span_t *s;
    arena_init(&a, 512 * MiB);
    arena_alloc(&a, "device", 300 * MiB, STRATA_TAG_ACTIVATION, &off, &s, msg, sizeof msg);
    arena_alloc(&a, "device", 120 * MiB, STRATA_TAG_PARAM, &off, &s, msg, sizeof msg);
    arena_alloc(&a, "device", 28 * MiB, STRATA_TAG_WORKSPACE, &off, &s, msg, sizeof msg);
    strata_status_t st = arena_alloc(&a, "device", 96 * MiB, STRATA_TAG_PARAM, &off, &s,
                                     msg, sizeof msg);
    is_int(st, STRATA_ERR_TIER_FULL, "over budget: TIER_FULL");
    is_string(msg, "device tier full: need 96 MiB, budget 512 MiB, in use 448 MiB "
              "(activation 300 MiB, param 120 MiB, workspace 28 MiB)",
              "message names tier, request, budget and use per tag, largest first");
    ok(0 == arena_check(&a) && a.acct.used == 448 * MiB, "failed allocation changed nothing");
    arena_cleanup(&a);

    tier_acct_t acct = { .budget = 1 * MiB };
    is_int(tier_acct_reserve(&acct, "storage", 1 * MiB, STRATA_TAG_OPTIM, msg, sizeof msg),
           STRATA_OK, "storage: exactly the budget fits");
    is_int(tier_acct_reserve(&acct, "storage", 1, STRATA_TAG_OPTIM, msg, sizeof msg),
           STRATA_ERR_TIER_FULL, "storage: one byte more is full");
    ok(NULL != strstr(msg, "storage tier full: need 256 B, budget 1 MiB"), "storage message: %s", msg);
}

static void test_fragmentation(void)
{
    arena_t a;
    char msg[512];
    size_t off;
    arena_span_t *s[16];
    arena_init(&a, 16 * KiB);
    for (int i = 0; i < 16; i++)
        arena_alloc(&a, "host", KiB, STRATA_TAG_ACTIVATION, &off, &s[i], msg, sizeof msg);
    for (int i = 0; i < 16; i += 2) arena_free(&a, s[i]);
    is_int((long long)arena_total_free(&a), 8 * KiB, "checkerboard: 8 KiB free");
    is_int((long long)arena_largest_free(&a), KiB, "largest span 1 KiB");
    is_int(arena_alloc(&a, "host", 2 * KiB, STRATA_TAG_PARAM, &off, &s[0], msg, sizeof msg),
           STRATA_ERR_FRAGMENTED, "2 KiB: FRAGMENTED, not full");
    ok(NULL != strstr(msg, "host tier fragmented: need 2 KiB, 8 KiB free in total but the "
                      "largest contiguous span is 1 KiB"), "message says fragmentation: %s", msg);
    arena_free(&a, s[5]);
    is_int(arena_alloc(&a, "host", 3 * KiB, STRATA_TAG_PARAM, &off, &s[0], msg, sizeof msg),
           STRATA_OK, "freeing a middle span coalesces three spans: 3 KiB fits");
    is_int((long long)off, 4 * KiB, "at the coalesced span's offset");
    ok(0 == arena_check(&a), "invariants hold");
    arena_cleanup(&a);
}

/* A workspace lives for one op: it takes the top of the highest span that
 * fits, so one that comes and goes between long-lived blocks leaves no
 * hole among them (with best fit at the front it would split the span the
 * next activation needs). */
static void test_workspace_top(void)
{
    arena_t a;
    char msg[512];
    size_t off, woff;
    arena_span_t *act[4], *ws, *big;
    arena_init(&a, 8 * KiB);
    arena_alloc(&a, "device", KiB, STRATA_TAG_ACTIVATION, &off, &act[0], msg, sizeof msg);
    is_int((long long)off, 0, "an activation takes the front");
    is_int(arena_alloc(&a, "device", KiB, STRATA_TAG_WORKSPACE, &woff, &ws, msg, sizeof msg),
           STRATA_OK, "a workspace fits");
    is_int((long long)woff, 7 * KiB, "at the top of the highest span");
    arena_alloc(&a, "device", KiB, STRATA_TAG_ACTIVATION, &off, &act[1], msg, sizeof msg);
    is_int((long long)off, KiB, "the next activation follows the first");
    ok(0 == arena_check(&a), "invariants hold with a span split at its back");
    arena_free(&a, ws);
    is_int((long long)arena_largest_free(&a), 6 * KiB, "the workspace gone: one 6 KiB span");
    is_int(arena_alloc(&a, "device", 6 * KiB, STRATA_TAG_ACTIVATION, &off, &big, msg, sizeof msg),
           STRATA_OK, "which a 6 KiB activation gets whole");
    arena_free(&a, big);
    /* the highest span, not the smallest: a hole low down stays for activations */
    arena_alloc(&a, "device", KiB, STRATA_TAG_ACTIVATION, &off, &act[2], msg, sizeof msg);
    arena_free(&a, act[1]);
    is_int(arena_alloc(&a, "device", KiB, STRATA_TAG_WORKSPACE, &woff, &ws, msg, sizeof msg),
           STRATA_OK, "with a 1 KiB hole and the 5 KiB top free, a workspace fits");
    is_int((long long)woff, 7 * KiB, "in the top span, not the hole");
    ok(0 == arena_check(&a) && 3 * KiB == a.acct.used, "accounting holds");
    arena_free(&a, ws);
    arena_free(&a, act[0]);
    arena_free(&a, act[2]);
    ok(0 == arena_check(&a) && 1 == a.nspans, "all freed: one span again");
    arena_cleanup(&a);
}

/* Random allocate/free with invariants checked after every step; then a
 * request for the whole free space either fits (it is one span) or fails
 * as fragmentation. */
static void test_stress(void)
{
    enum { N = 200, STEPS = 20000 };
    arena_t a;
    char msg[512];
    size_t off;
    arena_span_t *live[N] = { 0 };
    size_t sz[N] = { 0 };
    int good = 1, frag_ok = 1, full_ok = 1, bestfit_ok = 1, nfrag = 0, nfit = 0;
    srand(12345);
    arena_init(&a, 8 * MiB);
    for (int step = 0; step < STEPS && good; step++) {
        int i = rand() % N;
        if (live[i]) {
            arena_free(&a, live[i]);
            live[i] = NULL;
        } else {
            size_t want = (size_t)(rand() % (int)(128 * KiB)) + 1;
            size_t largest = arena_largest_free(&a), total = arena_total_free(&a), r;
            tiers_round(want, &r);
            strata_tag_t tag = rand() % 3 ? STRATA_TAG_ACTIVATION : STRATA_TAG_WORKSPACE;
            strata_status_t st = arena_alloc(&a, "device", want, tag, &off, &live[i], msg,
                                             sizeof msg);
            if (STRATA_OK == st) {
                sz[i] = r;
                bestfit_ok &= r <= largest;
            } else {
                live[i] = NULL;
                if (STRATA_ERR_FRAGMENTED == st) frag_ok &= r <= total && r > largest;
                else full_ok &= STRATA_ERR_TIER_FULL == st && r > total;
            }
        }
        good &= 0 == arena_check(&a);
        if (0 == step % 1000) {
            size_t total = arena_total_free(&a), largest = arena_largest_free(&a);
            if (0 == total) continue;
            arena_span_t *sp;
            strata_status_t st = arena_alloc(&a, "device", total, STRATA_TAG_PARAM, &off, &sp,
                                             msg, sizeof msg);
            if (largest >= total) {
                frag_ok &= STRATA_OK == st;
                if (STRATA_OK == st) { nfit++; arena_free(&a, sp); }
            } else {
                frag_ok &= STRATA_ERR_FRAGMENTED == st && NULL != strstr(msg, "fragmented");
                nfrag++;
            }
        }
    }
    ok(good, "invariants (order, alignment, coalescing, accounting) after each of %d steps", STEPS);
    ok(bestfit_ok && full_ok, "allocations fit where a span fits; full only beyond the free total");
    ok(frag_ok, "whole-free-space requests: fit when one span (%d), else FRAGMENTED (%d)", nfit, nfrag);
    for (int i = 0; i < N; i++) if (live[i]) arena_free(&a, live[i]);
    ok(0 == arena_check(&a) && 1 == a.nspans && 0 == a.acct.used,
       "everything freed: coalesced back to one span");
    arena_span_t *sp;
    is_int(arena_alloc(&a, "device", 8 * MiB, STRATA_TAG_PARAM, &off, &sp, msg, sizeof msg),
           STRATA_OK, "the whole capacity fits again");
    (void)sz;
    arena_cleanup(&a);
}

/* cuda init: the device tier's region (device_mem less NCCL's bytes)
 * against what the device has free: refused naming the figures and the
 * device_mem to use, a warning when little is left, else the figures */
static void test_headroom(void)
{
    char msg[1024];
    ok(0 == tiers_device_fit(80 * 1024 * MiB, 80 * 1024 * MiB, 0, 70 * 1024 * MiB, msg,
                             sizeof msg) && strstr(msg, "10 GiB free of 80 GiB"),
       "10 GiB left: no warning (%s)", msg);
    ok(0 == tiers_device_fit(TIERS_DEVICE_HEADROOM + 8 * MiB, 80 * 1024 * MiB, 0, 8 * MiB, msg,
                             sizeof msg), "exactly the headroom left: no warning");
    ok(1 == tiers_device_fit(TIERS_DEVICE_HEADROOM + 8 * MiB - 1, 80 * 1024 * MiB, 0, 8 * MiB,
                             msg, sizeof msg), "one byte under the headroom: a warning");
    ok(1 == tiers_device_fit(1024 * MiB, 80 * 1024 * MiB, 100 * MiB, 1024 * MiB, msg, sizeof msg) &&
       strstr(msg, "100 MiB free") && strstr(msg, "lower device_mem"),
       "NCCL's bytes inside the budget: 100 MiB left, a warning with the remedy (%s)", msg);
    ok(-1 == tiers_device_fit(10 * 1024 * MiB, 80 * 1024 * MiB, 512 * MiB, 12 * 1024 * MiB, msg,
                              sizeof msg) && strstr(msg, "device_mem 12 GiB") &&
       strstr(msg, "10 GiB of 80 GiB free") && strstr(msg, "init took 70 GiB") &&
       strstr(msg, "512 MiB") && strstr(msg, "lower device_mem to at most 9.5 GiB"),
       "a device_mem above what is free is refused, naming the figures (%s)", msg);
}

int main(void)
{
    plan(49 + 5);
    test_headroom();
    test_basics();
    test_full_message();
    test_fragmentation();
    test_workspace_top();
    test_stress();
    is_double(tiers_link_time(256.0 * MiB, 256.0 * MiB, 0.01), 1.01, 1e-12, "link time = bytes/bw + latency");
    is_double(tiers_link_time(1.0, 0, 0.01), 0, 0, "unpaced link: no time");
    is_string(strata_tier_name(STRATA_TIER_PINNED_HOST), "host", "tier name");
    is_string(strata_tag_name(STRATA_TAG_ACTIVATION), "activation", "tag name");
    is_string(strata_tag_name((strata_tag_t)99), "unknown", "bad tag name");
    return done_testing();
}
