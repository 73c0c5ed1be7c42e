/*
 * train_gpt.h - the parts of train_gpt shared by its files: the options
 * (train_opts.c), the measurements of a step and of the run, and their
 * reporting as text or JSON lines (train_report.c). The program itself,
 * setup and the training step, is train_gpt.c.
 */
#ifndef STRATA_EXAMPLES_TRAIN_GPT_H
#define STRATA_EXAMPLES_TRAIN_GPT_H

#include "examples/gpt/gpt_fsdp.h"

#include <stdio.h>

#define PROG "train_gpt"

/* ---------------------------------------------------------------- options --- */

typedef struct {
    gpt_config  cfg;
    int         batch, accum, steps, warmup, threads, eval_every, eval_n, val_batches;
    int         log_every, ckpt_every, json, shard, stop_at;
    int         global_batch;   /* --global-batch; 0: ranks x batch x accum */
    int         given;      /* bit 0: --batch given; bit 1: --accum given */
    int         resume;     /* 1: --resume; 2: --resume-any-shape */
    double      lr, min_lr_frac, wd, clip, beta2;
    uint64_t    seed;
    strata_dtype_t dtype;
    strata_dtype_t reduce_dtype;    /* --reduce-dtype: the gradients on the wire */
    int         tf32;       /* --tf32: the device's f32 GEMMs in TF32 */
    const char *device_mem, *host_mem, *spill_dir, *act_policy, *schedule, *state_place;
    const char *ckpt_dir, *trace, *data;
    const char *device;     /* --device cuda|host|auto: the runtime's backend */
    const char *sets[16];   /* --set name=value, in order */
    int         nsets;
} options;

void train_usage(FILE *f);

/* 0: parsed; 1: --help printed; -1: bad input (message on stderr if loud) */
int train_parse(int argc, char **argv, options *o, int loud);

/* --global-batch N over W ranks: sets batch and accum. 0, or -2 with why. */
int train_split_batch(options *o, int W, char *why, size_t len);

/* ------------------------------------------------------------ measurements --- */

/* One optimizer step, as rank 0 reports it. */
typedef struct {
    int    done;            /* steps done with this one (its 1-based number) */
    double loss, lr, dt;    /* loss: mean over the global batch; dt: seconds */
    int    stop;            /* some rank was asked to stop */
    size_t peak[3];         /* tier peaks so far: device, host, storage */
    strata_model_stats_t ms;
} step_report;

/* The run so far, for the summary. The first step of a run records and
 * plans, so the sums leave it out. */
typedef struct {
    int    start, timed;    /* the step this run began at; steps in the sums */
    double tokens_step, flops_tok;
    double first_loss, t_sum, xfer_sum, exposed_sum;
    step_report last;       /* loss NAN while no step has run */
} run_stats;

/* The end of a finished run: its checks on held-out data. */
typedef struct {
    int         steps_done, addition;
    double      metric;     /* held-out accuracy (addition) or val loss */
    uint64_t    param_hash;
    gpt_recompute_count recomputed;   /* rank 0's recompute passes, this run */
    const char *ckpt;       /* the checkpoint written at the end, or NULL */
    int         have_dev;   /* cuda: dev measured after the last training step */
    strata_device_memory_t dev;
} run_result;

/* ------------------------------------------------------------- reporting --- */
/* Rank 0 calls these; text lines, or JSON lines with --json. */

void report_banner(const options *o, int W, int threads, const strata_config_t *cfg);
void report_add(run_stats *rs, const step_report *s);   /* every rank, every step */
void report_step(const options *o, const run_stats *rs, const step_report *s);
void report_stop(const options *o, int steps_done, const char *why, const char *ckpt);
void report_summary(const options *o, const run_stats *rs, const run_result *res);
/* The exit status of a job refused before step 1: no plan of its policy
 * fits the device budget (the refusal names the budget that does). */
#define TRAIN_EXIT_REFUSED 4
/* The refusal: with --json one object {"refused":true,"needs_device_bytes":N,...}
 * on stdout; the message on stderr. Rank 0. */
void report_refusal(const options *o, const strata_admission_t *a, const char *policy,
                    const char *message);

#endif
