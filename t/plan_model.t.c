/* plan_model.t - the planner's formulas on small hand-computed cases: a
 * two-layer llama's saves, parameters and per-device memory; the example
 * GPT against the example's own size functions; collective times from a
 * table; the worked example of docs/planner.md (its step time through
 * sched_build/sched_simulate); bad model and hardware files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "plan/plan.h"
#include "examples/gpt/gpt.h"
#include "tap.h"

/* the model and machine of the worked example in docs/planner.md */
static const char *tiny_model =
    "{\"name\":\"tiny\",\"family\":\"llama\",\"layers\":2,\"hidden\":8,\"heads\":2,\"kv_heads\":1,"
    "\"head_dim\":4,\"ffn\":16,\"vocab\":10,\"tied_embeddings\":false,"
    "\"dtypes\":{\"params\":\"bf16\",\"compute\":\"bf16\",\"grads\":\"fp32\",\"master\":\"fp32\","
    "\"optimizer\":\"fp32\"}}";
#define TBL "{\"intra\":[{\"ranks\":2,\"bytes\":1,\"busbw\":1e15}],\"inter\":[{\"ranks\":2,\"bytes\":1,\"busbw\":1e15}]}"
static const char *tiny_hw =
    "{\"name\":\"tinyhw\",\"hbm\":{\"usable_bytes\":1000000,\"bandwidth\":1e10},"
    "\"compute\":{\"dense_flops\":1e10,\"mfu\":0.5},\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},"
    "\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,\"all_gather\":" TBL ",\"reduce_scatter\":" TBL
    ",\"all_to_all\":" TBL ",\"all_reduce\":" TBL "}}";

static const plan_save_t *save_of(const plan_unit_t *u, const char *name)
{
    for (int i = 0; i < u->nsaves; i++)
        if (!strcmp(u->saves[i].name, name)) return &u->saves[i];
    return NULL;
}

