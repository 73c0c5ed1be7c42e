/*
 * schedule.c - from a step program, a policy and a device budget, the
 * static issue order of every engine and the dependencies between ops.
 *
 * Compute runs, in positions 0..P-1:
 *     F(0) .. F(L-1), then for u = L-1 .. 0: [RECOMPUTE(u)] B(u), then OPTIM.
 * Parameters have 2L uses (F(u), then the backward of u); the all-gather of
 * use j may start once use j-p-1 has finished (p = prefetch), and the comm
 * engine runs AG(0..p), then per use j: [RS of j] AG(j+p+1). Only AG and RS
 * are on comm, so no collective ever queues behind a transfer.
 *
 * Device memory is bounded structurally, not by timing: every item has an
 * interval of compute positions in which it may be live, and deps enforce
 * it (an allocating transfer waits for the compute op before its first
 * position; a compute op waits for the D2H that frees an item whose
 * interval ends there). The bound is the maximum over positions of the
 * summed items, which no timing can exceed.
 *
 *   params of use j   [first(j-p), last(j)]
 *   grads of B(u)     [b(u), first(j+p+1)]    (RS sits before that AG on comm)
 *   keep save         [f(u), b(u)]
 *   recompute save    [f(u), f(u)] + [r(u), b(u)]
 *   offloaded save    [f(u), dl] on device until its D2H; each prefetched
 *                     chunk [g, b(u)], where H2D waits for compute op g-1
 *                     (a chunk counted once where the two meet: its H2D
 *                     waits for its own D2H)
 *
 * naive: dl = f(u)+1, g = first backward position of u, every transfer
 * waits for the previous one: exactly the minimum, with nothing hidden.
 * lhs: drains as late as the simulator predicts they finish (pulled in
 * where the budget demands), prefetch gates as early as memory and the
 * lookahead allow, chunks; a few variants are built and the fastest in
 * simulation is kept.
 */
#include "config.h"
#include "sched/sched.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SCHED_OP_COUNT] = {
    "AG", "F", "D2H", "H2S", "S2H", "H2D", "RECOMPUTE", "B", "RS", "OPTIM"
};

const char *sched_op_kind_name(sched_op_kind_t k)
{
    return k >= 0 && k < SCHED_OP_COUNT ? kind_names[k] : "?";
}

