/*
 * model.c - model and unit registration, commit (shard layout, memory,
 * deterministic initialisation), reading parameters back, statistics and
 * the enumeration the checkpoint code uses.
 */
#include "config.h"
#include "tiers/tiers.h"
#include "fsdp.h"
#include "dev.h"
#include "base/grow.h"
#include "comm/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every version's size is a field boundary of the later ones (strata.h) */
_Static_assert(0 == sizeof(strata_model_opts_t) % 8, "strata_model_opts_t: pad to 8 bytes");
_Static_assert(0 == sizeof(strata_model_stats_t) % 8, "strata_model_stats_t: pad to 8 bytes");

static const base_grow_t opts_grow = {
    "strata_model_opts_t", "strata_model_opts_default(&opts)", sizeof(strata_model_opts_t)
};
static const base_grow_t stats_grow = {
    "strata_model_stats_t", "strata_model_stats_t stats = STRATA_MODEL_STATS_INIT",
    sizeof(strata_model_stats_t)
};

static void opts_defaults(strata_model_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->optimizer = STRATA_OPTIM_ADAMW;
    o->lr = 1e-3f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->momentum = 0.9f;
    o->compute_dtype = STRATA_F32;
    o->reduce_dtype = STRATA_F32;
    o->reshard_after_forward = 1;
    o->progress_thread = 1;
    o->seed = 1234;
}

strata_status_t strata_model_opts_init(strata_model_opts_t *opts, size_t size)
{
    strata_model_opts_t d;
    opts_defaults(&d);
    return base_grow_init(&opts_grow, opts, size, &d);
}

static strata_status_t check_opts(strata_context_t *ctx, const strata_model_opts_t *o)
{
    if (STRATA_OPTIM_ADAMW != o->optimizer && STRATA_OPTIM_SGD != o->optimizer)
        return base_error(ctx, STRATA_ERR_INVALID, "unknown optimizer %d (use "
                          "STRATA_OPTIM_ADAMW or STRATA_OPTIM_SGD)", (int)o->optimizer);
    if (STRATA_F32 != o->compute_dtype && STRATA_BF16 != o->compute_dtype)
        return base_error(ctx, STRATA_ERR_INVALID, "compute dtype must be f32 or bf16, not %s",
                          strata_dtype_name(o->compute_dtype));
    if (0 == strata_dtype_size(o->reduce_dtype))
        return base_error(ctx, STRATA_ERR_INVALID, "invalid reduce dtype %d",
                          (int)o->reduce_dtype);
    if (!(o->lr >= 0) || !(o->eps >= 0) || !(o->clip_norm >= 0) || !(o->beta1 >= 0) ||
        !(o->beta1 < 1) || !(o->beta2 >= 0) || !(o->beta2 < 1))
        return base_error(ctx, STRATA_ERR_INVALID, "optimizer settings out of range (lr %g, "
                          "betas %g %g, eps %g, clip %g)", o->lr, o->beta1, o->beta2, o->eps,
                          o->clip_norm);
    return STRATA_OK;
}

strata_status_t strata_model_create(strata_context_t *ctx, const strata_model_opts_t *opts,
                                    strata_model_t **model_p)
{
    strata_status_t st;
    if (!ctx || !model_p)
        return base_error(ctx, STRATA_ERR_INVALID, "strata_model_create: NULL argument");
    strata_model_t *m = calloc(1, sizeof *m);
    if (!m) return base_error(ctx, STRATA_ERR_NOMEM, "cannot allocate a model");
    m->ctx = ctx;
    m->stats.size = sizeof m->stats;
    m->stats.grad_nonfinite_unit = -1;
    opts_defaults(&m->opts);
    st = opts ? base_grow_in(ctx, &opts_grow, &m->opts, opts) : STRATA_OK;
    if (STRATA_OK == st) st = check_opts(ctx, &m->opts);
    if (STRATA_OK != st) goto err;
    m->W = ctx->size;
    m->S = ctx->cfg.shard_size > 0 ? ctx->cfg.shard_size : ctx->size;
    m->prefetch = ctx->cfg.prefetch < 0 ? 0 : ctx->cfg.prefetch;
    /* strata_group_split explains a shard size that does not divide W */
    st = strata_group_split(ctx, m->S, &m->shard, &m->replica);
    /* their NCCL communicators' device bytes count in the device budget */
    if (STRATA_OK == st) st = tiers_count_nccl(ctx);
    if (STRATA_OK != st) goto err;
    m->shard_rank = strata_group_rank(m->shard);
    m->replica_index = ctx->rank / m->S;
    m->n_replicas = m->W / m->S;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    ctx->live_models++;
    *model_p = m;
    return STRATA_OK;
err:
    free(m);
    return st;
}