static void test_tiny_units(const plan_model_t *m)
{
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    plan_unit_t *u;
    int n;
    char err[512];
    if (STRATA_OK != plan_units(m, &sh, &u, &n, err, sizeof err)) bail_out("plan_units: %s", err);
    is_int(n, 4, "embed, 2 layers, head");
    /* n = 4 tokens, h = 8, bf16: n h a = 64 bytes */
    static const struct { const char *name; double bytes, flops; } want[] = {
        { "attn_norm", 64, 0 }, { "qkv", 128, 1024 }, { "attn_out", 96, 256 }, { "attn_resid", 64, 512 },
        { "mlp_norm", 64, 0 }, { "mlp_gate", 128, 1024 }, { "mlp_up", 128, 1024 }, { "mlp_act", 128, 0 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const plan_save_t *s = save_of(&u[1], want[i].name);
        ok(s && s->bytes == want[i].bytes && s->flops == want[i].flops, "layer save %s: %g bytes, %g FLOPs",
           want[i].name, want[i].bytes, want[i].flops);
    }
    is_double(u[1].params, 592, 0, "layer parameters 2hq + 2hkv + 2h + 3hf = 592");
    is_double(u[1].fwd_flops, 4864, 0, "layer forward FLOPs (with the down projection) 4864");
    is_double(u[1].fwd_mem_bytes, 512, 0, "layer elementwise traffic 2 x (64 + 64 + 128)");
    is_double(u[3].fwd_flops, 640, 0, "head forward 2 n h V = 640");
    plan_memory_t mem;
    plan_memory(m, &sh, u, n, &mem);
    is_double(mem.params_total, 1352, 0, "parameters 80 + 2 x 592 + 88");
    /* every buffer as the runtime allocates it: + 256 guard bytes, in
     * 256-byte blocks; one shard per unit: 40, 296, 296, 44 elements */
    is_double(plan_buf(1), 512, 0, "a 1-byte buffer takes 512 bytes (guard, alignment)");
    is_double(plan_buf(256), 512, 0, "a 256-byte one too");
    is_double(mem.param_shard, 512 + 2 * 1024 + 512, 0, "parameter shards: bf16 80, 592, 592, 88 bytes");
    is_double(mem.grad_shard, 512 + 2 * 1536 + 512, 0, "gradient shards fp32: 160, 1184, 1184, 176 bytes");
    is_double(mem.master, 4096, 0, "master fp32 as the gradient shards");
    is_double(mem.optim, 8192, 0, "two fp32 AdamW moments");
    is_double(mem.tokens, 512, 0, "the input: 4 int32 token ids");
    is_double(mem.workspace, 512, 0, "workspace: the head's fp32 logits n V 4 = 160 bytes");
    is_double(mem.resident, 19968, 0, "resident total (the workspace is placed per policy)");
    is_double(mem.ws_cached, 512, 0, "kept workspace: a layer's 128 bytes take a 512-byte block, which the head's 160 fit");
    is_double(mem.unit_outputs, 5 * 512, 0, "unit outputs: the tokens, embed and layers n h a = 64, the loss 8");
    is_double(mem.input_grads, 2 * 512, 0, "a backward's input and output gradients, n h a each");
    is_double(mem.grads_max, 2816, 0, "unsharded gradients of a layer: 592 fp32 = 2368 bytes");
    is_double(mem.gathered_max, 1536, 0, "gathered layer: 592 bf16 = 1184 bytes");
    /* the runtime's admission keeps free one more forward workspace (512),
     * activation between units (512), bf16 gather send copy of the largest
     * shard (296 x 2 = 592 bytes: 1024) and save (qkv's 128: 512) */
    is_double(mem.reserve, 512 + 512 + 1024 + 512, 0, "kept free against fragmentation: 2560 bytes");
    sh.accum = 2;
    plan_memory(m, &sh, u, n, &mem);
    is_double(mem.reserve, 3 * 2560, 0, "three times that with --accum > 1");
    free(u);
}

static void test_worked_example(const plan_model_t *m, const plan_hw_t *hw)
{
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    plan_t *p;
    plan_row_t r;
    sched_actions_t a;
    char err[512];
    if (STRATA_OK != plan_create(m, hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    is_double(p->prog->units[1].cost_s[SCHED_COST_FWD], 1.024e-6, 1e-12, "F(layer) = 4864/5e9 + 512/1e10 s");
    is_double(p->prog->optim_s, 2.4336e-6, 1e-12, "optimizer 2 x 676 x 18 bytes / 1e10");
    sched_actions_fill(&a, p->prog, SCHED_KEEP);
    ok(STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err), "keep evaluates");
    is_double(r.step_s, 9.5984e-6, 1e-10, "keep step = sum F + sum B (with zeroing its gradients: 0.56 us) + "
              "optimizer = 9.5984 us");
    /* the peak is B(layer1): resident 19968 and the layer's workspace
     * 512 while it runs (all kept: none is kept between calls), layers 1 and 0 gathered
     * 2 x 1536, layer 1's gradients 2816 and the head's (its reduce-scatter
     * still running) 768, 16 saves of 512, three unit outputs 3 x 512, the
     * input and output gradients 2 x 512 */
    is_double(r.device_bytes, 20480 + 3072 + 2816 + 768 + 8192 + 1536 + 1024, 0, "keep peak 37888 bytes, by hand");
    ok(r.fits, "keep fits");
    is_double(r.tflops_per_device, 31104 / 9.5984e-6 / 1e12, 1e-9, "TFLOP/s per device from 3 x 10368 FLOPs");
    is_double(r.tokens_per_s, 8 / 9.5984e-6, 1.0, "tokens/s: 4 tokens on each of 2 devices");
    sched_actions_fill(&a, p->prog, SCHED_RECOMPUTE);
    ok(STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err), "recompute evaluates");
    is_double(r.step_s, 11.2496e-6, 1e-10, "recompute step adds the saves' producers: 2 x 0.8192 + 0.0128 = "
              "11.2496 us");
    double all_rec = r.step_s;
    is_double(sched_recompute_seconds(p->prog, 1, &a), 0.8192e-6, 1e-13,
              "RECOMPUTE(layer) = 3840/5e9 + 512/1e10 s: all but the down projection");
    a.action[sched_program_name_id(p->prog, "qkv")] = SCHED_HOST;
    is_double(sched_recompute_seconds(p->prog, 1, &a), 0.6144e-6, 1e-13,
              "qkv=host,*=recompute: RECOMPUTE(layer) = 0.8192 - 1024/5e9 = 0.6144 us");
    ok(STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err), "qkv=host,*=recompute evaluates");
    is_double(all_rec - r.step_s, 2 * 0.2048e-6, 1e-10, "and its step is shorter by the two layers' q/k/v "
              "projections, 0.4096 us");
    plan_destroy(p);
    /* the budget a plan needs is its peak and the reserve (2560) */
    for (int d = 0; d < 2; d++) {
        sh.hbm_override = 37888 + 2560 - d;
        if (STRATA_OK != plan_create(m, hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
        sched_actions_fill(&a, p->prog, SCHED_KEEP);
        ok(STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err) && r.fits == !d &&
           r.device_reserve == 2560 && (d || r.device_bytes == 37888),
           "--hbm %.0f: keep %s (its peak 37888 and the reserve)", sh.hbm_override, d ? "does not fit" : "fits");
        plan_destroy(p);
    }
    sh.hbm_override = 30000;
    if (STRATA_OK != plan_create(m, hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    sched_actions_fill(&a, p->prog, SCHED_KEEP);
    ok(STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err) && !r.fits && !r.fits_device &&
       r.device_bytes > 30000, "--hbm 30000: keep (37888) does not fit, short by %.0f", r.device_bytes - 30000);
    plan_destroy(p);
}

static double held_flops(const plan_unit_t *u, unsigned held)
{
    double f = 0;
    for (int s = 0; s < u->nsaves; s++)
        if (!(held >> s & 1)) f += u->saves[s].flops;
    return f;
}

/* The planner's producing FLOPs are what the example's recompute runs:
 * gpt_block_recompute's count for what is held, the fused head whole. */
static void gpt_recompute_same(const gpt_config *cfg, const plan_unit_t *blk, const plan_unit_t *head)
{
    const int B = 2, T = 16;
    gpt_param_info info[GPT_MAX_PARAMS];
    const float *P[GPT_MAX_PARAMS];
    int np = gpt_unit_params(cfg, 1, info);
    size_t sz[GPT_MAX_SAVES], total = 0, N = (size_t)B * T * cfg->dim;
    for (int i = 0; i < np; i++) total += info[i].numel;
    gpt_block_save_sizes(cfg, B, T, sz);
    for (int s = 0; s < GPT_MAX_SAVES; s++) total += sz[s];
    gpt_workspace ws = { NULL, gpt_unit_workspace_floats(cfg, 1, B, T), NULL };
    float *mem = calloc(total + N + ws.n, sizeof(float)), *at = mem;
    gpt_saves sv;
    for (int i = 0; i < np; i++, at += info[i - 1].numel) P[i] = at;
    for (int s = 0; s < GPT_MAX_SAVES; at += sz[s], s++) sv.p[s] = at;
    const float *x = at;
    ws.buf = at + N;
    static const unsigned cases[] = { 0, 1u << GPT_S_QKV, 0x3fu };   /* none, qkv, ln1..attn_out */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        unsigned char held[GPT_MAX_SAVES];
        gpt_recompute_count cnt = { 0, 0 };
        for (int s = 0; s < GPT_MAX_SAVES; s++) held[s] = (unsigned char)(cases[c] >> s & 1);
        gpt_block_recompute(cfg, B, T, P, x, &sv, held, &ws, &cnt);
        is_double(held_flops(blk, cases[c]), cnt.flops, 0, "gpt block, held mask 0x%x: the planner's "
                  "producing FLOPs %.0f = the example's recompute", cases[c], cnt.flops);
    }
    is_double(head->saves[0].flops, 3 * 2.0 * B * T * cfg->dim * GPT_VOCAB, 0,
              "gpt head: head_dx's producer is the fused head, 3 x 2 n C V");
    free(mem);
}

static void test_gpt(void)
{
    char err[512];
    plan_model_t m;
    if (STRATA_OK != plan_model_parse("{\"name\":\"g\",\"family\":\"gpt\",\"layers\":3,\"hidden\":32,\"heads\":4,"
                                      "\"max_seq\":16,\"vocab\":256}", "g", &m, err, sizeof err))
        bail_out("gpt model: %s", err);
    gpt_config cfg = { .n_layer = 3, .dim = 32, .n_head = 4, .max_seq = 16 };
    plan_shape_t sh = { .fsdp = 1, .replicas = 1, .ep = 1, .micro = 2, .seq = 16, .accum = 1 };
    plan_unit_t *u;
    int n;
    size_t sz[GPT_MAX_SAVES];
    plan_units(&m, &sh, &u, &n, err, sizeof err);
    gpt_block_save_sizes(&cfg, 2, 16, sz);
    int same = GPT_MAX_SAVES == u[1].nsaves;
    for (int s = 0; same && s < GPT_MAX_SAVES; s++)
        same = !strcmp(u[1].saves[s].name, gpt_save_name(s)) && u[1].saves[s].bytes == (double)sz[s] * 4;
    ok(same, "gpt block saves: the example's names and sizes, in its order");
    plan_memory_t mem;
    plan_memory(&m, &sh, u, n, &mem);
    is_double(mem.params_total, (double)gpt_num_params(&cfg), 0, "gpt parameters as gpt_num_params");
    double f = 0;
    for (int i = 0; i < n; i++) f += u[i].model_flops;
    is_double(f, gpt_flops_per_token(&cfg, 16) * 32, 1e-6, "gpt FLOPs as gpt_flops_per_token x tokens");
    is_double(mem.workspace, plan_buf((double)gpt_workspace_floats(&cfg, 2, 16) * 4), 0,
              "gpt workspace as the example's (one buffer)");
    gpt_recompute_same(&cfg, &u[1], &u[n - 1]);
    free(u);
}

/* The example GPT's peak device bytes, by hand, for layers 2, C 32, 4
 * heads, B 2, T 16 (N = 32 tokens) on one rank; t/plan-model-cli.t checks
 * the same against train_gpt's measured peak. A buffer of b bytes takes
 * ceil((b + 256) / 256) x 256. Resident: shards of params, gradients and
 * two AdamW states, per unit embed 8704, block 12704, head 8256 floats:
 * 35072 + 2 x 51200 + 33280 = 170752 bytes each kind, 4 kinds; the 32
 * token ids 512: 683520. Block saves (N C = 1024 floats, 4352 bytes):
 * ln1, attn_out, ln2 4352 each, the four mean/rstd 512 each, qkv 12544,
 * attn_probs (B H T T) 8448, mlp_up and mlp_act 16640 each: 69376. The
 * peak is the last block's backward: both blocks gathered 2 x 51200, its
 * gradients 51200, three unit outputs and two input gradients 5 x 4352.
 *   keep: both blocks' saves 138752 and the block's workspace (6 N C +
 *     B H T T floats) 33024 while it runs: 1030656.
 *   recompute: the kept workspace blocks, the block's and the larger
 *     head's (2 N C + 2 N + 256 N floats, 41472): 74496, and one block's
 *     saves 69376: 1002752.
 *   qkv=host,*=recompute: as recompute, and the lhs schedule keeps the
 *     first block's qkv on device (+12544): 1015296. */
static void test_gpt_peak(const plan_hw_t *hw)
{
    static const struct { const char *policy; double peak; } want[] = {
        { "*=keep", 1030656 }, { "*=recompute", 1002752 }, { "qkv=host,*=recompute", 1015296 },
    };
    char err[512];
    plan_model_t m;
    if (STRATA_OK != plan_model_parse("{\"name\":\"g\",\"family\":\"gpt\",\"layers\":2,\"hidden\":32,\"heads\":4,"
                                      "\"max_seq\":16,\"vocab\":256}", "g", &m, err, sizeof err))
        bail_out("gpt model: %s", err);
    plan_shape_t sh = { .fsdp = 1, .replicas = 1, .ep = 1, .micro = 2, .seq = 16, .accum = 1, .prefetch = 1 };
    plan_t *p;
    if (STRATA_OK != plan_create(&m, hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    is_double(p->mem.resident, 683520, 0, "gpt resident: four kinds of shard and the token ids");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sched_policy_t pol;
        sched_actions_t a;
        plan_row_t r;
        int okp = STRATA_OK == sched_policy_parse(want[i].policy, &pol, err, sizeof err) &&
                  STRATA_OK == sched_policy_resolve(&pol, p->prog, &a, err, sizeof err) &&
                  STRATA_OK == plan_evaluate(p, &a, SCHED_MODE_LHS, &r, err, sizeof err);
        is_double(okp ? r.device_bytes : -1, want[i].peak, 0, "gpt %s: peak %.0f bytes, by hand", want[i].policy,
                  want[i].peak);
    }
    plan_destroy(p);
}

static void test_coll(const plan_hw_t *tiny)
{
    plan_hw_t hw = *tiny;
    hw.coll_latency = 1e-5;
    hw.coll[PLAN_AG][0] = (plan_bw_table_t){ 2, { { 8, 1e6, 10e9 }, { 8, 1e8, 100e9 } } };
    hw.coll[PLAN_AG][1] = (plan_bw_table_t){ 1, { { 64, 1e6, 5e9 } } };
    is_double(plan_coll_time(&hw, PLAN_AG, 8, 8, 1e7), 1e-5 + 1e7 * 7 / 8 / 55e9, 1e-15,
              "10 MB between the 1 MB and 100 MB points: busbw 55 GB/s");
    is_double(plan_coll_time(&hw, PLAN_AG, 8, 8, 1e9), 1e-5 + 1e9 * 7 / 8 / 100e9, 1e-15, "beyond the last point");
    is_double(plan_coll_time(&hw, PLAN_AG, 16, 16, 1e6), 1e-5 + 1e6 * 15 / 16 / 5e9, 1e-15,
              "16 ranks over more than a domain: the inter table");
    is_double(plan_coll_time(&hw, PLAN_AG, 1, 1, 1e6), 0, 0, "one rank: no time");
}

/* collectives.compute_cost x: the unit's compute pays x of each
 * collective's time (the gather before a forward; the re-gather and the
 * reduce-scatter of a backward), and the collective keeps 1 - x of it
 * beside compute (none from x = 1). The worked example's layer (592
 * parameters) on a machine whose collectives run at 1 GB/s over 2 ranks:
 * AG = 592 x 2 x 1/2 / 1e9 s, RS = 592 x 4 x 1/2 / 1e9 s (bf16 parameters
 * gathered, fp32 gradients reduced). */
static void test_coll_compute(const plan_model_t *m, const plan_hw_t *tiny)
{
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    static const double xs[] = { 0, 0.25, 1, 2 };
    double ag = 592e-9, rs = 1184e-9, f0 = 0, b0 = 0;
    plan_hw_t hw = *tiny;
    char err[512];
    for (int k = 0; k < PLAN_COLL_COUNT; k++)
        for (int d = 0; d < 2; d++) hw.coll[k][d] = (plan_bw_table_t){ 1, { { 2, 1e6, 1e9 } } };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        plan_t *p;
        hw.coll_compute = xs[i];
        if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
        const double *c = p->prog->units[1].cost_s;
        if (0 == i) {
            f0 = c[SCHED_COST_FWD];
            b0 = c[SCHED_COST_BWD];
            is_double(c[SCHED_COST_AG], ag, 1e-15, "compute_cost 0: the layer's all-gather runs beside, 0.592 us");
            is_double(c[SCHED_COST_RS], rs, 1e-15, "compute_cost 0: its reduce-scatter 1.184 us");
        } else {
            double x = xs[i], beside = x < 1 ? 1 - x : 0;
            is_double(c[SCHED_COST_FWD], f0 + x * ag, 1e-15, "compute_cost %g: F += %g x AG", x, x);
            is_double(c[SCHED_COST_BWD], b0 + x * (ag + rs), 1e-15, "compute_cost %g: B += %g x (AG + RS)", x, x);
            is_double(c[SCHED_COST_AG] + c[SCHED_COST_RS], beside * (ag + rs), 1e-15,
                      "compute_cost %g: %g of them left beside compute", x, beside);
        }
        plan_destroy(p);
    }
    /* collectives.sync_s: once before a forward, twice in a backward */
    plan_t *p;
    hw.coll_compute = 0;
    hw.coll_sync = 1e-6;
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    is_double(p->prog->units[1].cost_s[SCHED_COST_FWD], f0 + 1e-6, 1e-15, "sync_s 1 us: F += 1 us (its gather's start)");
    is_double(p->prog->units[1].cost_s[SCHED_COST_BWD], b0 + 2e-6, 1e-15,
              "sync_s 1 us: B += 2 us (the re-gather's and the reduce-scatter's starts)");
    plan_destroy(p);
}

/* host_link.compute_cost y: the compute pays y of every chunk the
 * schedule moves over the host link. keep moves nothing: the same step. A
 * host policy's step grows, by at most y x its transfers' seconds (a D2H
 * and an H2D of every save at the link's 1 GB/s), and the program's costs
 * are as before once the row is evaluated. */
static void test_link_compute(const plan_model_t *m, const plan_hw_t *tiny)
{
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    plan_hw_t hw = *tiny;
    double step[2][2], moved = 0;
    char err[512];
    for (int y = 0; y < 2; y++) {
        plan_t *p;
        sched_actions_t a;
        plan_row_t r;
        hw.link_compute = y;
        if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
        double f1 = p->prog->units[1].cost_s[SCHED_COST_FWD], b1 = p->prog->units[1].cost_s[SCHED_COST_BWD];
        for (int k = 0; k < 2; k++) {
            sched_actions_fill(&a, p->prog, k ? SCHED_HOST : SCHED_KEEP);
            if (STRATA_OK != plan_evaluate(p, &a, SCHED_MODE_NAIVE, &r, err, sizeof err)) bail_out("evaluate: %s", err);
            step[y][k] = r.step_s;
            if (k && !y)
                for (int u = 0; u < p->prog->nunits; u++)
                    for (int i = 0; i < p->prog->units[u].nsaves; i++)
                        moved += 2 * (double)p->prog->units[u].saves[i].bytes / 1e9;
        }
        ok(p->prog->units[1].cost_s[SCHED_COST_FWD] == f1 && p->prog->units[1].cost_s[SCHED_COST_BWD] == b1,
           "link compute_cost %d: the program's costs are restored after evaluating", y);
        plan_destroy(p);
    }
    is_double(step[1][0], step[0][0], 0, "link compute_cost 1: keep moves nothing, the same step");
    ok(step[1][1] > step[0][1] && step[1][1] <= step[0][1] + moved * (1 + 1e-9),
       "link compute_cost 1: *=host naive grows from %.4g to %.4g s, by at most its transfers' %.4g s",
       step[0][1], step[1][1], moved);
}

static const struct { int hw; const char *text, *needle; } bad[] = {
    { 0, "not json", "bad.json: not JSON: line 1" },
    { 0, "[1]", "expected a JSON object" },
    { 0, "{\"name\":\"x\",\"family\":\"gpt2\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,\"max_seq\":4}",
      "bad.json: field 'family': expected \"gpt\", \"llama\" or \"deepseek_v3\", got \"gpt2\"" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"hidden\":8,\"heads\":1,\"vocab\":4}",
      "field 'layers': expected a positive integer, but it is missing" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":-3,\"hidden\":8,\"heads\":1,\"vocab\":4}",
      "field 'layers': expected an integer >= 1, got -3" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,\"dtypes\":{\"params\":\"int4\"}}",
      "field 'dtypes.params': expected fp32, bf16, fp16 or fp8, got \"int4\"" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,\"dtypes\":{\"activations\":\"fp4\"}}",
      "field 'dtypes.activations': expected fp32, bf16, fp16 or fp8, got \"fp4\"" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,\"dtypes\":{\"reduce\":null}}",
      "field 'dtypes.reduce': expected fp32, bf16, fp16 or fp8, got null" },
    { 0, "{\"name\":\"x\",\"family\":\"gpt\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,\"max_seq\":4,"
         "\"dtypes\":{\"activations\":\"bf16\"}}",
      "field 'dtypes.activations': expected fp32 for family gpt (train_gpt saves fp32), got \"bf16\"" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4,"
         "\"moe\":{\"routed_experts\":4,\"active_per_token\":8,\"expert_ffn\":2}}",
      "field 'moe.active_per_token': expected at most moe.routed_experts, got 8" },
    { 0, "{\"name\":\"x\",\"family\":\"deepseek_v3\",\"layers\":1,\"hidden\":8,\"heads\":1,\"vocab\":4}",
      "field 'mla': expected an object" },
    { 0, "{\"name\":\"x\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,\"heads\":3,\"kv_heads\":2,\"vocab\":4}",
      "field 'kv_heads': expected a divisor of heads, got 2" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"capacity_bytes\":1e10},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5}}",
      "bad.json: field 'hbm.bandwidth': expected a number, but it is missing" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"capacity_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":2}}",
      "field 'compute.mfu': expected a number in [0.01, 1], got 2" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"capacity_bytes\":1e9,\"bandwidth\":1e12}}",
      "field 'hbm.capacity_bytes': expected more than 2 GiB" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5},"
         "\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,"
         "\"all_gather\":{\"intra\":[],\"inter\":[]}}}",
      "field 'collectives.all_gather.intra': expected an array of 1..32" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5},"
         "\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,"
         "\"all_gather\":{\"intra\":[{\"ranks\":8,\"bytes\":1e6,\"busbw\":\"fast\"}],\"inter\":[]}}}",
      "field 'collectives.all_gather.intra[0].busbw': expected a number" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5},"
         "\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,"
         "\"compute_cost\":-0.5}}",
      "field 'collectives.compute_cost': expected a number in [0, 1e+06], got -0.5" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5},"
         "\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,"
         "\"sync_s\":\"slow\"}}",
      "field 'collectives.sync_s': expected a number in [0, 1], got \"slow\"" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12,\"shared_with_copies\":\"yes\"}}",
      "field 'hbm.shared_with_copies': expected true or false, got \"yes\"" },
    { 1, "{\"name\":\"h\",\"hbm\":{\"usable_bytes\":1e10,\"bandwidth\":1e12},\"compute\":{\"dense_flops\":1e12,\"mfu\":0.5},"
         "\"host_link\":{\"d2h_bw\":1e9,\"h2d_bw\":1e9},\"host_bytes\":1e9,\"collectives\":{\"domain_size\":8,"
         "\"nic_bw\":-1}}",
      "field 'collectives.nic_bw': expected a number in [1000, 1e+15], got -1" },
    { 0, NULL, NULL }
};