strata_status_t sched_fail(char *err, size_t errlen, strata_status_t st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* ---- layout: positions, uses, saves and chunks --------------------------- */

typedef struct {
    const sched_program_t *prog;
    const sched_opts_t *opts;
    sched_mode_t mode;
    int L, P, J, p;
    int *fpos, *rpos, *bpos, *cpos, *rec;   /* per unit */
    int *ufirst, *ulast, *uunit;            /* per param use */
    int NS, NC;
    int *soff;                              /* first global save of unit u */
    int *sunit, *ssave;                     /* per global save */
    sched_action_t *act;                    /* per global save, effective */
    int *nch, *coff;                        /* per save: chunks, first chunk */
    size_t *cbytes, *coffset;               /* per chunk */
    size_t budget;
} layout_t;

static void layout_free(layout_t *l)
{
    free(l->fpos); free(l->rpos); free(l->bpos); free(l->cpos); free(l->rec);
    free(l->ufirst); free(l->ulast); free(l->uunit);
    free(l->soff); free(l->sunit); free(l->ssave); free(l->act);
    free(l->nch); free(l->coff); free(l->cbytes); free(l->coffset);
    memset(l, 0, sizeof *l);
}

static int offloaded(sched_action_t a) { return SCHED_HOST == a || SCHED_STORAGE == a; }

static int layout_init(layout_t *l, const sched_program_t *prog, const sched_actions_t *acts,
                       const sched_opts_t *opts, sched_mode_t mode, int chunked, int tail)
{
    memset(l, 0, sizeof *l);
    l->prog = prog;
    l->opts = opts;
    l->mode = mode;
    l->L = prog->nunits;
    l->J = 2 * l->L;
    l->p = opts->prefetch < 0 ? 0 : opts->prefetch;
    l->budget = opts->budget[STRATA_TIER_DEVICE] ? opts->budget[STRATA_TIER_DEVICE] : SIZE_MAX;
    int L = l->L;
    l->fpos = calloc((size_t)L, sizeof(int)); l->rpos = calloc((size_t)L, sizeof(int));
    l->bpos = calloc((size_t)L, sizeof(int)); l->cpos = calloc((size_t)L, sizeof(int));
    l->rec = calloc((size_t)L, sizeof(int)); l->soff = calloc((size_t)L + 1, sizeof(int));
    l->ufirst = calloc((size_t)l->J, sizeof(int)); l->ulast = calloc((size_t)l->J, sizeof(int));
    l->uunit = calloc((size_t)l->J, sizeof(int));
    if (!l->fpos || !l->rpos || !l->bpos || !l->cpos || !l->rec || !l->soff || !l->ufirst ||
        !l->ulast || !l->uunit) return -1;
    for (int u = 0; u < L; u++) {
        l->soff[u + 1] = l->soff[u] + prog->units[u].nsaves;
        for (int s = 0; s < prog->units[u].nsaves; s++)
            if (SCHED_RECOMPUTE == acts->action[prog->units[u].saves[s].name_id]) l->rec[u] = 1;
    }
    l->NS = l->soff[L];
    int pos = 0;
    for (int u = 0; u < L; u++) l->fpos[u] = pos++;
    for (int u = L - 1; u >= 0; u--) {
        l->rpos[u] = l->rec[u] ? pos++ : -1;
        l->bpos[u] = pos++;
        l->cpos[u] = l->rec[u] ? l->rpos[u] : l->bpos[u];
    }
    l->P = pos + 1;   /* OPTIM */
    for (int j = 0; j < l->J; j++) {
        int u = j < L ? j : 2 * L - 1 - j;
        l->uunit[j] = u;
        l->ufirst[j] = j < L ? l->fpos[u] : l->cpos[u];
        l->ulast[j] = j < L ? l->fpos[u] : l->bpos[u];
    }
    size_t ns = (size_t)l->NS + 1;
    l->sunit = calloc(ns, sizeof(int)); l->ssave = calloc(ns, sizeof(int));
    l->act = calloc(ns, sizeof *l->act); l->nch = calloc(ns, sizeof(int));
    l->coff = calloc(ns + 1, sizeof(int));
    if (!l->sunit || !l->ssave || !l->act || !l->nch || !l->coff) return -1;
    size_t chunk = opts->link.chunk;
    for (int u = 0; u < L; u++)
        for (int s = 0; s < prog->units[u].nsaves; s++) {
            int i = l->soff[u] + s;
            const sched_save_t *sv = &prog->units[u].saves[s];
            l->sunit[i] = u;
            l->ssave[i] = s;
            l->act[i] = acts->action[sv->name_id];
            if (u >= L - tail && offloaded(l->act[i])) l->act[i] = SCHED_KEEP;
            int n = 0;
            if (offloaded(l->act[i])) {
                n = 1;
                if (chunked && chunk > 0 && sv->bytes > chunk) {
                    size_t k = (sv->bytes + chunk - 1) / chunk;
                    n = k > SCHED_MAX_CHUNKS ? SCHED_MAX_CHUNKS : (int)k;
                }
            }
            l->nch[i] = n;
            l->coff[i + 1] = l->coff[i] + n;
        }
    l->NC = l->coff[l->NS];
    l->cbytes = calloc((size_t)l->NC + 1, sizeof(size_t));
    l->coffset = calloc((size_t)l->NC + 1, sizeof(size_t));
    if (!l->cbytes || !l->coffset) return -1;
    for (int i = 0; i < l->NS; i++) {
        size_t bytes = prog->units[l->sunit[i]].saves[l->ssave[i]].bytes;
        int n = l->nch[i];
        size_t per = n ? (bytes + (size_t)n - 1) / (size_t)n : 0, off = 0;
        for (int c = 0; c < n; c++) {
            size_t b = bytes - off < per ? bytes - off : per;
            l->cbytes[l->coff[i] + c] = b;
            l->coffset[l->coff[i] + c] = off;
            off += b;
        }
    }
    return 0;
}

/* ---- the memory bound over positions ------------------------------------ */

static void add(size_t *use, int a, int b, size_t bytes)
{
    for (int k = a; k <= b; k++) use[k] += bytes;
}

static void sub(size_t *use, int a, int b, size_t bytes)
{
    for (int k = a; k <= b; k++) use[k] -= bytes;
}

/* Everything but the offloaded saves. */
static void base_usage(const layout_t *l, size_t *use)
{
    const sched_program_t *prog = l->prog;
    for (int k = 0; k < l->P; k++) use[k] = prog->resident_bytes;
    for (int j = 0; j < l->J; j++) {
        int from = j - l->p < 0 ? 0 : j - l->p;
        add(use, l->ufirst[from], l->ulast[j], prog->units[l->uunit[j]].ag_bytes);
        if (j >= l->L) {
            int u = l->uunit[j];
            int end = j + l->p + 1 < l->J ? l->ufirst[j + l->p + 1] : l->P - 1;
            add(use, l->bpos[u], end, prog->units[u].ag_bytes);
        }
    }
    for (int i = 0; i < l->NS; i++) {
        int u = l->sunit[i];
        size_t bytes = prog->units[u].saves[l->ssave[i]].bytes;
        if (SCHED_KEEP == l->act[i]) add(use, l->fpos[u], l->bpos[u], bytes);
        else if (SCHED_RECOMPUTE == l->act[i]) {
            add(use, l->fpos[u], l->fpos[u], bytes);
            add(use, l->rpos[u], l->bpos[u], bytes);
        }
    }
}

static size_t max_of(const size_t *use, int n)
{
    size_t m = 0;
    for (int k = 0; k < n; k++) if (use[k] > m) m = use[k];
    return m;
}

/* Decisions: per save its drain position, per chunk its H2D and S2H gates
 * (the first position in which the transfer may run). */
typedef struct { int *dl, *g, *gs; } decide_t;

static void decide_free(decide_t *d) { free(d->dl); free(d->g); free(d->gs); }

static int decide_alloc(decide_t *d, const layout_t *l)
{
    d->dl = calloc((size_t)l->NS + 1, sizeof(int));
    d->g = calloc((size_t)l->NC + 1, sizeof(int));
    d->gs = calloc((size_t)l->NC + 1, sizeof(int));
    return d->dl && d->g && d->gs ? 0 : -1;
}

/* The minimum: drain into the next op, prefetch only when needed. */
static void decide_min(const layout_t *l, decide_t *d)
{
    for (int i = 0; i < l->NS; i++) {
        int u = l->sunit[i];
        d->dl[i] = l->fpos[u] + 1;
        for (int c = 0; c < l->nch[i]; c++) d->g[l->coff[i] + c] = d->gs[l->coff[i] + c] = l->cpos[u];
    }
}

/* Base plus the device copies that offloaded saves keep until drained. */
static void usage_drains(const layout_t *l, const decide_t *d, size_t *use)
{
    base_usage(l, use);
    for (int i = 0; i < l->NS; i++)
        if (offloaded(l->act[i]))
            add(use, l->fpos[l->sunit[i]], d->dl[i], l->prog->units[l->sunit[i]].saves[l->ssave[i]].bytes);
}

/* A prefetched chunk is on device from its gate to B(u); its H2D waits for
 * its own D2H, so where that interval meets the drain interval the chunk
 * is counted once: from max(g, dl+1). */
static void add_chunks(const layout_t *l, const decide_t *d, size_t *use)
{
    for (int i = 0; i < l->NS; i++)
        for (int c = 0; c < l->nch[i]; c++) {
            int ci = l->coff[i] + c, from = d->g[ci] > d->dl[i] ? d->g[ci] : d->dl[i] + 1;
            add(use, from, l->bpos[l->sunit[i]], l->cbytes[ci]);
        }
}

static void usage_of(const layout_t *l, const decide_t *d, size_t *use)
{
    usage_drains(l, d, use);
    add_chunks(l, d, use);
}

/* Pull drains in where the budget is exceeded: at each over-budget
 * position, the oldest pending offload (the D2H engine finishes it first)
 * must be done before that position's op. */
static void tighten_drains(const layout_t *l, decide_t *d, size_t *use)
{
    for (int k = 0; k < l->P; k++) {
        while (use[k] > l->budget) {
            int best = -1;
            for (int i = 0; i < l->NS; i++) {
                if (!offloaded(l->act[i])) continue;
                int f = l->fpos[l->sunit[i]];
                if (f <= k - 2 && d->dl[i] >= k && (best < 0 || f < l->fpos[l->sunit[best]])) best = i;
            }
            if (best < 0) break;
            size_t bytes = l->prog->units[l->sunit[best]].saves[l->ssave[best]].bytes;
            sub(use, k, d->dl[best], bytes);
            d->dl[best] = k - 1;
        }
    }
}

/* Gate every prefetch chunk as early as memory and the lookahead allow, in
 * the order they are needed (the H2D engine's order). -1 if one does not
 * fit even right before its use. use holds everything but the chunks;
 * the drains (d->dl) are final. */
static int place_gates(const layout_t *l, decide_t *d, size_t *use)
{
    int look = l->opts->lookahead < 0 ? 0 : l->opts->lookahead;
    int gprev = 0;
    for (int u = l->L - 1; u >= 0; u--)
        for (int s = 0; s < l->prog->units[u].nsaves; s++) {
            int i = l->soff[u] + s;
            if (!offloaded(l->act[i])) continue;
            for (int c = 0; c < l->nch[i]; c++) {
                int ci = l->coff[i] + c;
                size_t bytes = l->cbytes[ci];
                int lo = l->cpos[u] - look;
                if (lo < l->fpos[u] + 1) lo = l->fpos[u] + 1;
                if (lo < gprev) lo = gprev;
                int g = lo;
                for (int k = l->bpos[u]; k >= g && k > d->dl[i]; k--)
                    if (use[k] + bytes > l->budget) { g = k + 1; break; }
                if (g > l->cpos[u]) return -1;
                add(use, g > d->dl[i] ? g : d->dl[i] + 1, l->bpos[u], bytes);
                d->g[ci] = g;
                gprev = g;
                /* storage: the read-back may start `look` positions before the H2D */
                int gs = g - look;
                d->gs[ci] = gs < l->fpos[u] + 1 ? l->fpos[u] + 1 : gs;
            }
        }
    return 0;
}

/* ---- building ops ------------------------------------------------------- */

typedef struct { int op, dep; } edge_t;

typedef struct {
    sched_t *s;
    edge_t *edges;
    int nedges, capedges;
} builder_t;

static int new_op(builder_t *b, sched_op_kind_t kind, sched_engine_t eng, int unit, int save)
{
    sched_t *s = b->s;
    if (s->nops == s->capops) {
        int cap = s->capops ? 2 * s->capops : 256;
        sched_op_t *o = realloc(s->ops, (size_t)cap * sizeof *o);
        if (!o) return -1;
        s->ops = o;
        s->capops = cap;
    }
    sched_op_t *o = &s->ops[s->nops];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->engine = eng;
    o->unit = unit;
    o->save = save;
    o->pos = -1;
    int n = s->norder[eng];
    int *ord = realloc(s->order[eng], (size_t)(n + 1) * sizeof(int));
    if (!ord) return -1;
    s->order[eng] = ord;
    ord[n] = s->nops;
    s->norder[eng] = n + 1;
    return s->nops++;
}

static int dep(builder_t *b, int op, int on)
{
    if (op < 0 || on < 0 || op == on) return 0;
    if (b->nedges == b->capedges) {
        int cap = b->capedges ? 2 * b->capedges : 1024;
        edge_t *e = realloc(b->edges, (size_t)cap * sizeof *e);
        if (!e) return -1;
        b->edges = e;
        b->capedges = cap;
    }
    b->edges[b->nedges++] = (edge_t){ op, on };
    return 0;
}

static int cmp_edge(const void *x, const void *y)
{
    const edge_t *a = x, *b = y;
    if (a->op != b->op) return a->op < b->op ? -1 : 1;
    return (a->dep > b->dep) - (a->dep < b->dep);
}

/* Sort edges into per-op dependency lists (duplicates dropped). */
static int finish_deps(builder_t *b)
{
    sched_t *s = b->s;
    qsort(b->edges, (size_t)b->nedges, sizeof *b->edges, cmp_edge);
    s->deps = malloc(((size_t)b->nedges + 1) * sizeof(int));
    if (!s->deps) return -1;
    int n = 0;
    for (int i = 0; i < b->nedges; i++) {
        if (i && b->edges[i].op == b->edges[i - 1].op && b->edges[i].dep == b->edges[i - 1].dep)
            continue;
        s->deps[n++] = b->edges[i].dep;
        s->ops[b->edges[i].op].ndeps++;
    }
    s->ndeps = n;
    int off = 0;
    for (int i = 0; i < s->nops; i++) {
        s->ops[i].deps = s->deps + off;
        off += s->ops[i].ndeps;
    }
    return 0;
}

static int build_ops(const layout_t *l, const decide_t *d, sched_t *s)
{
    const sched_program_t *prog = l->prog;
    const sched_link_t *link = &l->opts->link;
    int L = l->L, rc = -1;
    builder_t b = { s, NULL, 0, 0 };
    int *fid = malloc((size_t)L * sizeof(int)), *rid = malloc((size_t)L * sizeof(int));
    int *bid = malloc((size_t)L * sizeof(int)), *rsid = malloc((size_t)L * sizeof(int));
    int *agid = malloc((size_t)l->J * sizeof(int)), *posop = malloc((size_t)l->P * sizeof(int));
    int nc = l->NC + 1;
    int *d2h = malloc((size_t)nc * sizeof(int)), *h2s = malloc((size_t)nc * sizeof(int));
    int *s2h = malloc((size_t)nc * sizeof(int)), *h2d = malloc((size_t)nc * sizeof(int));
    if (!fid || !rid || !bid || !rsid || !agid || !posop || !d2h || !h2s || !s2h || !h2d) goto out;
    for (int i = 0; i < nc; i++) d2h[i] = h2s[i] = s2h[i] = h2d[i] = -1;

    /* compute, in position order */
    for (int u = 0; u < L; u++) {
        const sched_unit_t *x = &prog->units[u];
        int id = fid[u] = new_op(&b, SCHED_OP_F, SCHED_COMPUTE, u, -1);
        if (id < 0) goto out;
        sched_op_t *o = &s->ops[id];
        o->seconds = x->cost_s[SCHED_COST_FWD];
        o->mem_free[STRATA_TIER_DEVICE] = x->ag_bytes;
        for (int i = l->soff[u]; i < l->soff[u + 1]; i++) {
            size_t by = x->saves[l->ssave[i]].bytes;
            o->mem_alloc[STRATA_TIER_DEVICE] += by;
            if (SCHED_RECOMPUTE == l->act[i]) o->mem_free[STRATA_TIER_DEVICE] += by;
        }
    }
    for (int u = L - 1; u >= 0; u--) {
        const sched_unit_t *x = &prog->units[u];
        rid[u] = -1;
        if (l->rec[u]) {
            int id = rid[u] = new_op(&b, SCHED_OP_RECOMPUTE, SCHED_COMPUTE, u, -1);
            if (id < 0) goto out;
            s->ops[id].seconds = x->cost_s[SCHED_COST_FWD];
            for (int i = l->soff[u]; i < l->soff[u + 1]; i++)
                if (SCHED_RECOMPUTE == l->act[i])
                    s->ops[id].mem_alloc[STRATA_TIER_DEVICE] += x->saves[l->ssave[i]].bytes;
        }
        int id = bid[u] = new_op(&b, SCHED_OP_B, SCHED_COMPUTE, u, -1);
        if (id < 0) goto out;
        sched_op_t *o = &s->ops[id];
        o->seconds = x->cost_s[SCHED_COST_BWD];
        o->mem_alloc[STRATA_TIER_DEVICE] = x->ag_bytes;
        o->mem_free[STRATA_TIER_DEVICE] = x->ag_bytes;
        for (int i = 0; i < x->nsaves; i++) o->mem_free[STRATA_TIER_DEVICE] += x->saves[i].bytes;
    }
    int optid = new_op(&b, SCHED_OP_OPTIM, SCHED_COMPUTE, -1, -1);
    if (optid < 0) goto out;
    s->ops[optid].seconds = prog->optim_s;
    for (int k = 0; k < s->norder[SCHED_COMPUTE]; k++) {
        posop[k] = s->order[SCHED_COMPUTE][k];
        s->ops[posop[k]].pos = k;
    }

    /* comm: AG(0..p), then per use j: [RS of j] AG(j+p+1) */
    for (int j = 0; j < l->J; j++) agid[j] = -1;
    for (int u = 0; u < L; u++) rsid[u] = -1;
    for (int j = -1; j < l->J; j++) {
        if (j >= l->L) {
            int u = l->uunit[j];
            int id = rsid[u] = new_op(&b, SCHED_OP_RS, SCHED_COMM, u, -1);
            if (id < 0) goto out;
            s->ops[id].seconds = prog->units[u].cost_s[SCHED_COST_RS];
            s->ops[id].mem_free[STRATA_TIER_DEVICE] = prog->units[u].ag_bytes;
        }
        int from = j < 0 ? 0 : j + l->p + 1, to = j < 0 ? l->p : j + l->p + 1;
        for (int a = from; a <= to && a < l->J; a++) {
            int u = l->uunit[a];
            int id = agid[a] = new_op(&b, SCHED_OP_AG, SCHED_COMM, u, -1);
            if (id < 0) goto out;
            s->ops[id].seconds = prog->units[u].cost_s[SCHED_COST_AG];
            s->ops[id].bytes = prog->units[u].ag_bytes;
            s->ops[id].mem_alloc[STRATA_TIER_DEVICE] = prog->units[u].ag_bytes;
        }
    }

    /* transfers: forward legs in forward order, backward legs in need order */
    for (int pass = 0; pass < 4; pass++)
        for (int k = 0; k < L; k++) {
            int u = pass < 2 ? k : L - 1 - k;
            for (int i = l->soff[u]; i < l->soff[u + 1]; i++) {
                if (!offloaded(l->act[i])) continue;
                int storage = SCHED_STORAGE == l->act[i];
                if ((1 == pass || 2 == pass) && !storage) continue;
                static const sched_op_kind_t kinds[4] = { SCHED_OP_D2H, SCHED_OP_H2S, SCHED_OP_S2H, SCHED_OP_H2D };
                static const sched_engine_t engs[4] = { SCHED_D2H, SCHED_IO, SCHED_IO, SCHED_H2D };
                /* tier allocated at the start, tier freed at the end */
                static const int from_t[4] = { STRATA_TIER_DEVICE, STRATA_TIER_PINNED_HOST, STRATA_TIER_STORAGE, STRATA_TIER_PINNED_HOST };
                static const int to_t[4] = { STRATA_TIER_PINNED_HOST, STRATA_TIER_STORAGE, STRATA_TIER_PINNED_HOST, STRATA_TIER_DEVICE };
                int *ids = 0 == pass ? d2h : 1 == pass ? h2s : 2 == pass ? s2h : h2d;
                for (int c = 0; c < l->nch[i]; c++) {
                    int ci = l->coff[i] + c;
                    int id = ids[ci] = new_op(&b, kinds[pass], engs[pass], u, l->ssave[i]);
                    if (id < 0) goto out;
                    sched_op_t *o = &s->ops[id];
                    o->chunk = c;
                    o->nchunks = l->nch[i];
                    o->bytes = l->cbytes[ci];
                    o->offset = l->coffset[ci];
                    o->seconds = sched_link_time(link, engs[pass], o->bytes);
                    o->mem_alloc[to_t[pass]] = o->bytes;
                    o->mem_free[from_t[pass]] = o->bytes;
                }
            }
        }

    /* dependencies */
    for (int j = 0; j < l->J; j++)
        if (j - l->p - 1 >= 0 && dep(&b, agid[j], posop[l->ulast[j - l->p - 1]])) goto out;
    for (int u = 0; u < L; u++) {
        int bj = 2 * L - 1 - u;
        if (dep(&b, fid[u], agid[u]) || dep(&b, bid[u], agid[bj]) || dep(&b, rid[u], agid[bj]) ||
            dep(&b, rsid[u], bid[u]) || dep(&b, optid, rsid[u])) goto out;
    }
    for (int i = 0; i < l->NS; i++) {
        if (!offloaded(l->act[i])) continue;
        int u = l->sunit[i], storage = SCHED_STORAGE == l->act[i];
        int consumer = l->rec[u] ? rid[u] : bid[u];
        for (int c = 0; c < l->nch[i]; c++) {
            int ci = l->coff[i] + c;
            if (dep(&b, d2h[ci], fid[u])) goto out;
            if (storage && (dep(&b, h2s[ci], d2h[ci]) || dep(&b, s2h[ci], h2s[ci]) ||
                            dep(&b, h2d[ci], s2h[ci]))) goto out;
            if (!storage && dep(&b, h2d[ci], d2h[ci])) goto out;
            if (d->g[ci] >= 1 && dep(&b, h2d[ci], posop[d->g[ci] - 1])) goto out;
            if (storage && d->gs[ci] >= 1 && dep(&b, s2h[ci], posop[d->gs[ci] - 1])) goto out;
            if (dep(&b, consumer, h2d[ci])) goto out;
        }
        int last = l->coff[i] + l->nch[i] - 1;
        if (d->dl[i] < l->cpos[u] && dep(&b, posop[d->dl[i]], d2h[last])) goto out;
    }
    if (SCHED_MODE_NAIVE == l->mode) {
        /* one transfer at a time, in program order, and compute waits for
         * each unit's transfers right after producing / right before using */
        int prev = -1;
        for (int u = 0; u < L; u++) {
            for (int i = l->soff[u]; i < l->soff[u + 1]; i++)
                for (int c = 0; offloaded(l->act[i]) && c < l->nch[i]; c++) {
                    int ci = l->coff[i] + c;
                    if (dep(&b, d2h[ci], prev)) goto out;
                    prev = d2h[ci];
                    if (h2s[ci] >= 0) {
                        if (dep(&b, h2s[ci], prev)) goto out;
                        prev = h2s[ci];
                    }
                }
            if (prev >= 0 && dep(&b, posop[l->fpos[u] + 1], prev)) goto out;
        }
        for (int u = L - 1; u >= 0; u--)
            for (int i = l->soff[u]; i < l->soff[u + 1]; i++)
                for (int c = 0; offloaded(l->act[i]) && c < l->nch[i]; c++) {
                    int ci = l->coff[i] + c;
                    if (s2h[ci] >= 0) {
                        if (dep(&b, s2h[ci], prev)) goto out;
                        prev = s2h[ci];
                    }
                    if (dep(&b, h2d[ci], prev)) goto out;
                    prev = h2d[ci];
                }
    }
    if (finish_deps(&b)) goto out;
    rc = 0;
out:
    free(b.edges);
    free(fid); free(rid); free(bid); free(rsid); free(agid); free(posop);
    free(d2h); free(h2s); free(s2h); free(h2d);
    return rc;
}

static sched_t *sched_new(const sched_program_t *prog, sched_mode_t mode)
{
    sched_t *s = calloc(1, sizeof *s);
    if (s) {
        s->prog = prog;
        s->mode = mode;
    }
    return s;
}

void sched_destroy(sched_t *s)
{
    if (!s) return;
    free(s->ops);
    free(s->deps);
    free(s->save_off);
    free(s->save_act);
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) free(s->order[e]);
    free(s);
}

