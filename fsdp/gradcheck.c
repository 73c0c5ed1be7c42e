/*
 * gradcheck.c - strata_unit_gradcheck: a unit's backward against central
 * differences of its forward, on a few parameter elements.
 *
 * The unit runs in a private one-unit model on the same context, built
 * from the unit's callbacks, user data and current parameter values, with
 * an f32 compute copy and SGD at learning rate 0 (a step leaves the
 * parameters as they were). The scalar checked is L = sum_i r_i * out_i
 * over the unit's output, r a fixed pseudo-random vector in [-1, 1]: its
 * gradient comes from one training step with r as the grad-output, its
 * central differences from strata_model_eval with one master element
 * moved by +-eps. The caller's model is only read.
 */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "base/grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(0 == sizeof(strata_gradcheck_t) % 8, "strata_gradcheck_t: pad to 8 bytes");

static const base_grow_t report_grow = {
    "strata_gradcheck_t", "strata_gradcheck_t report = STRATA_GRADCHECK_INIT",
    sizeof(strata_gradcheck_t)
};

/* A denominator floor: differences of smaller gradients are absolute */
#define GC_TINY 1e-6

typedef struct {
    strata_context_t *ctx;
    strata_unit_t    *src;        /* the caller's unit */
    strata_model_t   *m;          /* the private model */
    strata_unit_t    *u;          /* its one unit */
    float           **vals;       /* per parameter: its full values */
    float           **grads;      /* per parameter: the backward's gradient */
    float            *r;          /* the loss weights, one per output float */
    float            *out;        /* the output, on the host */
    size_t            nout;
    const void       *input;
    size_t            in_bytes;
    void             *batch;
} gc_t;

static int copy_init(void *user, const char *unit, const char *param, float *full, size_t n,
                     uint64_t seed)
{
    (void)unit;
    (void)param;
    (void)seed;
    memcpy(full, user, n * sizeof *full);
    return 0;
}

