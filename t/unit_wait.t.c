/*
 * unit_wait.t.c - the one waiter (base/wait.h): the spin phase lasts its
 * rounds and its time, then the sleeps double from the first to the cap
 * and stay there.
 */
#include "config.h"
#include "base/base.h"
#include "base/wait.h"
#include "t/tap.h"

/* Pauses until the first that sleeps; the number that spun. */
static unsigned spins_before_sleep(base_waiter_t *w, unsigned limit)
{
    unsigned n = 0;
    while (n < limit && 0 == base_waiter_pause(w)) n++;
    return n;
}

static void test_spin_rounds(void)
{
    base_waiter_t w;
    base_waiter_init(&w, 0, 5, 1000, 1000);
    is_int(spins_before_sleep(&w, 100), 5, "no spin time: exactly min_spins pauses spin");
    ok(1 == base_waiter_pause(&w), "after the spin phase every pause sleeps");

    base_waiter_init(&w, 0, 0, 1000, 1000);
    ok(1 == base_waiter_pause(&w), "no spin time, no spin rounds: the first pause sleeps");

    base_waiter_init(&w, 0, 3, 1000, 1000);
    int spun = 0;
    while (base_waiter_spin(&w)) spun++;
    is_int(spun, 3, "spin-only rounds: 1 for min_spins rounds, then 0");
    ok(0 == base_waiter_spin(&w), "the spin phase, once over, stays over");
}

static void test_spin_time(void)
{
    const double spin = 0.02;
    base_waiter_t w;
    double t0 = base_now();
    base_waiter_init(&w, spin, 0, 1000, 1000);
    unsigned n = spins_before_sleep(&w, 1u << 30);
    double took = base_now() - t0;
    ok(took >= spin, "a spin time: the first sleep comes after it (%.4f s >= %.4f s)", took, spin);
    ok(n > 32, "and the pauses before it spun (%u rounds)", n);
    ok(0 == w.spin_s && 0 == base_waiter_spin(&w), "then the spin phase is over for good");
}

static void test_backoff(void)
{
    static const long want[] = { 1000, 2000, 4000, 8000, 10000, 10000, 10000 };
    base_waiter_t w;
    base_waiter_init(&w, 0, 2, 1000, 10000);
    ok(0 == base_waiter_pause(&w) && 0 == base_waiter_pause(&w) && 0 == w.sleep_ns,
       "no sleep during the spin phase");
    int good = 1;
    for (int i = 0; i < (int)(sizeof want / sizeof *want); i++) {
        int slept = base_waiter_pause(&w);
        if (!slept || w.sleep_ns != want[i]) {
            diag("sleep %d: slept %d, %ld ns, want %ld", i, slept, w.sleep_ns, want[i]);
            good = 0;
        }
    }
    ok(good, "sleeps double from the first (1 us) and stop at the cap (10 us)");

    base_waiter_init(&w, 0, 0, 5000, 1000);
    base_waiter_pause(&w);
    base_waiter_pause(&w);
    is_int(w.sleep_ns, 5000, "a cap below the first sleep: the first sleep is the cap");

    base_waiter_init(&w, 0, 0, 0, 0);
    base_waiter_pause(&w);
    is_int(w.sleep_ns, 1, "a first sleep of 0 is taken as 1 ns");
}

int main(void)
{
    plan(12);
    test_spin_rounds();
    test_spin_time();
    test_backoff();
    return done_testing();
}