/* Build one schedule for a layout; min_drains forces the minimal drains. */
static strata_status_t build_variant(const layout_t *l, int min_drains, sched_t **s_p)
{
    decide_t d = { 0 };
    size_t *use = calloc((size_t)l->P, sizeof(size_t));
    sched_t *s = NULL;
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!use || decide_alloc(&d, l)) goto out;
    decide_min(l, &d);
    usage_of(l, &d, use);
    if (max_of(use, l->P) > l->budget) { st = STRATA_ERR_TIER_FULL; goto out; }

    if (SCHED_MODE_LHS == l->mode) {
        if (!min_drains) {
            /* probe: no drains, gates at the lookahead, memory ignored; its
             * predicted D2H completions place the drains */
            sched_t *probe = sched_new(l->prog, l->mode);
            decide_t pd = { 0 };
            double *start = NULL, *end = NULL;
            int ok = probe && 0 == decide_alloc(&pd, l);
            if (ok) {
                int look = l->opts->lookahead < 0 ? 0 : l->opts->lookahead;
                for (int i = 0; i < l->NS; i++) {
                    int u = l->sunit[i];
                    pd.dl[i] = l->cpos[u];
                    for (int c = 0; c < l->nch[i]; c++) {
                        int g = l->cpos[u] - look;
                        pd.g[l->coff[i] + c] = pd.gs[l->coff[i] + c] = g < l->fpos[u] + 1 ? l->fpos[u] + 1 : g;
                    }
                }
                ok = 0 == build_ops(l, &pd, probe);
            }
            if (ok) {
                start = malloc((size_t)probe->nops * sizeof(double));
                end = malloc((size_t)probe->nops * sizeof(double));
                sched_result_t r;
                ok = start && end && STRATA_OK == sched_simulate(probe, &r, start, end, NULL, 0);
            }
            if (ok) {
                /* compute op start times by position */
                double *cstart = malloc((size_t)l->P * sizeof(double));
                double *d2hend = calloc((size_t)l->NS + 1, sizeof(double));
                ok = cstart && d2hend;
                for (int k = 0; ok && k < probe->nops; k++) {
                    const sched_op_t *o = &probe->ops[k];
                    if (o->pos >= 0) cstart[o->pos] = start[k];
                    if (SCHED_OP_D2H == o->kind) {
                        int i = l->soff[o->unit] + o->save;
                        if (end[k] > d2hend[i]) d2hend[i] = end[k];
                    }
                }
                for (int i = 0; ok && i < l->NS; i++) {
                    if (!offloaded(l->act[i])) continue;
                    int u = l->sunit[i], k = l->fpos[u] + 1;
                    while (k < l->cpos[u] && cstart[k] < d2hend[i] - 1e-12) k++;
                    d.dl[i] = k;
                }
                free(cstart);
                free(d2hend);
            }
            free(start);
            free(end);
            decide_free(&pd);
            sched_destroy(probe);
            if (!ok) goto out;
            usage_drains(l, &d, use);
            tighten_drains(l, &d, use);
        } else {
            usage_drains(l, &d, use);
        }
        if (place_gates(l, &d, use)) { st = STRATA_ERR_TIER_FULL; goto out; }
    }
    usage_of(l, &d, use);
    s = sched_new(l->prog, l->mode);
    if (!s || build_ops(l, &d, s)) goto out;
    s->device_bound = max_of(use, l->P);
    s->save_off = malloc(((size_t)l->L + 1) * sizeof(int));
    s->save_act = malloc(((size_t)l->NS + 1) * sizeof(sched_action_t));
    if (!s->save_off || !s->save_act) goto out;
    memcpy(s->save_off, l->soff, ((size_t)l->L + 1) * sizeof(int));
    memcpy(s->save_act, l->act, (size_t)l->NS * sizeof(sched_action_t));
    if (s->device_bound > l->budget) { st = STRATA_ERR_TIER_FULL; goto out; }
    *s_p = s;
    s = NULL;
    st = STRATA_OK;
