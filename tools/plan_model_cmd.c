/*
 * plan_model_cmd.c - `strata plan --model M --hw H ...`: a model file and a
 * hardware file to the per-device memory, per-host bytes, step time,
 * tokens/s and TFLOP/s per device of each activation policy, with the
 * step timed by sched_build + sched_simulate (plan/plan.h).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "strata.h"
#include "plan/plan.h"
#include "tools/cmds.h"

typedef struct {
    const char *model, *hw, *policy, *schedule, *state_place;
    plan_shape_t shape;
    int micro_max, json;
} popts_t;

/* One row to compute: a policy text ("*=keep", "auto", ...), its label for
 * the "policy" field and the schedule mode. */
typedef struct { const char *text, *label; sched_mode_t mode; } want_t;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: strata plan --model M --hw H --fsdp N --micro B|max --seq S --policy P [OPTIONS]\n"
        "Plans a training step of model M (a shipped name, see share/models, or a JSON path)\n"
        "on hardware H (share/hw or a path; `strata calibrate` writes one): per-device memory,\n"
        "host bytes, step time from the runtime's schedule builder and simulator.\n"
        "  --fsdp N          ranks sharding the parameters\n"
        "  --replicas R      data-parallel copies of the fsdp group (1)\n"
        "  --ep E            expert parallelism: experts split over E ranks, not gathered (1)\n"        "  --moe-imbalance F the busiest rank's routed tokens over the mean share (1: balanced)\n"
        "  --micro B|max     micro-batch (rows per device); max: the largest that fits\n"
        "  --seq S           tokens per row\n"
        "  --accum A         micro-batches per optimizer step (1)\n"
        "  --accum-grads M   held: every unit's unsharded gradients kept from the first\n"
        "                    micro-batch to the last, as the runtime does (default); sharded:\n"
        "                    reduce-scattered after each micro-batch into the shard, as PyTorch\n"
        "                    FSDP and ZeRO-3 do (to compare with their runs)\n"
        "  --reserve M       runtime: the device budget keeps the runtime's reserve against\n"
        "                    fragmentation free, as its admission does (default); none: it\n"
        "                    does not (to compare with other frameworks' runs)\n"
        "  --prefetch P      all-gather lookahead in units (1)\n"
        "  --policy P        name=action list as train_gpt's --act-policy, auto, or all\n"
        "                    (all: keep, recompute, host naive, host lhs, auto)\n"
        "  --schedule M      lhs, naive, none (nothing overlaps, collectives included: a\n"
        "                    compiler without latency hiding), both (naive and lhs) or all (lhs)\n"
        "  --hbm BYTES       usable device memory instead of the hardware file's\n"
        "  --clip X          gradient-norm clipping as train_gpt's --clip; 0 = off (1.0)\n"
        "  --state-place P   where the training state lives, as the runtime's state_place:\n"
        "                    CLASS=TIER[:F[:TIER2]],... (classes master, grad, optim, *; tiers\n"
        "                    device, host, storage) or auto (*=device)\n"
        "  --json            one JSON object per row on stdout\n"
        "Shipped files are found in $STRATA_DATADIR, the source tree (uninstalled) or\n"
        "the installed data directory; formulas in docs/planner.md.\n");
}

