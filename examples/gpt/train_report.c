/*
 * train_report.c - what train_gpt prints: a banner, a progress line per
 * step (or a JSON object per step with --json), the stop note and the
 * summary (docs/train_gpt.md describes the formats).
 */
#include "config.h"
#include "examples/gpt/train_gpt.h"

#include <jansson.h>    /* the JSON lines */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ JSON lines --- */

/* A number for a JSON line, rounded as fmt rounds it (loss to 9 digits,
 * times to the microsecond: no float noise in the lines); null where it is
 * not finite (printf wrote "nan", which is not JSON). */
static json_t *num(double x, const char *fmt)
{
    char buf[64];
    if (!isfinite(x)) return json_null();
    snprintf(buf, sizeof buf, fmt, x);
    return json_real(strtod(buf, NULL));
}

static json_t *bytes(size_t n) { return json_integer((json_int_t)n); }

/* The one JSON emitter: obj (consumed) as one compact line on stdout.
 * 15 significant digits give back every number num() rounded. */
static void emit(json_t *obj)
{
    char *line = obj ? json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    if (line) printf("%s\n", line);
    else fprintf(stderr, PROG ": cannot build a JSON line (out of memory?)\n");
    fflush(stdout);
    free(line);
    json_decref(obj);
}

static json_t *step_json(const step_report *s, double tokens_step)
{
    const strata_model_stats_t *ms = &s->ms;
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
                     " s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o}",
                     "step", s->done, "loss", num(s->loss, "%.9g"), "lr", num(s->lr, "%.6g"),
                     "tokens_per_s", num(tokens_step / s->dt, "%.1f"),
                     "step_s", num(s->dt, "%.6f"), "peak_device_bytes", bytes(s->peak[0]),
                     "peak_host_bytes", bytes(s->peak[1]), "peak_storage_bytes", bytes(s->peak[2]),
                     "transfer_s", num(ms->transfer_s, "%.6f"),
                     "exposed_transfer_s", num(ms->exposed_transfer_s, "%.6f"),
                     "overlap_frac", num(ms->overlap_frac, "%.4f"),
                     "offload_bytes", bytes(ms->offload_bytes),
                     "predicted_step_s", num(ms->predicted_step_s, "%.6f"),
                     "model_step_s", num(ms->step_s, "%.6f"),
                     "compute_s", num(ms->compute_s, "%.6f"),
                     "exposed_comm_s", num(ms->exposed_comm_s, "%.6f"),
                     "mem_planned", ms->mem_planned, "mem_plan_bytes", bytes(ms->mem_plan_bytes),
                     "state_read_bytes", bytes(ms->state_read_bytes),
                     "state_written_bytes", bytes(ms->state_written_bytes),
                     "state_wait_s", num(ms->state_wait_s, "%.6f"),
                     "optim_s", num(ms->optim_s, "%.6f"));
}

/* The device's memory after the last step (cuda; null on the host
 * backend): what init took (the CUDA context and the world's NCCL
 * communicator), NCCL's bytes (every group, counted in device_mem), the
 * device tier's region (reserved whole at init), cudaMemGetInfo's bytes in
 * use, and the part of those outside everything the tiers account for:
 * used - init - region - the NCCL bytes of groups made after init. */
static void device_fields(json_t *obj, const run_result *res)
{
    const strata_device_memory_t *d = &res->dev;
    int on = res->have_dev;
    json_int_t outside = (json_int_t)d->used - (json_int_t)d->init_used - (json_int_t)d->region -
                         (json_int_t)d->nccl_after_init;
    json_object_set_new(obj, "device_init_bytes", on ? bytes(d->init_used) : json_null());
    json_object_set_new(obj, "device_nccl_bytes", on ? bytes(d->nccl) : json_null());
    json_object_set_new(obj, "device_region_bytes", on ? bytes(d->region) : json_null());
    json_object_set_new(obj, "device_used_bytes", on ? bytes(d->used) : json_null());
    json_object_set_new(obj, "device_outside_bytes", on ? json_integer(outside) : json_null());
}

