/* gpt_fsdp.c - the GPT units on the strata FSDP runtime (see gpt_fsdp.h). */
#include "config.h"
#include "examples/gpt/gpt_fsdp.h"
#include "examples/gpt/gpt_fsdp_dev.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNITS 258   /* embed + up to 256 blocks + head */

typedef struct {
    gpt_param_info info;
    int            unit, index;
} init_rec;

struct gpt_fsdp {
    gpt_config cfg;
    gpt_recompute_count recomputed;
    int        nu;
    unit_rec   units[MAX_UNITS];
    init_rec   inits[MAX_UNITS][GPT_MAX_PARAMS];
};

static const char *const head_saves[2] = { "head_dx", "head_grads" };

const char *gpt_fsdp_save_name(int i)
{
    if (0 <= i && i < GPT_MAX_SAVES) return gpt_save_name(i);
    if (GPT_MAX_SAVES <= i && i < GPT_FSDP_NSAVES) return head_saves[i - GPT_MAX_SAVES];
    return NULL;
}

/* ---- helpers shared by the callbacks ------------------------------------- */

/* The unit's parameters as f32 pointers: the gathered copy itself, or a
 * workspace copy converted from bf16. With bf16 compute, pb (if not NULL)
 * also gets the gathered bf16 tensors, which the matrix products take
 * directly where gpt_bf16_available() (then the weight matrices get no f32
 * copy: p[i] is NULL for them, only the products read them); pb[0] is
 * NULL otherwise. */
static strata_status_t get_params_bf16(strata_unit_call_t *call, const unit_rec *u,
                                       const float *p[GPT_MAX_PARAMS],
                                       const uint16_t *pb[GPT_MAX_PARAMS])
{
    strata_status_t st;
    int bf16 = STRATA_BF16 == strata_call_compute_dtype(call);
    float *conv = NULL;
    if (bf16 && STRATA_OK != (st = strata_call_workspace(call, u->numel * sizeof(float),
                                                         (void **)&conv)))
        return st;
    for (int i = 0; i < u->np; i++) {
        void *ptr;
        size_t n;
        if (STRATA_OK != (st = strata_call_param(call, i, &ptr, &n))) return st;
        if (NULL != pb) pb[i] = bf16 && gpt_bf16_available() ? ptr : NULL;
        if (NULL != pb && NULL != pb[i] && 2 == u->info[i].ndim) {
            p[i] = NULL;    /* a weight matrix: the products take pb[i], no f32 copy */
            continue;
        }
        if (bf16) {
            strata_bf16_to_f32(ptr, conv, n);
            p[i] = conv;
            conv += n;
        } else {
            p[i] = ptr;
        }
    }
    return STRATA_OK;
}

static strata_status_t get_params(strata_unit_call_t *call, const unit_rec *u,
                                  const float *p[GPT_MAX_PARAMS])
{
    return get_params_bf16(call, u, p, NULL);
}

static strata_status_t get_grads(strata_unit_call_t *call, const unit_rec *u,
                                 float *g[GPT_MAX_PARAMS])
{
    for (int i = 0; i < u->np; i++) {
        strata_status_t st = strata_call_grad(call, i, &g[i], NULL);
        if (STRATA_OK != st) return st;
    }
    return STRATA_OK;
}

static strata_status_t get_ws(strata_unit_call_t *call, const unit_rec *u, int B, int T,
                              gpt_workspace *ws)
{
    ws->n = gpt_unit_workspace_floats(u->cfg, u->unit, B, T);
    ws->buf = NULL;
    ws->params_bf16 = NULL;
    ws->between = NULL;
    ws->between_arg = NULL;
    if (0 == ws->n) return STRATA_OK;
    return strata_call_workspace(call, ws->n * sizeof(float), (void **)&ws->buf);
}

/* The input must be what the batch says: a wrong size is a caller bug that
 * would otherwise read out of bounds. */
static strata_status_t get_input(strata_unit_call_t *call, const gpt_batch *b, size_t elem,
                                 const void **in)
{
    size_t bytes;
    strata_status_t st = strata_call_input(call, in, &bytes);
    if (STRATA_OK != st) return st;
    if (NULL == b || bytes != (size_t)b->B * b->T * elem) return STRATA_ERR_MISMATCH;
    return STRATA_OK;
}

#define TRY(x) do { strata_status_t st_ = (x); if (STRATA_OK != st_) return st_; } while (0)

/* ---- embed ---------------------------------------------------------------- */

static strata_status_t embed_forward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_embed_forward(call, u);
    const gpt_batch *b = strata_call_batch(call);
    const int32_t *tok;
    const float *p[GPT_MAX_PARAMS];
    float *x;
    TRY(get_input(call, b, sizeof(int32_t), (const void **)&tok));
    TRY(get_params(call, u, p));
    TRY(strata_call_output(call, (size_t)b->B * b->T * u->cfg->dim * sizeof(float), (void **)&x));
    return gpt_embed_forward(u->cfg, b->B, b->T, p, tok, x);
}

