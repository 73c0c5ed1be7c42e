/*
 * fetch.c - when training state on the storage tier is read up for its
 * uses. The step's uses of streamed state are listed in compute order from
 * the step's structure (which gathers read a master, when each update reads
 * its state); sched_state_fetch (sched/statefetch.c) decides the position
 * at which each read is issued, from the recorded step program's compute
 * costs and the storage read bandwidth, within a host room; step.c issues
 * the reads of each position as it reaches it (fsdp_fetch_at). The plan is
 * made once per step program -- again when the program, its plan, the
 * micro-batch count or the placement changes -- so before the program is
 * recorded (step 1), and with state_fetch=next, each read is one position
 * before its use, the rule the runtime always had.
 *
 * Compute positions of a step of M micro-batches over L units, in order:
 *   micro-batch i:  F(u) at 2Li+u (u = 0..L-1), then B(u) at 2Li+L+(L-1-u);
 *   then            clipping: the update of u at 2LM+(L-1-u);
 *                   else END at 2LM (step_end; each update was modelled at
 *                   the backward after its unit's, where it is submitted).
 * A read is issued at the start of a position, before its gathers start.
 */
#include "config.h"
#include "fsdp/fsdp.h"
#include "tiers/tiers.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* At most this much state fetched and waiting for its use, and at most
 * half of the host tier's free room when the plan is made: the rest is
 * for activation offloads and the working copies. */
#define FETCH_ROOM_CAP (1LL << 30)

typedef struct { int unit; unsigned mask; } fetch_item_t;

typedef struct {
    sched_fetch_use_t use;
    fetch_item_t      item;
    int               seq;      /* listing order: the tie-break at one position */
} fetch_use_t;

/* What a plan was made for (compared whole: zeroed before it is filled). */
typedef struct {
    unsigned  gen;            /* m->mplan_gen: the step program and its plan */
    int       nmicro, have_prog, clip, prefetch, reshard, mode;
    long long streamed;       /* the placement (streamed_total) */
} fetch_key_t;

struct fsdp_fetch {
    fetch_key_t   key;
    /* the reads issued at position q: item[first[q] .. first[q + 1]) */
    int           npos;
    int          *first;
    fetch_item_t *item;
};

static int pos_f(int L, int micro, int u) { return 2 * L * micro + u; }
static int pos_b(int L, int micro, int u) { return 2 * L * micro + L + (L - 1 - u); }

int fsdp_fetch_pos(const strata_model_t *m, fsdp_pos_t kind, int unit)
{
    int L = m->nunits, M = m->n_micro;
    switch (kind) {
    case FSDP_POS_F:   return pos_f(L, m->micro, unit);
    case FSDP_POS_B:   return pos_b(L, m->micro, unit);
    case FSDP_POS_OPT: return 2 * L * M + (L - 1 - unit);
    default:           return 2 * L * M;
    }
}

/* Bytes of u's buffers in mask that live on storage; the mask cut to them. */
static long long streamed_bytes(const strata_model_t *m, strata_unit_t *u, unsigned *mask)
{
    long long b = 0;
    for (int k = 0; k < fsdp_state_count(m); k++) {
        if (!(*mask & 1u << k)) continue;
        if (!fsdp_state_streamed(u, k) || !fsdp_sb(u, k)->h) *mask &= ~(1u << k);
        else b += (long long)strata_block_size(fsdp_sb(u, k)->h);
    }
    return b;
}

typedef struct {
    strata_model_t *m;
    fetch_use_t    *u;
    int             n;
    char           *gathered;   /* [L] */
    int            *down;       /* [L]: position at which the master last went down;
                                 * INT_MAX: kept up for the update */
} lister_t;

static void add_use(lister_t *ls, int pos, int earliest, int unit, unsigned mask)
{
    long long b = streamed_bytes(ls->m, ls->m->units[unit], &mask);
    if (!mask) return;
    if (earliest > pos) earliest = pos;
    ls->u[ls->n] = (fetch_use_t){ { pos, earliest, unit, b }, { unit, mask }, ls->n };
    ls->n++;
}

/* A gather of unit v started at position q reads its master unless v is
 * gathered; the master goes down at its wait (position `wait`), unless it
 * is kept for the update. */
