/* group.c - shard and replica groups (hybrid sharding). */
#include "config.h"
#include "comm.h"
#include "select.h"
#include "stage.h"
#include "base/thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int comm_group_layout(int world, int shard_size, int rank, comm_layout_t *out)
{
    if (!out || world <= 0 || shard_size <= 0 || rank < 0 || rank >= world) return -1;
    if (0 != world % shard_size) return -1;
    out->shard_group    = rank / shard_size;
    out->shard_rank     = rank % shard_size;
    out->replica_group  = rank % shard_size;
    out->replica_rank   = rank / shard_size;
    out->n_shard_groups = world / shard_size;
    return 0;
}

static strata_status_t group_from_split(strata_context_t *ctx, const char *kind, int color,
                                        int key, strata_group_t **g_p)
{
    strata_group_t *g = calloc(1, sizeof *g);
    if (!g) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate a group");
    g->ctx = ctx;
    rec_op_t op = comm_rec_begin(ctx, ctx->world, REC_MPI, 0, STRATA_F32);
    comm_rec_waiting(ctx, op);
    comm_lock(ctx);
    int rc = MPI_Comm_split(ctx->comm, color, key, &g->comm);
    if (MPI_SUCCESS == rc) MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    comm_unlock(ctx);
    comm_rec_end(ctx, op, MPI_SUCCESS == rc ? STRATA_OK : STRATA_ERR_MPI);
    if (MPI_SUCCESS != rc) {
        free(g);
        return base_mpi_error(ctx, rc, "MPI_Comm_split for a shard/replica group");
    }
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    strata_status_t st = ctx->comm_ops->group_init(g);
    if (STRATA_OK != st) {
        MPI_Comm_free(&g->comm);
        free(g);
        return st;
    }
    char name[16];
    snprintf(name, sizeof name, "%s%d", kind, color);
    comm_rec_group(g, name);
    *g_p = g;
    return STRATA_OK;
}

strata_status_t strata_group_split(strata_context_t *ctx, int shard_size,
                                   strata_group_t **shard_p, strata_group_t **replica_p)
{
    comm_layout_t lay;
    if (!ctx || !shard_p || !replica_p) {
        return base_error(ctx, STRATA_ERR_INVALID, "strata_group_split: NULL argument");
    }
    if (shard_size <= 0 || comm_group_layout(ctx->size, shard_size, ctx->rank, &lay)) {
        return base_error(ctx, STRATA_ERR_INVALID,
                          "shard size %d does not divide the world size %d; "
                          "choose a divisor of %d (S = %d is plain FSDP, S = 1 plain data parallel)",
                          shard_size, ctx->size, ctx->size, ctx->size);
    }
    strata_group_t *shard = NULL, *replica = NULL;
    strata_status_t st = group_from_split(ctx, "shard", lay.shard_group, lay.shard_rank, &shard);
    if (STRATA_OK != st) return st;
    st = group_from_split(ctx, "replica", lay.replica_group, lay.replica_rank, &replica);
    if (STRATA_OK != st) {
        strata_group_destroy(shard);
        return st;
    }
    *shard_p = shard;
    *replica_p = replica;
    return STRATA_OK;
}

void strata_group_destroy(strata_group_t *g)
{
    if (!g || g->is_world) return;
    comm_rec_ungroup(g);
    g->ctx->comm_ops->group_cleanup(g);
    MPI_Comm_free(&g->comm);
    free(g);
}

strata_group_t *strata_world_group(strata_context_t *ctx) { return ctx ? ctx->world : NULL; }
int strata_group_rank(const strata_group_t *g) { return g ? g->rank : -1; }
int strata_group_size(const strata_group_t *g) { return g ? g->size : 0; }
const char *strata_comm_backend_name(const strata_context_t *ctx)
{
    return (ctx && ctx->comm_ops) ? ctx->comm_ops->name : "none";
}

static const comm_backend_t *backend_of(int pick)
{
#ifdef HAVE_NCCL
    if (COMM_PICK_NCCL == pick) return &comm_nccl_backend;
#endif
    return COMM_PICK_STAGED == pick ? &comm_staged_backend : &comm_mpi_backend;
}

/* Each rank's choice (select.c) from the option, the build and its node's
 * ranks and devices, then one allreduce so every rank runs the same: a
 * rank that cannot run the wanted backend fails them all, and a node
 * whose ranks share GPUs makes auto stage everywhere. */
