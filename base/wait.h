/*
 * wait.h - the one way strata waits for something another thread, engine
 * or rank will finish: poll, spin a little (a short wait ends within
 * microseconds), then sleep with a doubling back-off (a long wait costs no
 * core, which matters when ranks share cores). Used by the MPI waits, the
 * progress thread, the copy engines and the CUDA event polls. Internal.
 *
 *     base_waiter_t w;
 *     base_waiter_init(&w, spin_s, 64, 1000, 100000);
 *     while (!done()) base_waiter_pause(&w);
 */
#ifndef STRATA_BASE_WAIT_H
#define STRATA_BASE_WAIT_H

typedef struct base_waiter {
    double   t0;           /* when the wait began (base_now) */
    double   spin_s;       /* spin at least this long before sleeping */
    unsigned min_spins;    /* and at least this many rounds */
    unsigned round;        /* pauses so far */
    long     sleep_ns;     /* the next sleep; 0 before the first */
    long     min_sleep_ns; /* first sleep */
    long     max_sleep_ns; /* the back-off stops doubling here */
} base_waiter_t;

/* A pause for the CPU's sibling thread and the memory system; nothing on
 * architectures without one. */
static inline void base_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Start a wait: spin for spin_s seconds and at least min_spins rounds, then
 * sleep min_sleep_ns, doubling each round up to max_sleep_ns. */
void base_waiter_init(base_waiter_t *w, double spin_s, unsigned min_spins,
                      long min_sleep_ns, long max_sleep_ns);

/* One pause between two polls: a spin while the spin phase lasts, a sleep
 * after it. Returns 1 if it slept, 0 if it spun. */
int base_waiter_pause(base_waiter_t *w);

/* One spin-only round: 1 while the spin phase lasts, 0 once it is over
 * (the caller then blocks some other way, e.g. on a condition variable).
 * The clock is read every 32 rounds. */
int base_waiter_spin(base_waiter_t *w);

#endif
