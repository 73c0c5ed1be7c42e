/*
 * schedule.c - from a step program, a policy and a device budget, the
 * static issue order of every engine and the dependencies between ops.
 *
 * Compute runs, in positions 0..P-1 (P = the layout's npos, L its nunits):
 *     F(0) .. F(L-1), then for u = L-1 .. 0: [REGEN(u-1)] [RECOMPUTE(u)] B(u),
 *     then OPTIM (REGEN(u-1): the unit before runs its forward again to
 *     make u's input where that input is recomputed).
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
 *   recompute save    [f(u), f(u)] + [r(u), b(u)]; a unit's input
 *                     [f(u), f(u)] + [g(u-1), b(u)] (g: REGEN's position)
 *   REGEN(u) scratch  [g(u), g(u)]: the forward's saves and workspace
 *   offloaded save    [f(u), dl] on device until its D2H (dl: its drain_pos);
 *                     each prefetched chunk [g, b(u)] (g: its h2d_gate),
 *                     where H2D waits for compute op g-1
 *                     (a chunk counted once where the two meet: its H2D
 *                     waits for its own D2H)
 *
 * naive: dl = f(u)+1, g = first backward position of u, every transfer
 * waits for the previous one: exactly the minimum, with nothing hidden.
 * lhs: drains as late as the simulator predicts they finish (pulled in
 * where the budget demands), prefetch gates as early as memory and the
 * lookahead allow, chunks; a few variants are built and the fastest in
 * simulation is kept.
 *
 * The schedule is three files: this one builds the variants, picks one
 * and answers queries about it; schedule_layout.c lays a program out
 * over positions and bounds its memory (the intervals above);
 * schedule_ops.c turns the decisions into ops and dependencies.
 */
#include "config.h"
#include "sched/sched.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SCHED_OP_COUNT] = {
    "AG", "F", "D2H", "H2S", "S2H", "H2D", "RECOMPUTE", "B", "RS", "OPTIM", "REGEN"
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

