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

int sched_build_ops(const sched_layout_t *l, const sched_decide_t *d, sched_t *s)
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
        o->mem_alloc[STRATA_TIER_DEVICE] = x->out_bytes + x->work_bytes[0];
        o->mem_free[STRATA_TIER_DEVICE] += x->work_bytes[0];
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
            s->ops[id].seconds = sched_unit_recompute_seconds(x, l->act + l->soff[u]);
            s->ops[id].mem_alloc[STRATA_TIER_DEVICE] = s->ops[id].mem_free[STRATA_TIER_DEVICE] = x->work_bytes[0];
            for (int i = l->soff[u]; i < l->soff[u + 1]; i++)
                if (SCHED_RECOMPUTE == l->act[i])
                    s->ops[id].mem_alloc[STRATA_TIER_DEVICE] += x->saves[l->ssave[i]].bytes;
        }
        int id = bid[u] = new_op(&b, SCHED_OP_B, SCHED_COMPUTE, u, -1);
        if (id < 0) goto out;
        sched_op_t *o = &s->ops[id];
        o->seconds = x->cost_s[SCHED_COST_BWD];
        /* its unsharded gradients and its input gradient; its output and
         * its output's gradient go at its end */
        o->mem_alloc[STRATA_TIER_DEVICE] = sched_unit_grad_bytes(x) + (u > 0 ? x->gin_bytes : 0) + x->work_bytes[1];
        o->mem_free[STRATA_TIER_DEVICE] = x->ag_bytes + x->out_bytes + x->work_bytes[1] +
                                          (u + 1 < L ? prog->units[u + 1].gin_bytes : 0);
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
            s->ops[id].mem_free[STRATA_TIER_DEVICE] = sched_unit_grad_bytes(&prog->units[u]);
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
                if (!sched_offloaded(l->act[i])) continue;
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
        if (!sched_offloaded(l->act[i])) continue;
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
                for (int c = 0; sched_offloaded(l->act[i]) && c < l->nch[i]; c++) {
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
                for (int c = 0; sched_offloaded(l->act[i]) && c < l->nch[i]; c++) {
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
