/*
 * units.c - a model file's units: per layer the named activations
 * with their bytes and the FLOPs of the op that produces each, the
 * parameters (gathered or expert-local), and the memory outside the step
 * program. Formulas in docs/planner.md; n = micro x seq tokens, h hidden,
 * a the compute dtype's bytes. Attention is a fused kernel: it saves its
 * output and the softmax statistics (fp32 per head and token), never the
 * T x T probabilities, and a causal kernel does half the T x T work. The
 * example GPT (family gpt) saves exactly what train_gpt saves, in fp32,
 * and is counted over the full T x T (its CPU kernels skip the causal
 * upper half in blocks of 48 rows, a few percent of a step).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static void add_save(plan_unit_t *u, const char *name, double bytes, double flops)
{
    plan_save_t *s = &u->saves[u->nsaves++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->bytes = bytes;
    s->flops = flops;
    s->mem_bytes = 0 == flops ? 2 * bytes : 0;   /* read + write */
    s->a2a_bytes = 0;
    u->fwd_flops += flops;
    u->fwd_mem_bytes += s->mem_bytes;
}

/* The last save also needs an op whose output is not saved (a recompute
 * of it runs that op too). */
static void add_producer(plan_unit_t *u, double flops)
{
    u->saves[u->nsaves - 1].flops += flops;
    u->fwd_flops += flops;
}

/* ---------------------------------------------------------- example GPT */

static void gpt_block(const plan_model_t *m, double B, double T, plan_unit_t *u)
{
    double C = (double)m->hidden, n = B * T, H = (double)m->heads, f = 4;
    u->params = u->gathered = 12 * C * C + 13 * C;
    add_save(u, "ln1", n * C * f, 0);
    add_save(u, "ln1_mean", n * f, 0);
    add_save(u, "ln1_rstd", n * f, 0);
    add_save(u, "qkv", 3 * n * C * f, 2 * n * C * 3 * C);
    add_save(u, "attn_probs", B * H * T * T * f, 2 * B * T * T * C);
    add_save(u, "attn_out", n * C * f, 2 * B * T * T * C);
    add_save(u, "ln2", n * C * f, 0);
    add_producer(u, 2 * n * C * C);   /* its input: the attention projection plus residual */
    add_save(u, "ln2_mean", n * f, 0);
    add_save(u, "ln2_rstd", n * f, 0);
    add_save(u, "mlp_up", 4 * n * C * f, 2 * n * C * 4 * C);
    add_save(u, "mlp_act", 4 * n * C * f, 0);
    u->fwd_flops += 2 * n * 4 * C * C;   /* the MLP projection: the unit's output */
    u->model_flops = 3 * u->fwd_flops;
    /* the backward's y, dy, a 4C-wide buffer (N C each) and the
     * attention's T x T gradient per batch row and head (model.c block_ws) */
    u->workspace = u->bwd_workspace = (6 * n * C + B * H * T * T) * f;
}

static int gpt_units(const plan_model_t *m, double B, double T, plan_unit_t *u)
{
    double C = (double)m->hidden, n = B * T, V = (double)m->vocab;
    snprintf(u[0].name, sizeof u[0].name, "embed");
    /* train_gpt --seq T sizes its position table to T rows */
    u[0].params = u[0].gathered = V * C + T * C;
    u[0].fwd_mem_bytes = 2 * n * C * 4;
    for (long l = 0; l < m->layers; l++) {
        snprintf(u[1 + l].name, sizeof u[1 + l].name, "block%ld", l);
        gpt_block(m, B, T, &u[1 + l]);
    }
    plan_unit_t *hd = &u[1 + m->layers];
    snprintf(hd->name, sizeof hd->name, "head");
    hd->params = hd->gathered = 2 * C + V * C;
    /* the head's forward computes the loss and its gradients at once and
     * hands them to the runtime as two saves */
    add_save(hd, "head_dx", n * C * 4, 0);
    add_producer(hd, 3 * 2 * n * C * V);   /* logits, d(lm_w), d(input): one fused op */
    add_save(hd, "head_grads", hd->params * 4, 0);
    hd->fwd_flops = 3 * 2 * n * C * V;
    hd->model_flops = hd->fwd_flops;
    hd->bwd_factor = 0;
    hd->workspace = (2 * n * C + 2 * n + n * V) * 4;   /* its backward uses none */
    for (int i = 0; i < (int)m->layers + 2; i++) {
        u[i].out_bytes = i == (int)m->layers + 1 ? 8 : n * C * 4;   /* the head's: the loss, a double */
        u[i].gin_bytes = i > 0 ? n * C * 4 : 0;
    }
    return (int)m->layers + 2;
}

