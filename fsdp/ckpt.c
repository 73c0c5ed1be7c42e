/*
 * ckpt.c - checkpoints of a registered model: builds the io layer's
 * layout (strata/ckpt.h) from the model's units, parameters, shards and
 * optimizer state, so a model saves and resumes with one call each.
 */
#include "config.h"
#include "fsdp.h"
#include "base/test_fault.h"
#include "comm/comm.h"
#include "dev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Optimizer scalars, stored as attributes of every unit (the io layer keeps
 * scalars per unit); on load they are read back from unit 0. The names
 * are the file's attribute names; the order is the layout's. */
enum {
    SC_STEP, SC_LR, SC_BETA1, SC_BETA2, SC_EPS, SC_WEIGHT_DECAY, SC_MOMENTUM, SC_OPTIMIZER,
    NSCALARS
};
static const char *const scalar_names[NSCALARS] = {
    [SC_STEP] = "step",                 [SC_LR] = "lr",
    [SC_BETA1] = "beta1",               [SC_BETA2] = "beta2",
    [SC_EPS] = "eps",                   [SC_WEIGHT_DECAY] = "weight_decay",
    [SC_MOMENTUM] = "momentum",         [SC_OPTIMIZER] = "optimizer",
};

static void scalars_to_values(const fsdp_scalars_t *sc, double v[NSCALARS])
{
    v[SC_STEP] = sc->step;
    v[SC_LR] = sc->lr;
    v[SC_BETA1] = sc->beta1;
    v[SC_BETA2] = sc->beta2;
    v[SC_EPS] = sc->eps;
    v[SC_WEIGHT_DECAY] = sc->weight_decay;
    v[SC_MOMENTUM] = sc->momentum;
    v[SC_OPTIMIZER] = sc->optimizer;
}

static void scalars_from_layout(const strata_ckpt_scalar_t s[NSCALARS], fsdp_scalars_t *sc)
{
    *sc = (fsdp_scalars_t){
        .step = (int)s[SC_STEP].value,
        .lr = (float)s[SC_LR].value,
        .beta1 = (float)s[SC_BETA1].value,
        .beta2 = (float)s[SC_BETA2].value,
        .eps = (float)s[SC_EPS].value,
        .weight_decay = (float)s[SC_WEIGHT_DECAY].value,
        .momentum = (float)s[SC_MOMENTUM].value,
        .optimizer = (int)s[SC_OPTIMIZER].value,
    };
}

typedef struct {
    strata_ckpt_layout_t  layout;
    strata_ckpt_unit_t   *units;
    strata_ckpt_param_t  *params;
    strata_ckpt_state_t  *states;
    strata_ckpt_scalar_t *scalars;
} layout_store_t;

static void store_free(layout_store_t *ls)
{
    free(ls->units);
    free(ls->params);
    free(ls->states);
    free(ls->scalars);
}