/* mt, me: mean activation transfer and exposed seconds per step */
static json_t *final_json(const run_stats *rs, const run_result *res, double tps, double mt,
                          double me)
{
    const step_report *s = &rs->last;
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)res->param_hash);
    json_t *obj = json_pack("{s:b, s:i, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
                     " s:I, s:o}",
                     "final", 1, "steps", res->steps_done,
                     "loss", num(s->loss, "%.9g"),     /* null: no step in this run */
                     res->addition ? "accuracy" : "val_loss", num(res->metric, "%.9g"),
                     "param_hash", hash, "peak_device_bytes", bytes(s->peak[0]),
                     "peak_host_bytes", bytes(s->peak[1]), "peak_storage_bytes", bytes(s->peak[2]),
                     "tokens_per_s", num(tps, "%.1f"), "transfer_s", num(mt, "%.6f"),
                     "exposed_transfer_s", num(me, "%.6f"),
                     "overlap_frac", num(0 < mt ? 1 - me / mt : 1.0, "%.4f"),
                     "offload_bytes", bytes(s->ms.offload_bytes),
                     "predicted_step_s", num(s->ms.predicted_step_s, "%.6f"),
                     "recompute_products", (json_int_t)res->recomputed.products,
                     "recompute_flops", num(res->recomputed.flops, "%.15g"));
    if (obj) device_fields(obj, res);
    return obj;
}

/* ------------------------------------------------------------- text lines --- */

void report_banner(const options *o, int W, int threads, const strata_config_t *cfg)
{
    char dm[32], pol[512], sched[16], shard[32] = "0", mm[320];
    size_t budget = 0;
    strata_config_get(cfg, "shard_size", shard, sizeof(shard));
    const int S = atoi(shard);
    strata_config_get_size(cfg, "device_mem", &budget);
    strata_config_get(cfg, "act_policy", pol, sizeof(pol));
    strata_config_get(cfg, "schedule", sched, sizeof(sched));
    const int B = o->batch, M = o->accum;
    printf(PROG ": %d rank%s, shard group %d, layers %d dim %d heads %d seq %d, "
           "%zu parameters, batch %d x %d micro x %d ranks = %d rows/step, %s, %d thread%s "
           "per rank, device budget %s, act-policy %s, schedule %s, data %s, matmul %s\n",
           W, 1 == W ? "" : "s", 0 < S ? S : W, o->cfg.n_layer, o->cfg.dim,
           o->cfg.n_head, o->cfg.max_seq, gpt_num_params(&o->cfg), B, M, W, B * M * W,
           strata_dtype_name(o->dtype), threads, 1 == threads ? "" : "s",
           strata_format_size(budget, dm, sizeof(dm)), pol, sched,
           NULL != o->data ? o->data : "addition (generated)", gpt_gemm_name(mm, sizeof(mm)));
    if (o->json) {      /* what runs the products, for scripts */
        gpt_gemm_desc g;
        gpt_gemm_info(&g);
        emit(json_pack("{s:{s:s, s:s, s:b, s:s}}", "matmul", "library", g.library, "kernels",
                       g.kernels, "fallback_avoided", g.fallback_avoided, "openblas", g.blas));
    }
    fflush(stdout);
}

void report_add(run_stats *rs, const step_report *s)
{
    if (s->done == rs->start + 1) {
        rs->first_loss = s->loss;
    } else {
        rs->t_sum += s->dt;
        rs->timed++;
        rs->xfer_sum += s->ms.transfer_s;
        rs->exposed_sum += s->ms.exposed_transfer_s;
    }
    rs->last = *s;
}