static void unit_free(strata_unit_t *u)
{
    fsdp_free_saves(u);
    free(u->saves);
    free(u->save_work);
    fsdp_state_free(u);
    fsdp_buf_free(&u->gathered);
    fsdp_buf_free(&u->gsend);
    fsdp_buf_free(&u->grad);
    fsdp_buf_free(&u->rs_send);
    fsdp_buf_free(&u->rs_recv);
    free(u->params);
    free(u);
}

void strata_model_destroy(strata_model_t *m)
{
    if (!m) return;
    if (MODEL_BUILDING != m->state) fsdp_drain(m);
    fsdp_optq_destroy(m);
    fsdp_bgsave_destroy(m);
    fsdp_exec_abort(m);
    fsdp_mplan_forget(m);   /* a model made later at this address records its own */
    fsdp_progress_stop(m);
    if (m->acts)
        for (int i = 0; i <= m->nunits; i++) {
            fsdp_buf_free(&m->acts[i]);
            fsdp_buf_free(&m->gacts[i]);
        }
    free(m->acts);
    free(m->gacts);
    for (int i = 0; i < m->nunits; i++) unit_free(m->units[i]);
    fsdp_exec_destroy(m);
    fsdp_fetch_free(m);
    fsdp_straggler_free(&m->strag);
    /* no reduction is in flight: the groups give their staging back */
    comm_stage_give(m->shard, NULL, 0);
    comm_stage_give(m->replica, NULL, 0);
    for (int g = 0; g < 2; g++) fsdp_buf_free(&m->comm_stage[g]);
    fsdp_buf_free(&m->norm_scratch);
    (void)fsdp_dev_wait(m->ctx);   /* cuda: the releases pending on the stream happen */
    free(m->units);
    strata_group_destroy(m->shard);
    strata_group_destroy(m->replica);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
    m->ctx->live_models--;
    free(m);
}

strata_status_t strata_model_add_unit(strata_model_t *m, const char *name, strata_unit_fn forward,
                                      strata_unit_fn backward, void *user_data,
                                      strata_unit_t **unit_p)
{
    if (!m) return STRATA_ERR_INVALID;
    strata_context_t *ctx = m->ctx;
    if (MODEL_BUILDING != m->state)
        return base_error(ctx, STRATA_ERR_STATE, "cannot add unit '%s': the model is "
                          "committed; register every unit before strata_model_commit",
                          name ? name : "(null)");
    if (!name || !name[0] || strlen(name) >= FSDP_NAME_LEN || !forward || !unit_p)
        return base_error(ctx, STRATA_ERR_INVALID, "strata_model_add_unit: need a name of 1.."
                          "%d bytes, a forward callback and unit_p", FSDP_NAME_LEN - 1);
    for (int i = 0; i < m->nunits; i++)
        if (!strcmp(m->units[i]->name, name))
            return base_error(ctx, STRATA_ERR_INVALID, "unit name '%s' is used twice", name);
    if (m->nunits == m->cap_units) {
        int cap = m->cap_units ? 2 * m->cap_units : 8;
        strata_unit_t **v = realloc(m->units, (size_t)cap * sizeof *v);
        if (!v) return base_error(ctx, STRATA_ERR_NOMEM, "unit list");
        m->units = v;
        m->cap_units = cap;
    }
    strata_unit_t *u = calloc(1, sizeof *u);
    if (!u) return base_error(ctx, STRATA_ERR_NOMEM, "unit");
    u->model = m;
    u->index = m->nunits;
    snprintf(u->name, sizeof u->name, "%s", name);
    u->forward = forward;
    u->backward = backward;
    u->user_data = user_data;
    m->units[m->nunits++] = u;
    *unit_p = u;
    return STRATA_OK;
}

