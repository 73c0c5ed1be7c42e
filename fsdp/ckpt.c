/*
 * ckpt.c - checkpoints of a registered model: builds the io layer's
 * layout (strata/ckpt.h) from the model's units, parameters, shards and
 * optimizer state, so a model saves and resumes with one call each.
 */
#include "config.h"
#include "fsdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Optimizer scalars, stored as attributes of every unit (the io layer keeps
 * scalars per unit); on load they are read back from unit 0. */
static const char *const scalar_names[] = {
    "step", "lr", "beta1", "beta2", "eps", "weight_decay", "momentum", "optimizer"
};
#define NSCALARS ((int)(sizeof scalar_names / sizeof scalar_names[0]))

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
    const double values[NSCALARS] = { sc.step, sc.lr, sc.beta1, sc.beta2, sc.eps,
                                      sc.weight_decay, sc.momentum, sc.optimizer };
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

/* The checkpoint code reads and writes the shards from the host: on the
 * cuda backend they are device memory, which it does not stage yet. */
static strata_status_t device_shards(strata_model_t *m, const char *what)
{
    return base_error(m->ctx, STRATA_ERR_UNSUPPORTED, "checkpoint %s on the cuda backend: the "
                      "shards are device memory and checkpoints do not stage them through "
                      "the host yet; use backend=host for runs that checkpoint", what);
}

strata_status_t strata_model_save(strata_model_t *m, const char *dir,
                                  const strata_model_ckpt_t *info, char *path, size_t len)
{
    if (!m || !dir) return STRATA_ERR_INVALID;
    if (NULL != m->ctx->compute_stream) return device_shards(m, "save");
    layout_store_t ls;
    strata_status_t st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    strata_ckpt_save_opts_t opts = { 0 };
    if (info) {
        opts.half_copy = info->half_copy;
        opts.keep = info->keep;
    }
    /* one recorded operation under ckpt_timeout (strata_ckpt_save's own) */
    st = strata_ckpt_save(m->ctx, &ls.layout, dir, &opts, path, len);
    store_free(&ls);
    return st;
}

strata_status_t strata_model_load(strata_model_t *m, const char *path, strata_model_ckpt_t *info)
{
    if (!m || !path) return STRATA_ERR_INVALID;
    if (NULL != m->ctx->compute_stream) return device_shards(m, "load");
    layout_store_t ls;
    strata_status_t st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    /* gathered copies would go stale under the new master values */
    fsdp_drain(m);
    for (int u = 0; u < m->nunits; u++) fsdp_gather_release(m->units[u]);
    st = strata_ckpt_load(m->ctx, &ls.layout, path);     /* one recorded operation */
    if (STRATA_OK == st) {
        const strata_ckpt_scalar_t *s = ls.units[0].scalars;
        fsdp_scalars_t sc = {
            .step = (int)s[0].value, .lr = (float)s[1].value, .beta1 = (float)s[2].value,
            .beta2 = (float)s[3].value, .eps = (float)s[4].value,
            .weight_decay = (float)s[5].value, .momentum = (float)s[6].value,
            .optimizer = (int)s[7].value,
        };
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