static strata_status_t embed_backward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_embed_backward(call, u);
    const gpt_batch *b = strata_call_batch(call);
    const int32_t *tok;
    const float *dx;
    float *g[GPT_MAX_PARAMS];
    TRY(get_input(call, b, sizeof(int32_t), (const void **)&tok));
    TRY(strata_call_grad_output(call, (const void **)&dx, NULL));
    TRY(get_grads(call, u, g));
    return gpt_embed_backward(u->cfg, b->B, b->T, tok, dx, g);
}

/* ---- block ---------------------------------------------------------------- */

/* Between a block's kernels: the collectives in flight (the next unit's
 * all-gather, the last one's reduce-scatter) advance on this thread. */
static void between(void *call)
{
    strata_call_progress(call);
}

static strata_status_t block_forward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_block_forward(call, u);
    const gpt_batch *b = strata_call_batch(call);
    const float *x, *p[GPT_MAX_PARAMS];
    const uint16_t *pb[GPT_MAX_PARAMS];
    float *y;
    gpt_saves sv;
    gpt_workspace ws;
    size_t sz[GPT_MAX_SAVES], NC = (size_t)b->B * b->T * u->cfg->dim;
    TRY(get_input(call, b, (size_t)u->cfg->dim * sizeof(float), (const void **)&x));
    TRY(get_params_bf16(call, u, p, pb));
    TRY(strata_call_output(call, NC * sizeof(float), (void **)&y));
    gpt_block_save_sizes(u->cfg, b->B, b->T, sz);
    if (strata_call_training(call)) {
        /* each save by name: the runtime's policy decides where it lives */
        double fl[GPT_MAX_SAVES], total = gpt_block_save_flops(u->cfg, b->B, b->T, fl);
        for (int s = 0; s < GPT_MAX_SAVES; s++) {
            TRY(strata_save(call, gpt_save_name(s), sz[s] * sizeof(float), (void **)&sv.p[s]));
            TRY(strata_save_work(call, gpt_save_name(s), fl[s]));
        }
        /* what each save's recompute costs: its share of the forward */
        TRY(strata_save_work(call, NULL, total));
    } else {
        /* eval: nothing outlives the call, so the saves are scratch */
        size_t total = 0;
        float *buf;
        for (int s = 0; s < GPT_MAX_SAVES; s++) total += sz[s];
        TRY(strata_call_workspace(call, total * sizeof(float), (void **)&buf));
        for (int s = 0; s < GPT_MAX_SAVES; s++) {
            sv.p[s] = buf;
            buf += sz[s];
        }
    }
    TRY(get_ws(call, u, b->B, b->T, &ws));
    ws.params_bf16 = NULL != pb[0] ? pb : NULL;
    ws.between = between;
    ws.between_arg = call;
    if (strata_call_recompute(call)) {
        /* make only what the runtime dropped: the saves it still holds
         * (kept, or back from host or storage) and the output are there */
        unsigned char held[GPT_MAX_SAVES];
        for (int s = 0; s < GPT_MAX_SAVES; s++)
            held[s] = (unsigned char)strata_call_save_held(call, gpt_save_name(s));
        return gpt_block_recompute(u->cfg, b->B, b->T, p, x, &sv, held, &ws, u->recomputed);
    }
    return gpt_block_forward(u->cfg, b->B, b->T, p, x, y, &sv, &ws);
}

static strata_status_t block_backward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_block_backward(call, u);
    const gpt_batch *b = strata_call_batch(call);
    const float *dy, *p[GPT_MAX_PARAMS];
    const uint16_t *pb[GPT_MAX_PARAMS];
    float *dx, *g[GPT_MAX_PARAMS];
    size_t dy_bytes, dx_bytes, sz[GPT_MAX_SAVES], NC = (size_t)b->B * b->T * u->cfg->dim;
    gpt_saves sv;
    gpt_workspace ws;
    TRY(strata_call_grad_output(call, (const void **)&dy, &dy_bytes));
    TRY(strata_call_grad_input(call, (void **)&dx, &dx_bytes));
    if (NULL == dy || NC * sizeof(float) != dy_bytes || NC * sizeof(float) != dx_bytes)
        return STRATA_ERR_MISMATCH;
    TRY(get_params_bf16(call, u, p, pb));
    TRY(get_grads(call, u, g));
    gpt_block_save_sizes(u->cfg, b->B, b->T, sz);
    for (int s = 0; s < GPT_MAX_SAVES; s++) {
        size_t bytes;
        TRY(strata_saved(call, gpt_save_name(s), (void **)&sv.p[s], &bytes));
        if (sz[s] * sizeof(float) != bytes) return STRATA_ERR_MISMATCH;
    }
    TRY(get_ws(call, u, b->B, b->T, &ws));
    ws.params_bf16 = NULL != pb[0] ? pb : NULL;
    ws.between = between;
    ws.between_arg = call;
    return gpt_block_backward(u->cfg, b->B, b->T, p, &sv, dy, dx, g, &ws);
}

