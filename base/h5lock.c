/*
 * h5lock.c - the process's one HDF5 lock. Debian's parallel HDF5 1.10 is
 * built without --enable-threadsafe (H5_HAVE_THREADSAFE is undefined in
 * H5pubconf.h): its error stack, ID tables and free lists are global and
 * unprotected, so two threads must never be inside HDF5 at once. Calls
 * from different threads one after the other are fine. strata has two
 * HDF5 users that can run at the same time: the storage tier's I/O thread
 * (creating the spill file and its datasets, closing it) and checkpoints
 * on the caller's thread (a block moved to storage may still be in flight
 * when the program saves). Both hold this lock around their HDF5 calls;
 * see io/io.h for who takes it where.
 */
#include "config.h"
#include "base/base.h"

#include <pthread.h>

static pthread_mutex_t h5_lock;
static pthread_once_t h5_once = PTHREAD_ONCE_INIT;

/* Recursive, so an entry point that holds it may call another one. */
static void h5_lock_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&h5_lock, &a);
    pthread_mutexattr_destroy(&a);
}

void base_h5_lock(void)
{
    pthread_once(&h5_once, h5_lock_init);
    pthread_mutex_lock(&h5_lock);
}

void base_h5_unlock(void)
{
    pthread_mutex_unlock(&h5_lock);
}

int base_h5_trylock(void)
{
    pthread_once(&h5_once, h5_lock_init);
    return 0 == pthread_mutex_trylock(&h5_lock);
}
