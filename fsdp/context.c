/* context.c - strata_init / strata_finalize: MPI set-up, configuration,
 * backend choice, and the layers below assembled into one context (comm/,
 * the device layer of dev.h, tiers/). It lives in fsdp/, the top of the
 * library, because it includes those layers; base/ stays below everything. */
#include "config.h"
#include "base/base.h"
#include "comm/comm.h"
#include "tiers/tiers.h"
#include "dev.h"
#include "fsdp.h"

#include <stdlib.h>
#include <string.h>

/* A zeroed context with its locks; NULL when out of memory. */
static strata_context_t *context_new(void)
{
    strata_context_t *ctx = calloc(1, sizeof *ctx);
    if (ctx) {
        ctx->device = -1;
        pthread_mutex_init(&ctx->mpi_lock, NULL);
        pthread_mutex_init(&ctx->err_lock, NULL);
    }
    return ctx;
}

/* The caller's configuration, or the defaults with the STRATA_*
 * environment applied. */
static strata_status_t read_config(strata_context_t *ctx, const strata_config_t *cfg)
{
    if (cfg) {
        ctx->cfg = *cfg;
        return STRATA_OK;
    }
    char msg[512] = "";
    config_defaults(&ctx->cfg);
    strata_status_t st = strata_config_read_env(&ctx->cfg, msg, sizeof msg);
    if (STRATA_OK != st) strata_log(NULL, STRATA_LOG_ERROR, "strata_init: %s", msg);
    return st;
}

/* MPI started if the caller has not (then the context owns it, and
 * finalizes it even when this fails), and the context's own duplicate of
 * comm. */
static strata_status_t join_mpi(strata_context_t *ctx, MPI_Comm comm)
{
    int inited = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &ctx->thread_level);
        if (MPI_SUCCESS != rc) return STRATA_ERR_MPI;
        ctx->owns_mpi = 1;
    } else {
        MPI_Query_thread(&ctx->thread_level);
    }
    if (MPI_COMM_NULL == comm) {
        strata_log(NULL, STRATA_LOG_ERROR, "strata_init: communicator is MPI_COMM_NULL");
        return STRATA_ERR_INVALID;
    }
    rc = MPI_Comm_dup(comm, &ctx->comm);
    if (MPI_SUCCESS != rc) return base_mpi_error(NULL, rc, "MPI_Comm_dup");
    MPI_Comm_rank(ctx->comm, &ctx->rank);
    MPI_Comm_size(ctx->comm, &ctx->size);
    return STRATA_OK;
}

strata_status_t strata_init(MPI_Comm comm, const strata_config_t *cfg,
                            strata_context_t **ctx_p)
{
    strata_status_t st;
    int finalized = 0;

    if (!ctx_p) return STRATA_ERR_INVALID;
    MPI_Finalized(&finalized);
    if (finalized) {
        strata_log(NULL, STRATA_LOG_ERROR, "strata_init: MPI was already finalized");
        return STRATA_ERR_STATE;
    }

    strata_context_t *ctx = context_new();
    if (!ctx) return STRATA_ERR_NOMEM;

    st = read_config(ctx, cfg);
    if (STRATA_OK != st) goto err_free;
    st = join_mpi(ctx, comm);
    if (STRATA_OK != st) goto err_mpi;   /* err_mpi: MPI_Finalize if it started MPI */

    if (ctx->thread_level < MPI_THREAD_MULTIPLE) {
        strata_info(ctx, "MPI granted thread level %d (< MULTIPLE): MPI calls are serialised",
                    ctx->thread_level);
    }

    int ndev = fsdp_dev_devices("cuda");
    switch (ctx->cfg.backend) {
    case STRATA_BACKEND_CUDA:
        if (0 == ndev) {
            strata_log(ctx, STRATA_LOG_ERROR,
                       "backend=cuda requested but no CUDA device answers%s; "
                       "use backend=host or auto", fsdp_dev_has("cuda") ? "" :
                       " (this build has no CUDA: configure --with-cuda)");
            st = STRATA_ERR_UNSUPPORTED;
            goto err_comm;
        }
        ctx->backend_name = "cuda";
        break;
    case STRATA_BACKEND_AUTO:
        ctx->backend_name = ndev > 0 ? "cuda" : "host";
        break;
    default:
        ctx->backend_name = "host";
        break;
    }

    /* comm_init makes the rank's device current (NCCL's world group picks
     * it by node-local rank): the compute stream and the tiers follow */
    st = comm_init(ctx);
    if (STRATA_OK != st) goto err_comm;
    st = fsdp_dev_init(ctx);   /* the compute stream (cuda) */
    if (STRATA_OK != st) {
        comm_cleanup(ctx);
        goto err_comm;
    }
    st = tiers_init(ctx);
    if (STRATA_OK != st) {
        comm_cleanup(ctx);
        goto err_stream;
    }

    strata_debug(ctx, "initialised: %d ranks, backend %s, collectives %s",
                 ctx->size, ctx->backend_name, ctx->comm_ops->name);
    *ctx_p = ctx;
    return STRATA_OK;

err_stream:
    fsdp_dev_cleanup(ctx);
err_comm:
    MPI_Comm_free(&ctx->comm);
err_mpi:
    if (ctx->owns_mpi) MPI_Finalize();
err_free:
    pthread_mutex_destroy(&ctx->mpi_lock);
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx);
    return st;
}

