/*
 * call.c - what a callback sees: the per-call handle and its accessors,
 * saved activations (checked against the recorded step program the call
 * carries), and the check of the guard bytes (mem.c) that catch writes
 * past the end of a buffer. A callback's device buffers come through
 * mem.c's door, which makes room when the tier is full.
 */
#include "config.h"
#include "fsdp.h"
#include "dev.h"
#include "base/test_fault.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void fsdp_free_saves(strata_unit_t *u)
{
    for (int i = 0; i < u->nsaves; i++) fsdp_buf_free(&u->saves[i].buf);
    u->nsaves = 0;
}

static strata_status_t check_io(strata_unit_t *u, int output, size_t bytes);

/* A device buffer for the callback, through the door that makes room. */
static strata_status_t call_alloc(strata_unit_call_t *c, strata_tag_t tag, size_t bytes,
                                  fsdp_buf_t *b)
{
    return fsdp_buf_alloc_room(c->unit->model, tag, bytes, b);
}

/* A misuse inside a callback is recorded on the call (the first one wins)
 * and also returned, so the callback can stop early; the runtime reports it
 * even if the callback ignores the status. */
static strata_status_t misuse(strata_unit_call_t *c, strata_status_t st)
{
    if (STRATA_OK == c->err) c->err = st;
    return st;
}

#define CTX(c) ((c)->unit->model->ctx)
#define PHASE(c) ((c)->backward ? "backward" : "forward")

/* The slow_rank test fault (base/test_fault.h): rank R takes 5 ms longer
 * in every callback, a persistently slow rank for the straggler check. */
static void slow_rank_fault(const strata_context_t *ctx)
{
    uint64_t r = test_fault_arg("slow_rank");
    if (0 == r || (uint64_t)ctx->rank != r) return;
    struct timespec ts = { 0, 5000000 };
    while (nanosleep(&ts, &ts)) {}
}

strata_status_t fsdp_run_callback(strata_unit_call_t *c)
{
    strata_unit_t *u = c->unit;
    strata_context_t *ctx = CTX(c);
    strata_unit_fn fn = c->backward ? u->backward : u->forward;
    strata_status_t st;

    if (!fn) return base_error(ctx, STRATA_ERR_STATE, "unit '%s' has no %s callback",
                               u->name, PHASE(c));
    c->err = STRATA_OK;
    base_clear_error(ctx);
    if (!c->backward && c->in && STRATA_OK != (st = check_io(u, 0, c->in->bytes))) return st;
    double t0 = base_now();
    int slot = fsdp_dev_time_begin(ctx);   /* cuda: the work on the device, read at step end */
    st = fn(c, u->user_data);
    slow_rank_fault(ctx);
    fsdp_dev_time_end(ctx, slot);
    u->model->compute_s += base_now() - t0;

    /* the guards first: an overrun explains most other symptoms */
    const char *bad = NULL;
    if (c->out && !fsdp_guard_ok(c->out)) bad = "output";
    else if (c->gin && !fsdp_guard_ok(c->gin)) bad = "grad_input";
    else if (c->backward && u->grad.ptr && !fsdp_guard_ok(&u->grad)) bad = "parameter gradients";
    for (int i = 0; !bad && i < c->nwork; i++)
        if (!fsdp_guard_ok(&c->work[i])) bad = "workspace";
    for (int i = 0; !bad && i < u->nsaves; i++)
        if (!fsdp_guard_ok(&u->saves[i].buf)) bad = u->saves[i].name;
    if (u->model->sizing) {   /* the sizing pass records the largest call's workspace */
        size_t w = 0;
        for (int i = 0; i < c->nwork; i++) w += strata_block_size(c->work[i].h);
        if (w > u->model->sizing_ws) u->model->sizing_ws = w;
    }
    for (int i = 0; !bad && i < c->nscratch; i++)
        if (!fsdp_guard_ok(&c->scratch[i])) bad = "save";
    for (int i = 0; i < c->nwork; i++) fsdp_ws_give(u->model, &c->work[i]);
    free(c->work);
    c->work = NULL;
    c->nwork = c->cap_work = 0;
    for (int i = 0; i < c->nscratch; i++) fsdp_buf_free(&c->scratch[i]);
    free(c->scratch);
    c->scratch = NULL;
    c->nscratch = c->cap_scratch = 0;
    if (bad) {
        return base_error(ctx, STRATA_ERR_MISMATCH, "unit '%s' %s wrote past the end of its "
                          "%s buffer; write at most the bytes the runtime reports",
                          u->name, PHASE(c), bad);
    }
    if (STRATA_OK != c->err) return c->err;
    if (st > STRATA_OK)   /* 1 is "in progress" to a caller: never let it pass for either */
        return base_error(ctx, STRATA_ERR_INVALID, "unit '%s' %s callback returned %d: a "
                          "callback returns STRATA_OK (0) or a negative strata_status_t "
                          "error, never a positive value", u->name, PHASE(c), (int)st);
    if (STRATA_OK != st) {
        if ('\0' == ctx->errmsg[0])
            base_error(ctx, st, "unit '%s' %s callback failed: %s", u->name, PHASE(c),
                       strata_strerror(st));
        return st;
    }
    if (!c->backward && 1 != c->out_calls) {
        return base_error(ctx, STRATA_ERR_STATE, "unit '%s' forward %s strata_call_output; "
                          "a forward must allocate its output exactly once", u->name,
                          0 == c->out_calls ? "never called" : "called more than once");
    }
    return STRATA_OK;
}