strata_status_t strata_unit_set_io(strata_unit_t *u, int output, strata_dtype_t dtype,
                                   int ndims, const size_t *dims)
{
    if (!u) return STRATA_ERR_INVALID;
    strata_model_t *m = u->model;
    if (ndims < 0 || ndims > 4 || (ndims > 0 && !dims) || (output != 0 && output != 1) ||
        0 == strata_dtype_size(dtype))
        return base_error(m->ctx, STRATA_ERR_INVALID, "strata_unit_set_io: unit '%s': output "
                          "0 or 1, ndims 0..4 with dims, a known dtype", u->name);
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "strata_unit_set_io: not inside a step");
    u->io_ndims[output] = ndims;
    u->io_dtype[output] = dtype;
    for (int i = 0; i < ndims; i++) u->io_dims[output][i] = dims[i];
    return STRATA_OK;
}

strata_status_t strata_unit_add_param(strata_unit_t *u, const char *name, int ndims,
                                      const size_t *dims, strata_dtype_t dtype,
                                      strata_init_t init, int *index_p)
{
    if (!u) return STRATA_ERR_INVALID;
    strata_context_t *ctx = u->model->ctx;
    if (MODEL_BUILDING != u->model->state)
        return base_error(ctx, STRATA_ERR_STATE, "cannot add param '%s' to unit '%s': the "
                          "model is committed", name ? name : "(null)", u->name);
    if (!name || !name[0] || strlen(name) >= FSDP_NAME_LEN || ndims < 1 ||
        ndims > FSDP_MAX_DIMS || !dims)
        return base_error(ctx, STRATA_ERR_INVALID, "unit '%s': a param needs a name of 1..%d "
                          "bytes and 1..%d dims", u->name, FSDP_NAME_LEN - 1, FSDP_MAX_DIMS);
    if (STRATA_F32 != dtype)
        return base_error(ctx, STRATA_ERR_UNSUPPORTED, "unit '%s' param '%s': master "
                          "parameters are f32 (set opts.compute_dtype for a bf16 compute "
                          "copy)", u->name, name);
    if ((int)init.kind < STRATA_INIT_ZEROS || init.kind > STRATA_INIT_USER ||
        (STRATA_INIT_USER == init.kind && !init.fn) ||
        (STRATA_INIT_NORMAL == init.kind && !(init.std >= 0)))
        return base_error(ctx, STRATA_ERR_INVALID, "unit '%s' param '%s': bad initialiser",
                          u->name, name);
    for (int i = 0; i < u->nparams; i++)
        if (!strcmp(u->params[i].name, name))
            return base_error(ctx, STRATA_ERR_INVALID, "unit '%s' has two params named '%s'",
                              u->name, name);
    size_t numel = 1;
    for (int d = 0; d < ndims; d++)
        if (0 == dims[d] || strata_mul_size(numel, dims[d], &numel))
            return base_error(ctx, STRATA_ERR_INVALID, "unit '%s' param '%s': dims must be "
                              "positive and their product fit size_t", u->name, name);
    if (u->nparams == u->cap_params) {
        int cap = u->cap_params ? 2 * u->cap_params : 4;
        fsdp_param_t *p = realloc(u->params, (size_t)cap * sizeof *p);
        if (!p) return base_error(ctx, STRATA_ERR_NOMEM, "param list");
        u->params = p;
        u->cap_params = cap;
    }
    fsdp_param_t *p = &u->params[u->nparams];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndims = ndims;
    memcpy(p->dims, dims, (size_t)ndims * sizeof *dims);
    p->numel = numel;
    p->init = init;
    if (index_p) *index_p = u->nparams;
    u->nparams++;
    return STRATA_OK;
}

/* Fill the part of param p that lies in the unit's shard master[] (host
 * memory: the master itself on the host backend, its staging on cuda). */
