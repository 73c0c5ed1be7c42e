/*
 * exec_check.c - the cross-rank checks that turn a divergent rank into an
 * error on every rank instead of a hang: the registered parameters (at
 * strata_model_commit) and, once step 1 is recorded, the step program
 * (units, saves by name, size and order, gathered bytes) with the plan
 * built from it. Each is a list of entries; comm_agree_entries compares
 * them with one small allreduce and names the first that differs.
 */
#include "config.h"
#include "fsdp.h"
#include "exec_impl.h"
#include "comm/comm.h"

#include <stdio.h>
#include <stdlib.h>

#define LINE 112

typedef struct { int n, cap; uint64_t *h; char *text; const char **desc; } entries_t;

static int add(entries_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add(entries_t *e, const char *fmt, ...)
{
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 64;
        uint64_t *h = realloc(e->h, (size_t)cap * sizeof *h);
        if (h) e->h = h;
        char *t = h ? realloc(e->text, (size_t)cap * LINE) : NULL;
        if (!t) return -1;
        e->text = t;
        e->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text + (size_t)e->n * LINE, LINE, fmt, ap);
    va_end(ap);
    e->h[e->n] = comm_hash_text(e->text + (size_t)e->n * LINE);
    e->n++;
    return 0;
}

static strata_status_t compare(strata_model_t *m, entries_t *e, int failed, const char *what)
{
    strata_status_t st = STRATA_OK;
    e->desc = calloc((size_t)e->n + 1, sizeof *e->desc);
    if (failed || !e->desc) {
        /* still take part, so no rank waits: an entry no other rank has */
        e->n = 0;
        st = STRATA_ERR_NOMEM;
    }
    for (int i = 0; i < e->n && e->desc; i++) e->desc[i] = e->text + (size_t)i * LINE;
    strata_status_t cst = comm_agree_entries(m->ctx->world, what, e->h, e->n, e->desc);
    free(e->h); free(e->text); free(e->desc);
    if (STRATA_OK != st) return base_error(m->ctx, st, "%s: no memory to compare", what);
    return cst;
}

strata_status_t fsdp_check_registration(strata_model_t *m)
{
    entries_t e = { 0 };
    int bad = 0;
    for (int ui = 0; ui < m->nunits && !bad; ui++) {
        const strata_unit_t *u = m->units[ui];
        bad |= add(&e, "unit %d '%s' (%d params)", ui, u->name, u->nparams);
        for (int i = 0; i < u->nparams && !bad; i++)
            bad |= add(&e, "param '%s' of unit %d '%s': %zu elements", u->params[i].name,
                       ui, u->name, u->params[i].numel);
    }
    return compare(m, &e, bad, "the registered parameters (strata_model_commit)");
}

strata_status_t fsdp_check_program(strata_model_t *m)
{
    const fsdp_exec_t *x = m->exec;
    const sched_program_t *p = x->prog;
    entries_t e = { 0 };
    int bad = 0;
    for (int ui = 0; ui < p->nunits && !bad; ui++) {
        const sched_unit_t *u = &p->units[ui];
        /* the saves follow as entries: the first extra or missing one is named */
        bad |= add(&e, "unit %d '%s' (%zu gathered bytes)", ui, u->name, u->ag_bytes);
        for (int s = 0; s < u->nsaves && !bad; s++)
            bad |= add(&e, "save #%d '%s' of unit %d '%s' (%zu bytes)", s, u->saves[s].name, ui,
                       u->name, u->saves[s].bytes);
    }
    char plan[LINE];
    sched_actions_string(&x->acts, p, plan, sizeof plan);
    if (!bad) bad |= add(&e, "plan %s", plan);
    return compare(m, &e, bad, "the step program recorded at step 1");
}