static int num(const char *flag, const char *v, long min, long *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < min) {
        fprintf(stderr, "strata plan: %s: expected an integer >= %ld, got '%s'\n", flag, min, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* A flag of two words: *out = 0 for `off`, 1 for `on`. */
static int two_words(const char *flag, const char *v, const char *off, const char *on, int *out)
{
    if (strcmp(v, off) && strcmp(v, on)) {
        fprintf(stderr, "strata plan: %s: expected %s or %s, got '%s'\n", flag, off, on, v);
        return -1;
    }
    *out = !strcmp(v, on);
    return 0;
}

/* The runtime's own reading of the option (base/place.h). */
static int place_arg(const char *v, plan_shape_t *sh)
{
    char why[256];
    sh->state_auto = !strcmp(v, "auto");
    if (sh->state_auto || !fsdp_place_parse(v, sh->place, why, sizeof why)) return 0;
    fprintf(stderr, "strata plan: --state-place: %s\n", why);
    return -1;
}

static int parse_args(int argc, char **argv, popts_t *o)
{
    *o = (popts_t){ .schedule = "lhs", .state_place = "*=device", .shape = { .fsdp = 0, .replicas = 1, .ep = 1, .accum = 1, .prefetch = 1 } };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 1; }
        if (!v) { fprintf(stderr, "strata plan: %s needs a value (or is unknown)\n", a); return -1; }
        i++;
        if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--hw")) o->hw = v;
        else if (!strcmp(a, "--policy")) o->policy = v;
        else if (!strcmp(a, "--schedule")) o->schedule = v;
        else if (!strcmp(a, "--state-place")) rc = place_arg(o->state_place = v, &o->shape);
        else if (!strcmp(a, "--fsdp")) rc = num(a, v, 1, &o->shape.fsdp);
        else if (!strcmp(a, "--replicas")) rc = num(a, v, 1, &o->shape.replicas);
        else if (!strcmp(a, "--ep")) rc = num(a, v, 1, &o->shape.ep);
        else if (!strcmp(a, "--seq")) rc = num(a, v, 1, &o->shape.seq);
        else if (!strcmp(a, "--accum")) rc = num(a, v, 1, &o->shape.accum);
        else if (!strcmp(a, "--accum-grads")) rc = two_words(a, v, "held", "sharded", &o->shape.accum_sharded);
        else if (!strcmp(a, "--reserve")) rc = two_words(a, v, "runtime", "none", &o->shape.no_reserve);
        else if (!strcmp(a, "--prefetch")) rc = num(a, v, 0, &o->shape.prefetch);
        else if (!strcmp(a, "--clip")) {
            char *end;
            double x = strtod(v, &end);
            if (end == v || *end || !(x >= 0)) {
                fprintf(stderr, "strata plan: --clip: expected a norm >= 0 (0 = off), got '%s'\n", v);
                return -1;
            }
            o->shape.no_clip = 0 == x;
        }
        else if (!strcmp(a, "--moe-imbalance")) {
            char *end;
            o->shape.moe_imbalance = strtod(v, &end);
            if (end == v || *end) {
                fprintf(stderr, "strata plan: --moe-imbalance: expected a number >= 1, got '%s'\n", v);
                return -1;
            }
        }
        else if (!strcmp(a, "--micro") && !strcmp(v, "max")) o->micro_max = 1;
        else if (!strcmp(a, "--micro")) rc = num(a, v, 1, &o->shape.micro);
        else if (!strcmp(a, "--hbm")) {
            size_t b;
            if (STRATA_OK != strata_parse_size(v, &b) || 0 == b) {
                fprintf(stderr, "strata plan: --hbm: expected bytes (e.g. 80G), got '%s'\n", v);
                return -1;
            }
            o->shape.hbm_override = (double)b;
        } else {
            fprintf(stderr, "strata plan: unknown option '%s'\n", a);
            return -1;
        }
        if (rc) return -1;
    }
    const char *miss = !o->model ? "--model" : !o->hw ? "--hw" : !o->shape.fsdp ? "--fsdp" :
                       !o->shape.seq ? "--seq" : !o->policy ? "--policy" :
                       !o->shape.micro && !o->micro_max ? "--micro" : NULL;
    if (miss) { fprintf(stderr, "strata plan: %s is required (see strata plan --help)\n", miss); return -1; }
    if (strcmp(o->schedule, "lhs") && strcmp(o->schedule, "naive") && strcmp(o->schedule, "none") &&
        strcmp(o->schedule, "both") && strcmp(o->schedule, "all")) {
        fprintf(stderr, "strata plan: --schedule: expected lhs, naive, none, both or all, got '%s'\n",
                o->schedule);
        return -1;
    }
    return 0;
}

static int wants(const popts_t *o, want_t *w)
{
    int n = 0;
    if (!strcmp(o->policy, "all")) {
        w[n++] = (want_t){ "*=keep", "keep", SCHED_MODE_LHS };
        w[n++] = (want_t){ "*=recompute", "recompute", SCHED_MODE_LHS };
        w[n++] = (want_t){ "*=host", "host", SCHED_MODE_NONE };
        w[n++] = (want_t){ "*=host", "host", SCHED_MODE_NAIVE };
        w[n++] = (want_t){ "*=host", "host", SCHED_MODE_LHS };
        w[n++] = (want_t){ "auto", "auto", SCHED_MODE_LHS };
        return n;
    }
    const char *m = o->schedule;
    int all = !strcmp(m, "all"), both = !strcmp(m, "both");
    if (all || !strcmp(m, "none")) w[n++] = (want_t){ o->policy, o->policy, SCHED_MODE_NONE };
    if (all || both || !strcmp(m, "naive")) w[n++] = (want_t){ o->policy, o->policy, SCHED_MODE_NAIVE };
    if (all || both || !strcmp(m, "lhs")) w[n++] = (want_t){ o->policy, o->policy, SCHED_MODE_LHS };
    return n;
}