static strata_status_t init_param(strata_model_t *m, strata_unit_t *u, int pi, float *master)
{
    fsdp_param_t *p = &u->params[pi];
    size_t lo, hi;
    base_shard_intersect(p->offset, p->numel, u->shard_off, u->shard_len, &lo, &hi);
    if (STRATA_INIT_USER == p->init.kind) {
        /* the user fills the full tensor on every rank; keep our slice */
        float *full = malloc(p->numel * sizeof *full);
        if (!full) return base_error(m->ctx, STRATA_ERR_NOMEM, "init of '%s.%s': %zu floats",
                                     u->name, p->name, p->numel);
        int rc = p->init.fn(p->init.user, u->name, p->name, full, p->numel, m->opts.seed);
        if (0 == rc)
            for (size_t i = lo; i < hi; i++) master[i - u->shard_off] = full[i - p->offset];
        free(full);
        if (rc) return base_error(m->ctx, STRATA_ERR_INVALID, "init callback of '%s.%s' "
                                  "returned %d", u->name, p->name, rc);
        return STRATA_OK;
    }
    /* one stream per (unit, param) position, so adding a unit at the end
     * does not change the values of the others */
    uint64_t stream = ((uint64_t)u->index << 20) ^ (uint64_t)pi;
    for (size_t i = lo; i < hi; i++) {
        float v = 0.0f;
        if (STRATA_INIT_ONES == p->init.kind) v = 1.0f;
        else if (STRATA_INIT_NORMAL == p->init.kind)
            v = p->init.std * fsdp_normal(m->opts.seed, stream, i - p->offset);
        master[i - u->shard_off] = v;
    }
    return STRATA_OK;
}

/* The unit's master shard from its initialisers (cuda: staged on the
 * host, then copied to the device). */
static strata_status_t init_shard(strata_model_t *m, strata_unit_t *u)
{
    strata_status_t st = STRATA_OK;
    int dev = fsdp_dev_on(m->ctx);
    float *master = dev ? calloc(u->shard_len + 1, sizeof *master) : u->master.ptr;
    if (!master) return base_error(m->ctx, STRATA_ERR_NOMEM, "init of unit '%s': %zu floats",
                                   u->name, u->shard_len);
    for (int i = 0; STRATA_OK == st && i < u->nparams; i++) st = init_param(m, u, i, master);
    if (dev) {
        if (STRATA_OK == st)
            st = fsdp_dev_copy(m->ctx, u->master.ptr, master, u->shard_len * sizeof *master);
        if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
        free(master);
    }
    return st;
}

size_t fsdp_norm_scratch_bytes(const strata_model_t *m)
{
    size_t maxc = 1;
    for (int u = 0; u < m->nunits; u++) {
        size_t c = (m->units[u]->shard_len + 4095) / 4096;
        if (c > maxc) maxc = c;
    }
    return 16 + maxc * sizeof(double);
}

/* cuda: the device memory the model's collectives and norm would
 * otherwise take from the device's stream-ordered pool, outside the tiers:
 * the f32 staging of its 16-bit gradient reductions (the largest unit's,
 * per group: its reductions use it in turn on the group's stream) and the
 * gradient norm's scratch (with clipping). Device-tier blocks made at
 * commit, so device_mem, the tier's peaks and the step's admission (the
 * bytes in use when step 1 is recorded) count them. */
static strata_status_t dev_scratch(strata_model_t *m)
{
    strata_context_t *ctx = m->ctx;
    if (!fsdp_dev_on(ctx)) return STRATA_OK;
    size_t need[2] = { 0, 0 };
    strata_group_t *grp[2] = { m->S > 1 ? m->shard : NULL,
                               m->n_replicas > 1 ? m->replica : NULL };
    for (int ui = 0; ui < m->nunits; ui++) {
        size_t len = m->units[ui]->shard_len;
        size_t b = comm_stage_need(grp[0], COLL_REDUCE_SCATTER, len, m->opts.reduce_dtype);
        if (b > need[0]) need[0] = b;
        b = comm_stage_need(grp[1], COLL_ALLREDUCE, len, m->opts.reduce_dtype);
        if (b > need[1]) need[1] = b;
    }
    for (int g = 0; g < 2; g++) {
        if (0 == need[g]) continue;
        strata_status_t st = fsdp_buf_alloc(ctx, STRATA_TIER_DEVICE, STRATA_TAG_WORKSPACE,
                                            need[g], 0, &m->comm_stage[g]);
        if (STRATA_OK != st) return st;
        comm_stage_give(grp[g], m->comm_stage[g].ptr, need[g]);
    }
    if (0.0f == m->opts.clip_norm) return STRATA_OK;
    return fsdp_buf_alloc(ctx, STRATA_TIER_DEVICE, STRATA_TAG_WORKSPACE,
                          fsdp_norm_scratch_bytes(m), 0, &m->norm_scratch);
}