out:
    sched_destroy(s);
    decide_free(&d);
    free(use);
    return st;
}

/* Exposed transfer time of s were compute and collectives SCHED_FAST
 * times as long as predicted (transfers, paced by the link, unchanged). */
static double fast_exposure(sched_t *s)
{
    double *keep = malloc(((size_t)s->nops + 1) * sizeof *keep);
    if (!keep) return INFINITY;
    for (int i = 0; i < s->nops; i++) {
        keep[i] = s->ops[i].seconds;
        if (SCHED_COMPUTE == s->ops[i].engine || SCHED_COMM == s->ops[i].engine)
            s->ops[i].seconds *= SCHED_FAST;
    }
    sched_result_t r;
    double e = STRATA_OK == sched_simulate(s, &r, NULL, NULL, NULL, 0) ? r.exposed_transfer_s
                                                                         : INFINITY;
    for (int i = 0; i < s->nops; i++) s->ops[i].seconds = keep[i];
    free(keep);
    return e;
}

size_t sched_min_device(const sched_program_t *prog, const sched_actions_t *acts,
                        const sched_opts_t *opts)
{
    layout_t l;
    decide_t d = { 0 };
    size_t m = SIZE_MAX;
    if (!prog || !acts || !opts || prog->nunits < 1) return m;
    if (0 == layout_init(&l, prog, acts, opts, SCHED_MODE_NAIVE, 0, 0) && 0 == decide_alloc(&d, &l)) {
        size_t *use = calloc((size_t)l.P, sizeof(size_t));
        if (use) {
            decide_min(&l, &d);
            usage_of(&l, &d, use);
            m = max_of(use, l.P);
        }
        free(use);
    }
    decide_free(&d);
    layout_free(&l);
    return m;
}

