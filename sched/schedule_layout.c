/*
 * schedule_layout.c - the part of schedule.c that lays a step program out
 * over compute positions (per unit, per parameter use, per save and chunk)
 * and bounds device memory over those positions: per save its drain
 * position and per chunk its prefetch gates, as schedule.c's comment
 * describes, decided so that the summed intervals stay within the budget.
 */
#include "config.h"
#include "sched/sched.h"
#include "sched/sched_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout: positions, uses, saves and chunks --------------------------- */

void sched_layout_free(sched_layout_t *l)
{
    free(l->fwd_pos); free(l->recompute_pos); free(l->regen_pos); free(l->bwd_pos); free(l->consume_pos); free(l->recomputes);
    free(l->use_first); free(l->use_last); free(l->use_unit);
    free(l->save_off); free(l->save_unit); free(l->save_index); free(l->save_act);
    free(l->save_nchunks); free(l->save_chunk_off); free(l->chunk_bytes); free(l->chunk_offset);
    memset(l, 0, sizeof *l);
}

int sched_offloaded(sched_action_t a) { return SCHED_HOST == a || SCHED_STORAGE == a; }

/* The bytes of global save i. */
static size_t save_bytes(const sched_layout_t *l, int i)
{
    return l->prog->units[l->save_unit[i]].saves[l->save_index[i]].bytes;
}

/* Compute positions per unit and the positions of each parameter use. */
static int place_units(sched_layout_t *l, const sched_actions_t *acts)
{
    const sched_program_t *prog = l->prog;
    size_t nunits = (size_t)l->nunits, nuses = (size_t)l->nuses;
    l->fwd_pos = calloc(nunits, sizeof(int));
    l->recompute_pos = calloc(nunits, sizeof(int));
    l->regen_pos = calloc(nunits, sizeof(int));
    l->bwd_pos = calloc(nunits, sizeof(int));
    l->consume_pos = calloc(nunits, sizeof(int));
    l->recomputes = calloc(nunits, sizeof(int));
    l->save_off = calloc(nunits + 1, sizeof(int));
    l->use_first = calloc(nuses, sizeof(int));
    l->use_last = calloc(nuses, sizeof(int));
    l->use_unit = calloc(nuses, sizeof(int));
    if (!l->fwd_pos || !l->recompute_pos || !l->regen_pos || !l->bwd_pos || !l->consume_pos || !l->recomputes ||
        !l->save_off || !l->use_first || !l->use_last || !l->use_unit) return -1;
    for (int u = 0; u < l->nunits; u++) {
        l->save_off[u + 1] = l->save_off[u] + prog->units[u].nsaves;
        for (int s = 0; s < prog->units[u].nsaves; s++)
            if (!prog->units[u].saves[s].is_input &&
                SCHED_RECOMPUTE == acts->action[prog->units[u].saves[s].name_id])
                l->recomputes[u] = 1;
    }
    l->nsaves = l->save_off[l->nunits];
    int pos = 0;
    for (int u = 0; u < l->nunits; u++) {
        l->fwd_pos[u] = pos++;
        l->regen_pos[u] = -1;
    }
    for (int u = l->nunits - 1; u >= 0; u--) {
        /* the input first, then what the unit's own re-run makes from it */
        if (u > 0) l->regen_pos[u - 1] = sched_unit_regen(prog, acts, u - 1) ? pos++ : -1;
        l->recompute_pos[u] = l->recomputes[u] ? pos++ : -1;
        l->bwd_pos[u] = pos++;
        l->consume_pos[u] = l->recomputes[u] ? l->recompute_pos[u] : l->bwd_pos[u];
    }
    l->npos = pos + 1;   /* OPTIM */
    for (int j = 0; j < l->nuses; j++) {
        int fwd = j < l->nunits, u = fwd ? j : l->nuses - 1 - j;
        l->use_unit[j] = u;
        l->use_first[j] = fwd ? l->fwd_pos[u]
                        : l->regen_pos[u] >= 0 ? l->regen_pos[u] : l->consume_pos[u];
        l->use_last[j] = fwd ? l->fwd_pos[u] : l->bwd_pos[u];
    }
    return 0;
}

/* Per save its unit and effective action (offloads of the last `tail`
 * units kept on device), and how many chunks an offloaded one moves in. */
