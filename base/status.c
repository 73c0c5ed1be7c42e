/* status.c - status strings, version query, error recording. */
#include "config.h"
#include "base.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const status_text[] = {
    [0]  = "success",
    [1]  = "invalid argument",
    [2]  = "out of host memory",
    [3]  = "tier budget exceeded",
    [4]  = "tier fragmented: enough bytes free but not contiguous",
    [5]  = "size or count overflow",
    [6]  = "call not valid in the current state",
    [7]  = "shape, size or dtype mismatch",
    [8]  = "bad configuration",
    [9]  = "MPI error",
    [10] = "NCCL error",
    [11] = "CUDA error",
    [12] = "HDF5 error",
    [13] = "I/O error",
    [14] = "checksum mismatch",
    [15] = "bad file format",
    [16] = "not found",
    [17] = "not supported in this build or on this machine",
    [18] = "cancelled",
    [19] = "timed out",
    [20] = "permission denied",
};

const char *strata_strerror(strata_status_t status)
{
    if (STRATA_INPROGRESS == status) return "in progress";
    if (status > 0 || status <= STRATA_ERR_LAST) return "unknown status";
    return status_text[-status];
}

void strata_version(int *major_p, int *minor_p, int *patch_p)
{
    if (major_p) *major_p = STRATA_VERSION_MAJOR;
    if (minor_p) *minor_p = STRATA_VERSION_MINOR;
    if (patch_p) *patch_p = STRATA_VERSION_PATCH;
}

const char *strata_version_string(void) { return STRATA_VERSION_STRING; }

strata_status_t base_error(strata_context_t *ctx, strata_status_t status,
                           const char *fmt, ...)
{
    char msg[STRATA_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ctx) {
        pthread_mutex_lock(&ctx->err_lock);
        snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", msg);
        pthread_mutex_unlock(&ctx->err_lock);
    }
    /* Errors are also logged at debug level so a run with
     * STRATA_LOG_LEVEL=debug shows where they arose. */
    STRATA_LOG(ctx, STRATA_LOG_DEBUG, "%s: %s", strata_strerror(status), msg);
    return status;
}

void base_clear_error(strata_context_t *ctx)
{
    if (!ctx) return;
    pthread_mutex_lock(&ctx->err_lock);
    ctx->errmsg[0] = '\0';
    pthread_mutex_unlock(&ctx->err_lock);
}

const char *strata_last_error(const strata_context_t *ctx)
{
    return ctx ? ctx->errmsg : "";
}

strata_status_t base_mpi_error(strata_context_t *ctx, int mpi_rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_SUCCESS != MPI_Error_string(mpi_rc, text, &len)) {
        snprintf(text, sizeof text, "MPI error code %d", mpi_rc);
    }
    return base_error(ctx, STRATA_ERR_MPI, "%s failed: %s", what, text);
}

double base_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