/* ------------------------------------------------------ llama, deepseek */

/* The saves take the activation dtype (a below); the unit's output, its
 * input's gradient and the workspace the compute dtype. */
static void attention(const plan_model_t *m, double B, double T, plan_unit_t *u)
{
    double h = (double)m->hidden, n = B * T, a = m->act_b, H = (double)m->heads;
    add_save(u, "attn_norm", n * h * a, 0);
    if (PLAN_DEEPSEEK_V3 == m->family) {
        double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
        double dq = (double)(m->qk_nope_head_dim + m->qk_rope_head_dim), rope = (double)m->qk_rope_head_dim;
        double dv = (double)m->v_head_dim, nope = (double)m->qk_nope_head_dim;
        u->params += h * qr + qr + qr * H * dq + h * (kr + rope) + kr + kr * H * (nope + dv) + H * dv * h;
        add_save(u, "qkv_lora", n * (qr + kr + rope) * a, 2 * n * h * (qr + kr + rope));
        add_save(u, "qkv", n * H * (2 * dq + dv) * a, 2 * n * qr * H * dq + 2 * n * kr * H * (nope + dv));
        add_save(u, "attn_out", n * H * dv * a + n * H * 4, B * T * T * H * (dq + dv));
        add_save(u, "attn_resid", n * h * a, 2 * n * H * dv * h);
    } else {
        double qd = H * (double)m->head_dim, kvd = (double)(m->kv_heads * m->head_dim);
        u->params += 2 * h * qd + 2 * h * kvd;
        add_save(u, "qkv", n * (qd + 2 * kvd) * a, 2 * n * h * (qd + 2 * kvd));
        add_save(u, "attn_out", n * qd * a + n * H * 4, 2 * B * T * T * qd);
        add_save(u, "attn_resid", n * h * a, 2 * n * qd * h);
    }
    u->params += 2 * h;   /* the two norms */
    add_save(u, "mlp_norm", n * h * a, 0);
}

static void dense_mlp(const plan_model_t *m, double n, plan_unit_t *u)
{
    double h = (double)m->hidden, f = (double)m->ffn, a = m->act_b;
    u->params += 3 * h * f;
    add_save(u, "mlp_gate", n * f * a, 2 * n * h * f);
    add_save(u, "mlp_up", n * f * a, 2 * n * h * f);
    add_save(u, "mlp_act", n * f * a, 0);
    u->fwd_flops += 2 * n * f * h;   /* down projection: the unit's output */
}

/* Routed experts (each token to k experts; the busiest rank's experts get
 * moe_imbalance times the mean share, and the step waits for it) and
 * shared ones. */
static void moe_mlp(const plan_model_t *m, const plan_shape_t *sh, double n, plan_unit_t *u)
{
    /* a: the saves; c: the tokens on the wire (dispatch and combine) */
    double h = (double)m->hidden, fe = (double)m->expert_ffn, a = m->act_b, c = m->compute_b;
    double E = (double)m->experts, S = (double)m->shared_experts;
    double k = (double)m->experts_per_token * (sh->moe_imbalance > 1 ? sh->moe_imbalance : 1);
    double routed = E * 3 * h * fe;
    u->params += h * E + routed + S * 3 * h * fe;
    if (sh->ep > 1) u->local_params = routed;   /* sharded across ep ranks, not gathered */
    add_save(u, "router", n * E * 4, 2 * n * h * E);
    add_save(u, "moe_in", n * k * h * a, 0);
    if (sh->ep > 1) u->saves[u->nsaves - 1].a2a_bytes = n * k * h * c;   /* the dispatch */
    add_save(u, "moe_gate", n * k * fe * a, 2 * n * k * h * fe);
    add_save(u, "moe_up", n * k * fe * a, 2 * n * k * h * fe);
    add_save(u, "moe_act", n * k * fe * a, 0);
    add_save(u, "moe_down", n * k * h * a, 2 * n * k * fe * h);
    /* a recompute that makes the experts' outputs again runs the block to
     * its end: the combine too, as frameworks that checkpoint the MoE
     * block redo both all-to-alls */
    if (sh->ep > 1) u->saves[u->nsaves - 1].a2a_bytes = n * k * h * c;
    if (S > 0) {
        add_save(u, "shared_gate", n * S * fe * a, 2 * n * S * h * fe);
        add_save(u, "shared_up", n * S * fe * a, 2 * n * S * h * fe);
        add_save(u, "shared_act", n * S * fe * a, 0);
        u->fwd_flops += 2 * n * S * fe * h;
    }
    /* dispatch and combine, each n k h elements per rank */
    if (sh->ep > 1) u->a2a_bytes = 2 * n * k * h * c;
}