static sched_t *sched_new(const sched_layout_t *l)
{
    sched_t *s = calloc(1, sizeof *s);
    if (s) {
        s->prog = l->prog;
        s->mode = l->mode;
        memcpy(s->share_bw, l->opts->share_bw, sizeof s->share_bw);
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

/* The probe's decisions: no drains, gates at the lookahead. */
static void probe_decisions(const sched_layout_t *l, sched_decide_t *pd)
{
    int look = l->opts->lookahead < 0 ? 0 : l->opts->lookahead;
    for (int i = 0; i < l->nsaves; i++) {
        int u = l->save_unit[i];
        int g = l->consume_pos[u] - look;
        if (g < l->fwd_pos[u] + 1) g = l->fwd_pos[u] + 1;
        pd->drain_pos[i] = l->consume_pos[u];
        for (int c = 0; c < l->save_nchunks[i]; c++)
            pd->h2d_gate[l->save_chunk_off[i] + c] = pd->s2h_gate[l->save_chunk_off[i] + c] = g;
    }
}

/* Each offloaded save drains at the first compute position that starts
 * after the probe's last D2H of it ends (start, end: the probe's
 * simulated op times). -1 when out of memory. */
static int drains_at_d2h_ends(const sched_layout_t *l, const sched_t *probe, const double *start,
                              const double *end, sched_decide_t *d)
{
    double *pos_start = malloc((size_t)l->npos * sizeof(double));
    double *d2h_end = calloc((size_t)l->nsaves + 1, sizeof(double));
    int ok = pos_start && d2h_end;
    for (int k = 0; ok && k < probe->nops; k++) {
        const sched_op_t *o = &probe->ops[k];
        if (o->pos >= 0) pos_start[o->pos] = start[k];
        if (SCHED_OP_D2H == o->kind) {
            int i = l->save_off[o->unit] + o->save;
            if (end[k] > d2h_end[i]) d2h_end[i] = end[k];
        }
    }
    for (int i = 0; ok && i < l->nsaves; i++) {
        if (!sched_offloaded(l->save_act[i])) continue;
        int u = l->save_unit[i], k = l->fwd_pos[u] + 1;
        while (k < l->consume_pos[u] && pos_start[k] < d2h_end[i] - 1e-12) k++;
        d->drain_pos[i] = k;
    }
    free(pos_start);
    free(d2h_end);
    return ok ? 0 : -1;
}

/* lhs drains: a probe with no drains and gates at the lookahead, memory
 * ignored, is simulated; its predicted D2H completions place the drains.
 * -1 when out of memory. */
static int drains_from_probe(const sched_layout_t *l, sched_decide_t *d)
{
    sched_t *probe = sched_new(l);
    sched_decide_t pd = { 0 };
    double *start = NULL, *end = NULL;
    int ok = probe && 0 == sched_decide_alloc(&pd, l);
    if (ok) {
        probe_decisions(l, &pd);
        ok = 0 == sched_build_ops(l, &pd, probe);
    }
    if (ok) {
        start = malloc((size_t)probe->nops * sizeof(double));
        end = malloc((size_t)probe->nops * sizeof(double));
        sched_result_t r;
        ok = start && end && STRATA_OK == sched_simulate(probe, &r, start, end, NULL, 0);
    }
    if (ok) ok = 0 == drains_at_d2h_ends(l, probe, start, end, d);
    free(start);
    free(end);
    sched_decide_free(&pd);
    sched_destroy(probe);
    return ok ? 0 : -1;
}

/* The schedule of decisions d, with the save actions it was built for. */
static strata_status_t make_schedule(const sched_layout_t *l, const sched_decide_t *d, const size_t *use,
                                     sched_t **s_p)
{
    sched_t *s = sched_new(l);
    if (!s || sched_build_ops(l, d, s)) goto nomem;
    s->device_bound = sched_max_of(use, l->npos);
    s->save_off = malloc(((size_t)l->nunits + 1) * sizeof(int));
    s->save_act = malloc(((size_t)l->nsaves + 1) * sizeof(sched_action_t));
    if (!s->save_off || !s->save_act) goto nomem;
    memcpy(s->save_off, l->save_off, ((size_t)l->nunits + 1) * sizeof(int));
    memcpy(s->save_act, l->save_act, (size_t)l->nsaves * sizeof(sched_action_t));
    if (s->device_bound > l->budget) {
        sched_destroy(s);
        return STRATA_ERR_TIER_FULL;
    }
    *s_p = s;
    return STRATA_OK;
nomem:
    sched_destroy(s);
    return STRATA_ERR_NOMEM;
}

/* Build one schedule for a layout; min_drains forces the minimal drains. */
static strata_status_t build_variant(const sched_layout_t *l, int min_drains, sched_t **s_p)
{
    sched_decide_t d = { 0 };
    size_t *use = calloc((size_t)l->npos, sizeof(size_t));
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!use || sched_decide_alloc(&d, l)) goto out;
    sched_decide_min(l, &d);
    sched_usage_of(l, &d, use);
    if (sched_max_of(use, l->npos) > l->budget) { st = STRATA_ERR_TIER_FULL; goto out; }

    if (SCHED_MODE_LHS == l->mode) {
        if (!min_drains && drains_from_probe(l, &d)) goto out;
        sched_usage_drains(l, &d, use);
        if (!min_drains) sched_tighten_drains(l, &d, use);
        if (sched_place_gates(l, &d, use)) { st = STRATA_ERR_TIER_FULL; goto out; }
    }
    sched_usage_of(l, &d, use);
    st = make_schedule(l, &d, use, s_p);
out:
    sched_decide_free(&d);
    free(use);
    return st;
}

/* ---- none: nothing overlaps ----------------------------------------------- */

/* A binary min-heap of op ids by (key, id). */
typedef struct { int *id; const double *key; int n; } heap_t;

static int heap_less(const heap_t *h, int a, int b)
{
    double ka = h->key[h->id[a]], kb = h->key[h->id[b]];
    return ka < kb || (ka == kb && h->id[a] < h->id[b]);
}

static void heap_swap(heap_t *h, int a, int b)
{
    int t = h->id[a];
    h->id[a] = h->id[b];
    h->id[b] = t;
}

static void heap_push(heap_t *h, int op)
{
    int i = h->n++;
    h->id[i] = op;
    for (; i > 0 && heap_less(h, i, (i - 1) / 2); i = (i - 1) / 2) heap_swap(h, i, (i - 1) / 2);
}

static int heap_pop(heap_t *h)
{
    int top = h->id[0];
    h->id[0] = h->id[--h->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_less(h, l, m)) m = l;
        if (r < h->n && heap_less(h, r, m)) m = r;
        if (m == i) break;
        heap_swap(h, i, m);
        i = m;
    }
    return top;
}