strata_status_t strata_model_commit(strata_model_t *m)
{
    strata_status_t st;
    if (!m) return STRATA_ERR_INVALID;
    strata_context_t *ctx = m->ctx;
    if (MODEL_BUILDING != m->state)
        return base_error(ctx, STRATA_ERR_STATE, "strata_model_commit called twice");
    if (0 == m->nunits)
        return base_error(ctx, STRATA_ERR_STATE, "strata_model_commit: the model has no units");
    fsdp_place_t place[FSDP_NCLASS];
    st = fsdp_state_place(m, place);
    if (STRATA_OK != st) return st;
    int nsb = fsdp_state_count(m);

    m->acts = calloc((size_t)m->nunits + 1, sizeof *m->acts);
    m->gacts = calloc((size_t)m->nunits + 1, sizeof *m->gacts);
    if (!m->acts || !m->gacts) return base_error(ctx, STRATA_ERR_NOMEM, "activation table");
    for (int ui = 0; ui < m->nunits; ui++) {
        strata_unit_t *u = m->units[ui];
        size_t n = 0;
        for (int i = 0; i < u->nparams; i++) {
            u->params[i].offset = n;
            if (strata_add_size(n, u->params[i].numel, &n))
                return base_error(ctx, STRATA_ERR_OVERFLOW, "unit '%s' is too large", u->name);
        }
        u->n = n;
        if (base_shard_padded(n, m->S, &u->npad) ||
            base_shard_range(u->npad, m->S, m->shard_rank, &u->shard_off, &u->shard_len) ||
            u->npad > SIZE_MAX / 4)
            return base_error(ctx, STRATA_ERR_OVERFLOW, "unit '%s': %zu elements overflow",
                              u->name, n);
    }
    fsdp_state_homes(m, place);
    for (int ui = 0; ui < m->nunits; ui++) {
        strata_unit_t *u = m->units[ui];
        for (int k = 0; k < nsb; k++) {
            strata_tier_t home = u->home[k];
            st = fsdp_state_alloc(m, u, k, home);
            if (STRATA_ERR_TIER_FULL == st && STRATA_TIER_DEVICE == home) {
                char was[STRATA_ERRMSG_LEN];
                snprintf(was, sizeof was, "%s", strata_last_error(ctx));
                return base_error(ctx, st, "%s; the training state does not fit the device "
                                  "(unit '%s' of %d): put part of it on the host or storage "
                                  "tier with the option state_place (e.g. optim=host, or "
                                  "*=storage)", was, u->name, m->nunits);
            }
            if (STRATA_OK != st) return st;
        }
        st = init_shard(m, u);
        /* a unit's state on storage goes down before the next unit's is
         * made: the host never holds more than one unit's */
        for (int k = 0; STRATA_OK == st && k < nsb; k++) st = fsdp_state_settle(m, u, k);
        if (STRATA_OK == st) st = fsdp_state_drain(m);
        if (STRATA_OK != st) return st;
    }
    st = dev_scratch(m);
    if (STRATA_OK != st) return st;
    st = fsdp_check_registration(m);
    if (STRATA_OK != st) return st;
    st = fsdp_exec_create(m);
    if (STRATA_OK != st) return st;
    st = fsdp_progress_start(m);
    if (STRATA_OK == st) st = fsdp_optq_start(m);
    if (STRATA_OK != st) return st;
    m->state = MODEL_READY;
    return STRATA_OK;
}

/* ---- reading back ----------------------------------------------------------------- */