static strata_status_t pick_backend(strata_context_t *ctx, int *pick_p, char *why, size_t len)
{
    comm_pick_in_t in = { (comm_pick_t)ctx->cfg.comm_backend,
                          0 == strcmp(ctx->backend_name, "cuda"), 0, ctx->node_ranks, 0 };
#ifdef HAVE_NCCL
    in.have_nccl = 1;
#endif
#ifdef HAVE_CUDA
    if (in.cuda) in.ndev = comm_cuda_devices();
#endif
    int pick = comm_pick_backend(&in, why, len);
    int mine[2] = { pick < 0, COMM_PICK_STAGED == pick }, all[2] = { 0, 0 };
    int rc = MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, ctx->comm);
    if (MPI_SUCCESS != rc) return base_mpi_error(ctx, rc, "MPI_Allreduce (collective backend)");
    if (pick < 0) return base_error(ctx, STRATA_ERR_UNSUPPORTED, "%s", why);
    if (all[0])
        return base_error(ctx, STRATA_ERR_UNSUPPORTED, "comm_backend: another rank cannot run "
                          "the collective backend asked for (see its message)");
    if (COMM_PICK_NCCL == pick && all[1]) {
        pick = COMM_PICK_STAGED;
        snprintf(why, len, "another node's ranks share its CUDA devices");
    }
    *pick_p = pick;
    return STRATA_OK;
}

/* The world group on the chosen backend. NCCL chosen by auto that fails
 * to start on any rank gives way to the staged backend on all of them. */
static strata_status_t world_init(strata_context_t *ctx, strata_group_t *w, int pick,
                                  char *why, size_t len)
{
    ctx->comm_ops = backend_of(pick);
    strata_status_t st = ctx->comm_ops->group_init(w);
    if (COMM_PICK_NCCL != pick || COMM_PICK_AUTO != ctx->cfg.comm_backend) return st;
    int ok = STRATA_OK == st, all_ok = 0;
    if (MPI_SUCCESS != MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm) || all_ok)
        return st;
    if (ok) ctx->comm_ops->group_cleanup(w);
    w->backend_data = NULL;
    strata_warn(ctx, "NCCL did not start (%s); the collectives stage through pinned host "
                "memory and MPI instead (comm_backend=staged)",
                ok ? "on another rank" : ctx->errmsg);
    base_clear_error(ctx);
    snprintf(why, len, "NCCL did not start");
    ctx->comm_ops = &comm_staged_backend;
    return ctx->comm_ops->group_init(w);
}

strata_status_t comm_init(strata_context_t *ctx)
{
    char why[256] = "";
    int pick = COMM_PICK_MPI;
    MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
    ctx->oversubscribed = base_node_oversubscribed(ctx->comm, &ctx->node_ranks, &ctx->node_cpus);
    ctx->comm_ops = &comm_mpi_backend;
    strata_status_t st = pick_backend(ctx, &pick, why, sizeof why);
    if (STRATA_OK != st) return st;
    strata_group_t *w = calloc(1, sizeof *w);
    if (!w) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate the world group");
    w->ctx = ctx;
    w->comm = ctx->comm;
    w->rank = ctx->rank;
    w->size = ctx->size;
    w->is_world = 1;
    st = world_init(ctx, w, pick, why, sizeof why);
    if (STRATA_OK != st) { free(w); return st; }
    ctx->world = w;
    if (0 == ctx->rank)
        strata_info(ctx, "collectives: %s (%s)", ctx->comm_ops->name, why);
    /* reduce16=native is NCCL's: elsewhere ignored, said once */
    if (0 == ctx->rank && ctx->cfg.reduce16 && 0 != strcmp(ctx->comm_ops->name, "nccl"))
        strata_warn(ctx, "reduce16=native is ignored: the %s backend reduces 16-bit values "
                    "wide (f32, rounded once); only the nccl backend reduces them natively",
                    ctx->comm_ops->name);
    /* the world group made the rank's device current on this thread; the
     * threads strata starts from now on select it too (base/thread.h) */
    if (0 == strcmp(ctx->backend_name, "cuda")) ctx->device = base_device_current();
    st = comm_rec_create(ctx);
    if (STRATA_OK != st) comm_cleanup(ctx);
    return st;
}

void comm_cleanup(strata_context_t *ctx)
{
    comm_rec_destroy(ctx);
    if (!ctx->world) return;
    ctx->comm_ops->group_cleanup(ctx->world);
    free(ctx->world);
    ctx->world = NULL;
}