static strata_status_t eval_want(plan_t *p, const want_t *w, plan_row_t *row, char *err, size_t len)
{
    return plan_policy(p, w->text, w->mode, row, err, len);
}

/* The largest micro-batch at which w fits (0 if not even 1): doubling,
 * then bisection. *p_io ends as the plan of that micro-batch. */
static strata_status_t micro_max(const popts_t *o, const plan_model_t *m, const plan_hw_t *hw,
                                 const want_t *w, plan_t **p_io, plan_row_t *row, char *err, size_t len)
{
    long lo = 0, hi = 1;
    plan_row_t r, best = { 0 };
    for (long b = 1; b <= 65536; b *= 2) {   /* doubling */
        plan_shape_t sh = o->shape;
        plan_t *p = NULL;
        sh.micro = b;
        strata_status_t st = plan_create(m, hw, &sh, &p, err, len);
        if (STRATA_OK == st) st = eval_want(p, w, &r, err, len);
        plan_destroy(p);
        if (STRATA_OK != st) return st;
        if (!r.fits) { hi = b; break; }
        lo = b;
        best = r;
    }
    while (lo > 0 && hi - lo > 1) {   /* bisection: lo fits, hi does not */
        plan_shape_t sh = o->shape;
        plan_t *p = NULL;
        sh.micro = (lo + hi) / 2;
        strata_status_t st = plan_create(m, hw, &sh, &p, err, len);
        if (STRATA_OK == st) st = eval_want(p, w, &r, err, len);
        plan_destroy(p);
        if (STRATA_OK != st) return st;
        if (r.fits) { lo = sh.micro; best = r; } else hi = sh.micro;
    }
    plan_shape_t sh = o->shape;
    sh.micro = lo > 0 ? lo : 1;
    plan_destroy(*p_io);
    *p_io = NULL;
    strata_status_t st = plan_create(m, hw, &sh, p_io, err, len);
    if (STRATA_OK != st) return st;
    if (lo > 0) *row = best;
    else st = eval_want(*p_io, w, row, err, len);
    return st;
}

/* ---------------------------------------------------------------- output */

static const char *gb(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f GB", bytes / 1e9);
    return buf;
}

static int state_moved(const plan_state_t *s)
{
    return s->tier[STRATA_TIER_PINNED_HOST] > 0 || s->tier[STRATA_TIER_STORAGE] > 0;
}

/* The training state's tiers and per-step traffic, for a placement given
 * in full (auto's is each row's). */
static void print_state(const plan_t *p, FILE *out)
{
    const plan_state_t *s = &p->state;
    char a[32], b[32];
    if (p->shape.state_auto) {
        fprintf(out, "  training state (--state-place auto): on the device unless a row lacks room; the row\n"
                     "  says what left it\n");
        return;
    }
    if (!state_moved(s)) return;
    fprintf(out, "  training state (--state-place):    %s\n", s->where);
#define ROW(label, v) fprintf(out, "  %-34s %12s\n", label, gb(v, a, sizeof a))
    ROW("state on device", s->tier[STRATA_TIER_DEVICE]);
    ROW("state on host", s->tier[STRATA_TIER_PINNED_HOST]);
    ROW("state on storage", s->tier[STRATA_TIER_STORAGE]);
    if (s->host_work > 0) ROW("streamed state's copies on host", s->host_work);
#undef ROW
    if (s->tier[STRATA_TIER_STORAGE] > 0)
        fprintf(out, "  %-34s %12s read, %s written: %.3f s at storage_bw\n", "storage traffic per step",
                gb(s->storage_read, a, sizeof a), gb(s->storage_written, b, sizeof b), s->storage_s);
    if (!p->hw.cpu) {
        fprintf(out, "  %-34s %12s up, %s down: the optimizer's %.3f s (in its time), the\n"
                     "  %-34s gathers' and reduce-scatters' copies %.3f s (beside the compute)\n",
                "host link traffic per step", gb(s->link_read, a, sizeof a), gb(s->link_written, b, sizeof b),
                s->link_optim_s, "", s->link_stream_s);
        if (s->optim_host_s > 0)
            fprintf(out, "  %-34s %12.3f s (units with all their state off the device; %s)\n",
                    "optimizer host time", s->optim_host_s,
                    p->shape.no_clip ? "beside the backward" : "after the backward: clipping");
    } else
        fprintf(out, "  %-34s %12.3f s (the moved state's share of the optimizer)\n", "optimizer host time",
                s->optim_host_s);
}

