/*
 * schedule_ops.c - the part of schedule.c that turns a layout and its
 * decisions (drain positions, prefetch gates) into the schedule's ops,
 * their dependencies and every engine's issue order.
 */
#include "config.h"
#include "sched/sched.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the ops' ids, handed from phase to phase ------------------------------ */

/* The op each phase creates, by what it belongs to; -1 where there is none
 * (no recompute of a unit, a save kept on device, a host-only save's
 * storage legs). One block, so one free. */
typedef struct {
    int *fwd, *recompute, *regen, *bwd, *rs;   /* per unit */
    int *ag;                           /* per parameter use */
    int *at_pos;                       /* the compute op at each position */
    int *d2h, *h2s, *s2h, *h2d;        /* per chunk */
    int optim;
    int *block;
} op_ids_t;

static int op_ids_alloc(op_ids_t *ids, const sched_layout_t *l)
{
    size_t units = (size_t)l->nunits, chunks = (size_t)l->nchunks + 1;
    size_t n = 5 * units + (size_t)l->nuses + (size_t)l->npos + 4 * chunks;
    int *p = ids->block = malloc(n * sizeof(int));
    if (!p) return -1;
    for (size_t k = 0; k < n; k++) p[k] = -1;
    ids->fwd = p;        p += units;
    ids->recompute = p;  p += units;
    ids->regen = p;      p += units;
    ids->bwd = p;        p += units;
    ids->rs = p;         p += units;
    ids->ag = p;         p += l->nuses;
    ids->at_pos = p;     p += l->npos;
    ids->d2h = p;        p += chunks;
    ids->h2s = p;        p += chunks;
    ids->s2h = p;        p += chunks;
    ids->h2d = p;
    ids->optim = -1;
    return 0;
}

/* ---- phase 1: compute, in position order ---------------------------------- */

static int add_forward(builder_t *b, const sched_layout_t *l, int u)
{
    const sched_unit_t *x = &l->prog->units[u];
    int id = new_op(b, SCHED_OP_F, SCHED_COMPUTE, u, -1);
    if (id < 0) return -1;
    sched_op_t *o = &b->s->ops[id];
    o->seconds = x->cost_s[SCHED_COST_FWD];
    o->mem_free[STRATA_TIER_DEVICE] = x->ag_bytes;
    o->mem_alloc[STRATA_TIER_DEVICE] = sched_unit_out_bytes(l->prog, u) + x->work_bytes[0];
    o->mem_free[STRATA_TIER_DEVICE] += x->work_bytes[0];
    for (int i = l->save_off[u]; i < l->save_off[u + 1]; i++) {
        size_t by = x->saves[l->save_index[i]].bytes;
        if (u > 0 && x->saves[l->save_index[i]].is_input) {   /* F(u-1) made it */
            if (SCHED_RECOMPUTE == l->save_act[i]) o->mem_free[STRATA_TIER_DEVICE] += by;
            continue;
        }
        o->mem_alloc[STRATA_TIER_DEVICE] += by;
        if (SCHED_RECOMPUTE == l->save_act[i]) o->mem_free[STRATA_TIER_DEVICE] += by;
    }
    return id;
}

static int add_recompute(builder_t *b, const sched_layout_t *l, int u)
{
    const sched_unit_t *x = &l->prog->units[u];
    int id = new_op(b, SCHED_OP_RECOMPUTE, SCHED_COMPUTE, u, -1);
    if (id < 0) return -1;
    sched_op_t *o = &b->s->ops[id];
    o->seconds = sched_unit_recompute_seconds(x, l->save_act + l->save_off[u]);
    o->mem_alloc[STRATA_TIER_DEVICE] = o->mem_free[STRATA_TIER_DEVICE] = x->work_bytes[0];
    for (int i = l->save_off[u]; i < l->save_off[u + 1]; i++)
        if (SCHED_RECOMPUTE == l->save_act[i] && !x->saves[l->save_index[i]].is_input)
            o->mem_alloc[STRATA_TIER_DEVICE] += x->saves[l->save_index[i]].bytes;
    return id;
}

/* REGEN(u): the forward again, its saves into scratch, for the output
 * that is the next unit's input (counted as that input save's bytes,
 * freed with u's output at the end of B(u)). */
