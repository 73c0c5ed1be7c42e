/*
 * gpt_fsdp.h - the GPT model of gpt.h as strata FSDP units: one unit per
 * embedding, block and head, whose callbacks wrap the pure gpt_* functions.
 * Used by train_gpt (and its tests).
 *
 * What flows through the runtime:
 *  - the model's input is the token ids, int32 [B*T] (strata_model_forward's
 *    input bytes are exactly B*T*4);
 *  - the batch pointer (strata_call_batch) is a gpt_batch: B, T, the
 *    targets and the loss scale;
 *  - every block saves its named activations (gpt_save_name: ln1, qkv,
 *    attn_probs, ...) with strata_save, so per-name policies apply to them;
 *    its recompute pass (strata_call_recompute) makes only the saves the
 *    runtime dropped (strata_call_save_held), with gpt_block_recompute;
 *  - the head computes loss and loss gradient in one pass while its
 *    parameters are gathered (gpt_head_forward): its training forward saves
 *    "head_dx" (d loss / d its input) and "head_grads" (its parameter
 *    gradients), and its backward only hands them to the runtime; the model
 *    output is the loss sum of the micro-batch, one double;
 *  - eval (strata_model_eval) outputs the loss sum (targets given) or, with
 *    gpt_batch.decode, the greedy next byte after the last position of each
 *    row, int32 [B].
 * All buffers are the runtime's (device tier): outputs, saves, workspace.
 */
#ifndef STRATA_EXAMPLES_GPT_FSDP_H
#define STRATA_EXAMPLES_GPT_FSDP_H

#include "examples/gpt/gpt.h"

typedef struct gpt_batch {
    int            B, T;        /* rows and tokens per row of this call */
    const int32_t *targets;     /* [B*T], < 0 = no loss; NULL = none (eval decode) */
    float          grad_scale;  /* training: the gradient is of grad_scale * loss_sum */
    int            decode;      /* eval: output argmax at position T-1 per row */
} gpt_batch;

typedef struct gpt_fsdp gpt_fsdp;

/* Add the units of cfg to a model not yet committed and register every
 * parameter with its shape and an initialiser that calls gpt_param_init,
 * so every shard count starts from the same values (the model's opts.seed
 * is the seed). *g_p must outlive the model (the callbacks use it). */
strata_status_t gpt_fsdp_build(strata_model_t *model, const gpt_config *cfg, gpt_fsdp **g_p);
void gpt_fsdp_destroy(gpt_fsdp *g);
/* The matrix products this rank's recompute passes ran so far (blocks
 * through gpt_block_recompute, which skips what the runtime still holds;
 * the head's fused forward whole). */
gpt_recompute_count gpt_fsdp_recomputed(const gpt_fsdp *g);

/* The names the model saves, in order: the block saves then the head's. */
#define GPT_FSDP_NSAVES (GPT_MAX_SAVES + 2)
const char *gpt_fsdp_save_name(int index);

/* Check an activation-policy string ("auto", or name=action pairs with
 * actions keep|host|storage|recompute and name a save name or "*").
 * Returns 0, or -1 with a sentence in why. */
int gpt_fsdp_check_policy(const char *policy, char *why, size_t len);

#endif