static void print_header(const plan_t *p, FILE *out)
{
    const plan_model_t *m = &p->model;
    const plan_hw_t *hw = &p->hw;
    const plan_shape_t *sh = &p->shape;
    const plan_memory_t *mm = &p->mem;
    char a[32], b[32];
    fprintf(out, "model %s (%s): %.1fB parameters, %.1fB active per token (no embedding lookup)\n", m->name,
            m->path, mm->params_total / 1e9, mm->params_active / 1e9);
    fprintf(out, "hw %s (%s): usable HBM %s%s, host %s per device, %.0f TFLOP/s x mfu %.2f\n", hw->name, hw->path,
            gb(hw->hbm_bytes, a, sizeof a), hw->hbm_derived ? " (published capacity less 2 GiB)" : "",
            gb(hw->host_bytes, b, sizeof b), hw->flops / 1e12, hw->mfu);
    fprintf(out, "shape: fsdp %ld x replicas %ld, ep %ld, micro-batch %ld, seq %ld, accum %ld, prefetch %ld\n",
            sh->fsdp, sh->replicas, sh->ep, sh->micro, sh->seq, sh->accum, sh->prefetch);
    fprintf(out, "bytes per element: params %d, compute %d, activations %d, grads %d, reduce %d, master %d, "
            "optimizer %d x %d\n", m->param_b, m->compute_b, m->act_b, m->grad_b, m->reduce_b, m->master_b,
            m->optim_b, m->optim_states);
    fprintf(out, "per device, outside the activations:\n");
#define ROW(label, v) fprintf(out, "  %-34s %12s\n", label, gb(v, a, sizeof a))
    ROW("parameter shard", mm->param_shard);
    ROW("gradient shard", mm->grad_shard);
    ROW("master weights", mm->master);
    ROW("optimizer state", mm->optim);
    print_state(p, out);
    if (sh->ep > 1 && sh->ep == sh->fsdp) {
        ROW("expert weights (ep-local, whole)", mm->expert_local);
        ROW("expert gradients (ep-local)", mm->expert_grads);
    } else if (sh->ep > 1) {
        fprintf(out, "  routed experts: each rank's 1/%ld, sharded over the %ld ranks that hold them, gathered\n"
                     "  among those per unit (in the gathered parameters below)\n", sh->ep, sh->fsdp / sh->ep);
    }
    ROW("input tokens", mm->tokens);
    ROW("workspace (largest unit)", mm->workspace);
    if (sh->accum > 1 && !sh->accum_sharded) ROW("unsharded gradients (all units)", mm->accum_grads);
    ROW("transfer buffers", mm->transfer_buffers);
    ROW("communication buffers", mm->comm_buffers);
    ROW("gathered params (largest unit)", mm->gathered_max);
    fprintf(out, "  %-34s %12s  (x up to prefetch+1 = %ld units in flight)\n", "",
            gb(mm->gathered_max * (double)(sh->prefetch + 1), a, sizeof a), sh->prefetch + 1);
    if (1 == sh->accum || sh->accum_sharded) ROW("unsharded gradients (largest unit)", mm->grads_max);
    ROW("unit outputs (unit_input: kept or moved)", mm->unit_outputs);
    ROW("input gradients (a backward's two)", mm->input_grads);
    fprintf(out, "  %-34s %12s  (of the budget, not in the device column: the runtime's\n"
            "  %-34s %12s   admission keeps one more workspace and save free)\n",
            "kept free against fragmentation", gb(mm->reserve, a, sizeof a), "", "");
#undef ROW
}