void report_step(const options *o, const run_stats *rs, const step_report *s)
{
    if (o->json) {
        emit(step_json(s, rs->tokens_step));
        return;
    }
    if (0 != s->done % o->log_every && s->done != o->steps && s->done != rs->start + 1) return;
    const strata_model_stats_t *ms = &s->ms;
    const double tps = rs->tokens_step / s->dt;
    char s0[32], s1[32], s2[32], xf[96] = "";
    if (0 < ms->transfer_s)   /* only where activations moved */
        snprintf(xf, sizeof(xf), "  xfer %.1f ms exposed %.1f ms (overlap %.0f%%)",
                 1e3 * ms->transfer_s, 1e3 * ms->exposed_transfer_s, 100 * ms->overlap_frac);
    printf("step %5d/%d  loss %.4f  lr %.2e  %8.0f tok/s  %6.2f GFLOP/s  %7.1f ms  "
           "peak dev %s host %s storage %s%s\n", s->done, o->steps, s->loss, s->lr, tps,
           rs->flops_tok * tps / 1e9, 1e3 * s->dt, strata_format_size(s->peak[0], s0, sizeof(s0)),
           strata_format_size(s->peak[1], s1, sizeof(s1)),
           strata_format_size(s->peak[2], s2, sizeof(s2)), xf);
    fflush(stdout);
}

void report_stop(const options *o, int steps_done, const char *why, const char *ckpt)
{
    printf(PROG ": stopped after step %d of %d (%s)%s%s\n", steps_done, o->steps, why,
           NULL != ckpt ? "; checkpoint " : "; no --ckpt-dir, so no checkpoint was written",
           NULL != ckpt ? ckpt : "");
    fflush(stdout);
}

void report_summary(const options *o, const run_stats *rs, const run_result *res)
{
    const step_report *s = &rs->last;
    const int timed = rs->timed;
    char s0[32], s1[32], s2[32];
    double tps = 0 < timed ? timed * rs->tokens_step / rs->t_sum : 0;
    /* transfer totals as the step times: mean over the steps after the first */
    double mt = 0 < timed ? rs->xfer_sum / timed : s->ms.transfer_s;
    double me = 0 < timed ? rs->exposed_sum / timed : s->ms.exposed_transfer_s;
    if (0 < mt)
        printf("summary: activation transfers %.1f ms/step, %.1f ms exposed (overlap "
               "%.0f%%), %zu bytes offloaded per step, predicted step %.1f ms\n", 1e3 * mt,
               1e3 * me, 100 * (1 - me / mt), s->ms.offload_bytes, 1e3 * s->ms.predicted_step_s);
    if (0 < timed)
        printf("summary: %d steps, loss %.4f -> %.4f, %.0f tok/s, %.2f GFLOP/s, %.1f ms/step "
               "(mean over steps %d..%d)\n", res->steps_done - rs->start, rs->first_loss, s->loss,
               tps, rs->flops_tok * tps / 1e9, 1e3 * rs->t_sum / timed, rs->start + 2,
               res->steps_done);
    printf("summary: peak memory on rank 0: device %s, host %s, storage %s; "
           "param_hash %016llx\n", strata_format_size(s->peak[0], s0, sizeof(s0)),
           strata_format_size(s->peak[1], s1, sizeof(s1)),
           strata_format_size(s->peak[2], s2, sizeof(s2)), (unsigned long long)res->param_hash);
    if (0 < res->recomputed.products)
        printf("summary: recompute passes on rank 0 ran %ld matrix products, %.4g GFLOP\n",
               res->recomputed.products, res->recomputed.flops / 1e9);
    if (NULL != res->ckpt) printf("checkpoint: %s\n", res->ckpt);
    if (o->json) emit(final_json(rs, res, tps, mt, me));
    if (res->addition) printf("held-out accuracy: %.1f%%\n", 100 * res->metric);
    else printf("val loss: %.4f\n", res->metric);
    fflush(stdout);
}

void report_refusal(const options *o, const strata_admission_t *a, const char *policy,
                    const char *message)
{
    if (o->json) {
        emit(json_pack("{s:b, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i}",
                       "refused", 1, "needs_device_bytes", bytes(a->need),
                       "min_any_policy_bytes", bytes(a->any), "device_budget_bytes",
                       bytes(a->budget), "act_policy", policy, "held_bytes", bytes(a->held),
                       "between_bytes", bytes(a->between), "flow_bytes", bytes(a->flow),
                       "workspace_bytes", bytes(a->workspace), "reserve_bytes",
                       bytes(a->reserve), "scheduled_bytes", bytes(a->scheduled),
                       "exit", TRAIN_EXIT_REFUSED));
    }
    fprintf(stderr, PROG ": refused before step 1: %s\n", message);
    fflush(stderr);
}
