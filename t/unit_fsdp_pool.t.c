/*
 * unit_fsdp_pool.t.c - fsdp_pool_run (fsdp/pool.c), the runtime's worker
 * threads: every chunk of the range runs exactly once and covers it, for
 * any thread count, length and chunk, in pieces on the chunk grid (one
 * chunk each, or the whole range when the caller runs it alone); n = 0
 * runs nothing; two callers at once each finish their own
 * range (the second alone while the first holds the pool); the workers
 * block the program's signals; a child of
 * fork(), which has no workers, still runs its ranges through; and the
 * workers do take part when they can.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsdp/fsdp.h"
#include "tap.h"

typedef struct {
    unsigned char *hits;     /* per element: times run */
    size_t         chunk;
    size_t         n;
    int            bad;      /* a piece off the chunk grid, or longer than a chunk but not all */
    pthread_t      caller;
    int            others;   /* chunks run by a thread other than the caller */
    int            unmasked; /* of those, run with SIGUSR1 or SIGTERM not blocked */
    int            slow;     /* sleep in each chunk, so workers can join */
} rec_t;

static void record(void *arg, size_t lo, size_t hi)
{
    rec_t *r = arg;
    if (0 != lo % r->chunk || hi <= lo || (hi - lo > r->chunk && !(0 == lo && r->n == hi)))
        __atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
    for (size_t i = lo; i < hi; i++) __atomic_add_fetch(&r->hits[i], 1, __ATOMIC_RELAXED);
    if (!pthread_equal(pthread_self(), r->caller)) {
        __atomic_add_fetch(&r->others, 1, __ATOMIC_RELAXED);
        sigset_t cur;
        pthread_sigmask(SIG_BLOCK, NULL, &cur);
        if (!sigismember(&cur, SIGUSR1) || !sigismember(&cur, SIGTERM))
            __atomic_store_n(&r->unmasked, 1, __ATOMIC_RELAXED);
    }
    if (r->slow) usleep(1000);
}

/* 1 if every element of [0, n) ran once and nothing past it */
static int unmasked;   /* a worker ran a chunk with the program's signals open */

static int run_once(size_t n, size_t chunk, int threads, int slow, int *others_p)
{
    rec_t r = { calloc(n + 1, 1), chunk, n, 0, pthread_self(), 0, 0, slow };
    if (!r.hits) bail_out("out of memory");
    fsdp_pool_run(record, &r, n, chunk, threads);
    int good = !r.bad && 0 == r.hits[n];
    for (size_t i = 0; i < n; i++) good = good && 1 == r.hits[i];
    if (others_p) *others_p = r.others;
    if (r.unmasked) unmasked = 1;
    free(r.hits);
    return good;
}

typedef struct { size_t n; int good; } arg_t;

static void *second_caller(void *p)
{
    arg_t *a = p;
    a->good = run_once(a->n, 1000, 4, 0, NULL);
    return NULL;
}

int main(void)
{
    static const struct { size_t n, chunk; } cases[] = {
        { 1, 1 }, { 7, 3 }, { 4096, 4096 }, { 4097, 4096 }, { 100000, 16384 }, { 1 << 20, 16384 },
        { 999999, 4096 }, { 0, 0 }
    };
    int ncases = 0;
    while (cases[ncases].chunk) ncases++;
    plan(3 * ncases + 6);
    for (int c = 0; c < ncases; c++)
        for (int threads = 1; threads <= 4; threads += (threads < 2 ? 1 : 2))
            ok(run_once(cases[c].n, cases[c].chunk, threads, 0, NULL),
               "%zu elements in chunks of %zu, %d thread%s: each element once", cases[c].n, cases[c].chunk,
               threads, 1 == threads ? "" : "s");

    ok(run_once(0, 16, 4, 0, NULL), "n = 0: nothing runs, the call returns");

    int others = 0, once = run_once(64 * 1000, 1000, 3, 1, &others);
    ok(once && others > 0, "slow chunks on 3 threads: each once, and the workers ran %d of the 64", others);
    ok(others > 0 && !unmasked, "the workers block the program's signals (SIGUSR1, SIGTERM)");
    int alone = -1;
    once = run_once(64 * 1000, 1000, 1, 1, &alone);
    ok(once && 0 == alone, "threads = 1: the caller runs all of it");

    /* a second caller while the first holds the pool runs its own range */
    arg_t a = { 300000, 0 };
    pthread_t t;
    int first = 0;
    if (0 != pthread_create(&t, NULL, second_caller, &a)) bail_out("pthread_create failed");
    first = run_once(200 * 1000, 1000, 4, 1, NULL);
    pthread_join(t, NULL);
    ok(first && a.good, "two callers at once: both ranges run, each element once");

    /* the child of fork() inherits the pool's state but none of its threads */
    pid_t pid = fork();
    if (0 == pid) _exit(run_once(500000, 4096, 4, 0, NULL) ? 0 : 1);
    int status = 0;
    int waited = pid > 0 && pid == waitpid(pid, &status, 0);
    ok(waited && WIFEXITED(status) && 0 == WEXITSTATUS(status),
       "in a child of fork(): the range runs through on the caller");
    return done_testing();
}