static void gather(lister_t *ls, int v, int q, int wait, int keep)
{
    if (ls->gathered[v]) return;
    ls->gathered[v] = 1;
    add_use(ls, q, ls->down[v] + 1, v, 1u << FSDP_SB_MASTER);
    ls->down[v] = keep ? INT_MAX : wait;
}

/* The gathers of one micro-batch as step.c makes them: the unit's own and
 * its prefetch, released after the forward (reshard_after_forward, not the
 * last unit) and after the backward (not unit 0 before another micro-batch). */
static void list_micro(lister_t *ls, int i, int M)
{
    strata_model_t *m = ls->m;
    int L = m->nunits, p = m->prefetch, last = i == M - 1;
    int rs = m->opts.reshard_after_forward, keep = last && 0.0f == m->opts.clip_norm;
    for (int u = 0; u < L; u++) {
        for (int k = 0; k <= p && u + k < L; k++)
            gather(ls, u + k, pos_f(L, i, u), pos_f(L, i, u + k), 0);
        if (rs && u != L - 1) ls->gathered[u] = 0;
    }
    for (int u = L - 1; u >= 0; u--) {
        for (int k = 0; k <= p && u - k >= 0; k++)
            gather(ls, u - k, pos_b(L, i, u), pos_b(L, i, u - k), keep);
        if ((rs && !(0 == u && !last)) || last) ls->gathered[u] = 0;
    }
}

/* Each update reads the master (unless kept up since its gather) and the
 * moments: clipping, at its own position; else where it is submitted. */
static void list_updates(lister_t *ls, int M)
{
    strata_model_t *m = ls->m;
    int L = m->nunits, clip = 0.0f != m->opts.clip_norm;
    unsigned moments = 0;
    for (int k = FSDP_SB_STATE0; k < fsdp_state_count(m); k++) moments |= 1u << k;
    for (int u = L - 1; u >= 0; u--) {
        int q = clip ? 2 * L * M + (L - 1 - u) : u > 0 ? pos_b(L, M - 1, u - 1) : 2 * L * M;
        if (INT_MAX != ls->down[u]) add_use(ls, q, ls->down[u] + 1, u, 1u << FSDP_SB_MASTER);
        add_use(ls, q, 0, u, moments);
    }
}