static strata_status_t check_tiers(const sched_t *s, const sched_opts_t *opts, const sched_result_t *r,
                                   char *err, size_t errlen)
{
    char a[32], b[32];
    for (int t = STRATA_TIER_PINNED_HOST; t < STRATA_TIER_COUNT; t++)
        if (opts->budget[t] && r->peak[t] > opts->budget[t])
            return sched_fail(err, errlen, STRATA_ERR_TIER_FULL,
                              "%s tier: the %s schedule needs %s, budget %s", strata_tier_name(t),
                              sched_mode_name(s->mode), strata_format_size(r->peak[t], a, sizeof a),
                              strata_format_size(opts->budget[t], b, sizeof b));
    return STRATA_OK;
}

strata_status_t sched_build(const sched_program_t *prog, const sched_actions_t *acts,
                            const sched_opts_t *opts, sched_t **sched_p, char *err, size_t errlen)
{
    if (!prog || !acts || !opts || !sched_p)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "sched_build: NULL argument");
    if (prog->recording || prog->nunits < 1)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "sched_build: no recorded program");
    if (acts->nnames != prog->nnames)
        return sched_fail(err, errlen, STRATA_ERR_INVALID,
                          "sched_build: actions for %d names, the program saves %d", acts->nnames,
                          prog->nnames);
    size_t need = sched_min_device(prog, acts, opts);
    size_t budget = opts->budget[STRATA_TIER_DEVICE] ? opts->budget[STRATA_TIER_DEVICE] : SIZE_MAX;
    if (need > budget) {
        char a[32], b[32], c[32];
        return sched_fail(err, errlen, STRATA_ERR_TIER_FULL,
                          "device tier too small for this policy: need %s, budget %s (resident %s); "
                          "offload or recompute more, or raise device_mem",
                          strata_format_size(need, a, sizeof a), strata_format_size(budget, b, sizeof b),
                          strata_format_size(prog->resident_bytes, c, sizeof c));
    }

    /* variants: naive has one. lhs tries chunked or whole transfers, and
     * keeping the offloads of the last T units on device (their backward
     * comes first, before a round trip could finish) for T = 0, 1, 2, 4..
     * and all units, while that fits; plus the minimal-drain unchunked
     * form, which is never slower than naive. The fastest in simulation
     * wins; among those within SCHED_TIE of it (and not slower than that
     * minimal form) the one that moves the fewest bytes: a transfer the
     * simulator hides can still show on a real, noisy machine, and one
     * not made cannot. */
    typedef struct { int chunked, tail, min_drains; } variant_t;
    variant_t var[64];
    int nvar = 0;
    if (SCHED_MODE_NAIVE == opts->mode) var[nvar++] = (variant_t){ 0, 0, 1 };
    else {
        var[nvar++] = (variant_t){ 0, 0, 1 };
        for (int t = 0; nvar < 60; t = t ? 2 * t : 1) {
            if (t > prog->nunits) t = prog->nunits;
            var[nvar++] = (variant_t){ 1, t, 0 };
            var[nvar++] = (variant_t){ 0, t, 0 };
            if (t == prog->nunits) break;
        }
    }
    sched_t *cand[64] = { NULL };
    sched_result_t cand_r[64];
    double base_s = -1;       /* the minimal-drain form's step, if it built */
    sched_t *best = NULL;
    sched_result_t best_r = { 0 };
    strata_status_t st = STRATA_ERR_TIER_FULL;
    for (int v = 0; v < nvar; v++) {
        layout_t l;
        sched_t *s = NULL;
        if (layout_init(&l, prog, acts, opts, opts->mode, var[v].chunked, var[v].tail)) {
            layout_free(&l);
            for (int k = 0; k < v; k++) sched_destroy(cand[k]);
            return sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory building the schedule");
        }
        strata_status_t vst = build_variant(&l, var[v].min_drains, &s);
        layout_free(&l);
        if (STRATA_ERR_NOMEM == vst) {
            for (int k = 0; k < v; k++) sched_destroy(cand[k]);
            return sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory building the schedule");
        }
        if (STRATA_OK != vst) continue;
        s->tail_kept = var[v].tail;
        sched_result_t r;
        vst = sched_simulate(s, &r, NULL, NULL, err, errlen);
        if (STRATA_OK == vst) vst = check_tiers(s, opts, &r, err, errlen);
        if (STRATA_OK != vst) {
            st = vst;
            sched_destroy(s);
            continue;
        }
        if (0 == v) base_s = r.step_s;
        cand[v] = s;
        cand_r[v] = r;
        if (!best || r.step_s < best_r.step_s - 1e-12) {
            best = s;
            best_r = r;
        }
    }
    if (best && nvar > 1) {
        /* robust choice: the measured costs are means, and a rank that
         * computes faster than them reaches a drain or a prefetched save
         * before the transfer is done. Score = predicted step + the
         * transfer time exposed were compute and collectives SCHED_FAST
         * times as long; never slower than the minimal form; ties (within
         * SCHED_TIE) to the fewest bytes moved */
        double limit = base_s >= 0 && base_s > best_r.step_s ? base_s : best_r.step_s;
        double score[64], best_sc = INFINITY;
        int pick = -1;
        for (int v = 0; v < nvar; v++) {
            score[v] = INFINITY;
            if (!cand[v] || cand_r[v].step_s > limit + 1e-12) continue;
            score[v] = cand_r[v].step_s + fast_exposure(cand[v]);
            if (score[v] < best_sc) best_sc = score[v];
        }
        for (int v = 0; v < nvar; v++)
            if (score[v] <= best_sc * (1 + SCHED_TIE) + 1e-12 &&
                (pick < 0 || cand_r[v].transfer_s < cand_r[pick].transfer_s - 1e-12 ||
                 (cand_r[v].transfer_s <= cand_r[pick].transfer_s + 1e-12 && score[v] < score[pick])))
                pick = v;
        if (pick >= 0) {
            best = cand[pick];
            best_r = cand_r[pick];
        }
    }
    if (best)
        for (int v = 0; v < nvar; v++)
            if (cand[v] != best) sched_destroy(cand[v]);
    if (!best) {
        if (STRATA_ERR_TIER_FULL == st && (!err || !*err))
            return sched_fail(err, errlen, st, "no %s schedule fits the budgets", sched_mode_name(opts->mode));
        return st;
    }
    if (err && errlen) err[0] = '\0';
    *sched_p = best;
    return STRATA_OK;
}