/* What overlapping ops share (docs/planner.md, "Shared resources"): the
 * hardware file's fields become the schedule options' capacities and the
 * units' resource bytes; without them nothing is shared and the worked
 * example's steps are those of a file without the fields. */
static void test_share(const plan_model_t *m, const plan_hw_t *tiny)
{
    plan_shape_t sh = { .fsdp = 16, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    plan_hw_t hw = *tiny;
    plan_t *p;
    char err[512];
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    int none = 1;
    for (int r = 0; r < SCHED_RES_COUNT; r++) none = none && 0 == p->opts.share_bw[r];
    ok(none, "no sharing fields (both_bw defaults to d2h + h2d): no capacity, the plain simulation");
    plan_destroy(p);
    hw.both_bw = 1.5e9;            /* below 1e9 + 1e9: PCIe-like */
    hw.hbm_shared = 1;
    hw.nic_bw = 5e10;
    hw.ce_bw = 3e9;
    hw.coll_on_ce = 1;
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    const sched_unit_t *x = &p->prog->units[1];
    const plan_unit_t *u = &p->units[1];
    ok(1.5e9 == p->opts.share_bw[SCHED_RES_LINK] && 1e10 == p->opts.share_bw[SCHED_RES_HBM] &&
       5e10 == p->opts.share_bw[SCHED_RES_NIC] && 3e9 == p->opts.share_bw[SCHED_RES_CE],
       "the fields set the capacities: link both ways, HBM's bandwidth, NIC, copy engines");
    ok(x->res_bytes[SCHED_COST_FWD][SCHED_RES_HBM] == u->fwd_mem_bytes &&
       x->res_bytes[SCHED_COST_BWD][SCHED_RES_HBM] > 2 * u->fwd_mem_bytes,
       "a layer's forward draws its memory-bound bytes on HBM (%g), its backward twice those and the zeroing",
       x->res_bytes[SCHED_COST_FWD][SCHED_RES_HBM]);
    is_double(x->res_bytes[SCHED_COST_AG][SCHED_RES_CE], u->gathered * 2 * 15 / 16, 1e-9,
              "on copy engines an all-gather of 16 ranks moves 15/16 of its bf16 bytes there");
    /* 16 ranks over domains of 8: each domain brings in the other half,
     * over its 8 NICs */
    is_double(x->res_bytes[SCHED_COST_RS][SCHED_RES_NIC], u->gathered * 4 * 8 / (16.0 * 8), 1e-9,
              "a reduce-scatter over two domains of 8: S (n-d)/(n d) of its fp32 bytes per NIC");
    plan_destroy(p);
    sh.replicas = 2;               /* two FSDP-16 groups: the shard's all-reduce crosses domains too */
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    is_double(p->prog->units[1].res_bytes[SCHED_COST_RS][SCHED_RES_NIC],
              p->units[1].gathered * 4 * 8 / (16.0 * 8) + 2 * (p->units[1].params / 16) * 4 / 2, 1e-9,
              "with 2 replicas the reduce-scatter op's NIC bytes add the shard's ring all-reduce, 2 (R-1)/R of it");
    plan_destroy(p);
    sh.replicas = 1;
    hw.cpu = 1;
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    ok(0 == p->opts.share_bw[SCHED_RES_LINK], "a CPU file's both_bw is no limit (paced engines, one per direction)");
    plan_destroy(p);
}

/* state_place in the planner, on the worked example's 4 units (shards of
 * 40, 296, 296, 44 elements; fp32 master, gradients and two moments:
 * buffers of 512, 1536, 1536, 512 bytes per master or gradient shard) */
static plan_t *state_plan(const plan_model_t *m, const plan_hw_t *hw, const char *place, double hbm)
{
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 1, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1,
                        .hbm_override = hbm, .state_auto = place && !strcmp(place, "auto") };
    char err[512];
    plan_t *p;
    if (place && !sh.state_auto && fsdp_place_parse(place, sh.place, err, sizeof err)) bail_out("%s", err);
    if (STRATA_OK != plan_create(m, hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    return p;
}

static plan_row_t state_row(plan_t *p, const char *policy)
{
    plan_row_t r;
    char err[512];
    if (STRATA_OK != plan_policy(p, policy, SCHED_MODE_LHS, &r, err, sizeof err)) bail_out("%s: %s", policy, err);
    return r;
}

static void test_state_host(const plan_model_t *m, const plan_hw_t *hw)
{
    plan_t *p = state_plan(m, hw, NULL, 0);
    plan_row_t all = state_row(p, "*=keep");
    plan_destroy(p);
    p = state_plan(m, hw, "*=host", 0);
    plan_row_t r = state_row(p, "*=keep");
    const plan_state_t *s = &r.state;
    is_double(s->tier[STRATA_TIER_DEVICE], 0, 0, "*=host: no state on the device");
    is_double(s->tier[STRATA_TIER_PINNED_HOST], 4096 + 4096 + 8192, 0,
              "the host holds master 4096 + gradients 4096 + moments 8192 bytes");
    is_double(all.device_bytes - r.device_bytes, 16384, 0, "the keep peak drops by those bytes (37888 -> 21504)");
    is_double(r.host_bytes, 16384, 0, "and the row's host bytes are theirs");
    ok(0 == s->storage_read && 0 == s->storage_written && 0 == s->host_work, "nothing streams from storage");
    /* every unit's state off the device: the host updates them all, at
     * the host link's 1e9 B/s (the file has no host_bw), 2 x 676 x 16
     * bytes; those bytes leave the HBM term 2 x 676 x 16 / 1e10; with
     * clipping (the default) after the backward, in the optimizer's time */
    is_double(s->link_optim_s, 0, 0, "no optimizer kernel over the link");
    is_double(s->optim_host_s, 2 * 676 * 16 / 1e9, 1e-15, "the host's optimizer time");
    is_double(p->prog->optim_s, 2.4336e-6 - 2 * 676 * 16 / 1e10 + s->optim_host_s, 1e-15,
              "is in the program's optimizer time (clipping)");
    /* gathers stage each master up (twice, the last unit's once) and the
     * reduce-scatter copies the gradients down, beside the compute */
    is_double(s->link_stream_s, (2 * (40 + 296 + 296) + 44) * 4 / 1e9 + 676 * 4 / 1e9, 1e-15,
              "the staging copies' link time");
    is_double(r.step_s - all.step_s, s->optim_host_s - 2 * 676 * 16 / 1e10 + s->exposed_s, 1e-12,
              "the step: the optimizer's change and the copies' exposed part (%.3g s)", s->exposed_s);
    plan_destroy(p);
    /* the master on the device: the kernel updates, reading gradients and
     * moments 676 x (4 + 8) over the link and writing the moments 676 x 8 */
    p = state_plan(m, hw, "grad=host,optim=host", 0);
    r = state_row(p, "*=keep");
    s = &r.state;
    is_double(s->optim_host_s, 0, 0, "grad=host,optim=host: no update on the host");
    is_double(s->link_optim_s, 676 * 12 / 1e9 + 676 * 8 / 1e9, 1e-15, "the kernel's link time");
    is_double(p->prog->optim_s, 2.4336e-6 - 2 * 676 * 12 / 1e10 + s->link_optim_s, 1e-15,
              "is the program's optimizer time for those values");
    plan_destroy(p);
}

static void test_state_storage(const plan_model_t *m, const plan_hw_t *tiny)
{
    plan_hw_t hw = *tiny;
    plan_row_t r;
    char err[512];
    plan_t *p = state_plan(m, &hw, NULL, 0);
    plan_shape_t sh = p->shape;
    plan_destroy(p);
    fsdp_place_parse("optim=storage", sh.place, err, sizeof err);
    ok(STRATA_ERR_INVALID == plan_create(m, &hw, &sh, &p, err, sizeof err) && strstr(err, "storage_bw"),
       "state on storage without the file's storage_bw is refused: %s", err);
    hw.storage_bw = 1e6;
    p = state_plan(m, &hw, "optim=storage:0.5", 0);
    r = state_row(p, "*=keep");
    is_double(r.state.tier[STRATA_TIER_STORAGE], 2 * 512 + 2 * 1536, 0,
              "optim=storage:0.5: units 0 and 1's moments on storage");
    is_double(r.state.storage_read, (40 + 296) * 8, 0, "read once a step: 2688 bytes");
    is_double(r.state.storage_written, (40 + 296) * 8, 0, "and written once");
    is_double(r.state.storage_s, 2 * 2688 / 1e6, 1e-15, "at storage_bw, reads and writes together");
    is_double(r.state.host_work, 3 * 2 * 1536, 0, "working copies: 3 x unit 1's two moments");
    is_double(r.host_bytes, 3 * 2 * 1536, 0, "on the row's host");
    is_double(r.state.exposed_s, fmax(0, fmax(r.state.storage_s, r.state.link_stream_s) - r.compute_s), 0,
              "exposed: what the compute (%.3g s) does not cover", r.compute_s);
    plan_destroy(p);
    p = state_plan(m, &hw, "*=storage", 0);
    sh = p->shape;
    r = state_row(p, "*=keep");
    double grads = 0;
    for (int ui = 0; ui < p->nunits; ui++) grads += plan_state_bytes(p, ui, FSDP_CLASS_GRAD, 1);
    plan_destroy(p);
    sh.no_clip = 1;
    if (STRATA_OK != plan_create(m, &hw, &sh, &p, err, sizeof err)) bail_out("plan_create: %s", err);
    plan_row_t nc = state_row(p, "*=keep");
    is_double(nc.state.storage_read, (2 * (40 + 296 + 296) + 44) * 4 + 676 * 8, 0,
              "*=storage, no clipping: each master read for two gathers (the last unit's for one) "
              "and the moments");
    is_double(nc.state.storage_written, 676 * (4 + 4 + 8), 0, "and master, gradients and moments written once");
    is_double(r.state.storage_read - nc.state.storage_read, 676 * 4, 0,
              "clipping (the default): each master read once more, for its update after every backward");
    is_double(r.state.storage_written, nc.state.storage_written, 0, "the same written");
    is_double(r.state.host_work - nc.state.host_work, grads, 0,
              "and every unit's gradient waits on the host for the norm (%.0f bytes)", grads);
    plan_destroy(p);
}

/* the worked example's budgets below are these and its reserve, 2560 bytes */
#define RESERVE 2560

static void test_state_auto(const plan_model_t *m, const plan_hw_t *tiny)
{
    plan_hw_t hw = *tiny;
    hw.storage_bw = 1e6;
    plan_t *p = state_plan(m, &hw, NULL, 36000 + RESERVE);
    plan_row_t r = state_row(p, "*=keep");
    double lack = r.need_bytes - (36000 + RESERVE);
    ok(!r.fits && lack > 0 && lack < 8192, "--hbm 36000: keep lacks %.0f bytes with the state on the device", lack);
    plan_destroy(p);
    p = state_plan(m, &hw, "auto", 36000 + RESERVE);
    r = state_row(p, "*=keep");
    double moved = r.state.tier[STRATA_TIER_PINNED_HOST];
    ok(r.fits, "auto: it fits (%s)", r.state.where);
    /* a unit's moments move together: unit 0's 1024 bytes, then unit 1's 3072 */
    ok(moved >= lack && moved - 3072 < lack && 0 == r.state.tier[STRATA_TIER_STORAGE] &&
       moved == r.state.cls[FSDP_CLASS_OPTIM][STRATA_TIER_PINNED_HOST],
       "moments only, from the first unit, to the host, no more than the lack needs: %.0f", moved);
    plan_destroy(p);
    hw.host_bytes = 4096;   /* 3/4 of it holds twice unit 0's moments (1024), not unit 1's */
    p = state_plan(m, &hw, "auto", 36000 + RESERVE);
    r = state_row(p, "*=keep");
    is_string(r.state.where, "master=device:4/4,grad=device:4/4,optim=device:2/4,optim=host:1/4,"
              "optim=storage:1/4", "a small host: what it has no room for goes to storage");
    plan_destroy(p);
    p = state_plan(m, &hw, "auto", 10000 + RESERVE);
    r = state_row(p, "*=keep");
    ok(!r.fits && 0 == r.state.tier[STRATA_TIER_PINNED_HOST] + r.state.tier[STRATA_TIER_STORAGE],
       "where all the state would not make up the lack, none moves");
    plan_destroy(p);
}

static void test_bad(void)
{
    for (int i = 0; bad[i].text; i++) {
        char err[1024] = "";
        plan_model_t m;
        plan_hw_t hw;
        strata_status_t st = bad[i].hw ? plan_hw_parse(bad[i].text, "bad.json", &hw, err, sizeof err)
                                       : plan_model_parse(bad[i].text, "bad.json", &m, err, sizeof err);
        ok(STRATA_ERR_FORMAT == st && strstr(err, bad[i].needle), "bad %s file %d: %s", bad[i].hw ? "hw" : "model",
           i, bad[i].needle);
        if (!strstr(err, bad[i].needle)) diag("got: %s", err);
    }
    char err[1024];
    plan_model_t m;
    ok(STRATA_ERR_IO == plan_model_load("no-such-model", &m, err, sizeof err) && strstr(err, "no model file named"),
       "an unknown model name says where it looked");
}

/* MoE: with --ep > 1 the dispatch is paid by a recompute of moe_in and the
 * combine by one of moe_down (a recompute runs the block to its end); the
 * load-imbalance factor multiplies the busiest rank's routed tokens. */
static void test_moe(void)
{
    char err[512];
    plan_model_t m;
    if (STRATA_OK != plan_model_parse("{\"name\":\"moe\",\"family\":\"llama\",\"layers\":1,\"hidden\":8,"
                                      "\"heads\":2,\"kv_heads\":1,\"head_dim\":4,\"ffn\":16,\"vocab\":10,"
                                      "\"tied_embeddings\":false,\"moe\":{\"routed_experts\":4,"
                                      "\"active_per_token\":2,\"shared_experts\":0,\"expert_ffn\":6,"
                                      "\"dense_layers\":0},\"dtypes\":{\"params\":\"bf16\",\"compute\":\"bf16\","
                                      "\"grads\":\"fp32\",\"master\":\"fp32\",\"optimizer\":\"fp32\"},"
                                      "\"optimizer_states\":2}", "moe", &m, err, sizeof err))
        bail_out("moe model: %s", err);
    /* n = 4 tokens, k = 2, h = 8, bf16: n k h a = 128 bytes per all-to-all */
    plan_shape_t sh = { .fsdp = 2, .replicas = 1, .ep = 2, .micro = 1, .seq = 4, .accum = 1, .prefetch = 1 };
    plan_unit_t *u, *v, *w;
    int n;
    if (STRATA_OK != plan_units(&m, &sh, &u, &n, err, sizeof err)) bail_out("plan_units: %s", err);
    const plan_save_t *in = save_of(&u[1], "moe_in"), *down = save_of(&u[1], "moe_down"),
                      *gate = save_of(&u[1], "moe_gate");
    ok(in && down && 128 == in->a2a_bytes && 128 == down->a2a_bytes,
       "--ep 2: a recompute of moe_in redoes the dispatch, of moe_down the combine (128 bytes each)");
    sh.ep = 1;
    if (STRATA_OK != plan_units(&m, &sh, &v, &n, err, sizeof err)) bail_out("plan_units: %s", err);
    down = save_of(&v[1], "moe_down");
    ok(down && 0 == down->a2a_bytes && 0 == save_of(&v[1], "moe_in")->a2a_bytes, "--ep 1: no all-to-all");
    sh.ep = 2;
    sh.moe_imbalance = 2;
    if (STRATA_OK != plan_units(&m, &sh, &w, &n, err, sizeof err)) bail_out("plan_units: %s", err);
    const plan_save_t *g2 = save_of(&w[1], "moe_gate");
    ok(gate && g2 && g2->bytes == 2 * gate->bytes && g2->flops == 2 * gate->flops &&
       256 == save_of(&w[1], "moe_in")->a2a_bytes && w[1].a2a_bytes == 2 * u[1].a2a_bytes,
       "--moe-imbalance 2: the busiest rank's expert saves, FLOPs and all-to-alls twice the balanced ones");
    free(u);
    free(v);
    free(w);
}

int main(void)
{
    char err[512];
    plan_model_t m;
    plan_hw_t hw;
    plan(143);
    if (STRATA_OK != plan_model_parse(tiny_model, "tiny", &m, err, sizeof err) ||
        STRATA_OK != plan_hw_parse(tiny_hw, "tinyhw", &hw, err, sizeof err))
        bail_out("worked example files: %s", err);
    test_tiny_units(&m);
    test_worked_example(&m, &hw);
    test_gpt();
    test_gpt_peak(&hw);
    test_coll(&hw);
    test_coll_compute(&m, &hw);
    test_link_compute(&m, &hw);
    test_share(&m, &hw);
    test_bad();
    test_moe();
    test_state_host(&m, &hw);
    test_state_storage(&m, &hw);
    test_state_auto(&m, &hw);
    return done_testing();
}