static int add_regen(builder_t *b, const sched_layout_t *l, int u)
{
    const sched_unit_t *x = &l->prog->units[u], *next = &l->prog->units[u + 1];
    int id = new_op(b, SCHED_OP_REGEN, SCHED_COMPUTE, u, -1);
    if (id < 0) return -1;
    sched_op_t *o = &b->s->ops[id];
    o->seconds = x->cost_s[SCHED_COST_FWD];
    size_t scratch = x->work_bytes[0] + sched_regen_scratch(l, u);
    o->mem_alloc[STRATA_TIER_DEVICE] = scratch + next->saves[sched_unit_input(next)].bytes;
    o->mem_free[STRATA_TIER_DEVICE] = scratch;
    return id;
}

static int add_backward(builder_t *b, const sched_layout_t *l, int u)
{
    const sched_program_t *prog = l->prog;
    const sched_unit_t *x = &prog->units[u];
    int id = new_op(b, SCHED_OP_B, SCHED_COMPUTE, u, -1);
    if (id < 0) return -1;
    sched_op_t *o = &b->s->ops[id];
    o->seconds = x->cost_s[SCHED_COST_BWD];
    /* its unsharded gradients and its input gradient; its output and
     * its output's gradient go at its end */
    o->mem_alloc[STRATA_TIER_DEVICE] = sched_unit_grad_bytes(x) + (u > 0 ? x->gin_bytes : 0) + x->work_bytes[1];
    o->mem_free[STRATA_TIER_DEVICE] = x->ag_bytes + sched_unit_out_bytes(prog, u) + x->work_bytes[1] +
                                      (u + 1 < l->nunits ? prog->units[u + 1].gin_bytes : 0);
    /* its input lives on as the output of the unit before, to its B */
    for (int i = 0; i < x->nsaves; i++)
        if (!(u > 0 && x->saves[i].is_input)) o->mem_free[STRATA_TIER_DEVICE] += x->saves[i].bytes;
    return id;
}

static int add_compute_ops(builder_t *b, const sched_layout_t *l, op_ids_t *ids)
{
    sched_t *s = b->s;
    for (int u = 0; u < l->nunits; u++)
        if ((ids->fwd[u] = add_forward(b, l, u)) < 0) return -1;
    for (int u = l->nunits - 1; u >= 0; u--) {
        if (u > 0 && l->regen_pos[u - 1] >= 0 && (ids->regen[u - 1] = add_regen(b, l, u - 1)) < 0)
            return -1;
        if (l->recomputes[u] && (ids->recompute[u] = add_recompute(b, l, u)) < 0) return -1;
        if ((ids->bwd[u] = add_backward(b, l, u)) < 0) return -1;
    }
    if ((ids->optim = new_op(b, SCHED_OP_OPTIM, SCHED_COMPUTE, -1, -1)) < 0) return -1;
    s->ops[ids->optim].seconds = l->prog->optim_s;
    for (int k = 0; k < s->norder[SCHED_COMPUTE]; k++) {
        ids->at_pos[k] = s->order[SCHED_COMPUTE][k];
        s->ops[ids->at_pos[k]].pos = k;
    }
    return 0;
}

/* ---- phase 2: comm: AG(0..prefetch), then per use j: [RS of j] AG(j+prefetch+1) */

static int add_comm_ops(builder_t *b, const sched_layout_t *l, op_ids_t *ids)
{
    const sched_program_t *prog = l->prog;
    for (int j = -1; j < l->nuses; j++) {
        if (j >= l->nunits) {   /* a backward use: its gradients' reduce-scatter */
            int u = l->use_unit[j];
            int id = ids->rs[u] = new_op(b, SCHED_OP_RS, SCHED_COMM, u, -1);
            if (id < 0) return -1;
            b->s->ops[id].seconds = prog->units[u].cost_s[SCHED_COST_RS];
            b->s->ops[id].mem_free[STRATA_TIER_DEVICE] = sched_unit_grad_bytes(&prog->units[u]);
        }
        int from = j < 0 ? 0 : j + l->prefetch + 1, to = j < 0 ? l->prefetch : j + l->prefetch + 1;
        for (int a = from; a <= to && a < l->nuses; a++) {
            int u = l->use_unit[a];
            int id = ids->ag[a] = new_op(b, SCHED_OP_AG, SCHED_COMM, u, -1);
            if (id < 0) return -1;
            sched_op_t *o = &b->s->ops[id];
            o->seconds = prog->units[u].cost_s[SCHED_COST_AG];
            o->bytes = prog->units[u].ag_bytes;
            o->mem_alloc[STRATA_TIER_DEVICE] = prog->units[u].ag_bytes;
        }
    }
    return 0;
}