/* ---- head ----------------------------------------------------------------- */

static strata_status_t head_forward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_head_forward(call, u);
    const gpt_batch *b = strata_call_batch(call);
    const float *x, *p[GPT_MAX_PARAMS];
    const uint16_t *pb[GPT_MAX_PARAMS];
    const int B = b->B, T = b->T;
    const size_t NC = (size_t)B * T * u->cfg->dim;
    gpt_workspace ws;
    TRY(get_input(call, b, (size_t)u->cfg->dim * sizeof(float), (const void **)&x));
    TRY(get_params_bf16(call, u, p, pb));
    TRY(get_ws(call, u, B, T, &ws));
    ws.params_bf16 = NULL != pb[0] ? pb : NULL;

    if (strata_call_training(call)) {
        /* loss and gradients in one pass while the parameters are here; the
         * backward hands the saved gradients to the runtime */
        double *loss;
        float *dx, *dg, *g[GPT_MAX_PARAMS];
        if (NULL == b->targets) return STRATA_ERR_INVALID;
        TRY(strata_call_output(call, sizeof(double), (void **)&loss));
        TRY(strata_save(call, head_saves[0], NC * sizeof(float), (void **)&dx));
        TRY(strata_save(call, head_saves[1], u->numel * sizeof(float), (void **)&dg));
        TRY(strata_save_work(call, head_saves[0], 1.0));   /* the fused head makes both */
        TRY(strata_save_work(call, NULL, 1.0));
        memset(dg, 0, u->numel * sizeof(float));
        for (int i = 0; i < u->np; i++) {
            g[i] = dg;
            dg += u->info[i].numel;
        }
        if (strata_call_recompute(call)) {   /* logits, d(lm_w), d(input): all again */
            u->recomputed->products += 3;
            u->recomputed->flops += 3 * 2.0 * NC * GPT_VOCAB;
        }
        return gpt_head_forward(u->cfg, B, T, p, x, b->targets, b->grad_scale, loss, dx, g,
                                NULL, &ws);
    }
    if (b->decode) {
        int32_t *next;
        float *logits;
        TRY(strata_call_output(call, (size_t)B * sizeof(int32_t), (void **)&next));
        TRY(strata_call_workspace(call, (size_t)B * T * GPT_VOCAB * sizeof(float),
                                  (void **)&logits));
        TRY(gpt_head_forward(u->cfg, B, T, p, x, NULL, 0.0f, NULL, NULL, NULL, logits, &ws));
        for (int r = 0; r < B; r++) {
            const float *lg = logits + ((size_t)r * T + T - 1) * GPT_VOCAB;
            int best = 0;
            for (int j = 1; j < GPT_VOCAB; j++) best = lg[j] > lg[best] ? j : best;
            next[r] = best;
        }
        return STRATA_OK;
    }
    double *loss;
    TRY(strata_call_output(call, sizeof(double), (void **)&loss));
    *loss = 0.0;
    if (NULL == b->targets) return STRATA_OK;
    return gpt_head_forward(u->cfg, B, T, p, x, b->targets, 0.0f, loss, NULL, NULL, NULL, &ws);
}

static strata_status_t head_backward(strata_unit_call_t *call, void *user)
{
    const unit_rec *u = user;
    if (NULL != strata_call_stream(call)) return gpt_dev_head_backward(call, u);
    float *dx, *sdx, *sg, *g;
    size_t dx_bytes, sdx_bytes, sg_bytes, n;
    TRY(strata_call_grad_input(call, (void **)&dx, &dx_bytes));
    TRY(strata_saved(call, head_saves[0], (void **)&sdx, &sdx_bytes));
    TRY(strata_saved(call, head_saves[1], (void **)&sg, &sg_bytes));
    if (dx_bytes != sdx_bytes || u->numel * sizeof(float) != sg_bytes) return STRATA_ERR_MISMATCH;
    memcpy(dx, sdx, dx_bytes);
    /* the runtime's gradients accumulate over micro-batches: add */
    for (int i = 0; i < u->np; i++) {
        TRY(strata_call_grad(call, i, &g, &n));
        for (size_t k = 0; k < n; k++) g[k] += sg[k];
        sg += n;
    }
    return STRATA_OK;
}

/* ---- building ------------------------------------------------------------- */

