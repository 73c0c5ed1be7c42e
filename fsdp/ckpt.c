/*
 * ckpt.c - checkpoints of a registered model: builds the io layer's
 * layout (strata/ckpt.h) from the model's units, parameters, shards and
 * optimizer state, so a model saves and resumes with one call each.
 */
#include "config.h"
#include "fsdp.h"
#include "base/test_fault.h"
#include "comm/comm.h"
#include "comm/recorder.h"
#include "dev.h"
#include "base/thread.h"
#include "base/wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    int     owned;      /* host is malloc's (else the caller's: an asynchronous save's block) */
    float **shard;      /* the shards the host copies stand for, in order */
} stage_t;

/* Floats a host copy of this rank's shards takes (master, then the states). */
static size_t stage_floats(const strata_model_t *m)
{
    const int per = 1 + fsdp_optim_nstate(&m->opts);
    size_t total = 0;
    for (int u = 0; u < m->nunits; u++) total += (size_t)per * m->units[u]->shard_len;
    return total;
}

/* Point the layout's shards at host copies (into, or a malloc of ours when
 * NULL); with to_host, the shards' values go into them. */
static strata_status_t stage_fill(strata_model_t *m, layout_store_t *ls, int to_host,
                                  float *into, stage_t *sg)
{
    const int per = 1 + fsdp_optim_nstate(&m->opts);    /* master, then the states */
    size_t total = stage_floats(m);
    sg->owned = !into;
    sg->host = into ? into : malloc((total + 1) * sizeof *sg->host);
    sg->shard = malloc((size_t)(m->nunits * per) * sizeof *sg->shard);
    if (!sg->host || !sg->shard) {
        if (sg->owned) free(sg->host);
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
    return fsdp_agree(m, stage_fill(m, ls, to_host, NULL, sg));
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
    if (sg->owned) free(sg->host);
    free(sg->shard);
    sg->host = NULL;
    return STRATA_OK != st ? st : w;
}


/* ---- saves written in the background (the option ckpt_async) ---------------------------
 *
 * strata_model_save copies this rank's shards into one block of the host
 * tier (so the copy counts against host_mem, and a copy that does not fit
 * makes this save synchronous, said once), starts a thread and returns.
 * The thread writes the file exactly as a synchronous save would -- a
 * NAME.tmp, fsynced, renamed, the directory fsynced, only then `latest`
 * and the pruning (io/ckpt_save.c) -- on a context of its own whose
 * communicator is a duplicate of the model's, so its collectives can
 * never meet training's; HDF5 calls stay one thread at a time through the
 * process's HDF5 lock. One save is in flight at a time: the next save
 * (and a load, and strata_model_save_wait) waits for it. Whether it failed
 * is agreed by the ranks between steps (fsdp_bgsave_poll), so every rank
 * returns the failure from the same strata_model_step_begin.
 */
struct fsdp_bgsave {
    strata_context_t *wctx;            /* the writer's context, for the model's life */
    int               running;         /* started and not joined (the same on every rank) */
    int               threaded;        /* 0: the save ran inline (no thread could start) */
    int               done;            /* set last by the writer (atomic) */
    pthread_t         thread;
    strata_status_t   st;              /* the writer's */
    layout_store_t    ls;              /* what it writes, pointing at the copy */
    stage_t           sg;
    strata_block_t   *blk;             /* the host tier's block holding the copy */
    strata_ckpt_save_opts_t opts;
    unsigned char    *rng;             /* copies of what the caller's info pointed at */
    strata_ckpt_kv_t *config;
    char             *kv;
    int               said_sync;       /* "written synchronously" said once */
    double            t_start;         /* when it was handed to the writer */
    int               bg_copy;         /* the writer copies the shards (host backend) */
    int               staged_from;     /* units >= this are copied (atomic) */
    char              dir[4096];
    char              path[4200];      /* the file the writer wrote */
    char              last[4200];      /* the last file written in the background */
};

/* The host backend's copy, made by the writer: unit by unit from the last
 * (the next step's optimizer reaches that one first), each published to
 * fsdp_bgsave_unit_ready once its master and states are copied. */
static void bg_stage(struct fsdp_bgsave *b)
{
    const strata_ckpt_layout_t *L = &b->ls.layout;
    int per = 1 + (L->nunits ? L->units[0].nstates : 0);
    for (int u = L->nunits - 1; u >= 0; u--) {
        const strata_ckpt_unit_t *cu = &L->units[u];
        size_t len = (size_t)(cu->npad / (uint64_t)L->shard_size) * sizeof(float);
        for (int i = 0; i < per; i++) {
            float *dst = 0 == i ? cu->shard : cu->states[i - 1].shard;
            memcpy(dst, b->sg.shard[u * per + i], len);
        }
        __atomic_store_n(&b->staged_from, u, __ATOMIC_RELEASE);
    }
}

void fsdp_bgsave_unit_ready(strata_model_t *m, int ui)
{
    struct fsdp_bgsave *b = m->bgsave;
    if (!b || !b->running || !b->bg_copy ||
        __atomic_load_n(&b->staged_from, __ATOMIC_ACQUIRE) <= ui)
        return;
    double t0 = base_now();
    base_waiter_t w;
    base_waiter_init(&w, 0, 64, 1000, 100000);
    while (__atomic_load_n(&b->staged_from, __ATOMIC_ACQUIRE) > ui) base_waiter_pause(&w);
    m->stats.ckpt_wait_s += base_now() - t0;
}

static void *bg_main(void *arg)
{
    struct fsdp_bgsave *b = arg;
    /* the test fault holds the writer back before its copy: the next
     * step's optimizer must wait for it */
    uint64_t delay_ms = test_fault_arg("ckpt_bg_delay");
    if (delay_ms) nanosleep(&(struct timespec){ (time_t)(delay_ms / 1000),
                                                (long)(delay_ms % 1000) * 1000000L }, NULL);
    if (b->bg_copy) bg_stage(b);
    b->st = strata_ckpt_save(b->wctx, &b->ls.layout, b->dir, &b->opts, b->path, sizeof b->path);
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Free what one save held (not the writer's context, nor the copy's
 * block: the next save fills it again, without a first touch of every
 * page inside the training loop's stall). */
static void bg_release(struct fsdp_bgsave *b)
{
    free(b->sg.shard);
    b->sg.shard = NULL;
    store_free(&b->ls);
    memset(&b->ls, 0, sizeof b->ls);
    free(b->rng);
    free(b->config);
    free(b->kv);
    b->rng = NULL;
    b->config = NULL;
    b->kv = NULL;
}

/* A background save is one checkpoint save to the watchdog's rules: one
 * that has not finished ckpt_timeout after it began ends the job as the
 * watchdog ends a synchronous one (flight records, exit 75): its writer
 * may be stuck in a collective with a rank that is gone. */
static void bg_overdue(strata_model_t *m)
{
    char why[4400];
    snprintf(why, sizeof why, "the checkpoint written in the background into %.4096s did not "
             "finish within ckpt_timeout (%g s)", m->bgsave->dir, m->ctx->cfg.ckpt_timeout);
    comm_rec_fatal(m->ctx, why);
}

/* Wait for the save in flight (it is done, or finishing: its collectives
 * agree its outcome on every rank), release it, and return its status
 * with its message on the model's context. */
static strata_status_t bg_join(strata_model_t *m)
{
    struct fsdp_bgsave *b = m->bgsave;
    if (!b || !b->running) return STRATA_OK;
    /* the one wait helper, with ckpt_timeout's deadline from the start */
    double timeout = m->ctx->cfg.ckpt_timeout;
    base_waiter_t w;
    base_waiter_init(&w, 0, 64, 1000, 100000);
    while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
        if (timeout > 0 && base_now() - b->t_start > timeout) bg_overdue(m);
        base_waiter_pause(&w);
    }
    if (b->threaded) pthread_join(b->thread, NULL);   /* done: it is returning */
    b->running = 0;
    bg_release(b);
    if (STRATA_OK != b->st)
        return base_error(m->ctx, b->st, "checkpoint written in the background: %s",
                          b->wctx->errmsg[0] ? b->wctx->errmsg : strata_strerror(b->st));
    snprintf(b->last, sizeof b->last, "%s", b->path);
    return STRATA_OK;
}

/* The caller's rng and config, copied: the caller may change or free them
 * once strata_model_save returns. */
static strata_status_t bg_copy_info(strata_model_t *m, struct fsdp_bgsave *b)
{
    strata_ckpt_layout_t *L = &b->ls.layout;
    size_t kvlen = 1;
    for (int i = 0; i < L->nconfig; i++)
        kvlen += strlen(L->config[i].key) + strlen(L->config[i].value) + 2;
    b->rng = malloc(L->train.rng_len + 1);
    b->config = malloc(((size_t)L->nconfig + 1) * sizeof *b->config);
    b->kv = malloc(kvlen);
    if (!b->rng || !b->config || !b->kv)
        return base_error(m->ctx, STRATA_ERR_NOMEM, "checkpoint: out of memory");
    if (L->train.rng_len) memcpy(b->rng, L->train.rng, L->train.rng_len);
    char *p = b->kv;
    for (int i = 0; i < L->nconfig; i++) {
        size_t k = strlen(L->config[i].key) + 1, v = strlen(L->config[i].value) + 1;
        b->config[i].key = memcpy(p, L->config[i].key, k);
        b->config[i].value = memcpy(p + k, L->config[i].value, v);
        p += k + v;
    }
    L->train.rng = L->train.rng_len ? b->rng : NULL;
    L->config = b->config;
    return STRATA_OK;
}

/* Room on the host tier for the copy, agreed: when a rank has none, every
 * rank saves synchronously this time (*sync_p), and rank 0 says why once. */
static strata_status_t bg_room(strata_model_t *m, struct fsdp_bgsave *b, int *sync_p)
{
    if (b->blk) return STRATA_OK;   /* every rank has it, from the first save that had room */
    size_t bytes = (stage_floats(m) + 1) * sizeof(float);
    strata_status_t room = strata_block_alloc(m->ctx, STRATA_TIER_PINNED_HOST, bytes,
                                              STRATA_TAG_WORKSPACE, &b->blk);
    char why[STRATA_ERRMSG_LEN];
    snprintf(why, sizeof why, "%s", STRATA_OK != room ? strata_last_error(m->ctx) : "");
    room = fsdp_agree(m, room);
    if (STRATA_OK == room) return STRATA_OK;
    if (b->blk) strata_block_free(b->blk);
    b->blk = NULL;
    *sync_p = 1;
    if (0 == m->ctx->rank && !b->said_sync) {
        b->said_sync = 1;
        strata_warn(m->ctx, "ckpt_async: no room in the host tier for the copy of the shards a "
                    "background save needs (%s); saving synchronously until there is (a larger "
                    "host_mem gives it room)", why[0] ? why : strata_last_error(m->ctx));
    }
    base_clear_error(m->ctx);
    return STRATA_OK;
}

/* An asynchronous save: staged, its thread started; *sync_p when it must
 * be a synchronous one instead (MPI without threads, or no room). */
static strata_status_t save_async(strata_model_t *m, const char *dir, const strata_model_ckpt_t *info,
                                  char *path, size_t len, int *sync_p)
{
    strata_context_t *ctx = m->ctx;
    *sync_p = 0;
    if (ctx->thread_level < MPI_THREAD_MULTIPLE || strlen(dir) >= sizeof m->bgsave->dir) {
        *sync_p = 1;   /* the same on every rank: MPI grants one level, dir is the caller's */
        return STRATA_OK;
    }
    strata_status_t st = STRATA_OK;
    if (!m->bgsave) {
        struct fsdp_bgsave *nb = calloc(1, sizeof *nb);
        st = nb ? fsdp_ctx_writer_create(ctx, &nb->wctx)
                : base_error(ctx, STRATA_ERR_NOMEM, "checkpoint: out of memory");
        if (STRATA_OK == st) m->bgsave = nb;
        else free(nb);
        st = fsdp_agree(m, st);
        if (STRATA_OK != st) return st;
    }
    struct fsdp_bgsave *b = m->bgsave;
    st = bg_room(m, b, sync_p);
    if (STRATA_OK != st || *sync_p) return st;
    /* one agreement for the layout, the copies of info and the staging */
    st = build_layout(m, info, &b->ls);
    if (STRATA_OK == st) st = bg_copy_info(m, b);
    memset(&b->sg, 0, sizeof b->sg);
    /* device shards are copied here, in the compute stream's order; host
     * ones by the writer while the next step runs (fsdp_bgsave_unit_ready
     * holds the optimizer of a unit until its copy is made) */
    b->bg_copy = !fsdp_dev_on(ctx);
    b->staged_from = b->bg_copy ? m->nunits : 0;
    if (STRATA_OK == st)
        st = stage_fill(m, &b->ls, !b->bg_copy, strata_block_ptr(b->blk, STRATA_TIER_PINNED_HOST),
                        &b->sg);
    st = fsdp_agree(m, st);
    if (STRATA_OK != st) {
        bg_release(b);
        return st;
    }
    strata_ckpt_save_opts_default(&b->opts);
    if (info) {
        b->opts.half_copy = info->half_copy;
        b->opts.keep = info->keep;
    }
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    b->path[0] = '\0';
    b->st = STRATA_OK;
    b->done = 0;
    b->running = 1;
    b->t_start = base_now();
    /* without a thread the save still runs, here: every rank's writer must
     * take part in the collectives of the others' */
    b->threaded = 0 == base_thread_create(ctx, &b->thread, bg_main, b);
    if (!b->threaded) bg_main(b);
    /* the name the writer gives the file (io/ckpt_save.c, docs/checkpoint-format.md) */
    if (path && len && (size_t)snprintf(path, len, "%s/step-%08llu.h5", dir,
                                        (unsigned long long)b->ls.layout.train.step) >= len)
        path[0] = '\0';
    strata_debug(ctx, "checkpoint of step %llu: staged; written in the background",
                 (unsigned long long)b->ls.layout.train.step);
    return STRATA_OK;
}

strata_status_t fsdp_bgsave_poll(strata_model_t *m)
{
    struct fsdp_bgsave *b = m->bgsave;
    if (!b || !b->running) return STRATA_OK;
    int done = __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
    if (!done && m->ctx->cfg.ckpt_timeout > 0 && base_now() - b->t_start > m->ctx->cfg.ckpt_timeout)
        bg_overdue(m);
    strata_status_t mine = STRATA_OK;
    if (done && STRATA_OK != b->st)
        mine = base_error(m->ctx, b->st, "checkpoint written in the background: %s", b->wctx->errmsg);
    strata_status_t st = fsdp_agree(m, mine);
    if (STRATA_OK != st) {
        char msg[STRATA_ERRMSG_LEN];
        snprintf(msg, sizeof msg, "%s", strata_last_error(m->ctx));
        (void)bg_join(m);
        return base_error(m->ctx, st, "%s", msg);
    }
    int all = 0;
    pthread_mutex_lock(&m->lock);
    st = comm_agree_all(m->ctx->world, done, &all);
    pthread_mutex_unlock(&m->lock);
    return STRATA_OK == st && all ? bg_join(m) : st;
}

strata_status_t strata_model_save_wait(strata_model_t *m, char *path, size_t len)
{
    if (!m) return STRATA_ERR_INVALID;
    strata_status_t st = bg_join(m);
    if (path && len)
        snprintf(path, len, "%s", STRATA_OK == st && m->bgsave ? m->bgsave->last : "");
    if (m->bgsave) m->bgsave->last[0] = '\0';   /* each file is named once */
    return st;
}

void fsdp_bgsave_destroy(strata_model_t *m)
{
    struct fsdp_bgsave *b = m->bgsave;
    if (!b) return;
    if (STRATA_OK != bg_join(m))
        strata_warn(m->ctx, "strata_model_destroy: %s", strata_last_error(m->ctx));
    if (b->blk) strata_block_free(b->blk);
    fsdp_ctx_writer_destroy(b->wctx);
    free(b);
    m->bgsave = NULL;
}

/* The io layer reads and writes the shards through pointers: state on
 * the storage tier is mapped where it lies in the spill file, so a save
 * streams it from there into the checkpoint (and a load from the
 * checkpoint into it) through the page cache, with no copy of the state
 * in a memory tier. Agreed: a rank that cannot map fails everywhere. */
static strata_status_t state_up(strata_model_t *m, layout_store_t *ls, int writable)
{
    if (!fsdp_state_any_streamed(m)) return STRATA_OK;
    strata_status_t st = fsdp_state_map_all(m, writable);  /* a failed write-back is said here */
    st = fsdp_agree(m, st);
    if (STRATA_OK != st) {
        fsdp_state_unmap_all(m, 0);
        return st;
    }
    for (int u = 0; u < m->nunits; u++) {
        ls->units[u].shard = fsdp_unit_master(m->units[u]);
        for (int i = 0; i < ls->units[u].nstates; i++)
            ls->units[u].states[i].shard = fsdp_unit_state(m->units[u], i);
    }
    return STRATA_OK;
}

strata_status_t strata_model_save(strata_model_t *m, const char *dir,
                                  const strata_model_ckpt_t *info, char *path, size_t len)
{
    if (!m) return STRATA_ERR_INVALID;
    if (!dir) dir = m->ctx->cfg.ckpt_dir;
    if (!dir[0])
        return base_error(m->ctx, STRATA_ERR_INVALID, "strata_model_save: no directory: pass "
                          "dir, or set the option ckpt_dir (STRATA_CKPT_DIR)");
    double t0 = base_now();
    strata_status_t st = bg_join(m);   /* one save in flight at a time */
    if (STRATA_OK != st) return st;
    if (base_now() - t0 > 0.01)
        strata_info(m->ctx, "checkpoint: waited %.2f s for the one being written in the background",
                    base_now() - t0);
    if (m->ctx->cfg.ckpt_async && !fsdp_state_any_streamed(m)) {
        int sync = 0;
        st = save_async(m, dir, info, path, len, &sync);
        if (!sync) return st;
    }
    layout_store_t ls;
    st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    strata_ckpt_save_opts_t opts;
    strata_ckpt_save_opts_default(&opts);
    if (info) {
        opts.half_copy = info->half_copy;
        opts.keep = info->keep;
    }
    stage_t sg = { 0 };
    st = state_up(m, &ls, 0);
    if (STRATA_OK == st) st = stage_begin(m, &ls, 1, &sg);
    /* one recorded operation under ckpt_timeout (strata_ckpt_save's own) */
    if (STRATA_OK == st) st = strata_ckpt_save(m->ctx, &ls.layout, dir, &opts, path, len);
    strata_status_t se = stage_end(m, &sg, 0);
    if (STRATA_OK == st) st = se;
    se = fsdp_state_unmap_all(m, 0);
    if (STRATA_OK == st) st = se;
    store_free(&ls);
    return st;
}

strata_status_t strata_model_load(strata_model_t *m, const char *path, strata_model_ckpt_t *info)
{
    if (!m || !path) return STRATA_ERR_INVALID;
    strata_status_t st = bg_join(m);   /* a save in flight may write the file asked for */
    if (STRATA_OK != st) return st;
    layout_store_t ls;
    st = build_layout(m, info, &ls);
    if (STRATA_OK != st) return st;
    /* gathered copies would go stale under the new master values */
    fsdp_drain(m);
    for (int u = 0; u < m->nunits; u++) fsdp_gather_release(m->units[u]);
    stage_t sg = { 0 };
    st = state_up(m, &ls, 1);
    if (STRATA_OK == st) st = stage_begin(m, &ls, 0, &sg);
    if (STRATA_OK == st) st = strata_ckpt_load(m->ctx, &ls.layout, path);  /* one recorded operation */
    /* A load that failed sets no scalar. Its shards: staged copies reach
     * them only after a load that succeeded, but unstaged (the host
     * backend) the io layer reads into them in place, and a load that
     * fails part way leaves them partly overwritten (strata_ckpt_load:
     * "the shards may hold partial data"). */
    strata_status_t se = stage_end(m, &sg, STRATA_OK == st);
    if (STRATA_OK == st) st = se;
    /* what the load wrote is in the spill file; its sums are taken anew
     * (a load that failed part way leaves partial values, as unstaged
     * shards on the host do) */
    se = fsdp_state_unmap_all(m, 1);
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
