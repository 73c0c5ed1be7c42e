/*
 * state.c - the planner's training state on the tiers: where each unit's
 * master shard, gradient shard and optimizer moments live (the runtime's
 * state_place option, parsed by base/place.c as the runtime parses it),
 * and what that placement costs per step, by the runtime's rules
 * (docs/design.md section 7):
 *
 * - state off the device leaves the program's resident bytes; what is on
 *   the host takes host room, and storage-homed state comes up to the host
 *   for each use, so the host also holds the working copies of about three
 *   units' streamed state (the runtime's fsdp_state_stream_reserve);
 * - storage traffic: a master is read up for each gather (two per
 *   micro-batch pass, one for the last unit, which stays gathered into its
 *   backward) and, with clipping, once more for its update (after every
 *   backward; without, the update reuses the last backward's), written
 *   once; the moments read once and written once, the gradient shard
 *   written once (a fresh block, never read); with clipping every
 *   storage-homed gradient waits on the host for the update;
 * - on a GPU a unit whose state is all off the device is updated by the
 *   host's loops (the runtime's fsdp_update_on_host), at the host memory's
 *   bandwidth (host_bw), beside the backward without clipping and after it
 *   with; for the other units the optimizer kernel reads their off-device
 *   master, gradient and moments over the host link and writes master and
 *   moments back (zero copy), so that part runs at link speed instead of
 *   HBM's; a gather sends an off-device master from a device staging copy
 *   and the reduce-scatter lands in a device buffer copied out: those
 *   copies stream beside the compute, as the storage traffic does;
 * - on a CPU the device is host memory: nothing crosses a link, and the
 *   optimizer's time over the moved state is reported as host time.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

double plan_state_bytes(const plan_t *p, int ui, fsdp_class_t c, int bufs)
{
    const plan_model_t *m = &p->model;
    double shard = plan_unit_shard(m, &p->shape, p->units, ui, p->nunits);
    /* a model without a master (master dtype null) trains its parameter
     * shard: that is the runtime's master */
    int b = FSDP_CLASS_MASTER == c ? (m->master_b ? m->master_b : m->param_b)
          : FSDP_CLASS_GRAD == c   ? m->grad_b : m->optim_b;
    int n = FSDP_CLASS_OPTIM == c ? m->optim_states : 1;
    return (double)n * (bufs ? plan_buf(shard * b) : shard * b);
}

/* The host memory's bandwidth for the optimizer's loops: the file's
 * host_bw, else (an assumption the output states) the host link's. */
double plan_host_bw(const plan_hw_t *hw)
{
    return hw->host_bw > 0 ? hw->host_bw : hw->cpu ? hw->hbm_bw : hw->d2h_bw;
}

/* One off-device buffer's share of the step's traffic into s; host: the
 * host updates the unit (a GPU's, its state all off the device). */
static void add_traffic(const plan_t *p, int ui, fsdp_class_t c, strata_tier_t t, int host,
                        plan_state_t *s)
{
    double v = plan_state_bytes(p, ui, c, 0);
    /* gathers that read the master: the forward's and the backward's
     * (reshard after forward, the runtime's default), per pass */
    double gathers = (double)p->shape.accum * (ui == p->nunits - 1 ? 1 : 2);
    int master = FSDP_CLASS_MASTER == c, grad = FSDP_CLASS_GRAD == c;
    if (STRATA_TIER_STORAGE == t) {
        double mreads = gathers + (p->shape.no_clip ? 0 : 1);
        s->storage_read += master ? mreads * v : grad ? 0 : v;
        s->storage_written += v;
    }
    if (p->hw.cpu) return;
    double opt_r = host ? 0 : v, opt_w = host || grad ? 0 : v;   /* the optimizer kernel */
    double str_r = master ? gathers * v : 0, str_w = grad ? v : 0;   /* staging copies */
    s->link_read += opt_r + str_r;
    s->link_written += opt_w + str_w;
    s->link_optim_s += opt_r / p->hw.h2d_bw + opt_w / p->hw.d2h_bw;
    s->link_stream_s += str_r / p->hw.h2d_bw + str_w / p->hw.d2h_bw;
}