static int cmp_use(const void *a, const void *b)
{
    const fetch_use_t *x = a, *y = b;
    if (x->use.pos != y->use.pos) return x->use.pos < y->use.pos ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The step's uses in order into *u_p (*n_p of them); -1 out of memory. */
static int list_uses(strata_model_t *m, fetch_use_t **u_p, int *n_p)
{
    int L = m->nunits, M = m->n_micro;
    lister_t ls = { m, malloc(((size_t)2 * L * M + 2 * (size_t)L + 1) * sizeof *ls.u), 0,
                    calloc((size_t)L + 1, 1), malloc(((size_t)L + 1) * sizeof(int)) };
    if (!ls.u || !ls.gathered || !ls.down) {
        free(ls.u);
        free(ls.gathered);
        free(ls.down);
        return -1;
    }
    for (int u = 0; u < L; u++) ls.down[u] = -1;
    for (int i = 0; i < M; i++) list_micro(&ls, i, M);
    list_updates(&ls, M);
    qsort(ls.u, (size_t)ls.n, sizeof *ls.u, cmp_use);
    free(ls.gathered);
    free(ls.down);
    *u_p = ls.u;
    *n_p = ls.n;
    return 0;
}

/* Seconds of each compute position, from the recorded program (none
 * before it is recorded: all 0, the default rule). The update's share of
 * the optimizer's time: the program's, else the last step's less its waits. */
static void position_costs(const strata_model_t *m, double *c, int npos)
{
    const sched_program_t *prog = fsdp_exec_program(m);
    int L = m->nunits, M = m->n_micro;
    memset(c, 0, (size_t)npos * sizeof *c);
    if (!prog || prog->nunits != L) return;
    for (int i = 0; i < M; i++)
        for (int u = 0; u < L; u++) {
            c[pos_f(L, i, u)] = prog->units[u].cost_s[SCHED_COST_FWD];
            c[pos_b(L, i, u)] = prog->units[u].cost_s[SCHED_COST_BWD];
        }
    double opt = prog->optim_s > 0 ? prog->optim_s : m->stats.optim_s - m->stats.state_wait_s;
    if (0.0f != m->opts.clip_norm && opt > 0)
        for (int u = 0; u < L; u++) c[2 * L * M + u] = opt / L;
}

/* Storage read bandwidth: the link model's, else what the reads took on
 * the storage engine so far; 0 unknown. The write-backs share the engine,
 * and the plan does not place them: the reads are given their share of it,
 * by the bytes the last step read and wrote. */
static double read_bw(const strata_model_t *m, const char **how)
{
    double bw = m->ctx->cfg.link_storage_bw;
    *how = "link_storage_bw";
    if (!(bw > 0)) {
        *how = "measured";
        uint64_t b = __atomic_load_n(&m->fetch_bytes, __ATOMIC_RELAXED);
        uint64_t ns = __atomic_load_n(&m->fetch_busy_ns, __ATOMIC_RELAXED);
        bw = ns ? (double)b / ((double)ns * 1e-9) : 0;
    }
    double r = (double)m->stats.state_read_bytes, w = (double)m->stats.state_written_bytes;
    return r > 0 ? bw * r / (r + w) : bw;
}

static long long host_room(strata_context_t *ctx)
{
    strata_tier_usage_t h;
    strata_tier_usage(ctx, STRATA_TIER_PINNED_HOST, &h);
    long long half = h.budget > h.used ? (long long)((h.budget - h.used) / 2) : 0;
    return half < FETCH_ROOM_CAP ? half : FETCH_ROOM_CAP;
}

/* A plan in the making: the uses, the costs and what was decided. */
typedef struct {
    fetch_use_t       *fu;
    sched_fetch_use_t *use;
    int               *at;
    int                n, npos;
    double            *c, bw, wait;
    const char        *how;
    long long          room;
} making_t;

/* Rank 0, log_level info: what the plan decided beside the default rule. */
static void say_plan(strata_model_t *m, const making_t *p)
{
    if (0 != m->ctx->rank || !base_log_enabled(m->ctx, STRATA_LOG_INFO)) return;
    int *dflt = malloc(((size_t)p->n + 1) * sizeof *dflt), earlier = 0, most = 0;
    if (!dflt || STRATA_OK != sched_state_fetch(p->use, p->n, p->c, p->npos, 0, 0, dflt, NULL,
                                                NULL, 0)) {
        free(dflt);
        return;
    }
    for (int i = 0; i < p->n; i++) {
        earlier += p->at[i] < dflt[i];
        if (p->use[i].pos - p->at[i] > most) most = p->use[i].pos - p->at[i];
    }
    char b1[32], b2[32];
    strata_info(m->ctx, "state fetch plan: %d reads over %d compute positions, %d of them earlier "
                "than one position ahead (up to %d ahead); storage reads %s/s (%s, the reads' share), host room %s; "
                "predicted wait %.4f s, one position ahead %.4f s", p->n, p->npos, earlier, most,
                strata_format_size((size_t)p->bw, b1, sizeof b1), p->how,
                strata_format_size((size_t)p->room, b2, sizeof b2), p->wait,
                sched_state_fetch_wait(p->use, p->n, p->c, p->npos, p->bw, dflt));
    free(dflt);
}

/* The reads of each position into f (first[], item[]) from p's at[]. */
static int keep_plan(struct fsdp_fetch *f, const making_t *p)
{
    free(f->first);
    free(f->item);
    f->npos = p->npos;
    f->first = calloc((size_t)p->npos + 2, sizeof *f->first);
    f->item = malloc(((size_t)p->n + 1) * sizeof *f->item);
    if (!f->first || !f->item) return -1;
    for (int i = 0; i < p->n; i++) f->first[p->at[i] + 1]++;
    for (int q = 0; q < p->npos; q++) f->first[q + 1] += f->first[q];
    int *fill = malloc(((size_t)p->npos + 1) * sizeof *fill);
    if (!fill) return -1;
    memcpy(fill, f->first, (size_t)p->npos * sizeof *fill);
    for (int i = 0; i < p->n; i++) f->item[fill[p->at[i]]++] = p->fu[i].item;
    free(fill);
    return 0;
}

/* List the uses, decide, keep the result; -1 out of memory. */
static int make_plan(strata_model_t *m, struct fsdp_fetch *f)
{
    making_t p = { 0 };
    p.npos = 2 * m->nunits * m->n_micro + (0.0f != m->opts.clip_norm ? m->nunits : 1);
    if (list_uses(m, &p.fu, &p.n)) return -1;
    p.use = malloc(((size_t)p.n + 1) * sizeof *p.use);
    p.at = malloc(((size_t)p.n + 1) * sizeof *p.at);
    p.c = malloc((size_t)p.npos * sizeof *p.c);
    int rc = -1;
    if (p.use && p.at && p.c) {
        for (int i = 0; i < p.n; i++) p.use[i] = p.fu[i].use;
        position_costs(m, p.c, p.npos);
        p.bw = 1 == m->ctx->cfg.state_fetch ? 0 : read_bw(m, &p.how);
        p.room = host_room(m->ctx);
        char err[256];
        if (STRATA_OK == sched_state_fetch(p.use, p.n, p.c, p.npos, p.bw, p.room, p.at, &p.wait,
                                           err, sizeof err)) {
            if (p.bw > 0 && fsdp_exec_program(m)) say_plan(m, &p);
            rc = keep_plan(f, &p);
        } else {   /* a listing this file got wrong: each use reads at its ready */
            strata_warn(m->ctx, "state fetch plan: %s; no read ahead", err);
            p.n = 0;
            rc = keep_plan(f, &p);
        }
    }
    free(p.fu);
    free(p.use);
    free(p.at);
    free(p.c);
    return rc;
}

/* The sum of what streams, as a stand-in for the placement: the plan is
 * made again when it changes (state_place=auto moves state). */
static long long streamed_total(strata_model_t *m)
{
    long long t = 0;
    for (int u = 0; u < m->nunits; u++) {
        unsigned all = (1u << fsdp_state_count(m)) - 1;
        t += streamed_bytes(m, m->units[u], &all) * (u + 1);
    }
    return t;
}

void fsdp_fetch_step_begin(strata_model_t *m)
{
    struct fsdp_fetch *f = m->fetch;
    fetch_key_t key;
    memset(&key, 0, sizeof key);
    key.streamed = streamed_total(m);
    if (!key.streamed) return;
    if (!f && !(f = m->fetch = calloc(1, sizeof *f))) return;   /* then reads at each use */
    key.gen = m->mplan_gen;
    key.nmicro = m->n_micro;
    key.have_prog = !!fsdp_exec_program(m);
    key.clip = 0.0f != m->opts.clip_norm;
    key.prefetch = m->prefetch;
    key.reshard = m->opts.reshard_after_forward;
    key.mode = m->ctx->cfg.state_fetch;
    if (!f->first || memcmp(&key, &f->key, sizeof key)) {
        f->key = key;
        if (make_plan(m, f)) {   /* out of memory: reads at each use */
            free(f->first);
            f->first = NULL;
            f->npos = 0;
        }
    }
    fsdp_fetch_at(m, FSDP_POS_F, 0);
}

void fsdp_fetch_at(strata_model_t *m, fsdp_pos_t kind, int unit)
{
    struct fsdp_fetch *f = m->fetch;
    int q = fsdp_fetch_pos(m, kind, unit);
    if (!f || !f->first || q < 0 || q >= f->npos) return;
    for (int i = f->first[q]; i < f->first[q + 1]; i++)
        for (int k = 0; k < FSDP_NSB; k++)
            if (f->item[i].mask & 1u << k &&
                STRATA_OK != fsdp_state_fetch(m, m->units[f->item[i].unit], k)) {
                /* a full host tier: the use's own ready reads it, or says so */
                base_clear_error(m->ctx);
                return;
            }
}

void fsdp_fetch_free(strata_model_t *m)
{
    struct fsdp_fetch *f = m->fetch;
    if (!f) return;
    free(f->first);
    free(f->item);
    free(f);
    m->fetch = NULL;
}