/* ---- phase 3: transfers: forward legs in forward order, backward legs in need order */

/* The four legs of an offloaded save, in the order they are added: D2H and
 * H2S on the way out, S2H and H2D on the way back; only storage saves take
 * the middle two. Each leg allocates its bytes in one tier at its start
 * and frees them in another at its end. */
enum { LEG_D2H, LEG_H2S, LEG_S2H, LEG_H2D, LEG_COUNT };
static const sched_op_kind_t leg_kind[LEG_COUNT] = { SCHED_OP_D2H, SCHED_OP_H2S, SCHED_OP_S2H, SCHED_OP_H2D };
static const sched_engine_t leg_engine[LEG_COUNT] = { SCHED_D2H, SCHED_IO, SCHED_IO, SCHED_H2D };
static const int leg_freed[LEG_COUNT] = { STRATA_TIER_DEVICE, STRATA_TIER_PINNED_HOST, STRATA_TIER_STORAGE,
                                          STRATA_TIER_PINNED_HOST };
static const int leg_allocated[LEG_COUNT] = { STRATA_TIER_PINNED_HOST, STRATA_TIER_STORAGE,
                                              STRATA_TIER_PINNED_HOST, STRATA_TIER_DEVICE };

/* One leg of every chunk of global save i (of unit u). */
static int add_leg(builder_t *b, const sched_layout_t *l, int leg, int u, int i, int *leg_ids)
{
    for (int c = 0; c < l->save_nchunks[i]; c++) {
        int ci = l->save_chunk_off[i] + c;
        int id = leg_ids[ci] = new_op(b, leg_kind[leg], leg_engine[leg], u, l->save_index[i]);
        if (id < 0) return -1;
        sched_op_t *o = &b->s->ops[id];
        o->chunk = c;
        o->nchunks = l->save_nchunks[i];
        o->bytes = l->chunk_bytes[ci];
        o->offset = l->chunk_offset[ci];
        o->seconds = sched_link_time(&l->opts->link, leg_engine[leg], o->bytes);
        o->mem_alloc[leg_allocated[leg]] = o->bytes;
        o->mem_free[leg_freed[leg]] = o->bytes;
    }
    return 0;
}

static int add_transfer_ops(builder_t *b, const sched_layout_t *l, op_ids_t *ids)
{
    int *leg_ids[LEG_COUNT] = { ids->d2h, ids->h2s, ids->s2h, ids->h2d };
    for (int leg = 0; leg < LEG_COUNT; leg++)
        for (int k = 0; k < l->nunits; k++) {
            int u = leg < LEG_S2H ? k : l->nunits - 1 - k;
            for (int i = l->save_off[u]; i < l->save_off[u + 1]; i++) {
                if (!sched_offloaded(l->save_act[i])) continue;
                int storage = SCHED_STORAGE == l->save_act[i];
                if ((LEG_H2S == leg || LEG_S2H == leg) && !storage) continue;
                if (add_leg(b, l, leg, u, i, leg_ids[leg])) return -1;
            }
        }
    return 0;
}

/* ---- phase 4: dependencies ------------------------------------------------- */

/* An all-gather waits for the use prefetch+1 before it to end (its buffer
 * is that one's); forward and backward wait for their parameters, the
 * reduce-scatter for its backward, the optimizer for every reduce-scatter. */
static int add_param_deps(builder_t *b, const sched_layout_t *l, const op_ids_t *ids)
{
    int back = l->prefetch + 1;
    for (int j = back; j < l->nuses; j++)
        if (dep(b, ids->ag[j], ids->at_pos[l->use_last[j - back]])) return -1;
    for (int u = 0; u < l->nunits; u++) {
        int bwd_use = 2 * l->nunits - 1 - u;
        if (dep(b, ids->fwd[u], ids->ag[u]) || dep(b, ids->bwd[u], ids->ag[bwd_use]) ||
            dep(b, ids->recompute[u], ids->ag[bwd_use]) || dep(b, ids->regen[u], ids->ag[bwd_use]) ||
            dep(b, ids->rs[u], ids->bwd[u]) ||
            dep(b, ids->optim, ids->rs[u])) return -1;
    }
    return 0;
}