static int init_param(void *user, const char *unit, const char *param, float *full, size_t n,
                      uint64_t seed)
{
    const init_rec *r = user;
    (void)unit;
    (void)param;
    if (n != r->info.numel) return -1;
    gpt_param_init(&r->info, seed, r->unit, r->index, 0, n, full);
    return 0;
}

strata_status_t gpt_fsdp_build(strata_model_t *model, const gpt_config *cfg, gpt_fsdp **g_p)
{
    if (NULL == model || NULL == cfg || NULL == g_p) return STRATA_ERR_INVALID;
    if (STRATA_OK != gpt_config_validate(cfg, NULL, 0) || gpt_num_units(cfg) > MAX_UNITS)
        return STRATA_ERR_INVALID;
    gpt_fsdp *g = calloc(1, sizeof(*g));
    if (NULL == g) return STRATA_ERR_NOMEM;
    g->cfg = *cfg;
    g->nu = gpt_num_units(cfg);
    strata_status_t st = STRATA_OK;
    for (int u = 0; u < g->nu && STRATA_OK == st; u++) {
        unit_rec *ur = &g->units[u];
        strata_unit_fn fw, bw;
        char name[32];
        strata_unit_t *unit;
        ur->cfg = &g->cfg;
        ur->recomputed = &g->recomputed;
        ur->unit = u;
        ur->np = gpt_unit_params(&g->cfg, u, ur->info);
        switch (gpt_unit_kind_of(&g->cfg, u)) {
        case GPT_UNIT_EMBED: fw = embed_forward; bw = embed_backward; break;
        case GPT_UNIT_HEAD:  fw = head_forward;  bw = head_backward;  break;
        default:             fw = block_forward; bw = block_backward; break;
        }
        gpt_unit_name(&g->cfg, u, name, sizeof(name));
        st = strata_model_add_unit(model, name, fw, bw, ur, &unit);
        for (int i = 0; i < ur->np && STRATA_OK == st; i++) {
            init_rec *r = &g->inits[u][i];
            size_t dims[2] = { ur->info[i].shape[0], ur->info[i].shape[1] };
            *r = (init_rec){ ur->info[i], u, i };
            strata_init_t init = { .kind = STRATA_INIT_USER, .fn = init_param, .user = r };
            st = strata_unit_add_param(unit, ur->info[i].name, ur->info[i].ndim, dims,
                                       STRATA_F32, init, NULL);
            ur->numel += ur->info[i].numel;
        }
    }
    if (STRATA_OK != st) {
        free(g);
        return st;
    }
    *g_p = g;
    return STRATA_OK;
}

void gpt_fsdp_destroy(gpt_fsdp *g) { free(g); }

gpt_recompute_count gpt_fsdp_recomputed(const gpt_fsdp *g)
{
    gpt_recompute_count none = { 0, 0 };
    return NULL != g ? g->recomputed : none;
}

/* ---- policy strings --------------------------------------------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int gpt_fsdp_check_policy(const char *policy, char *why, size_t len)
{
    static const char *const actions[] = { "keep", "host", "storage", "recompute" };
    char buf[512];
    if (strlen(policy) >= sizeof(buf)) {
        snprintf(why, len, "--act-policy is longer than %zu bytes", sizeof(buf) - 1);
        return -1;
    }
    strcpy(buf, policy);
    if (0 == strcmp(trim(buf), "auto")) return 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); NULL != item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (NULL == eq) {
            snprintf(why, len, "--act-policy: '%s' is not name=action (or use 'auto')", item);
            return -1;
        }
        *eq = '\0';
        /* whitespace around names and actions is allowed, as the runtime's
         * parser allows it */
        char *name = trim(item), *act = trim(eq + 1);
        int known = 0 == strcmp(name, "*") || 0 == strcmp(name, STRATA_UNIT_INPUT), ok_act = 0;
        for (int i = 0; !known && NULL != gpt_fsdp_save_name(i); i++)
            known = 0 == strcmp(name, gpt_fsdp_save_name(i));
        for (int i = 0; i < 4; i++) ok_act |= 0 == strcmp(act, actions[i]);
        if (!known) {
            char names[400] = "";
            size_t at = (size_t)snprintf(names, sizeof(names), "%s", STRATA_UNIT_INPUT);
            for (int i = 0; NULL != gpt_fsdp_save_name(i) && at < sizeof(names); i++)
                at += (size_t)snprintf(names + at, sizeof(names) - at, ", %s",
                                       gpt_fsdp_save_name(i));
            snprintf(why, len, "--act-policy: the model saves no '%s' (it saves: %s; '*' is "
                     "every other name)", name, names);
            return -1;
        }
        if (!ok_act) {
            snprintf(why, len, "--act-policy: '%s=%s': the action must be keep, host, storage "
                     "or recompute", name, act);
            return -1;
        }
    }
    return 0;
}
