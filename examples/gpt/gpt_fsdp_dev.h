/*
 * gpt_fsdp_dev.h - what gpt_fsdp.c (the units on the runtime) and
 * gpt_fsdp_cuda.c (the same units on a CUDA device) share: a unit's record
 * and the device callbacks. A callback of gpt_fsdp.c hands over to its
 * device twin when strata_call_stream(call) is not NULL (the cuda backend:
 * every pointer is device memory and all work goes on that stream).
 */
#ifndef STRATA_EXAMPLES_GPT_FSDP_DEV_H
#define STRATA_EXAMPLES_GPT_FSDP_DEV_H

#include "examples/gpt/gpt_fsdp.h"

typedef struct {
    const gpt_config *cfg;
    gpt_recompute_count *recomputed;    /* the model's count (gpt_fsdp) */
    int               unit, np;
    gpt_param_info    info[GPT_MAX_PARAMS];
    size_t            numel;            /* all the unit's parameters */
} unit_rec;

/* 1 when the device callbacks were built (CUDA found at configure). */
int gpt_dev_built(void);
strata_status_t gpt_dev_embed_forward(strata_unit_call_t *call, const unit_rec *u);
strata_status_t gpt_dev_embed_backward(strata_unit_call_t *call, const unit_rec *u);
strata_status_t gpt_dev_block_forward(strata_unit_call_t *call, const unit_rec *u);
strata_status_t gpt_dev_block_backward(strata_unit_call_t *call, const unit_rec *u);
/* training: the head's loss and gradients in one pass, as on the host;
 * eval: the loss sum, or the next token of each row (decode) */
strata_status_t gpt_dev_head_forward(strata_unit_call_t *call, const unit_rec *u);
strata_status_t gpt_dev_head_backward(strata_unit_call_t *call, const unit_rec *u);
/* TF32 for the f32 GEMMs (train_gpt --tf32); before the first step. */
void gpt_dev_set_tf32(int on);
/* The cuBLAS/cuBLASLt handle and its workspace (GPT_BLAS_WORKSPACE) as a
 * device-tier block of ctx (tag workspace, counted in device_mem): on the
 * cuda backend, after strata_init and before the model's first step (a
 * no-op once made, and without CUDA). teardown frees both, before
 * strata_finalize. */
strata_status_t gpt_dev_setup(strata_context_t *ctx);
void gpt_dev_teardown(void);
/* CUDA devices that answer (0 without CUDA). */
int gpt_dev_count(void);
/* Copy bytes of the head's device output to the host, waiting for the
 * compute stream the head last ran on (the driver reads the loss or the
 * decoded tokens; a host wait per micro-batch, outside the runtime). */
strata_status_t gpt_dev_read(void *dst, const void *src, size_t bytes);
/* The training step's losses without a host wait per micro-batch: keep
 * copies micro-batch m's loss (a double of the head's device output) into
 * slot m of a device array, in stream order after the head; fetch brings
 * slots 0..n-1 to the host with one wait, after the step. */
strata_status_t gpt_dev_loss_keep(int m, const void *loss);
strata_status_t gpt_dev_loss_fetch(double *dst, int n);

#endif