/* ---- queries and printing ------------------------------------------------ */

int sched_nops(const sched_t *s) { return s ? s->nops : 0; }

const sched_op_t *sched_op(const sched_t *s, int id)
{
    return s && id >= 0 && id < s->nops ? &s->ops[id] : NULL;
}

const int *sched_engine_order(const sched_t *s, sched_engine_t e, int *n_p)
{
    if (!s || e < 0 || e >= SCHED_ENGINE_COUNT) { if (n_p) *n_p = 0; return NULL; }
    if (n_p) *n_p = s->norder[e];
    return s->order[e];
}

size_t sched_device_bound(const sched_t *s) { return s ? s->device_bound : 0; }
sched_mode_t sched_mode(const sched_t *s) { return s ? s->mode : SCHED_MODE_LHS; }
int sched_tail_kept(const sched_t *s) { return s ? s->tail_kept : 0; }

int sched_save_action(const sched_t *s, int unit, int save)
{
    if (!s || !s->save_off || unit < 0 || unit >= s->prog->nunits || save < 0 ||
        save >= s->prog->units[unit].nsaves) return -1;
    return (int)s->save_act[s->save_off[unit] + save];
}

void sched_update_costs(sched_t *s)
{
    if (!s || !s->prog) return;
    const sched_program_t *prog = s->prog;
    for (int i = 0; i < s->nops; i++) {
        sched_op_t *o = &s->ops[i];
        if (SCHED_OP_OPTIM == o->kind) { o->seconds = prog->optim_s; continue; }
        if (o->unit < 0 || o->unit >= prog->nunits) continue;
        const double *c = prog->units[o->unit].cost_s;
        switch (o->kind) {
        case SCHED_OP_F: case SCHED_OP_RECOMPUTE: o->seconds = c[SCHED_COST_FWD]; break;
        case SCHED_OP_B:  o->seconds = c[SCHED_COST_BWD]; break;
        case SCHED_OP_AG: o->seconds = c[SCHED_COST_AG]; break;
        case SCHED_OP_RS: o->seconds = c[SCHED_COST_RS]; break;
        default: break;   /* transfers: the link model's times */
        }
    }
}