strata_status_t strata_call_param(strata_unit_call_t *c, int index, void **ptr_p,
                                  size_t *numel_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    if (index < 0 || index >= u->nparams)
        return misuse(c, base_error(CTX(c), STRATA_ERR_INVALID, "unit '%s' has %d params; "
                                    "index %d is out of range", u->name, u->nparams, index));
    size_t esz = strata_dtype_size(u->model->opts.compute_dtype);
    *ptr_p = (char *)u->gathered.ptr + u->params[index].offset * esz;
    if (numel_p) *numel_p = u->params[index].numel;
    return STRATA_OK;
}

strata_status_t strata_call_param_as(strata_unit_call_t *c, int index, strata_dtype_t dtype,
                                     void **ptr_p, size_t *numel_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    strata_dtype_t have = u->model->opts.compute_dtype;
    /* a callback reading f32 from a bf16 copy trains on garbage: say so */
    if (dtype != have)
        return misuse(c, base_error(CTX(c), STRATA_ERR_MISMATCH, "unit '%s' %s reads param %d "
                                    "as %s, but the gathered copy is %s (the model's "
                                    "compute_dtype): read it as %s or change compute_dtype",
                                    u->name, PHASE(c), index, strata_dtype_name(dtype),
                                    strata_dtype_name(have), strata_dtype_name(have)));
    return strata_call_param(c, index, ptr_p, numel_p);
}

strata_status_t strata_call_grad(strata_unit_call_t *c, int index, float **ptr_p,
                                 size_t *numel_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    if (!c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': gradients exist "
                                    "only in backward", u->name));
    if (index < 0 || index >= u->nparams)
        return misuse(c, base_error(CTX(c), STRATA_ERR_INVALID, "unit '%s' has %d params; "
                                    "index %d is out of range", u->name, u->nparams, index));
    *ptr_p = (float *)u->grad.ptr + u->params[index].offset;
    if (numel_p) *numel_p = u->params[index].numel;
    return STRATA_OK;
}

strata_status_t strata_call_input(strata_unit_call_t *c, const void **ptr_p, size_t *bytes_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    *ptr_p = c->in->ptr;
    if (bytes_p) *bytes_p = c->in->bytes;
    return STRATA_OK;
}

/* Whether bytes fit unit u's declaration of its input (0) or output (1);
 * else the error, naming both. */
static strata_status_t check_io(strata_unit_t *u, int output, size_t bytes)
{
    int nd = u->io_ndims[output], any = 0;
    if (nd < 1) return STRATA_OK;
    size_t unit = strata_dtype_size(u->io_dtype[output]);
    char shape[96] = "";
    for (int i = 0; i < nd; i++) {
        size_t d = u->io_dims[output][i];
        size_t l = strlen(shape);
        if (d) snprintf(shape + l, sizeof shape - l, "%s%zu", i ? " x " : "", d);
        else snprintf(shape + l, sizeof shape - l, "%sany", i ? " x " : "");
        if (d) unit *= d;
        else any = 1;
    }
    if (any ? 0 == bytes % unit : bytes == unit) return STRATA_OK;
    return base_error(u->model->ctx, STRATA_ERR_MISMATCH, "unit '%s' %s is %zu bytes, but it "
                      "declared %s [%s]: %s %zu bytes", u->name, output ? "output" : "input",
                      bytes, strata_dtype_name(u->io_dtype[output]), shape,
                      any ? "a multiple of" : "exactly", unit);
}