int strata_model_unit_count(const strata_model_t *m) { return m ? m->nunits : 0; }
strata_unit_t *strata_model_unit(strata_model_t *m, int i)
{
    return m && i >= 0 && i < m->nunits ? m->units[i] : NULL;
}
const char *strata_unit_name(const strata_unit_t *u) { return u ? u->name : NULL; }
int strata_unit_param_count(const strata_unit_t *u) { return u ? u->nparams : 0; }

strata_status_t strata_unit_param_info(const strata_unit_t *u, int i, const char **name_p,
                                       size_t *numel_p, int *ndims_p, size_t dims[4])
{
    if (!u || i < 0 || i >= u->nparams) return STRATA_ERR_INVALID;
    const fsdp_param_t *p = &u->params[i];
    if (name_p) *name_p = p->name;
    if (numel_p) *numel_p = p->numel;
    if (ndims_p) *ndims_p = p->ndims;
    if (dims) for (int d = 0; d < FSDP_MAX_DIMS; d++) dims[d] = d < p->ndims ? p->dims[d] : 1;
    return STRATA_OK;
}

/* cuda: gather the shards into a device buffer (NCCL, after the
 * optimizer's work on the compute stream), then copy the param down. */
static strata_status_t read_flat_dev(strata_unit_t *u, const float *shard, int i, float *dst,
                                     size_t numel)
{
    strata_model_t *m = u->model;
    fsdp_buf_t full = { 0 };
    strata_status_t st = fsdp_buf_alloc(m->ctx, STRATA_TIER_DEVICE, STRATA_TAG_WORKSPACE,
                                        u->npad * sizeof(float), 0, &full);
    if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
    if (STRATA_OK == st) {
        pthread_mutex_lock(&m->lock);
        st = strata_allgather(m->shard, shard, full.ptr, u->shard_len, STRATA_F32);
        pthread_mutex_unlock(&m->lock);
    }
    if (STRATA_OK == st)
        st = fsdp_dev_copy(m->ctx, dst, (float *)full.ptr + u->params[i].offset,
                           numel * sizeof *dst);
    if (STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
    fsdp_buf_free(&full);
    return st;
}

/* Parameter i's full values from the shards `shard` (the master or the
 * reduced gradient) of every rank. Collective. */
static strata_status_t read_flat_at(strata_unit_t *u, const float *shard, int i, float *dst,
                                    size_t numel)
{
    strata_model_t *m = u->model;
    if (MODEL_READY != m->state)
        return base_error(m->ctx, STRATA_ERR_STATE, "read_param: the model is not committed");
    if (i < 0 || i >= u->nparams || !dst || numel != u->params[i].numel)
        return base_error(m->ctx, STRATA_ERR_INVALID, "read_param: unit '%s' param %d: need "
                          "a destination of exactly its element count", u->name, i);
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "read_param inside a step; call it "
                          "between strata_model_step_end and the next step_begin");
    if (fsdp_dev_on(m->ctx)) return read_flat_dev(u, shard, i, dst, numel);
    float *full = malloc(u->npad * sizeof *full + 1);
    if (!full) return base_error(m->ctx, STRATA_ERR_NOMEM, "read_param: %zu floats", u->npad);
    pthread_mutex_lock(&m->lock);
    strata_status_t st = strata_allgather(m->shard, shard, full, u->shard_len, STRATA_F32);
    pthread_mutex_unlock(&m->lock);
    if (STRATA_OK == st) memcpy(dst, full + u->params[i].offset, numel * sizeof *dst);
    free(full);
    return st;
}

/* read_flat_at on state buffer k, up from storage for the read if it lives
 * there (every rank's result agreed: the read is collective) */
static strata_status_t read_flat(strata_unit_t *u, int k, int i, float *dst, size_t numel)
{
    strata_model_t *m = u->model;
    strata_status_t st = PHASE_IDLE == m->phase ? fsdp_state_ready(m, u, k) : STRATA_OK;
    if (MODEL_READY == m->state && fsdp_state_streamed(u, k)) st = fsdp_agree(m, st);
    if (STRATA_OK != st) return st;
    st = read_flat_at(u, fsdp_sb(u, k)->ptr, i, dst, numel);
    strata_status_t pst = PHASE_IDLE == m->phase ? fsdp_state_put(m, u, k, 0) : STRATA_OK;
    return STRATA_OK != st ? st : pst;
}