void plan_state_apply(plan_t *p)
{
    plan_state_t s = { 0 };
    int cnt[FSDP_NCLASS][STRATA_TIER_COUNT] = { { 0 } };
    double off = 0, most = 0, grads_up = 0, off_host = 0;
    for (int ui = 0; ui < p->nunits; ui++) {
        double streamed = 0;
        int host = !p->hw.cpu;   /* the host updates it: every class off the device */
        for (int c = 0; c < FSDP_NCLASS; c++)
            if (STRATA_TIER_DEVICE == p->home[ui][c] && (FSDP_CLASS_OPTIM != c || p->model.optim_states))
                host = 0;
        for (int c = 0; c < FSDP_NCLASS; c++) {
            strata_tier_t t = (strata_tier_t)p->home[ui][c];
            double b = plan_state_bytes(p, ui, (fsdp_class_t)c, 1);
            if (FSDP_CLASS_OPTIM == c && !p->model.optim_states) continue;   /* none to place */
            cnt[c][t]++;
            s.cls[c][t] += b;
            s.tier[t] += b;
            if (STRATA_TIER_DEVICE == t) continue;
            off += plan_state_bytes(p, ui, (fsdp_class_t)c, 0);
            if (host) off_host += plan_state_bytes(p, ui, (fsdp_class_t)c, 0);
            if (STRATA_TIER_STORAGE == t) streamed += b;
            if (STRATA_TIER_STORAGE == t && FSDP_CLASS_GRAD == c) grads_up += b;
            add_traffic(p, ui, (fsdp_class_t)c, t, host, &s);
        }
        if (streamed > most) most = streamed;
    }
    /* a unit's working copies, the next unit's on their way, and a
     * prefetched master beside them (fsdp_state_stream_reserve) */
    s.host_work = 3 * most;
    /* with clipping the gradients wait on the host for the norm */
    if (!p->shape.no_clip) s.host_work += grads_up;
    if (p->hw.storage_bw > 0) s.storage_s = (s.storage_read + s.storage_written) / p->hw.storage_bw;
    /* AdamW reads and writes each value once (eval.c's optimizer time) */
    if (p->hw.cpu) s.optim_host_s = 2 * off / p->hw.hbm_bw;
    else s.optim_host_s = 2 * off_host / plan_host_bw(&p->hw);
    fsdp_place_describe(cnt, p->nunits, s.where, sizeof s.where);
    p->state = s;
    p->mem.resident = p->resident_all - s.tier[STRATA_TIER_PINNED_HOST] - s.tier[STRATA_TIER_STORAGE];
    p->prog->resident_bytes = (size_t)(p->mem.resident + p->mem.ws_cached);
    /* a GPU: the moved state's share of the kernel's HBM time goes; the
     * kernel's link time comes for the units it still updates, and the
     * host's time where the updates wait for clipping's norm */
    p->prog->optim_s = p->optim_all_s + (p->hw.cpu ? 0 : s.link_optim_s - 2 * off / p->hw.hbm_bw +
                                         (p->shape.no_clip ? 0 : s.optim_host_s));
}

static strata_status_t check_storage(const plan_t *p, char *err, size_t errlen)
{
    if (p->state.tier[STRATA_TIER_STORAGE] > 0 && !(p->hw.storage_bw > 0))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "plan: training state on storage (%s) "
                          "needs the storage bandwidth: add storage_bw (bytes/s) to %s, or keep "
                          "the state off storage", p->state.where, p->hw.path);
    return STRATA_OK;
}

strata_status_t plan_state_reset(plan_t *p, char *err, size_t errlen)
{
    for (int ui = 0; ui < p->nunits; ui++)
        for (int c = 0; c < FSDP_NCLASS; c++)
            p->home[ui][c] = (unsigned char)(p->shape.state_auto ? STRATA_TIER_DEVICE
                                             : fsdp_place_tier(&p->shape.place[c], ui, p->nunits));
    plan_state_apply(p);
    return check_storage(p, err, errlen);
}

double plan_state_free(plan_t *p, double want)
{
    double freed = 0, host_used = p->state.tier[STRATA_TIER_PINNED_HOST];
    for (int k = 0; k < FSDP_NCLASS && freed < want; k++)
        for (int ui = 0; ui < p->nunits && freed < want; ui++) {
            fsdp_class_t c = fsdp_place_auto_order[k];
            double b = plan_state_bytes(p, ui, c, 1);
            if (STRATA_TIER_DEVICE != p->home[ui][c] || b <= 0) continue;
            double free_b = p->hw.host_bytes > host_used ? p->hw.host_bytes - host_used : 0;
            p->home[ui][c] = fsdp_place_auto_tier(free_b, b);
            if (STRATA_TIER_PINNED_HOST == p->home[ui][c]) host_used += b;
            freed += b;
        }
    if (freed > 0) plan_state_apply(p);
    return freed;
}

strata_status_t plan_state_check(const plan_t *p, char *err, size_t errlen)
{
    return check_storage(p, err, errlen);
}