const char *sched_op_label(const sched_t *s, int id, char *buf, size_t len)
{
    const sched_op_t *o = sched_op(s, id);
    if (!o) { snprintf(buf, len, "?"); return buf; }
    if (o->unit < 0) snprintf(buf, len, "%s", sched_op_kind_name(o->kind));
    else if (o->save < 0) snprintf(buf, len, "%s u%d", sched_op_kind_name(o->kind), o->unit);
    else if (o->nchunks > 1)
        snprintf(buf, len, "%s u%d %s [%d/%d]", sched_op_kind_name(o->kind), o->unit,
                 s->prog->units[o->unit].saves[o->save].name, o->chunk + 1, o->nchunks);
    else
        snprintf(buf, len, "%s u%d %s", sched_op_kind_name(o->kind), o->unit,
                 s->prog->units[o->unit].saves[o->save].name);
    return buf;
}

void sched_print(const sched_t *s, FILE *out)
{
    char lab[96], dl[96], sz[32];
    if (!s) return;
    fprintf(out, "schedule (%s): %d ops, device bound %s", sched_mode_name(s->mode), s->nops,
            strata_format_size(s->device_bound, sz, sizeof sz));
    if (s->tail_kept) fprintf(out, "; offloads of the last %d unit%s kept on device", s->tail_kept,
                              1 == s->tail_kept ? "" : "s");
    fputc('\n', out);
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) {
        fprintf(out, "engine %s: %d ops\n", sched_engine_name((sched_engine_t)e), s->norder[e]);
        for (int k = 0; k < s->norder[e]; k++) {
            int id = s->order[e][k];
            const sched_op_t *o = &s->ops[id];
            fprintf(out, "  %5d  %-28s %9.3f ms", k, sched_op_label(s, id, lab, sizeof lab), o->seconds * 1e3);
            if (o->bytes) fprintf(out, "  %10s", strata_format_size(o->bytes, sz, sizeof sz));
            int first = 1;
            for (int i = 0; i < o->ndeps; i++) {
                const sched_op_t *x = &s->ops[o->deps[i]];
                if (x->engine == o->engine) continue;   /* engine order implies it */
                fprintf(out, "%s%s", first ? "  waits: " : ", ", sched_op_label(s, o->deps[i], dl, sizeof dl));
                first = 0;
            }
            fputc('\n', out);
        }
    }
}