static void layer(const plan_model_t *m, const plan_shape_t *sh, long l, plan_unit_t *u)
{
    double B = (double)sh->micro, T = (double)sh->seq, n = B * T;
    snprintf(u->name, sizeof u->name, "layer%ld", l);
    attention(m, B, T, u);
    if (m->moe && l >= m->dense_layers) moe_mlp(m, sh, n, u);
    else dense_mlp(m, n, u);
    u->gathered = u->params - u->local_params;
    u->model_flops = 3 * u->fwd_flops;
    u->workspace = u->bwd_workspace = 2 * n * (double)m->hidden * m->compute_b;
}

static int llm_units(const plan_model_t *m, const plan_shape_t *sh, plan_unit_t *u)
{
    double h = (double)m->hidden, V = (double)m->vocab, a = m->compute_b;
    double n = (double)sh->micro * (double)sh->seq;
    long L = m->layers + (m->mtp_counted ? m->mtp_modules : 0);
    snprintf(u[0].name, sizeof u[0].name, "embed");
    u[0].params = u[0].gathered = V * h;
    u[0].fwd_mem_bytes = 2 * n * h * a;
    for (long l = 0; l < L; l++) {
        /* a counted MTP module is modelled as one more layer like the last */
        layer(m, sh, l < m->layers ? l : m->layers - 1, &u[1 + l]);
        if (l >= m->layers) snprintf(u[1 + l].name, sizeof u[1 + l].name, "mtp%ld", l - m->layers);
    }
    plan_unit_t *hd = &u[1 + L];
    snprintf(hd->name, sizeof hd->name, "head");
    hd->params = hd->gathered = h + V * h;
    add_save(hd, "final_norm", n * h * m->act_b, 0);
    hd->fwd_flops += 2 * n * h * V;
    hd->model_flops = 3 * hd->fwd_flops;
    /* fp32 logits, their gradient written in place; the backward makes
     * them again */
    hd->workspace = hd->bwd_workspace = n * V * 4;
    for (int i = 0; i < (int)L + 2; i++) {
        u[i].out_bytes = i == (int)L + 1 ? 8 : n * h * a;   /* the head's: the loss */
        u[i].gin_bytes = i > 0 ? n * h * a : 0;
    }
    return (int)L + 2;
}

strata_status_t plan_units(const plan_model_t *m, const plan_shape_t *sh, plan_unit_t **units_p,
                           int *n_p, char *err, size_t errlen)
{
    long L = m->layers + (m->mtp_counted ? m->mtp_modules : 0);
    plan_unit_t *u = calloc((size_t)L + 2, sizeof *u);
    if (!u) return sched_fail(err, errlen, STRATA_ERR_NOMEM, "plan: out of memory");
    for (long i = 0; i < L + 2; i++) u[i].bwd_factor = 2;
    int n = PLAN_GPT == m->family ? gpt_units(m, (double)sh->micro, (double)sh->seq, u) : llm_units(m, sh, u);
    *units_p = u;
    *n_p = n;
    return STRATA_OK;
}

double plan_unit_gathered(const plan_unit_t *u, const plan_shape_t *sh)
{
    return u->gathered + (sh->fsdp > sh->ep ? u->local_params / (double)sh->ep : 0);
}

double plan_buf(double bytes)
{
    return ceil((bytes + PLAN_BUF_GUARD) / PLAN_BUF_ALIGN) * PLAN_BUF_ALIGN;
}

/* A unit's elements padded to a multiple of N (fsdp/geometry.c). */
static double padded(double elems, double N)
{
    return ceil(elems / N) * N;
}

double plan_unit_shard(const plan_model_t *m, const plan_shape_t *sh, const plan_unit_t *u, int i, int n)
{
    /* its slice of the padded unit; the tied matrix counted once, with
     * the embedding */
    double tied = m->tied ? (double)(m->vocab * m->hidden) : 0;
    return ceil((u[i].params - (i == n - 1 ? tied : 0)) / (double)sh->fsdp);
}

/* The runtime's slack against fragmentation (fsdp/exec_plan.c held_parts):
 * one more workspace -- the largest forward call's, one activation between
 * units, and a 16-bit gather's send copy of the largest shard -- and the
 * largest save (a unit's input is one, the first unit's the step's
 * tokens); three of them with --accum > 1 (not with --accum-grads sharded,
 * which the runtime does not run: each micro-batch is then a step of its
 * own). Its admission fits a plan into the budget less this, and the peak
 * it predicts leaves it out. */