/* Each chunk's legs in turn after the forward that made it, each gated
 * by its decided position, and its consumer after its H2D; the op at the
 * save's drain position waits for its last D2H. */
static int add_save_deps(builder_t *b, const sched_layout_t *l, const sched_decide_t *d,
                         const op_ids_t *ids, int i)
{
    int u = l->save_unit[i], storage = SCHED_STORAGE == l->save_act[i];
    int consumer = l->recomputes[u] ? ids->recompute[u] : ids->bwd[u];
    const int *at_pos = ids->at_pos;
    for (int c = 0; c < l->save_nchunks[i]; c++) {
        int ci = l->save_chunk_off[i] + c;
        int d2h = ids->d2h[ci], h2s = ids->h2s[ci], s2h = ids->s2h[ci], h2d = ids->h2d[ci];
        if (dep(b, d2h, ids->fwd[u])) return -1;
        if (storage && (dep(b, h2s, d2h) || dep(b, s2h, h2s) || dep(b, h2d, s2h))) return -1;
        if (!storage && dep(b, h2d, d2h)) return -1;
        if (d->h2d_gate[ci] >= 1 && dep(b, h2d, at_pos[d->h2d_gate[ci] - 1])) return -1;
        if (storage && d->s2h_gate[ci] >= 1 && dep(b, s2h, at_pos[d->s2h_gate[ci] - 1])) return -1;
        if (dep(b, consumer, h2d)) return -1;
    }
    int last = l->save_chunk_off[i] + l->save_nchunks[i] - 1;
    if (d->drain_pos[i] < l->consume_pos[u] && dep(b, at_pos[d->drain_pos[i]], ids->d2h[last]))
        return -1;
    return 0;
}

/* naive: one transfer at a time, in program order, and compute waits for
 * each unit's transfers right after producing / right before using. */
static int add_naive_deps(builder_t *b, const sched_layout_t *l, const op_ids_t *ids)
{
    int prev = -1;
    for (int u = 0; u < l->nunits; u++) {
        for (int i = l->save_off[u]; i < l->save_off[u + 1]; i++)
            for (int c = 0; sched_offloaded(l->save_act[i]) && c < l->save_nchunks[i]; c++) {
                int ci = l->save_chunk_off[i] + c;
                if (dep(b, ids->d2h[ci], prev)) return -1;
                prev = ids->d2h[ci];
                if (ids->h2s[ci] >= 0) {
                    if (dep(b, ids->h2s[ci], prev)) return -1;
                    prev = ids->h2s[ci];
                }
            }
        if (prev >= 0 && dep(b, ids->at_pos[l->fwd_pos[u] + 1], prev)) return -1;
    }
    for (int u = l->nunits - 1; u >= 0; u--)
        for (int i = l->save_off[u]; i < l->save_off[u + 1]; i++)
            for (int c = 0; sched_offloaded(l->save_act[i]) && c < l->save_nchunks[i]; c++) {
                int ci = l->save_chunk_off[i] + c;
                if (ids->s2h[ci] >= 0) {
                    if (dep(b, ids->s2h[ci], prev)) return -1;
                    prev = ids->s2h[ci];
                }
                if (dep(b, ids->h2d[ci], prev)) return -1;
                prev = ids->h2d[ci];
            }
    return 0;
}

static int add_deps(builder_t *b, const sched_layout_t *l, const sched_decide_t *d, const op_ids_t *ids)
{
    if (add_param_deps(b, l, ids)) return -1;
    for (int i = 0; i < l->nsaves; i++)
        if (sched_offloaded(l->save_act[i]) && add_save_deps(b, l, d, ids, i)) return -1;
    if (SCHED_MODE_LHS != l->mode && add_naive_deps(b, l, ids)) return -1;
    return 0;
}

/* ---- the phases in order ---------------------------------------------------- */

int sched_build_ops(const sched_layout_t *l, const sched_decide_t *d, sched_t *s)
{
    builder_t b = { s, NULL, 0, 0 };
    op_ids_t ids;
    if (op_ids_alloc(&ids, l)) return -1;
    int rc = add_compute_ops(&b, l, &ids) || add_comm_ops(&b, l, &ids) ||
             add_transfer_ops(&b, l, &ids) || add_deps(&b, l, d, &ids) || finish_deps(&b) ? -1 : 0;
    free(b.edges);
    free(ids.block);
    return rc;
}