static void print_acts(const plan_t *p, FILE *out)
{
    /* the first layer of each kind: its saves per micro-batch */
    fprintf(out, "activations per micro-batch (bytes, forward FLOPs of the producing op):\n");
    int shown_dense = 0, shown_moe = 0;
    for (int i = 0; i < p->nunits; i++) {
        const plan_unit_t *u = &p->units[i];
        int moe = u->local_params > 0 || (p->model.moe && strstr(u->name, "layer") &&
                                          atol(u->name + 5) >= p->model.dense_layers);
        if (!u->nsaves || (moe ? shown_moe : shown_dense)) continue;
        if (strcmp(u->name, "head")) { if (moe) shown_moe = 1; else shown_dense = 1; }
        fprintf(out, "  %s:", u->name);
        for (int s = 0; s < u->nsaves; s++)
            fprintf(out, " %s %.1f MB %.3g TF%s", u->saves[s].name, u->saves[s].bytes / 1e6,
                    u->saves[s].flops / 1e12, s + 1 < u->nsaves ? "," : "\n");
    }
}

/* What the device lacks: the budget the row needs (its use and the
 * reserve kept free against fragmentation) less the capacity. */
static double short_bytes(const plan_row_t *r)
{
    double need = r->device_bytes + r->device_reserve;
    return r->fits_device || need < r->device_capacity ? 0 : need - r->device_capacity;
}

static void print_row(const plan_t *p, const want_t *w, const plan_row_t *r, FILE *out)
{
    char a[32], b[32], c[32], pol[1024];
    fprintf(out, "%-10s %-5s %-4s %11s %11s %11s %10.4f %12.0f %9.1f  %s\n", w->label, sched_mode_name(r->mode),
            r->fits ? "yes" : "NO", gb(r->device_bytes, a, sizeof a),
            gb(short_bytes(r), b, sizeof b),
            gb(r->host_bytes, c, sizeof c), r->step_s, r->tokens_per_s, r->tflops_per_device,
            sched_actions_string(&r->acts, p->prog, pol, sizeof pol));
    if (r->tail_kept > 0)
        fprintf(out, "%-10s (the lhs schedule keeps the last %d units' offloads on device)\n", "", r->tail_kept);
    if (!r->fits_host) fprintf(out, "%-10s host needs %s, has %s per device\n", "", gb(r->host_bytes, a, sizeof a),
                              gb(r->host_capacity, b, sizeof b));
    const plan_state_t *s = &r->state;
    if (p->shape.state_auto && state_moved(s))
        fprintf(out, "%-10s state moved off the device: %s (host %s, storage %s)\n", "", s->where,
                gb(s->tier[STRATA_TIER_PINNED_HOST], a, sizeof a), gb(s->tier[STRATA_TIER_STORAGE], b, sizeof b));
    if (state_moved(s))
        fprintf(out, "%-10s state streams %.3f s (storage %.3f, link copies %.3f) beside %.3f s of compute: "
                "%.3f s exposed (in step_s)\n", "", fmax(s->storage_s, s->link_stream_s), s->storage_s,
                s->link_stream_s, r->compute_s, s->exposed_s);
}

static json_t *by_name(const plan_t *p, const double *v)
{
    json_t *o = json_object();
    for (int n = 0; n < p->prog->nnames; n++)
        if (v[n] > 0) json_object_set_new(o, p->prog->names[n], json_integer((json_int_t)v[n]));
    return o;
}

/* Where the row's training state is ({"device": {"master": bytes, ...},
 * ...}) and its traffic per step. */
static json_t *json_state(const plan_state_t *s)
{
    json_t *tiers = json_object();
    for (int t = 0; t < STRATA_TIER_COUNT; t++) {
        json_t *o = json_object();
        for (int c = 0; c < FSDP_NCLASS; c++)
            json_object_set_new(o, fsdp_class_name((fsdp_class_t)c), json_integer((json_int_t)s->cls[c][t]));
        json_object_set_new(tiers, strata_tier_name((strata_tier_t)t), o);
    }
#define B_(x) ((json_int_t)(x))
    return json_pack("{s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:f,s:f,s:f,s:f}", "where", s->where,
        "tiers", tiers, "on_device_bytes", B_(s->tier[STRATA_TIER_DEVICE]),
        "on_host_bytes", B_(s->tier[STRATA_TIER_PINNED_HOST]), "on_storage_bytes", B_(s->tier[STRATA_TIER_STORAGE]),
        "host_working_bytes", B_(s->host_work), "storage_read_bytes", B_(s->storage_read),
        "storage_written_bytes", B_(s->storage_written), "storage_s", s->storage_s,
        "link_read_bytes", B_(s->link_read), "link_written_bytes", B_(s->link_written),
        "link_optim_s", s->link_optim_s, "link_stream_s", s->link_stream_s, "optim_host_s", s->optim_host_s,
        "exposed_s", s->exposed_s);
#undef B_
}

