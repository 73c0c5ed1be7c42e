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
    free(l->fpos); free(l->rpos); free(l->bpos); free(l->cpos); free(l->rec);
    free(l->ufirst); free(l->ulast); free(l->uunit);
    free(l->soff); free(l->sunit); free(l->ssave); free(l->act);
    free(l->nch); free(l->coff); free(l->cbytes); free(l->coffset);
    memset(l, 0, sizeof *l);
}

int sched_offloaded(sched_action_t a) { return SCHED_HOST == a || SCHED_STORAGE == a; }

int sched_layout_init(sched_layout_t *l, const sched_program_t *prog, const sched_actions_t *acts,
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
            if (u >= L - tail && sched_offloaded(l->act[i])) l->act[i] = SCHED_KEEP;
            int n = 0;
            if (sched_offloaded(l->act[i])) {
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
static void base_usage(const sched_layout_t *l, size_t *use)
{
    const sched_program_t *prog = l->prog;
    for (int k = 0; k < l->P; k++) use[k] = prog->resident_bytes;
    for (int j = 0; j < l->J; j++) {
        int from = j - l->p < 0 ? 0 : j - l->p;
        add(use, l->ufirst[from], l->ulast[j], prog->units[l->uunit[j]].ag_bytes);
        if (j >= l->L) {
            int u = l->uunit[j];
            int end = j + l->p + 1 < l->J ? l->ufirst[j + l->p + 1] : l->P - 1;
            add(use, l->bpos[u], end, sched_unit_grad_bytes(&prog->units[u]));
        }
    }
    /* a unit's output until its backward, its input gradient until the
     * backward of the unit before, its workspace while each op runs */
    for (int u = 0; u < l->L; u++) {
        add(use, l->fpos[u], l->bpos[u], prog->units[u].out_bytes);
        if (u > 0) add(use, l->bpos[u], l->bpos[u - 1], prog->units[u].gin_bytes);
        add(use, l->fpos[u], l->fpos[u], prog->units[u].work_bytes[0]);
        if (l->rec[u]) add(use, l->rpos[u], l->rpos[u], prog->units[u].work_bytes[0]);
        add(use, l->bpos[u], l->bpos[u], prog->units[u].work_bytes[1]);
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

size_t sched_max_of(const size_t *use, int n)
{
    size_t m = 0;
    for (int k = 0; k < n; k++) if (use[k] > m) m = use[k];
    return m;
}

void sched_decide_free(sched_decide_t *d) { free(d->dl); free(d->g); free(d->gs); }

int sched_decide_alloc(sched_decide_t *d, const sched_layout_t *l)
{
    d->dl = calloc((size_t)l->NS + 1, sizeof(int));
    d->g = calloc((size_t)l->NC + 1, sizeof(int));
    d->gs = calloc((size_t)l->NC + 1, sizeof(int));
    return d->dl && d->g && d->gs ? 0 : -1;
}

/* The minimum: drain into the next op, prefetch only when needed. */
void sched_decide_min(const sched_layout_t *l, sched_decide_t *d)
{
    for (int i = 0; i < l->NS; i++) {
        int u = l->sunit[i];
        d->dl[i] = l->fpos[u] + 1;
        for (int c = 0; c < l->nch[i]; c++) d->g[l->coff[i] + c] = d->gs[l->coff[i] + c] = l->cpos[u];
    }
}

/* Base plus the device copies that offloaded saves keep until drained. */
void sched_usage_drains(const sched_layout_t *l, const sched_decide_t *d, size_t *use)
{
    base_usage(l, use);
    for (int i = 0; i < l->NS; i++)
        if (sched_offloaded(l->act[i]))
            add(use, l->fpos[l->sunit[i]], d->dl[i], l->prog->units[l->sunit[i]].saves[l->ssave[i]].bytes);
}

/* A prefetched chunk is on device from its gate to B(u); its H2D waits for
 * its own D2H, so where that interval meets the drain interval the chunk
 * is counted once: from max(g, dl+1). */
static void add_chunks(const sched_layout_t *l, const sched_decide_t *d, size_t *use)
{
    for (int i = 0; i < l->NS; i++)
        for (int c = 0; c < l->nch[i]; c++) {
            int ci = l->coff[i] + c, from = d->g[ci] > d->dl[i] ? d->g[ci] : d->dl[i] + 1;
            add(use, from, l->bpos[l->sunit[i]], l->cbytes[ci]);
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
    for (int k = 0; k < l->P; k++) {
        while (use[k] > l->budget) {
            int best = -1;
            for (int i = 0; i < l->NS; i++) {
                if (!sched_offloaded(l->act[i])) continue;
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
int sched_place_gates(const sched_layout_t *l, sched_decide_t *d, size_t *use)
{
    int look = l->opts->lookahead < 0 ? 0 : l->opts->lookahead;
    int gprev = 0;
    for (int u = l->L - 1; u >= 0; u--)
        for (int s = 0; s < l->prog->units[u].nsaves; s++) {
            int i = l->soff[u] + s;
            if (!sched_offloaded(l->act[i])) continue;
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
