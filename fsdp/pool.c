/*
 * pool.c - the runtime's own worker threads for its host loops (the
 * optimizer, gradient norms and scaling, large copies and fills).
 *
 * The threads start once, at the first call that wants them, and sleep
 * between calls. A call works "help first": the caller publishes the
 * range, wakes the workers it wants and starts on the chunks itself at
 * once; a worker that wakes claims chunks from the same counter until none
 * are left. The caller then waits only for the chunks a worker already
 * claimed, so a call is never much slower than the caller alone, however
 * late the workers wake. Which thread ran which chunk does not matter:
 * every chunk is computed the same way (the callers' results are bitwise
 * independent of the threads).
 *
 * Why: a thread created and joined per call, as before, cost about 100 us
 * a call on 2 cores, because the new thread first had to get a core that
 * the kernels' OpenMP team was still spinning on. On one rank with 2
 * threads, the end of a step of the example GPT (gradient norm, then
 * AdamW, unit by unit: 12 such calls) took 1.36 ms with per-call threads
 * and 0.51-0.60 ms on the calling thread alone.
 *
 * One call at a time uses the pool: a second caller that finds it busy
 * (another context's thread) runs its range alone, and so does a child of
 * fork(), which has none of its parent's workers.
 */
#define _GNU_SOURCE 1   /* pthread_setname_np */
#include "config.h"
#include "fsdp.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX 63   /* workers; with the caller, 64 threads */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  wake;       /* workers wait here for a call */
    pthread_cond_t  done;       /* the caller waits here for its workers */
    pthread_t       tid[POOL_MAX];
    int             started;    /* workers running */
    pid_t           pid;        /* the process that started them */
    int             quit;
    int             busy;       /* a caller owns the pool */
    /* the call in flight (fn NULL: none, or closed to new workers) */
    void          (*fn)(void *arg, size_t lo, size_t hi);
    void           *arg;
    size_t          n, chunk;
    size_t          next;       /* the next chunk's start; claimed atomically */
    unsigned        gen;        /* counts calls, so a worker joins each one once */
    int             want;       /* workers the call asked for */
    int             joined;     /* workers that joined it */
    int             active;     /* workers still inside it */
} pool_t;

static pool_t pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                        .done = PTHREAD_COND_INITIALIZER };

/* Claim and run chunks until none are left (no lock held). */
static void run_chunks(void (*fn)(void *, size_t, size_t), void *arg, size_t n, size_t chunk)
{
    for (;;) {
        size_t lo = __atomic_fetch_add(&pool.next, chunk, __ATOMIC_RELAXED);
        if (lo >= n) return;
        fn(arg, lo, n - lo < chunk ? n : lo + chunk);
    }
}

static void *worker_main(void *unused)
{
    (void)unused;
    unsigned seen = 0;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (!pool.quit && !(pool.fn && pool.gen != seen && pool.joined < pool.want))
            pthread_cond_wait(&pool.wake, &pool.lock);
        if (pool.quit) break;
        seen = pool.gen;
        pool.joined++;
        pool.active++;
        /* copied under the lock: the caller closes the call (fn = NULL)
         * before it returns, and waits for active to fall to 0 */
        void (*fn)(void *, size_t, size_t) = pool.fn;
        void *arg = pool.arg;
        size_t n = pool.n, chunk = pool.chunk;
        pthread_mutex_unlock(&pool.lock);
        run_chunks(fn, arg, n, chunk);
        pthread_mutex_lock(&pool.lock);
        if (0 == --pool.active) pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* Start workers up to `want` (lock held); fewer where a thread cannot start. */
static void grow(int want)
{
    if (0 == pool.started) pool.pid = getpid();
    /* the workers must not take the process's signals off the program's
     * threads: they start with every signal blocked, as the watchdog does */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (pool.started < want) {
        if (0 != pthread_create(&pool.tid[pool.started], NULL, worker_main, NULL)) break;
        pthread_setname_np(pool.tid[pool.started], "strata-pool");
        pool.started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void fsdp_pool_run(void (*fn)(void *arg, size_t lo, size_t hi), void *arg, size_t n, size_t chunk,
                   int threads)
{
    if (0 == chunk) chunk = 1;
    int want = threads - 1 < POOL_MAX ? threads - 1 : POOL_MAX;
    if (want < 1 || n <= chunk) {
        if (n > 0) fn(arg, 0, n);
        return;
    }
    /* held only for moments (never while chunks run) */
    pthread_mutex_lock(&pool.lock);
    /* in use, stopping, or a fork's child (the workers are its parent's) */
    if (pool.busy || pool.quit || (pool.started > 0 && pool.pid != getpid())) {
        pthread_mutex_unlock(&pool.lock);
        fn(arg, 0, n);
        return;
    }
    grow(want);
    if (want > pool.started) want = pool.started;
    pool.busy = 1;
    pool.fn = fn;
    pool.arg = arg;
    pool.n = n;
    pool.chunk = chunk;
    __atomic_store_n(&pool.next, 0, __ATOMIC_RELAXED);
    pool.gen++;
    pool.want = want;
    pool.joined = 0;
    if (want > 0) pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    run_chunks(fn, arg, n, chunk);

    pthread_mutex_lock(&pool.lock);
    pool.fn = NULL;                        /* closed: no worker joins any more */
    while (pool.active > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pool.busy = 0;
    pthread_mutex_unlock(&pool.lock);
}

/* At exit, the idle workers are woken and joined, so that tools that look
 * for threads and memory left behind (valgrind) find none. A worker inside
 * a call (exit from another thread meanwhile) finishes its chunks first. */
__attribute__((destructor)) static void pool_stop(void)
{
    if (0 != pthread_mutex_trylock(&pool.lock)) return;   /* exit in the middle of a call */
    int n = pool.pid == getpid() ? pool.started : 0;      /* a fork's child has none */
    pool.quit = 1;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < n; i++) pthread_join(pool.tid[i], NULL);
}