static void json_row(const plan_t *p, const want_t *w, const plan_row_t *r)
{
    const plan_memory_t *mm = &p->mem;
    const plan_shape_t *sh = &p->shape;
    char pol[1024];
#define B_(x) ((json_int_t)(x))
    json_t *bd = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
        "param_shard", B_(mm->param_shard), "grad_shard", B_(mm->grad_shard), "master", B_(mm->master),
        "optimizer", B_(mm->optim), "expert_local", B_(mm->expert_local), "expert_grads", B_(mm->expert_grads),
        "input_tokens", B_(mm->tokens), "unit_outputs", B_(mm->unit_outputs), "input_grads", B_(mm->input_grads),
        "workspace", B_(mm->workspace), "transfer_buffers", B_(mm->transfer_buffers),
        "comm_buffers", B_(mm->comm_buffers), "gathered_params", B_(mm->gathered_max * (double)(sh->prefetch + 1)),
        "unsharded_grads", B_(sh->accum > 1 && !sh->accum_sharded ? mm->accum_grads : mm->grads_max),
        "kept_activations", by_name(p, r->kept_by_name));
    json_t *host = json_pack("{s:o,s:I,s:I,s:I,s:I,s:I}", "offloaded_activations", by_name(p, r->offloaded_by_name),
                             "pinned_buffers", B_(0), "optimizer", B_(r->state.cls[FSDP_CLASS_OPTIM][STRATA_TIER_PINNED_HOST]),
                             "master", B_(r->state.cls[FSDP_CLASS_MASTER][STRATA_TIER_PINNED_HOST]),
                             "grad", B_(r->state.cls[FSDP_CLASS_GRAD][STRATA_TIER_PINNED_HOST]),
                             "state_working_copies", B_(r->state.host_work));
    json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:s,s:b,s:b,s:b,s:I,s:I,s:I,s:I,s:I,"
                          "s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:o,s:o,s:o}",
        "model", p->model.name, "hw", p->hw.name, "fsdp", (json_int_t)sh->fsdp, "replicas", (json_int_t)sh->replicas,
        "ep", (json_int_t)sh->ep, "micro_batch", (json_int_t)sh->micro, "seq", (json_int_t)sh->seq,
        "accum", (json_int_t)sh->accum, "prefetch", (json_int_t)sh->prefetch, "policy", w->label,
        "actions", sched_actions_string(&r->acts, p->prog, pol, sizeof pol), "schedule", sched_mode_name(r->mode),
        "fits", r->fits, "fits_device", r->fits_device, "fits_host", r->fits_host,
        "device_bytes", B_(r->device_bytes), "device_capacity", B_(r->device_capacity),
        "device_reserve_bytes", B_(r->device_reserve), "short_bytes", B_(short_bytes(r)),
        "host_bytes", B_(r->host_bytes), "host_capacity", B_(r->host_capacity), "step_s", r->step_s,
        "tokens_per_s", r->tokens_per_s, "tflops_per_device", r->tflops_per_device,
        "compute_s", r->compute_s, "comm_wait_s", r->comm_wait_s, "exposed_transfer_s", r->exposed_s, "recompute_flops", r->recompute_flops, "tail_kept", (json_int_t)r->tail_kept, "breakdown", bd, "host", host,
        "state", json_state(&r->state));
    json_object_set_new(o, "dtype_bytes", json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "params", p->model.param_b,
        "compute", p->model.compute_b, "activations", p->model.act_b, "grads", p->model.grad_b,
        "reduce", p->model.reduce_b, "master", p->model.master_b, "optimizer", p->model.optim_b));
#undef B_
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (txt) puts(txt);
    free(txt);
    json_decref(o);
}