strata_status_t fsdp_ctx_writer_create(strata_context_t *ctx, strata_context_t **w_p)
{
    strata_context_t *w = malloc(sizeof *w);
    if (!w) return base_error(ctx, STRATA_ERR_NOMEM, "checkpoint writer: out of memory");
    *w = *ctx;
    int rc = MPI_Comm_dup(ctx->comm, &w->comm);
    if (MPI_SUCCESS != rc) {
        free(w);
        return base_mpi_error(ctx, rc, "MPI_Comm_dup (the checkpoint writer's communicator)");
    }
    /* the recorder orders the world's collectives by sequence number; the
     * writer's are on another communicator at times of their own */
    w->rec = NULL;
    w->op_begin = NULL;
    w->op_end = NULL;
    w->world = NULL;
    w->live_models = 0;
    w->errmsg[0] = '\0';
    pthread_mutex_init(&w->mpi_lock, NULL);
    pthread_mutex_init(&w->err_lock, NULL);
    *w_p = w;
    return STRATA_OK;
}

void fsdp_ctx_writer_destroy(strata_context_t *w)
{
    if (!w) return;
    MPI_Comm_free(&w->comm);
    pthread_mutex_destroy(&w->mpi_lock);
    pthread_mutex_destroy(&w->err_lock);
    free(w);
}

strata_status_t strata_abandon(strata_context_t *ctx)
{
    if (!ctx) return STRATA_ERR_INVALID;
    tiers_abandon(ctx);
    return STRATA_OK;
}

strata_status_t strata_finalize(strata_context_t *ctx)
{
    if (!ctx) return STRATA_OK;
    /* its memory lives in this context's tiers: finalizing under it would
     * leave the model pointing at freed memory */
    if (ctx->live_models > 0)
        return base_error(ctx, STRATA_ERR_STATE, "strata_finalize: %d model%s of this context "
                          "%s still alive; call strata_model_destroy first (nothing was "
                          "finalized)", ctx->live_models, 1 == ctx->live_models ? "" : "s",
                          1 == ctx->live_models ? "is" : "are");
    tiers_cleanup(ctx);
    comm_cleanup(ctx);
    fsdp_dev_cleanup(ctx);
    MPI_Comm_free(&ctx->comm);
    int owns = ctx->owns_mpi;
    pthread_mutex_destroy(&ctx->mpi_lock);
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx);
    if (owns) MPI_Finalize();
    return STRATA_OK;
}

int strata_rank(const strata_context_t *ctx) { return ctx ? ctx->rank : -1; }
int strata_world_size(const strata_context_t *ctx) { return ctx ? ctx->size : 0; }
const strata_config_t *strata_get_config(const strata_context_t *ctx) { return ctx ? &ctx->cfg : NULL; }
int strata_thread_level(const strata_context_t *ctx) { return ctx ? ctx->thread_level : -1; }
const char *strata_backend_name(const strata_context_t *ctx) { return ctx ? ctx->backend_name : "none"; }