/* Every op's successors (its dependents and the next op of its engine),
 * back to back: succ[soff[i] .. soff[i+1]); indeg[i] its predecessors. */
static int successors(const sched_t *s, int **soff_p, int **succ_p, int *indeg)
{
    int n = s->nops, ne = s->ndeps + n;
    int *soff = calloc((size_t)n + 1, sizeof *soff), *succ = malloc(((size_t)ne + 1) * sizeof *succ);
    int *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!soff || !succ || !fill) {
        free(soff); free(succ); free(fill);
        return -1;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->ops[i].ndeps; k++) soff[s->ops[i].deps[k] + 1]++;
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        for (int j = 1; j < s->norder[e]; j++) soff[s->order[e][j - 1] + 1]++;
    for (int i = 0; i < n; i++) soff[i + 1] += soff[i];
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->ops[i].ndeps; k++) {
            int d = s->ops[i].deps[k];
            succ[soff[d] + fill[d]++] = i;
            indeg[i]++;
        }
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        for (int j = 1; j < s->norder[e]; j++) {
            int a = s->order[e][j - 1], b = s->order[e][j];
            succ[soff[a] + fill[a]++] = b;
            indeg[b]++;
        }
    free(fill);
    *soff_p = soff;
    *succ_p = succ;
    return 0;
}

/* One total order of the ops that keeps every dep and engine order: Kahn's,
 * the earliest simulated start first (then the lower id). */
static int total_order(const sched_t *s, const double *start, int *seq)
{
    int n = s->nops, *soff = NULL, *succ = NULL, k = 0;
    int *indeg = calloc((size_t)n + 1, sizeof *indeg);
    heap_t h = { malloc(((size_t)n + 1) * sizeof(int)), start, 0 };
    if (!indeg || !h.id || successors(s, &soff, &succ, indeg)) {
        free(indeg); free(h.id);
        return -1;
    }
    for (int i = 0; i < n; i++) if (0 == indeg[i]) heap_push(&h, i);
    while (h.n > 0) {
        int i = heap_pop(&h);
        seq[k++] = i;
        for (int j = soff[i]; j < soff[i + 1]; j++)
            if (0 == --indeg[succ[j]]) heap_push(&h, succ[j]);
    }
    free(indeg); free(h.id); free(soff); free(succ);
    return k == n ? 0 : -1;
}

/* none: the naive schedule s with every op waiting for the one before it in
 * a total order (the naive run's simulated start times, kept consistent
 * with its deps and engine orders), so no two ops ever overlap: every
 * collective and transfer is exposed. More deps only remove timings, so
 * the device bound still holds. */
static strata_status_t serialize(sched_t *s, char *err, size_t errlen)
{
    int n = s->nops;
    double *start = malloc(((size_t)n + 1) * sizeof *start);
    int *seq = malloc(((size_t)n + 1) * sizeof *seq), *prev = malloc(((size_t)n + 1) * sizeof *prev);
    int *deps = malloc(((size_t)s->ndeps + (size_t)n + 1) * sizeof *deps);
    sched_result_t r;
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!start || !seq || !prev || !deps) goto out;
    st = sched_simulate(s, &r, start, NULL, err, errlen);
    if (STRATA_OK != st) goto out;
    st = STRATA_ERR_NOMEM;
    if (total_order(s, start, seq)) goto out;
    for (int k = 0; k < n; k++) prev[seq[k]] = k ? seq[k - 1] : -1;
    int nd = 0;
    for (int i = 0; i < n; i++) {
        int first = nd;
        for (int k = 0; k < s->ops[i].ndeps; k++) deps[nd++] = s->ops[i].deps[k];
        if (prev[i] >= 0) deps[nd++] = prev[i];
        s->ops[i].ndeps = nd - first;
    }
    free(s->deps);
    s->deps = deps;
    s->ndeps = nd;
    deps = NULL;
    for (int i = 0, off = 0; i < n; i++) {
        s->ops[i].deps = s->deps + off;
        off += s->ops[i].ndeps;
    }
    st = STRATA_OK;