static void print_state_assumptions(const plan_t *p, FILE *out)
{
    fprintf(out, "  - training state as --state-place puts it%s: state off the device leaves its held bytes\n"
        "    and takes the host's (storage-homed: about 3 units' working copies on the host too); storage\n"
        "    traffic per step: a master read for each gather (2 a pass, the last unit 1) and written once,\n"
        "    moments read and written once, gradients written once, at storage_bw for reads and writes\n"
        "    together; streams run beside the compute: exposed = max(0, stream time - compute time), in\n"
        "    step_s\n", p->shape.state_auto ? " (auto: moments, then gradients, then masters "
        "leave the device\n    from the first unit, by what a row lacks; to the host while 3/4 of its room "
        "holds twice the\n    buffer, else to storage)" : "");
    if (!p->shape.no_clip)
        fprintf(out, "  - gradient clipping (--clip, as train_gpt's default): the updates wait for the norm over\n"
            "    every unit's gradient, so a master on storage is read once more for its update and the\n"
            "    gradients on storage wait on the host until then (--clip 0: neither)\n");
    if (p->hw.cpu)
        fprintf(out, "  - a CPU device is host memory: the optimizer over the moved state runs there at\n"
            "    hbm.bandwidth as before (2 x its bytes: the optimizer host time); nothing crosses a link\n");
    else
        fprintf(out, "  - on a GPU a unit whose state is all off the device is updated by the host's loops at\n"
            "    %.0f GB/s (%s), 2 x its bytes, beside the backward without clipping and after it\n"
            "    with (--clip); for the other units the optimizer kernel reads the off-device master,\n"
            "    gradients and moments over the host link and writes master and moments back (zero copy):\n"
            "    that part of the optimizer runs at h2d_bw/d2h_bw instead of HBM's; each gather stages an\n"
            "    off-device master up and the reduce-scatter copies gradients down (beside the compute);\n"
            "    the link is not shared with the activations' copies in this model\n",
            plan_host_bw(&p->hw) / 1e9, p->hw.host_bw > 0 ? "the file's host_bw" :
            "no host_bw in the file: assumed the host link's d2h_bw");
}

/* What the simulator shares between overlapping ops (sched_res_t), as the
 * hardware file sets it. */
static void print_share_assumptions(const plan_t *p, FILE *out)
{
    const plan_hw_t *hw = &p->hw;
    const double *bw = p->opts.share_bw;
    char link[96], ce[128], nic[96];
    if (bw[SCHED_RES_LINK] > 0)
        snprintf(link, sizeof link, "both ways at once %.0f GB/s in all (host_link.both_bw)", bw[SCHED_RES_LINK] / 1e9);
    else
        snprintf(link, sizeof link, "each way at its own rate (both_bw %.0f GB/s >= d2h + h2d)", hw->both_bw / 1e9);
    if (bw[SCHED_RES_CE] > 0)
        snprintf(ce, sizeof ce, "%.0f GB/s in all, %s", bw[SCHED_RES_CE] / 1e9,
                 hw->coll_on_ce ? "shared with the collectives (collectives.on_copy_engines)"
                                : "the copies' only (collectives on SMs)");
    else
        snprintf(ce, sizeof ce, "not a limit (no host_link.copy_engine_bw)");
    if (bw[SCHED_RES_NIC] > 0)
        snprintf(nic, sizeof nic, "%.0f GB/s per device, shared by the groups crossing domains", bw[SCHED_RES_NIC] / 1e9);
    else
        snprintf(nic, sizeof nic, "not a limit (no collectives.nic_bw)");
    fprintf(out, "  - shared while ops overlap, each op at its share (docs/planner.md):\n"
        "    host link: %s\n    HBM: %s\n    copy engines: %s\n    NIC: %s\n", link,
        bw[SCHED_RES_HBM] > 0 ? "shared by the copies and the compute's memory-bound traffic"
                              : "not shared (no hbm.shared_with_copies)", ce, nic);
}