strata_status_t strata_unit_read_param(strata_unit_t *u, int i, float *dst, size_t numel)
{
    return u ? read_flat(u, FSDP_SB_MASTER, i, dst, numel) : STRATA_ERR_INVALID;
}

strata_status_t fsdp_unit_read_grad(strata_unit_t *u, int i, float *dst, size_t numel)
{
    return read_flat(u, FSDP_SB_GRAD, i, dst, numel);
}

strata_status_t strata_model_stats(const strata_model_t *m, strata_model_stats_t *s)
{
    if (!m || !s)
        return base_error(m ? m->ctx : NULL, STRATA_ERR_INVALID, "strata_model_stats: NULL "
                          "argument");
    fsdp_mem_stats_t ms;
    strata_model_stats_t all = m->stats;
    fsdp_mem_stats(m->ctx, &ms);
    all.peak_device_bytes = ms.peak[STRATA_TIER_DEVICE];
    all.peak_host_bytes = ms.peak[STRATA_TIER_PINNED_HOST];
    all.peak_storage_bytes = ms.peak[STRATA_TIER_STORAGE];
    return base_grow_out(m->ctx, &stats_grow, s, &all);
}

strata_status_t strata_model_set_lr(strata_model_t *m, float lr)
{
    if (!m) return STRATA_ERR_INVALID;
    if (!(lr >= 0)) return base_error(m->ctx, STRATA_ERR_INVALID, "learning rate %g < 0", lr);
    m->opts.lr = lr;
    return STRATA_OK;
}

/* ---- enumeration for checkpoints ----------------------------------------------------- */

void fsdp_model_geom(const strata_model_t *m, fsdp_geom_t *g)
{
    g->S = m->S;
    g->W = m->W;
    g->shard_rank = m->shard_rank;
    g->replica_index = m->replica_index;
    g->n_replicas = m->n_replicas;
    g->shard = m->shard;
    g->replica = m->replica;
}

void fsdp_model_scalars(const strata_model_t *m, fsdp_scalars_t *s)
{
    s->step = m->step_count;
    s->lr = m->opts.lr;
    s->beta1 = m->opts.beta1;
    s->beta2 = m->opts.beta2;
    s->eps = m->opts.eps;
    s->weight_decay = m->opts.weight_decay;
    s->momentum = m->opts.momentum;
    s->optimizer = (int)m->opts.optimizer;
}

strata_status_t fsdp_model_set_scalars(strata_model_t *m, const fsdp_scalars_t *s)
{
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "optimizer state can change only "
                          "between steps");
    if (s->optimizer != (int)m->opts.optimizer)
        return base_error(m->ctx, STRATA_ERR_MISMATCH, "the checkpoint's optimizer (%s) is "
                          "not the model's (%s)", s->optimizer ? "sgd" : "adamw",
                          m->opts.optimizer ? "sgd" : "adamw");
    strata_model_opts_t o = m->opts;
    o.momentum = s->momentum;
    if (fsdp_optim_nstate(&o) != fsdp_optim_nstate(&m->opts))
        return base_error(m->ctx, STRATA_ERR_MISMATCH, "momentum %g would change the number "
                          "of optimizer state buffers; build the model with the same "
                          "momentum setting", s->momentum);
    m->step_count = s->step;
    m->opts.lr = s->lr;
    m->opts.beta1 = s->beta1;
    m->opts.beta2 = s->beta2;
    m->opts.eps = s->eps;
    m->opts.weight_decay = s->weight_decay;
    m->opts.momentum = s->momentum;
    return STRATA_OK;
}

float *fsdp_unit_master(strata_unit_t *u) { return u->master.ptr; }
float *fsdp_unit_state(strata_unit_t *u, int i)
{
    return i >= 0 && i < fsdp_optim_nstate(&u->model->opts) ? u->state[i].ptr : NULL;
}

strata_status_t fsdp_agree(strata_model_t *m, strata_status_t st)
{
    pthread_mutex_lock(&m->lock);
    st = comm_agree_status(m->ctx->world, st);
    pthread_mutex_unlock(&m->lock);
    return st;
}