strata_status_t strata_call_output(strata_unit_call_t *c, size_t bytes, void **ptr_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    if (c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': strata_call_output "
                                    "is for forward; backward reads it with "
                                    "strata_call_forward_output", c->unit->name));
    if (c->out_calls++)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s' forward called "
                                    "strata_call_output twice", c->unit->name));
    if (CALL_RECOMPUTE == c->mode) {
        /* the re-run writes the same values over the output it made before */
        if (bytes != c->out->bytes)
            return misuse(c, base_error(CTX(c), STRATA_ERR_MISMATCH, "unit '%s' recompute "
                                        "asks for an output of %zu bytes; its forward made "
                                        "%zu", c->unit->name, bytes, c->out->bytes));
        *ptr_p = c->out->ptr;
        return STRATA_OK;
    }
    strata_status_t st = check_io(c->unit, 1, bytes);
    if (STRATA_OK != st) return misuse(c, st);
    st = call_alloc(c, STRATA_TAG_ACTIVATION, bytes, c->out);
    if (STRATA_OK != st) return misuse(c, st);
    *ptr_p = c->out->ptr;
    return STRATA_OK;
}

strata_status_t strata_call_forward_output(strata_unit_call_t *c, const void **ptr_p,
                                           size_t *bytes_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    if (!c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': forward makes "
                                    "its output with strata_call_output", c->unit->name));
    *ptr_p = c->out_ro->ptr;
    if (bytes_p) *bytes_p = c->out_ro->bytes;
    return STRATA_OK;
}

strata_status_t strata_call_grad_output(strata_unit_call_t *c, const void **ptr_p,
                                        size_t *bytes_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    if (!c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': grad_output exists "
                                    "only in backward", c->unit->name));
    *ptr_p = c->gout ? c->gout->ptr : NULL;
    if (bytes_p) *bytes_p = c->gout ? c->gout->bytes : 0;
    return STRATA_OK;
}

strata_status_t strata_call_grad_input(strata_unit_call_t *c, void **ptr_p, size_t *bytes_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    if (!c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': grad_input exists "
                                    "only in backward", c->unit->name));
    *ptr_p = c->gin ? c->gin->ptr : NULL;
    if (bytes_p) *bytes_p = c->gin ? c->gin->bytes : 0;
    return STRATA_OK;
}

/* Room for one more buffer in a call's list (workspace, scratch); -1 with
 * the misuse recorded when out of memory. */
static int grow_list(strata_unit_call_t *c, fsdp_buf_t **list, int n, int *cap_p, const char *what)
{
    if (n < *cap_p) return 0;
    int cap = *cap_p ? 2 * *cap_p : 4;
    fsdp_buf_t *w = realloc(*list, (size_t)cap * sizeof *w);
    if (!w) {
        misuse(c, base_error(CTX(c), STRATA_ERR_NOMEM, "%s", what));
        return -1;
    }
    *list = w;
    *cap_p = cap;
    return 0;
}

strata_status_t strata_call_workspace(strata_unit_call_t *c, size_t bytes, void **ptr_p)
{
    if (!c || !ptr_p) return STRATA_ERR_INVALID;
    if (grow_list(c, &c->work, c->nwork, &c->cap_work, "workspace list")) return c->err;
    /* a kept block if one fits, else a new one */
    if (!fsdp_ws_take(c->unit->model, bytes, &c->work[c->nwork])) {
        strata_status_t st = call_alloc(c, STRATA_TAG_WORKSPACE, bytes, &c->work[c->nwork]);
        if (STRATA_OK != st) return misuse(c, st);
    }
    *ptr_p = c->work[c->nwork++].ptr;
    return STRATA_OK;
}

/* A training forward's save against the recording (c->rec): the same
 * name and bytes as the sizing pass saw at this position. */