static strata_status_t build_layout(strata_model_t *m, const strata_model_ckpt_t *info,
                                    layout_store_t *ls)
{
    memset(ls, 0, sizeof *ls);
    if (MODEL_READY != m->state)
        return base_error(m->ctx, STRATA_ERR_STATE, "checkpoint: the model is not committed");
    if (PHASE_IDLE != m->phase)
        return base_error(m->ctx, STRATA_ERR_STATE, "checkpoint: only between steps "
                          "(call strata_model_step_end first)");
    int nparams = 0, nstate = fsdp_optim_nstate(&m->opts);
    for (int u = 0; u < m->nunits; u++) nparams += m->units[u]->nparams;
    ls->units = calloc((size_t)m->nunits, sizeof *ls->units);
    ls->params = calloc((size_t)nparams + 1, sizeof *ls->params);
    ls->states = calloc((size_t)(m->nunits * nstate) + 1, sizeof *ls->states);
    ls->scalars = calloc((size_t)(m->nunits * NSCALARS), sizeof *ls->scalars);
    if (!ls->units || !ls->params || !ls->states || !ls->scalars) {
        store_free(ls);
        return base_error(m->ctx, STRATA_ERR_NOMEM, "checkpoint: cannot allocate the layout");
    }
    fsdp_scalars_t sc;
    fsdp_model_scalars(m, &sc);
    double values[NSCALARS];
    scalars_to_values(&sc, values);
    int pi = 0;
    for (int u = 0; u < m->nunits; u++) {
        strata_unit_t *un = m->units[u];
        strata_ckpt_unit_t *cu = &ls->units[u];
        cu->name = un->name;
        cu->npad = un->npad;
        cu->nparams = un->nparams;
        cu->params = &ls->params[pi];
        for (int i = 0; i < un->nparams; i++, pi++) {
            const fsdp_param_t *p = &un->params[i];
            ls->params[pi].name = p->name;
            ls->params[pi].ndims = p->ndims;
            for (int d = 0; d < p->ndims; d++) ls->params[pi].dims[d] = p->dims[d];
            ls->params[pi].offset = p->offset;
        }
        cu->shard = fsdp_unit_master(un);
        cu->nstates = nstate;
        cu->states = &ls->states[u * nstate];
        for (int i = 0; i < nstate; i++) {
            cu->states[i].name = fsdp_optim_state_name(&m->opts, i);
            cu->states[i].shard = fsdp_unit_state(un, i);
        }
        cu->nscalars = NSCALARS;
        cu->scalars = &ls->scalars[u * NSCALARS];
        for (int i = 0; i < NSCALARS; i++) {
            cu->scalars[i].name = scalar_names[i];
            cu->scalars[i].value = values[i];
        }
    }
    strata_ckpt_layout_t *L = &ls->layout;
    L->nunits = m->nunits;
    L->units = ls->units;
    L->shard_size = m->S;
    L->shard_rank = m->shard_rank;
    L->replica = m->replica_index;
    L->world_size = m->W;
    L->train.step = (uint64_t)sc.step;
    if (info) {
        L->train.data_pos = info->data_pos;
        L->train.rng = info->rng;
        L->train.rng_len = info->rng_len;
        L->nconfig = info->nconfig;
        L->config = info->config;
    }
    return STRATA_OK;
}

/*
 * Staging through the host. The io layer reads and writes the shards with
 * the CPU; on the cuda backend the master shards (and optimizer state kept
 * on the device) are device memory. Then the layout points at host copies
 * instead, one allocation for all of this rank's shards in layout order:
 * a save fills them from the shards first (queued on the compute stream
 * after the step's own device work, then waited for), a load that
 * succeeded copies them to the shards after. The file is the same either
 * way. The host backend uses the shards in place; the test fault
 * ckpt_stage makes it stage too (its copies are memcpy), which is how the
 * host suite covers this code (t/ckpt-stage.t).
 */
typedef struct {
    int     on;         /* staging: every rank stages or none does */
    float  *host;       /* NULL: not staged */
    float **shard;      /* the shards the host copies stand for, in order */
} stage_t;

/* Point the layout's shards at host copies; with to_host, the shards'
 * values go into them. */
static strata_status_t stage_fill(strata_model_t *m, layout_store_t *ls, int to_host,
                                  stage_t *sg)
{
    const int per = 1 + fsdp_optim_nstate(&m->opts);    /* master, then the states */
    size_t total = 0;
    for (int u = 0; u < m->nunits; u++) total += (size_t)per * m->units[u]->shard_len;
    sg->host = malloc((total + 1) * sizeof *sg->host);
    sg->shard = malloc((size_t)(m->nunits * per) * sizeof *sg->shard);
    if (!sg->host || !sg->shard) {
        free(sg->host);
        free(sg->shard);
        sg->host = NULL;
        return base_error(m->ctx, STRATA_ERR_NOMEM, "checkpoint: cannot allocate %zu floats to "
                          "stage the device shards through the host", total);
    }
    strata_status_t st = STRATA_OK;
    float *h = sg->host;
    for (int u = 0, k = 0; u < m->nunits; u++) {
        const size_t len = m->units[u]->shard_len;
        for (int i = 0; i < per; i++, k++, h += len) {
            float **slot = 0 == i ? &ls->units[u].shard : &ls->units[u].states[i - 1].shard;
            sg->shard[k] = *slot;
            *slot = h;
            if (to_host && STRATA_OK == st)
                st = fsdp_dev_copy(m->ctx, h, sg->shard[k], len * sizeof *h);
        }
    }
    if (to_host && STRATA_OK == st) st = fsdp_dev_wait(m->ctx);
    return st;
}

/* stage_fill, agreed over all ranks: a rank that could not stage fails
 * the save or load everywhere, with its message, before its collective
 * starts. */