static int place_saves(sched_layout_t *l, const sched_actions_t *acts, int chunked, int tail)
{
    const sched_program_t *prog = l->prog;
    size_t ns = (size_t)l->nsaves + 1;
    l->save_unit = calloc(ns, sizeof(int));
    l->save_index = calloc(ns, sizeof(int));
    l->save_act = calloc(ns, sizeof *l->save_act);
    l->save_nchunks = calloc(ns, sizeof(int));
    l->save_chunk_off = calloc(ns + 1, sizeof(int));
    if (!l->save_unit || !l->save_index || !l->save_act || !l->save_nchunks || !l->save_chunk_off)
        return -1;
    size_t chunk = l->opts->link.chunk;
    for (int u = 0; u < l->nunits; u++)
        for (int s = 0; s < prog->units[u].nsaves; s++) {
            int i = l->save_off[u] + s;
            const sched_save_t *sv = &prog->units[u].saves[s];
            l->save_unit[i] = u;
            l->save_index[i] = s;
            l->save_act[i] = sched_save_effective(u, sv, acts->action[sv->name_id]);
            if (u >= l->nunits - tail && sched_offloaded(l->save_act[i])) l->save_act[i] = SCHED_KEEP;
            int n = 0;
            if (sched_offloaded(l->save_act[i])) {
                n = 1;
                if (chunked && chunk > 0 && sv->bytes > chunk) {
                    size_t k = (sv->bytes + chunk - 1) / chunk;
                    n = k > SCHED_MAX_CHUNKS ? SCHED_MAX_CHUNKS : (int)k;
                }
            }
            l->save_nchunks[i] = n;
            l->save_chunk_off[i + 1] = l->save_chunk_off[i] + n;
        }
    l->nchunks = l->save_chunk_off[l->nsaves];
    return 0;
}

/* Each save's bytes in equal chunks, the last one shorter. */
static int split_chunks(sched_layout_t *l)
{
    l->chunk_bytes = calloc((size_t)l->nchunks + 1, sizeof(size_t));
    l->chunk_offset = calloc((size_t)l->nchunks + 1, sizeof(size_t));
    if (!l->chunk_bytes || !l->chunk_offset) return -1;
    for (int i = 0; i < l->nsaves; i++) {
        size_t bytes = save_bytes(l, i);
        int n = l->save_nchunks[i];
        size_t per = n ? (bytes + (size_t)n - 1) / (size_t)n : 0, off = 0;
        for (int c = 0; c < n; c++) {
            size_t b = bytes - off < per ? bytes - off : per;
            l->chunk_bytes[l->save_chunk_off[i] + c] = b;
            l->chunk_offset[l->save_chunk_off[i] + c] = off;
            off += b;
        }
    }
    return 0;
}