static strata_status_t check_save(strata_unit_call_t *c, const char *name, size_t bytes)
{
    const sched_unit_t *ru = c->rec.unit;
    if (CALL_SIZING == c->mode || !c->training || !ru) return STRATA_OK;
    strata_context_t *ctx = CTX(c);
    int i = c->save_calls;
    if (i >= ru->nsaves)
        return base_error(ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saves '%s' (%zu "
                          "bytes) as its save #%d; the recorded step program has only %d saves "
                          "for it. The program changed: call strata_model_replan between steps "
                          "to record it again", c->unit->name, name, bytes, i + 1, ru->nsaves);
    size_t want = c->rec.bytes[i];
    if (strcmp(ru->saves[i].name, name) || want != bytes)
        return base_error(ctx, STRATA_ERR_MISMATCH, "unit '%s' forward saves '%s' of %zu "
                          "bytes as its save #%d; the recorded step program has '%s' of %zu "
                          "bytes there. The program changed: call strata_model_replan between "
                          "steps to record it again", c->unit->name, name, bytes, i + 1,
                          ru->saves[i].name, want);
    return STRATA_OK;
}

static fsdp_save_t *find_save(strata_unit_t *u, const char *name)
{
    for (int i = 0; i < u->nsaves; i++)
        if (!strcmp(u->saves[i].name, name)) return &u->saves[i];
    return NULL;
}

/* A save of a forward run again for its output only: a save the plan
 * keeps on the device is handed back (written again with the same
 * values, as a recompute pass may); any other gets scratch that lives
 * while the callback runs, so what is offloaded or dropped stays so. */
static strata_status_t regen_save(strata_unit_call_t *c, const char *name, size_t bytes,
                                  void **ptr_p)
{
    strata_unit_t *u = c->unit;
    fsdp_save_t *old = find_save(u, name);
    if (old && old->buf.h && fsdp_exec_save_kept(u->model, u->index, (int)(old - u->saves))) {
        *ptr_p = old->buf.ptr = strata_block_ptr(old->buf.h, STRATA_TIER_DEVICE);
        if (*ptr_p) return STRATA_OK;
    }
    if (grow_list(c, &c->scratch, c->nscratch, &c->cap_scratch, "scratch list")) return c->err;
    fsdp_buf_t *b = &c->scratch[c->nscratch];
    memset(b, 0, sizeof *b);
    strata_status_t st = call_alloc(c, STRATA_TAG_ACTIVATION, bytes, b);
    if (STRATA_OK != st) return misuse(c, st);
    c->nscratch++;
    *ptr_p = b->ptr;
    return STRATA_OK;
}

/* The next entry of u's save list, named, with no buffer yet (not
 * counted until the caller fills it); NULL out of memory. */
static fsdp_save_t *new_save(strata_unit_t *u, const char *name)
{
    if (u->nsaves == u->cap_saves) {
        int cap = u->cap_saves ? 2 * u->cap_saves : 8;
        fsdp_save_t *s = realloc(u->saves, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        u->saves = s;
        u->cap_saves = cap;
    }
    fsdp_save_t *s = &u->saves[u->nsaves];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

strata_status_t strata_save(strata_unit_call_t *c, const char *name, size_t bytes, void **ptr_p)
{
    if (!c || !ptr_p || !name) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    strata_context_t *ctx = CTX(c);
    if (c->backward)
        return misuse(c, base_error(ctx, STRATA_ERR_STATE, "unit '%s': strata_save('%s') in "
                                    "backward; save in forward, read with strata_saved",
                                    u->name, name));
    if (strlen(name) >= FSDP_NAME_LEN || !name[0])
        return misuse(c, base_error(ctx, STRATA_ERR_INVALID, "unit '%s': save name '%s' is "
                                    "empty or longer than %d bytes", u->name, name,
                                    FSDP_NAME_LEN - 1));
    if (!strcmp(name, SCHED_INPUT_NAME))
        return misuse(c, base_error(ctx, STRATA_ERR_INVALID, "unit '%s': '%s' is the name "
                                    "the runtime gives a unit's input (which it keeps or "
                                    "moves by the policy); save under another name", u->name,
                                    name));
    strata_status_t st = check_save(c, name, bytes);
    if (STRATA_OK != st) return misuse(c, st);
    c->save_calls++;
    if (CALL_REGEN == c->mode) return regen_save(c, name, bytes, ptr_p);
    fsdp_save_t *old = find_save(u, name);
    if (CALL_RECOMPUTE == c->mode) {
        /* a save brought back is handed out again (the re-run writes the
         * same values); one dropped for recompute is made anew */
        if (!old)
            return misuse(c, base_error(ctx, STRATA_ERR_MISMATCH, "unit '%s' recompute saves "
                                        "'%s', which its forward did not", u->name, name));
        if (!old->buf.h) {
            st = call_alloc(c, STRATA_TAG_ACTIVATION, bytes, &old->buf);
            if (STRATA_OK != st) return misuse(c, st);
        }
        *ptr_p = old->buf.ptr;
        return STRATA_OK;
    }
    if (old)
        return misuse(c, base_error(ctx, STRATA_ERR_STATE, "unit '%s' saved '%s' twice in "
                                    "one forward", u->name, name));
    fsdp_save_t *s = new_save(u, name);
    if (!s) return misuse(c, base_error(ctx, STRATA_ERR_NOMEM, "save list"));
    st = call_alloc(c, STRATA_TAG_ACTIVATION, bytes, &s->buf);
    if (STRATA_OK != st) return misuse(c, st);
    u->nsaves++;
    *ptr_p = s->buf.ptr;
    return STRATA_OK;
}

strata_status_t fsdp_save_adopt(strata_unit_t *u, fsdp_buf_t *b)
{
    fsdp_save_t *s = new_save(u, SCHED_INPUT_NAME);
    if (!s) return base_error(u->model->ctx, STRATA_ERR_NOMEM, "save list");
    s->buf = *b;
    u->nsaves++;
    b->ptr = NULL;
    b->h = NULL;     /* the size stays: the backward sizes its input's gradient by it */
    return STRATA_OK;
}

strata_status_t strata_saved(strata_unit_call_t *c, const char *name, void **ptr_p,
                             size_t *bytes_p)
{
    if (!c || !ptr_p || !name) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    if (!c->backward)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s': strata_saved('%s') "
                                    "in forward; saved buffers are for backward",
                                    u->name, name));
    fsdp_save_t *s = find_save(u, name);
    if (!s) {
        char list[256] = "";
        size_t len = 0;
        for (int i = 0; i < u->nsaves && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    u->saves[i].name);
        return misuse(c, base_error(CTX(c), STRATA_ERR_NOT_FOUND, "unit '%s' saved no '%s' "
                                    "in forward (it saved: %s)", u->name, name,
                                    u->nsaves ? list : "nothing"));
    }
    if (!s->buf.ptr)
        return misuse(c, base_error(CTX(c), STRATA_ERR_STATE, "unit '%s' save '%s' is not on "
                                    "the device", u->name, name));
    *ptr_p = s->buf.ptr;
    if (bytes_p) *bytes_p = s->buf.bytes;
    return STRATA_OK;
}

strata_status_t strata_save_work(strata_unit_call_t *c, const char *name, double work)
{
    if (!c) return STRATA_ERR_INVALID;
    strata_unit_t *u = c->unit;
    if (c->backward || !(work >= 0))
        return misuse(c, base_error(CTX(c), STRATA_ERR_INVALID, "unit '%s': strata_save_work('%s', "
                                    "%g) needs a forward and work >= 0", u->name,
                                    name ? name : "(forward)", work));
    if (!c->training) return STRATA_OK;
    if (!name) {
        u->fwd_work = work;
        return STRATA_OK;
    }
    const fsdp_save_t *s = find_save(u, name);
    if (!s)
        return misuse(c, base_error(CTX(c), STRATA_ERR_NOT_FOUND, "unit '%s': strata_save_work"
                                    "('%s') before strata_save('%s')", u->name, name, name));
    int i = (int)(s - u->saves);
    if (i >= u->nsave_work) {
        double *w = realloc(u->save_work, (size_t)(i + 1) * sizeof *w);
        if (!w) return misuse(c, base_error(CTX(c), STRATA_ERR_NOMEM, "save work list"));
        for (int k = u->nsave_work; k <= i; k++) w[k] = 0;
        u->save_work = w;
        u->nsave_work = i + 1;
    }
    u->save_work[i] = work;
    return STRATA_OK;
}

int strata_call_recompute(const strata_unit_call_t *c)
{
    return c && CALL_RECOMPUTE == c->mode;
}

int strata_call_save_held(const strata_unit_call_t *c, const char *name)
{
    if (!c || !name || CALL_RECOMPUTE != c->mode) return 0;
    const fsdp_save_t *s = find_save(c->unit, name);
    return s && !s->dropped;
}

void *strata_call_batch(const strata_unit_call_t *c) { return c ? c->unit->model->batch : NULL; }
int strata_call_micro(const strata_unit_call_t *c) { return c ? c->unit->model->micro : -1; }
int strata_call_n_micro(const strata_unit_call_t *c) { return c ? c->unit->model->n_micro : 0; }
int strata_call_training(const strata_unit_call_t *c) { return c ? c->training : 0; }
int strata_call_unit_index(const strata_unit_call_t *c) { return c ? c->unit->index : -1; }
strata_context_t *strata_call_context(const strata_unit_call_t *c) { return c ? CTX(c) : NULL; }
strata_dtype_t strata_call_compute_dtype(const strata_unit_call_t *c)
{
    return c ? c->unit->model->opts.compute_dtype : STRATA_F32;
}

void *strata_call_stream(const strata_unit_call_t *c)
{
    return c ? CTX(c)->compute_stream : NULL;
}

void strata_call_progress(strata_unit_call_t *c)
{
    if (!c) return;
    strata_model_t *m = c->unit->model;
    if (!m->inflight) return;
    /* never wait for the lock: the progress thread may be testing already */
    if (0 == pthread_mutex_trylock(&m->lock)) {
        /* the callbacks drive progress: the thread stands down */
        m->self_progress = 1;
        fsdp_poll_locked(m);
        pthread_mutex_unlock(&m->lock);
    }
}