static strata_status_t stage_begin(strata_model_t *m, layout_store_t *ls, int to_host,
                                   stage_t *sg)
{
    memset(sg, 0, sizeof *sg);
    sg->on = fsdp_dev_on(m->ctx) || 0 != test_fault_arg("ckpt_stage");
    if (!sg->on) return STRATA_OK;
    strata_status_t st = stage_fill(m, ls, to_host, sg);
    pthread_mutex_lock(&m->lock);
    st = comm_agree_status(m->ctx->world, st);
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* With to_shards, the copies' values go into the shards; then they are freed. */
static strata_status_t stage_end(strata_model_t *m, stage_t *sg, int to_shards)
{
    if (!sg->host) return STRATA_OK;
    const int per = 1 + fsdp_optim_nstate(&m->opts);
    strata_status_t st = STRATA_OK;
    const float *h = sg->host;
    for (int u = 0, k = 0; to_shards && STRATA_OK == st && u < m->nunits; u++) {
        const size_t len = m->units[u]->shard_len;
        for (int i = 0; STRATA_OK == st && i < per; i++, k++, h += len)
            st = fsdp_dev_copy(m->ctx, sg->shard[k], h, len * sizeof *h);
    }
    /* the copies read the host buffer: it goes only once they are done */
    strata_status_t w = fsdp_dev_wait(m->ctx);
    free(sg->host);
    free(sg->shard);
    sg->host = NULL;
    return STRATA_OK != st ? st : w;
}

strata_status_t strata_model_save(strata_model_t *m, const char *dir,
                                  const strata_model_ckpt_t *info, char *path, size_t len)
{
    if (!m) return STRATA_ERR_INVALID;
    if (!dir) dir = m->ctx->cfg.ckpt_dir;
    if (!dir[0])
        return base_error(m->ctx, STRATA_ERR_INVALID, "strata_model_save: no directory: pass "
                          "dir, or set the option ckpt_dir (STRATA_CKPT_DIR)");
    layout_store_t ls;
    strata_status_t st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    strata_ckpt_save_opts_t opts;
    strata_ckpt_save_opts_default(&opts);
    if (info) {
        opts.half_copy = info->half_copy;
        opts.keep = info->keep;
    }
    stage_t sg;
    st = stage_begin(m, &ls, 1, &sg);
    /* one recorded operation under ckpt_timeout (strata_ckpt_save's own) */
    if (STRATA_OK == st) st = strata_ckpt_save(m->ctx, &ls.layout, dir, &opts, path, len);
    strata_status_t se = stage_end(m, &sg, 0);
    if (STRATA_OK == st) st = se;
    store_free(&ls);
    return st;
}

strata_status_t strata_model_load(strata_model_t *m, const char *path, strata_model_ckpt_t *info)
{
    if (!m || !path) return STRATA_ERR_INVALID;
    layout_store_t ls;
    strata_status_t st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    /* gathered copies would go stale under the new master values */
    fsdp_drain(m);
    for (int u = 0; u < m->nunits; u++) fsdp_gather_release(m->units[u]);
    stage_t sg;
    st = stage_begin(m, &ls, 0, &sg);
    if (STRATA_OK == st) st = strata_ckpt_load(m->ctx, &ls.layout, path);  /* one recorded operation */
    /* A load that failed sets no scalar. Its shards: staged copies reach
     * them only after a load that succeeded, but unstaged (the host
     * backend) the io layer reads into them in place, and a load that
     * fails part way leaves them partly overwritten (strata_ckpt_load:
     * "the shards may hold partial data"). */
    strata_status_t se = stage_end(m, &sg, STRATA_OK == st);
    if (STRATA_OK == st) st = se;
    if (STRATA_OK == st) {
        fsdp_scalars_t sc;
        scalars_from_layout(ls.units[0].scalars, &sc);
        if ((int)m->opts.optimizer != sc.optimizer) {
            st = base_error(m->ctx, STRATA_ERR_MISMATCH, "%s: written with optimizer %d, the "
                            "model uses optimizer %d", path, sc.optimizer, (int)m->opts.optimizer);
        } else {
            st = fsdp_model_set_scalars(m, &sc);
        }
        if (STRATA_OK == st && info) info->data_pos = ls.layout.train.data_pos;
    }
    store_free(&ls);
    return st;
}