int sched_layout_init(sched_layout_t *l, const sched_program_t *prog, const sched_actions_t *acts,
                       const sched_opts_t *opts, sched_mode_t mode, int chunked, int tail)
{
    memset(l, 0, sizeof *l);
    l->prog = prog;
    l->opts = opts;
    l->mode = mode;
    l->nunits = prog->nunits;
    l->nuses = 2 * l->nunits;
    l->prefetch = opts->prefetch < 0 ? 0 : opts->prefetch;
    l->budget = opts->budget[STRATA_TIER_DEVICE] ? opts->budget[STRATA_TIER_DEVICE] : SIZE_MAX;
    if (place_units(l, acts) || place_saves(l, acts, chunked, tail) || split_chunks(l)) return -1;
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

/* The scratch REGEN(u) hands its forward's saves: the saves not kept on
 * the device (a kept one is handed back in place, rewritten with the same
 * values); never the input, the kept one it starts from. */
size_t sched_regen_scratch(const sched_layout_t *l, int u)
{
    const sched_unit_t *x = &l->prog->units[u];
    size_t sum = 0;
    for (int s = 0; s < x->nsaves; s++)
        if (!x->saves[s].is_input && SCHED_KEEP != l->save_act[l->save_off[u] + s])
            sum += x->saves[s].bytes;
    return sum;
}

/* Everything but the offloaded saves. */
static void base_usage(const sched_layout_t *l, size_t *use)
{
    const sched_program_t *prog = l->prog;
    for (int k = 0; k < l->npos; k++) use[k] = prog->resident_bytes;
    for (int j = 0; j < l->nuses; j++) {
        int from = j - l->prefetch < 0 ? 0 : j - l->prefetch, first = l->use_first[j];
        /* from the earliest of the uses before it (a REGEN runs before
         * the backward of the unit after it) */
        for (int a = from; a < j; a++) if (l->use_first[a] < first) first = l->use_first[a];
        add(use, first, l->use_last[j], prog->units[l->use_unit[j]].ag_bytes);
        if (j >= l->nunits) {
            int u = l->use_unit[j];
            int end = j + l->prefetch + 1 < l->nuses ? l->use_first[j + l->prefetch + 1] : l->npos - 1;
            add(use, l->bwd_pos[u], end, sched_unit_grad_bytes(&prog->units[u]));
        }
    }
    /* a unit's output until its backward (where the next unit has it as
     * its input save: only while the next forward reads it, and from the
     * next backward on), its input gradient until the backward of the
     * unit before, its workspace while each op runs */
    for (int u = 0; u < l->nunits; u++) {
        size_t out = sched_unit_out_bytes(prog, u);
        int next_in = u + 1 < l->nunits ? sched_unit_input(&prog->units[u + 1]) : -1;
        if (next_in < 0) {
            add(use, l->fwd_pos[u], l->bwd_pos[u], out);
        } else {
            add(use, l->fwd_pos[u], l->fwd_pos[u], out);
            add(use, l->bwd_pos[u + 1] + 1, l->bwd_pos[u], out);
        }
        if (u > 0) add(use, l->bwd_pos[u], l->bwd_pos[u - 1], prog->units[u].gin_bytes);
        add(use, l->fwd_pos[u], l->fwd_pos[u], prog->units[u].work_bytes[0]);
        if (l->recomputes[u])
            add(use, l->recompute_pos[u], l->recompute_pos[u], prog->units[u].work_bytes[0]);
        add(use, l->bwd_pos[u], l->bwd_pos[u], prog->units[u].work_bytes[1]);
        /* REGEN(u): its workspace and every save as scratch, while it runs */
        if (l->regen_pos[u] >= 0)
            add(use, l->regen_pos[u], l->regen_pos[u], prog->units[u].work_bytes[0] + sched_regen_scratch(l, u));
    }
    for (int i = 0; i < l->nsaves; i++) {
        int u = l->save_unit[i];
        const sched_save_t *sv = &prog->units[u].saves[l->save_index[i]];
        if (SCHED_KEEP == l->save_act[i]) add(use, l->fwd_pos[u], l->bwd_pos[u], sv->bytes);
        else if (SCHED_RECOMPUTE == l->save_act[i]) {
            add(use, l->fwd_pos[u], l->fwd_pos[u], sv->bytes);
            /* an input comes back with REGEN(u-1); the rest with RECOMPUTE(u) */
            add(use, sv->is_input ? l->regen_pos[u - 1] : l->recompute_pos[u], l->bwd_pos[u], sv->bytes);
        }
    }
}

size_t sched_max_of(const size_t *use, int n)
{
    size_t m = 0;
    for (int k = 0; k < n; k++) if (use[k] > m) m = use[k];
    return m;
}

void sched_decide_free(sched_decide_t *d) { free(d->drain_pos); free(d->h2d_gate); free(d->s2h_gate); }

int sched_decide_alloc(sched_decide_t *d, const sched_layout_t *l)
{
    d->drain_pos = calloc((size_t)l->nsaves + 1, sizeof(int));
    d->h2d_gate = calloc((size_t)l->nchunks + 1, sizeof(int));
    d->s2h_gate = calloc((size_t)l->nchunks + 1, sizeof(int));
    return d->drain_pos && d->h2d_gate && d->s2h_gate ? 0 : -1;
}

/* The minimum: drain into the next op, prefetch only when needed. */
void sched_decide_min(const sched_layout_t *l, sched_decide_t *d)
{
    for (int i = 0; i < l->nsaves; i++) {
        int u = l->save_unit[i];
        d->drain_pos[i] = l->fwd_pos[u] + 1;
        for (int c = 0; c < l->save_nchunks[i]; c++) {
            int ci = l->save_chunk_off[i] + c;
            d->h2d_gate[ci] = d->s2h_gate[ci] = l->consume_pos[u];
        }
    }
}

/* Base plus the device copies that offloaded saves keep until drained. */
void sched_usage_drains(const sched_layout_t *l, const sched_decide_t *d, size_t *use)
{
    base_usage(l, use);
    for (int i = 0; i < l->nsaves; i++)
        if (sched_offloaded(l->save_act[i]))
            add(use, l->fwd_pos[l->save_unit[i]], d->drain_pos[i], save_bytes(l, i));
}

/* A prefetched chunk is on device from its gate to B(u); its H2D waits for
 * its own D2H, so where that interval meets the drain interval the chunk
 * is counted once: from max(g, dl+1). */
static void add_chunks(const sched_layout_t *l, const sched_decide_t *d, size_t *use)
{
    for (int i = 0; i < l->nsaves; i++)
        for (int c = 0; c < l->save_nchunks[i]; c++) {
            int ci = l->save_chunk_off[i] + c;
            int from = d->h2d_gate[ci] > d->drain_pos[i] ? d->h2d_gate[ci] : d->drain_pos[i] + 1;
            add(use, from, l->bwd_pos[l->save_unit[i]], l->chunk_bytes[ci]);
        }
}

void sched_usage_of(const sched_layout_t *l, const sched_decide_t *d, size_t *use)
{
    sched_usage_drains(l, d, use);
    add_chunks(l, d, use);
}

/* Pull drains in where the budget is exceeded: at each over-budget
 * position, the oldest pending offload (the D2H engine finishes it first)
 * must be done before that position's op. */
void sched_tighten_drains(const sched_layout_t *l, sched_decide_t *d, size_t *use)
{
    for (int k = 0; k < l->npos; k++) {
        while (use[k] > l->budget) {
            int best = -1;
            for (int i = 0; i < l->nsaves; i++) {
                if (!sched_offloaded(l->save_act[i])) continue;
                int f = l->fwd_pos[l->save_unit[i]];
                if (f <= k - 2 && d->drain_pos[i] >= k && (best < 0 || f < l->fwd_pos[l->save_unit[best]]))
                    best = i;
            }
            if (best < 0) break;
            size_t bytes = save_bytes(l, best);
            sub(use, k, d->drain_pos[best], bytes);
            d->drain_pos[best] = k - 1;
        }
    }
}

/* Gate every prefetch chunk as early as memory and the lookahead allow, in
 * the order they are needed (the H2D engine's order). -1 if one does not
 * fit even right before its use. use holds everything but the chunks;
 * the drains (d->drain_pos) are final. */
int sched_place_gates(const sched_layout_t *l, sched_decide_t *d, size_t *use)
{
    int look = l->opts->lookahead < 0 ? 0 : l->opts->lookahead;
    int gprev = 0;
    for (int u = l->nunits - 1; u >= 0; u--)
        for (int s = 0; s < l->prog->units[u].nsaves; s++) {
            int i = l->save_off[u] + s;
            if (!sched_offloaded(l->save_act[i])) continue;
            for (int c = 0; c < l->save_nchunks[i]; c++) {
                int ci = l->save_chunk_off[i] + c;
                size_t bytes = l->chunk_bytes[ci];
                int lo = l->consume_pos[u] - look;
                if (lo < l->fwd_pos[u] + 1) lo = l->fwd_pos[u] + 1;
                if (lo < gprev) lo = gprev;
                int g = lo;
                for (int k = l->bwd_pos[u]; k >= g && k > d->drain_pos[i]; k--)
                    if (use[k] + bytes > l->budget) { g = k + 1; break; }
                if (g > l->consume_pos[u]) return -1;
                add(use, g > d->drain_pos[i] ? g : d->drain_pos[i] + 1, l->bwd_pos[u], bytes);
                d->h2d_gate[ci] = g;
                gprev = g;
                /* storage: the read-back may start `look` positions before the H2D */
                int gs = g - look;
                d->s2h_gate[ci] = gs < l->fwd_pos[u] + 1 ? l->fwd_pos[u] + 1 : gs;
            }
        }
    return 0;
}
