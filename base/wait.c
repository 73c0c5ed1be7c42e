/*
 * wait.c - spin, then sleep with back-off (wait.h).
 */
#include "config.h"
#include "base/wait.h"
#include "base/base.h"

#include <time.h>

void base_waiter_init(base_waiter_t *w, double spin_s, unsigned min_spins,
                      long min_sleep_ns, long max_sleep_ns)
{
    w->t0 = spin_s > 0 ? base_now() : 0;
    w->spin_s = spin_s;
    w->min_spins = min_spins;
    w->round = 0;
    w->sleep_ns = 0;
    w->min_sleep_ns = min_sleep_ns > 0 ? min_sleep_ns : 1;
    w->max_sleep_ns = max_sleep_ns > w->min_sleep_ns ? max_sleep_ns : w->min_sleep_ns;
}

static int spinning(base_waiter_t *w)
{
    if (w->round <= w->min_spins) return 1;
    if (w->spin_s <= 0) return 0;
    /* the clock costs tens of nanoseconds: read it every 32 rounds */
    if (0 != (w->round & 31)) return 1;
    if (base_now() - w->t0 < w->spin_s) return 1;
    w->spin_s = 0;   /* the spin phase is over for good */
    return 0;
}

int base_waiter_spin(base_waiter_t *w)
{
    w->round++;
    if (!spinning(w)) return 0;
    base_cpu_relax();
    return 1;
}

int base_waiter_pause(base_waiter_t *w)
{
    if (base_waiter_spin(w)) return 0;
    w->sleep_ns = w->sleep_ns ? w->sleep_ns * 2 : w->min_sleep_ns;
    if (w->sleep_ns > w->max_sleep_ns) w->sleep_ns = w->max_sleep_ns;
    struct timespec ts = { w->sleep_ns / 1000000000L, w->sleep_ns % 1000000000L };
    nanosleep(&ts, NULL);
    return 1;
}