/* r_i in [-1, 1], the same on every rank */
static float weight(size_t i)
{
    uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static strata_status_t read_values(gc_t *g)
{
    const int np = g->src->nparams;
    g->vals = calloc((size_t)np, sizeof *g->vals);
    g->grads = calloc((size_t)np, sizeof *g->grads);
    if (!g->vals || !g->grads) return base_error(g->ctx, STRATA_ERR_NOMEM, "gradcheck: no memory");
    strata_status_t st = STRATA_OK;
    for (int i = 0; STRATA_OK == st && i < np; i++) {
        const size_t n = g->src->params[i].numel;
        g->vals[i] = malloc(n * sizeof(float));
        g->grads[i] = malloc(n * sizeof(float));
        if (!g->vals[i] || !g->grads[i])
            st = base_error(g->ctx, STRATA_ERR_NOMEM, "gradcheck: no memory for %zu floats", n);
    }
    for (int i = 0; STRATA_OK == st && i < np; i++)
        st = strata_unit_read_param(g->src, i, g->vals[i], g->src->params[i].numel);
    return st;
}

/* The private model: the unit's callbacks over a copy of its parameters */
static strata_status_t build(gc_t *g)
{
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    o.optimizer = STRATA_OPTIM_SGD;
    o.lr = 0;
    o.momentum = 0;
    strata_status_t st = strata_model_create(g->ctx, &o, &g->m);
    if (STRATA_OK == st)
        st = strata_model_add_unit(g->m, g->src->name, g->src->forward, g->src->backward,
                                   g->src->user_data, &g->u);
    for (int i = 0; STRATA_OK == st && i < g->src->nparams; i++) {
        const fsdp_param_t *p = &g->src->params[i];
        strata_init_t init = { .kind = STRATA_INIT_USER, .fn = copy_init, .user = g->vals[i] };
        st = strata_unit_add_param(g->u, p->name, p->ndims, p->dims, STRATA_F32, init, NULL);
    }
    if (STRATA_OK == st) st = strata_model_commit(g->m);
    /* the trace option names the caller's files: this model traces nothing */
    if (STRATA_OK == st) st = strata_model_trace(g->m, NULL);
    return st;
}

/* The output of the last forward or eval onto the host */
static strata_status_t fetch_out(gc_t *g, const void *out, size_t bytes)
{
    if (!g->out) {
        if (0 == bytes || 0 != bytes % sizeof(float))
            return base_error(g->ctx, STRATA_ERR_MISMATCH, "gradcheck: unit '%s' makes %zu "
                              "output bytes; the check needs an f32 output", g->src->name, bytes);
        g->nout = bytes / sizeof(float);
        g->out = malloc(bytes);
        g->r = malloc(bytes);
        if (!g->out || !g->r) return base_error(g->ctx, STRATA_ERR_NOMEM, "gradcheck: no memory");
        for (size_t i = 0; i < g->nout; i++) g->r[i] = weight(i);
    } else if (bytes != g->nout * sizeof(float)) {
        return base_error(g->ctx, STRATA_ERR_MISMATCH, "gradcheck: unit '%s' made %zu output "
                          "bytes, then %zu", g->src->name, g->nout * sizeof(float), bytes);
    }
    strata_status_t st = fsdp_dev_copy(g->ctx, g->out, out, bytes);
    return STRATA_OK == st ? fsdp_dev_wait(g->ctx) : st;
}

/* One training step with r as the grad-output; the gradients read back */
static strata_status_t analytic(gc_t *g)
{
    const void *out;
    size_t bytes;
    strata_status_t st = strata_model_step_begin(g->m, 1);
    if (STRATA_OK == st)
        st = strata_model_forward(g->m, g->input, g->in_bytes, g->batch, &out, &bytes);
    if (STRATA_OK == st) st = fetch_out(g, out, bytes);
    if (STRATA_OK == st) st = strata_model_backward(g->m, g->r, bytes);
    if (STRATA_OK == st) st = strata_model_step_end(g->m);
    for (int i = 0; STRATA_OK == st && i < g->u->nparams; i++)
        st = fsdp_unit_read_grad(g->u, i, g->grads[i], g->u->params[i].numel);
    return st;
}

static strata_status_t loss(gc_t *g, double *loss_p)
{
    const void *out;
    size_t bytes;
    strata_status_t st = strata_model_eval(g->m, g->input, g->in_bytes, g->batch, &out, &bytes);
    if (STRATA_OK == st) st = fetch_out(g, out, bytes);
    double l = 0;
    for (size_t i = 0; STRATA_OK == st && i < g->nout; i++) l += (double)g->r[i] * g->out[i];
    if (STRATA_OK == st) *loss_p = l;
    return st;
}

/* Element j of the flat parameter vector becomes v (on the rank whose
 * master shard holds it); the gathered copy goes, to be gathered anew. */
static strata_status_t set_flat(gc_t *g, size_t j, float v)
{
    strata_unit_t *u = g->u;
    strata_status_t st = STRATA_OK;
    fsdp_drain(g->m);
    fsdp_gather_release(u);
    fsdp_bgsave_unit_ready(g->m, u->index);   /* a background save's copy first */
    if (j >= u->shard_off && j < u->shard_off + u->shard_len) {
        st = fsdp_state_ready(g->m, u, FSDP_SB_MASTER);   /* up from storage if it lives there */
        if (STRATA_OK == st)
            st = fsdp_dev_copy(g->ctx, (float *)u->master.ptr + (j - u->shard_off), &v, sizeof v);
        if (STRATA_OK == st) st = fsdp_dev_wait(g->ctx);
        if (STRATA_OK == st) st = fsdp_state_put(g->m, u, FSDP_SB_MASTER, 1);
    }
    return STRATA_OK == st ? fsdp_dev_wait(g->ctx) : st;
}

/* Probe k of n: the flat element, its parameter and its index there */
static size_t probe_at(const strata_unit_t *u, int k, int n, int *param_p)
{
    const size_t j = (size_t)(((2.0 * k + 1.0) * (double)u->n) / (2.0 * n));
    int i = 0;
    while (i + 1 < u->nparams && j >= u->params[i + 1].offset) i++;
    *param_p = i;
    return j;
}

static strata_status_t probe(gc_t *g, int nprobe, double eps, strata_gradcheck_t *rep)
{
    strata_status_t st = STRATA_OK;
    for (int k = 0; STRATA_OK == st && k < nprobe; k++) {
        int i;
        const size_t j = probe_at(g->u, k, nprobe, &i), e = j - g->u->params[i].offset;
        const float v = g->vals[i][e], hi = (float)(v + eps), lo = (float)(v - eps);
        double lp = 0, lm = 0;
        st = set_flat(g, j, hi);
        if (STRATA_OK == st) st = loss(g, &lp);
        if (STRATA_OK == st) st = set_flat(g, j, lo);
        if (STRATA_OK == st) st = loss(g, &lm);
        if (STRATA_OK == st) st = set_flat(g, j, v);
        if (STRATA_OK != st) break;
        const double num = (lp - lm) / ((double)hi - (double)lo), ana = g->grads[i][e];
        const double den = fmax(fmax(fabs(num), fabs(ana)), GC_TINY);
        const double err = fabs(num - ana) / den;
        if (0 == rep->nprobed || !(err <= rep->max_rel_err)) {
            rep->max_rel_err = err;
            rep->worst_param = i;
            rep->worst_element = e;
            rep->worst_analytic = ana;
            rep->worst_numeric = num;
        }
        rep->nprobed++;
    }
    return st;
}

static void gc_free(gc_t *g)
{
    strata_model_destroy(g->m);
    for (int i = 0; g->vals && i < g->src->nparams; i++) free(g->vals[i]);
    for (int i = 0; g->grads && i < g->src->nparams; i++) free(g->grads[i]);
    free(g->vals);
    free(g->grads);
    free(g->r);
    free(g->out);
}

static strata_status_t check_args(strata_model_t *model, strata_unit_t *unit, const void *input,
                                  size_t in_bytes, int nprobe, double eps,
                                  const strata_gradcheck_t *report_p)
{
    strata_context_t *ctx = model->ctx;
    if (!unit || unit->model != model || !input || 0 == in_bytes || !report_p)
        return base_error(ctx, STRATA_ERR_INVALID, "strata_unit_gradcheck: a unit of this "
                          "model, an input and a report are needed");
    if (MODEL_READY != model->state || PHASE_IDLE != model->phase)
        return base_error(ctx, STRATA_ERR_STATE, "strata_unit_gradcheck: commit the model and "
                          "call it between steps");
    if (!unit->backward)
        return base_error(ctx, STRATA_ERR_INVALID, "strata_unit_gradcheck: unit '%s' has no "
                          "backward", unit->name);
    if (nprobe < 1 || !(eps > 0) || !(eps < 1))
        return base_error(ctx, STRATA_ERR_INVALID, "strata_unit_gradcheck: nprobe %d (>= 1), "
                          "eps %g (in (0, 1))", nprobe, eps);
    if (!base_grow_size_ok(report_p->size))
        return base_error(ctx, STRATA_ERR_INVALID, "strata_unit_gradcheck: the report's size "
                          "is %zu: set it up with %s", report_p->size, report_grow.init);
    return STRATA_OK;
}

strata_status_t strata_unit_gradcheck(strata_model_t *model, strata_unit_t *unit,
                                      const void *input, size_t in_bytes, void *batch,
                                      int nprobe, double eps, strata_gradcheck_t *report_p)
{
    if (!model) return STRATA_ERR_INVALID;
    strata_status_t st = check_args(model, unit, input, in_bytes, nprobe, eps, report_p);
    if (STRATA_OK != st) return st;
    gc_t g = { .ctx = model->ctx, .src = unit, .input = input, .in_bytes = in_bytes,
               .batch = batch };
    strata_gradcheck_t rep = STRATA_GRADCHECK_INIT;
    rep.worst_param = -1;
    if ((size_t)nprobe > unit->n) nprobe = (int)unit->n;
    st = read_values(&g);
    if (STRATA_OK == st) st = build(&g);
    if (STRATA_OK == st) st = analytic(&g);
    if (STRATA_OK == st) st = probe(&g, nprobe, eps, &rep);
    gc_free(&g);
    return STRATA_OK == st ? base_grow_out(model->ctx, &report_grow, report_p, &rep) : st;
}