static double plan_reserve(const plan_model_t *m, const plan_shape_t *sh, const plan_unit_t *u, int n,
                           double tokens_buf)
{
    double fws = 0, act = tokens_buf, gsend = 0, save = tokens_buf;
    for (int i = 0; i < n; i++) {
        if (u[i].workspace > 0) fws = fmax(fws, plan_buf(u[i].workspace));
        act = fmax(act, plan_buf(u[i].out_bytes));
        if (i + 1 < n) save = fmax(save, plan_buf(u[i].out_bytes));
        for (int s = 0; s < u[i].nsaves; s++) save = fmax(save, plan_buf(u[i].saves[s].bytes));
        if (m->compute_b < 4) gsend = fmax(gsend, plan_buf(plan_unit_shard(m, sh, u, i, n) * m->compute_b));
    }
    double slack = fws + act + gsend + save;
    return sh->accum > 1 && !sh->accum_sharded ? 3 * slack : slack;
}

void plan_memory(const plan_model_t *m, const plan_shape_t *sh, const plan_unit_t *u, int n,
                 plan_memory_t *mem)
{
    double P = 0, Pl = 0, ws = 0, active = 0;
    double N = (double)sh->fsdp, a = m->compute_b, tokens = (double)sh->micro * (double)sh->seq;
    double tied = m->tied ? (double)(m->vocab * m->hidden) : 0;   /* one matrix, two units */
    memset(mem, 0, sizeof *mem);
    for (int i = 0; i < n; i++) {
        P += u[i].params;
        Pl += u[i].local_params;
        if (u[i].workspace > ws) ws = u[i].workspace;
        if (u[i].bwd_workspace > ws) ws = u[i].bwd_workspace;
        double g = plan_unit_gathered(&u[i], sh), pad = padded(g, N);
        if (plan_buf(pad * a) > mem->gathered_max) mem->gathered_max = plan_buf(pad * a);
        if (plan_buf(pad * m->grad_b) > mem->grads_max) mem->grads_max = plan_buf(pad * m->grad_b);
        if (sh->accum > 1 && !sh->accum_sharded) mem->accum_grads += plan_buf(pad * m->grad_b);
        double shard = plan_unit_shard(m, sh, u, i, n);
        mem->param_shard += plan_buf(shard * m->param_b);
        mem->grad_shard += plan_buf(shard * m->grad_b);
        if (m->master_b) mem->master += plan_buf(shard * m->master_b);
        mem->optim += m->optim_states * plan_buf(shard * m->optim_b);
        mem->unit_outputs += plan_buf(u[i].out_bytes);
        double gin = (u[i].gin_bytes > 0 ? plan_buf(u[i].gin_bytes) : 0) +
                     (i + 1 < n && u[i + 1].gin_bytes > 0 ? plan_buf(u[i + 1].gin_bytes) : 0);
        if (gin > mem->input_grads) mem->input_grads = gin;
    }
    P -= tied;
    active = P - u[0].params;   /* the embedding is a lookup: no FLOPs */
    if (m->moe) {
        long moe_layers = m->layers - m->dense_layers + (m->mtp_counted ? m->mtp_modules : 0);
        double per = (double)(m->experts * 3 * m->hidden * m->expert_ffn);
        active -= (double)moe_layers * per * (1.0 - (double)m->experts_per_token / (double)m->experts);
    }
    if (sh->ep == sh->fsdp) {   /* each rank holds its experts whole: resident */
        mem->expert_local = Pl / (double)sh->ep * a;
        mem->expert_grads = Pl / (double)sh->ep * a;
    }
    mem->tokens = plan_buf(tokens * 4);
    mem->unit_outputs += mem->tokens;
    mem->workspace = plan_buf(ws);
    /* kept workspace (fsdp/mem.c): a call takes the smallest kept block
     * that fits, else a new one, which is kept after it (up to 4): in
     * call order (forward, then backward), each size larger than all
     * before it */
    double top = 0;
    int kept = 0;
    for (int k = 0; k < 2 * n && kept < 4; k++) {
        double w = k < n ? u[k].workspace : u[2 * n - 1 - k].bwd_workspace;
        if (w > 0 && plan_buf(w) > top) {
            top = plan_buf(w);
            mem->ws_cached += top;
            kept++;
        }
    }
    mem->reserve = sh->no_reserve ? 0 : plan_reserve(m, sh, u, n, mem->tokens);
    mem->resident = mem->param_shard + mem->grad_shard + mem->master + mem->optim + mem->expert_local +
                    mem->expert_grads + mem->tokens + mem->accum_grads;
    mem->params_total = P;
    mem->params_active = active;
}