out:
    if (STRATA_ERR_NOMEM == st) st = sched_fail(err, errlen, st, "out of memory serializing the schedule");
    free(start); free(seq); free(prev); free(deps);
    return st;
}

/* Bytes the schedule moves down a tier (D2H and H2S ops): what the
 * tie-break minimises. Not transfer_s: an unpaced link (bandwidth 0, the
 * runtime's default) gives every transfer 0 s, so all variants would tie
 * there and the first, which offloads everything, would win. */
static size_t moved_bytes(const sched_t *s)
{
    size_t b = 0;
    for (int i = 0; i < s->nops; i++)
        if (SCHED_OP_D2H == s->ops[i].kind || SCHED_OP_H2S == s->ops[i].kind) b += s->ops[i].bytes;
    return b;
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
    sched_layout_t l;
    sched_decide_t d = { 0 };
    size_t m = SIZE_MAX;
    if (!prog || !acts || !opts || prog->nunits < 1) return m;
    if (0 == sched_layout_init(&l, prog, acts, opts, SCHED_MODE_NAIVE, 0, 0) &&
        0 == sched_decide_alloc(&d, &l)) {
        size_t *use = calloc((size_t)l.npos, sizeof(size_t));
        if (use) {
            sched_decide_min(&l, &d);
            sched_usage_of(&l, &d, use);
            m = sched_max_of(use, l.npos);
        }
        free(use);
    }
    sched_decide_free(&d);
    sched_layout_free(&l);
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

/* The arguments make sense and the policy's minimum fits the budget. */
static strata_status_t check_build_args(const sched_program_t *prog, const sched_actions_t *acts,
                                        const sched_opts_t *opts, char *err, size_t errlen)
{
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
    return STRATA_OK;
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
#define MAX_VARIANTS 64
typedef struct { int chunked, tail, min_drains; } variant_t;

static int list_variants(const sched_program_t *prog, sched_mode_t mode, variant_t *var)
{
    int nvar = 0;
    var[nvar++] = (variant_t){ 0, 0, 1 };   /* the minimal-drain form, first */
    if (SCHED_MODE_LHS != mode) return nvar;
    for (int t = 0; nvar < MAX_VARIANTS - 4; t = t ? 2 * t : 1) {
        if (t > prog->nunits) t = prog->nunits;
        var[nvar++] = (variant_t){ 1, t, 0 };
        var[nvar++] = (variant_t){ 0, t, 0 };
        if (t == prog->nunits) break;
    }
    return nvar;
}

/* The variants that built and fit, with their simulations. */
typedef struct {
    sched_t *s[MAX_VARIANTS];        /* NULL where a variant did not build or fit */
    sched_result_t r[MAX_VARIANTS];
    int best;                        /* the fastest, -1 if none */
    double base_s;                   /* the minimal-drain form's step; -1 if it did not build */
} candidates_t;

static void candidates_free(candidates_t *c, int nvar, int except)
{
    for (int v = 0; v < nvar; v++)
        if (v != except) sched_destroy(c->s[v]);
}

/* Build and simulate every variant. STRATA_ERR_NOMEM with every candidate
 * freed; otherwise the status of the last variant that failed (or
 * STRATA_ERR_TIER_FULL), whether or not one built. */
static strata_status_t build_candidates(const sched_program_t *prog, const sched_actions_t *acts,
                                        const sched_opts_t *opts, const variant_t *var, int nvar,
                                        candidates_t *c, char *err, size_t errlen)
{
    strata_status_t st = STRATA_ERR_TIER_FULL;
    c->best = -1;
    c->base_s = -1;
    for (int v = 0; v < nvar; v++) {
        sched_layout_t l;
        sched_t *s = NULL;
        c->s[v] = NULL;
        strata_status_t vst = STRATA_ERR_NOMEM;
        if (0 == sched_layout_init(&l, prog, acts, opts, opts->mode, var[v].chunked, var[v].tail))
            vst = build_variant(&l, var[v].min_drains, &s);
        sched_layout_free(&l);
        if (STRATA_ERR_NOMEM == vst) {
            candidates_free(c, v, -1);
            return sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory building the schedule");
        }
        if (STRATA_OK == vst && SCHED_MODE_NONE == opts->mode) {
            vst = serialize(s, err, errlen);
            if (STRATA_OK != vst) sched_destroy(s);
            if (STRATA_ERR_NOMEM == vst) {
                candidates_free(c, v, -1);
                return vst;
            }
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
        if (0 == v) c->base_s = r.step_s;
        c->s[v] = s;
        c->r[v] = r;
        if (c->best < 0 || r.step_s < c->r[c->best].step_s - 1e-12) c->best = v;
    }
    return st;
}

/* Robust choice: the measured costs are means, and a rank that computes
 * faster than them reaches a drain or a prefetched save before the
 * transfer is done. Score = predicted step + the transfer time exposed
 * were compute and collectives SCHED_FAST times as long; never slower
 * than the minimal form; ties (within SCHED_TIE) to the fewest bytes
 * moved. The index picked; c->best if none qualifies. */
static int pick_robust(candidates_t *c, int nvar)
{
    double fastest = c->r[c->best].step_s;
    double limit = c->base_s >= 0 && c->base_s > fastest ? c->base_s : fastest;
    double score[MAX_VARIANTS], best_sc = INFINITY;
    size_t moved[MAX_VARIANTS];
    int pick = -1;
    for (int v = 0; v < nvar; v++) {
        score[v] = INFINITY;
        if (!c->s[v] || c->r[v].step_s > limit + 1e-12) continue;
        score[v] = c->r[v].step_s + fast_exposure(c->s[v]);
        moved[v] = moved_bytes(c->s[v]);
        if (score[v] < best_sc) best_sc = score[v];
    }
    for (int v = 0; v < nvar; v++) {
        if (!(score[v] <= best_sc * (1 + SCHED_TIE) + 1e-12)) continue;
        /* among the tied: fewest bytes, then least transfer time, then score */
        double dt = pick < 0 ? 0 : c->r[v].transfer_s - c->r[pick].transfer_s;
        if (pick < 0 || moved[v] < moved[pick] ||
            (moved[v] == moved[pick] && (dt < -1e-12 || (dt <= 1e-12 && score[v] < score[pick]))))
            pick = v;
    }
    return pick >= 0 ? pick : c->best;
}

strata_status_t sched_build(const sched_program_t *prog, const sched_actions_t *acts,
                            const sched_opts_t *opts, sched_t **sched_p, char *err, size_t errlen)
{
    if (!prog || !acts || !opts || !sched_p)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "sched_build: NULL argument");
    strata_status_t st = check_build_args(prog, acts, opts, err, errlen);
    if (STRATA_OK != st) return st;
    variant_t var[MAX_VARIANTS];
    int nvar = list_variants(prog, opts->mode, var);
    candidates_t c;
    st = build_candidates(prog, acts, opts, var, nvar, &c, err, errlen);
    if (STRATA_ERR_NOMEM == st) return st;
    if (c.best < 0) {
        if (STRATA_ERR_TIER_FULL == st && (!err || !*err))
            return sched_fail(err, errlen, st, "no %s schedule fits the budgets", sched_mode_name(opts->mode));
        return st;
    }
    int pick = nvar > 1 ? pick_robust(&c, nvar) : c.best;
    candidates_free(&c, nvar, pick);
    if (err && errlen) err[0] = '\0';
    *sched_p = c.s[pick];
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
        case SCHED_OP_F:
        case SCHED_OP_REGEN: o->seconds = c[SCHED_COST_FWD]; break;
        case SCHED_OP_RECOMPUTE:
            o->seconds = sched_unit_recompute_seconds(&prog->units[o->unit], s->save_act + s->save_off[o->unit]);
            break;
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
