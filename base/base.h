/*
 * base.h - internal services every folder uses: the context's structure,
 * error recording, logging, checked size arithmetic. Not installed. base/
 * is the bottom layer and includes nothing else of strata: the layers the
 * context points to are only named here (comm_backend, tiers_state), and
 * fsdp/context.c, above them, assembles them in strata_init.
 */
#ifndef STRATA_BASE_H
#define STRATA_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "strata.h"

struct comm_backend;   /* comm/comm.h */
struct strata_group;
struct tiers_state;    /* tiers/tiers.h */
struct comm_recorder;  /* comm/recorder_impl.h: flight recorder and watchdog */

#define STRATA_ERRMSG_LEN 1024

struct strata_context {
    MPI_Comm         comm;           /* private duplicate of the user's comm */
    int              rank;
    int              size;
    int              thread_level;   /* MPI level granted */
    int              owns_mpi;       /* we called MPI_Init_thread */
    strata_config_t  cfg;
    const char      *backend_name;   /* "host" or "cuda" */
    const struct comm_backend *comm_ops;
    struct strata_group *world;
    struct tiers_state *tiers;       /* memory tiers and copy engines */
    struct comm_recorder *rec;       /* flight recorder; NULL when off */
    pthread_mutex_t  mpi_lock;       /* serialises MPI below THREAD_MULTIPLE */
    pthread_mutex_t  err_lock;
    char             errmsg[STRATA_ERRMSG_LEN];
};

/* Record a detailed message on ctx (may be NULL: then it is only logged)
 * and return status, so call sites read: return strata_error(ctx, ST, ...). */
strata_status_t strata_error(strata_context_t *ctx, strata_status_t status,
                             const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void strata_clear_error(strata_context_t *ctx);

/* Logging without a context (before init, or in pure code paths): rank is
 * taken from MPI when initialised. Level from STRATA_LOG_LEVEL. */
void strata_log_raw(int rank, strata_log_level_t level, const char *fmt, va_list ap);
int  strata_log_enabled(const strata_context_t *ctx, strata_log_level_t level);

#define STRATA_LOG(ctx, lvl, ...) \
    do { if (strata_log_enabled((ctx), (lvl))) strata_log((ctx), (lvl), __VA_ARGS__); } while (0)
#define strata_warn(ctx, ...)  STRATA_LOG(ctx, STRATA_LOG_WARN, __VA_ARGS__)
#define strata_info(ctx, ...)  STRATA_LOG(ctx, STRATA_LOG_INFO, __VA_ARGS__)
#define strata_debug(ctx, ...) STRATA_LOG(ctx, STRATA_LOG_DEBUG, __VA_ARGS__)

/* Checked arithmetic: 0 on success, -1 on overflow (result untouched). */
static inline int strata_mul_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return -1;
    *out = r;
    return 0;
}
static inline int strata_add_size(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return -1;
    *out = r;
    return 0;
}

/* Convert an MPI error code to a status with MPI's own message. */
strata_status_t strata_mpi_error(strata_context_t *ctx, int mpi_rc, const char *what);

/* Monotonic seconds. */
double strata_now(void);

#endif