static void print_assumptions(const plan_t *p, FILE *out)
{
    fprintf(out, "assumptions (docs/planner.md):\n"
        "  - fused attention: saves its output and fp32 softmax statistics, never the T x T probabilities%s\n"
        "  - backward = 2 x forward FLOPs; matrix products at dense_flops x mfu, elementwise ops at HBM bandwidth\n"
        "  - unsharded gradients held in the gradient dtype and reduce-scattered in the reduce dtype\n"
        "    (dtypes.reduce; default the gradient dtype, as the runtime does);\n"
        "    collectives from the hardware file's busbw tables; the compute pays collectives.compute_cost\n"
        "    x their time and collectives.sync_s at each start (here %g, and %g s; 0 and 0: beside the\n"
        "    compute, as NCCL), and host_link.compute_cost x each copy the schedule makes (here %g)\n"
        "  - the runtime's buffers: each unit's output until its backward, a backward's input and output\n"
        "    gradients, 256 guard bytes per buffer; transfers land in place (no staging buffers);\n"
        "    communication buffers are inside the 2 GiB reserve%s\n",
        PLAN_GPT == p->model.family ? " (except the example GPT, which saves attn_probs as train_gpt does)" : "",
        p->hw.coll_compute, p->hw.coll_sync, p->hw.link_compute,
        p->shape.state_auto || state_moved(&p->state) ? "" : "; optimizer state stays on device");
    fprintf(out, "  - device budget: %s\n", p->shape.no_reserve ?
            "no reserve against fragmentation (--reserve none, as frameworks that hold none)" :
            "the runtime's reserve against fragmentation kept free, as its admission does (--reserve none: none)");
    if (p->shape.state_auto || state_moved(&p->state)) print_state_assumptions(p, out);
    if (!p->hw.cpu) print_share_assumptions(p, out);
    if (p->model.moe)
        fprintf(out, "  - MoE: load imbalance %g (--moe-imbalance: the busiest rank's routed tokens over the mean;\n"
            "    1 = perfect balance); with --ep E > 1 the routed experts are split over E ranks (not\n"
            "    gathered across them; sharded and gathered only among the fsdp/E ranks holding the same ones),\n"
            "    tokens moved by all-to-all (dispatch + combine, on the compute path; a recompute of the\n"
            "    block's inputs or outputs redoes them); --ep 1 gathers them\n",
            p->shape.moe_imbalance > 1 ? p->shape.moe_imbalance : 1.0);
    if (p->shape.accum > 1)
        fprintf(out, "  - accum: the step is accum micro-batch passes (each gathers again) and one optimizer step;\n"
                     "    %s\n", p->shape.accum_sharded ?
                     "each micro-batch's backward reduce-scatters into the shard (--accum-grads sharded)" :
                     "every unit's unsharded gradients stay from the first micro-batch's backward to the last");
}

static int run_rows(const popts_t *o, const plan_model_t *m, const plan_hw_t *hw)
{
    char err[2048];
    want_t w[8];
    int nw = wants(o, w), rc = 0;
    plan_t *p = NULL;
    plan_shape_t sh = o->shape;
    if (o->micro_max) sh.micro = 1;
    if (STRATA_OK != plan_create(m, hw, &sh, &p, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        return 1;
    }
    if (!o->json) {
        print_header(p, stdout);
        print_acts(p, stdout);
        printf("%-10s %-5s %-4s %11s %11s %11s %10s %12s %9s  %s\n", "policy", "sched", "fits", "device",
               "short by", "host", "step_s", "tokens/s", "TFLOP/s", "actions");
    }
    for (int i = 0; i < nw; i++) {
        plan_row_t r;
        strata_status_t st = o->micro_max ? micro_max(o, m, hw, &w[i], &p, &r, err, sizeof err)
                                          : eval_want(p, &w[i], &r, err, sizeof err);
        if (STRATA_OK != st) {
            fprintf(stderr, "strata plan: %s %s: %s\n", w[i].label, sched_mode_name(w[i].mode), err);
            rc = 1;
            continue;
        }
        if (o->json) json_row(p, &w[i], &r);
        else {
            if (o->micro_max) printf("%-10s micro-batch max %ld%s\n", w[i].label, p->shape.micro,
                                     r.fits ? "" : " (not even 1 fits)");
            print_row(p, &w[i], &r, stdout);
        }
    }
    if (!o->json) print_assumptions(p, stdout);
    plan_destroy(p);
    return rc;
}

int cmd_plan_model(int argc, char **argv)
{
    popts_t o;
    char err[2048];
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc > 0 ? 0 : 2;
    plan_model_t m;
    plan_hw_t hw;
    if (STRATA_OK != plan_model_load(o.model, &m, err, sizeof err) ||
        STRATA_OK != plan_hw_load(o.hw, &hw, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        return 1;
    }
    return run_rows(&o, &m, &hw);
}
