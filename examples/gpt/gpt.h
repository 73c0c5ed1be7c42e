/*
 * gpt.h - the GPT-2-style model of examples/gpt: forward and backward on
 * CPUs, unit by unit, and the data it trains on.
 *
 * The model: token + position embedding, n_layer pre-LayerNorm blocks
 * (causal multi-head attention, GELU MLP of width 4*dim), a final LayerNorm
 * and an LM head over a byte vocabulary of 256. Everything is f32.
 *
 * It is cut into FSDP units in the order the runtime runs them:
 *     unit 0            "embed"   wte [256, C], wpe [max_seq, C]
 *     unit 1..n_layer   "blockN"  12 tensors (GPT_P_LN1_W .. GPT_P_FC_PROJ_B)
 *     unit n_layer+1    "head"    lnf_w [C], lnf_b [C], lm_w [256, C]
 * The LM head has its OWN weight lm_w, not tied to wte: tying would make one
 * tensor belong to two FSDP units (gathered twice, its gradient reduced from
 * two places); separate weights keep every unit self-contained.
 *
 * Ownership: every function here is pure over caller-provided memory. A
 * unit's parameters arrive as an array of tensor pointers in the order of
 * gpt_unit_params(); gradients are ACCUMULATED (+=) into the caller's
 * dparams arrays, so the caller zeroes them once per optimizer step and
 * gradient accumulation over micro-batches needs no extra code. A block's
 * saved activations are caller-allocated buffers reached only through
 * gpt_saves, so the runtime may offload or drop each by name between the
 * forward and the backward; no function keeps a pointer after it returns.
 * Scratch memory comes from a caller-provided workspace
 * (gpt_workspace_floats()); nothing is allocated in the hot path.
 *
 * Matrices are row-major; a linear layer y = x W^T + b keeps W as
 * [out_features, in_features] as PyTorch does, so a checkpoint maps 1:1.
 */
#ifndef STRATA_EXAMPLES_GPT_H
#define STRATA_EXAMPLES_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "strata.h"      /* strata_status_t */

#define GPT_VOCAB       256
#define GPT_MAX_PARAMS  12     /* tensors in the largest unit (a block) */
#define GPT_MAX_SAVES   11     /* named saved activations of a block */

/* ------------------------------------------------------------------------ */
/* Configuration and geometry                                               */
/* ------------------------------------------------------------------------ */

typedef struct gpt_config {
    int n_layer;    /* transformer blocks, >= 1 */
    int dim;        /* model width C, divisible by n_head */
    int n_head;     /* attention heads, >= 1 */
    int max_seq;    /* longest sequence: rows of the position embedding */
} gpt_config;

/* STRATA_OK, or STRATA_ERR_INVALID / STRATA_ERR_OVERFLOW with a sentence in
 * why[0..why_len) saying what is wrong (why may be NULL). */
strata_status_t gpt_config_validate(const gpt_config *cfg, char *why, size_t why_len);
/* The config plus a call shape: batch B >= 1 rows of 1 <= T <= max_seq. */
strata_status_t gpt_shape_validate(const gpt_config *cfg, int B, int T,
                                   char *why, size_t why_len);

typedef enum { GPT_UNIT_EMBED, GPT_UNIT_BLOCK, GPT_UNIT_HEAD } gpt_unit_kind;

int           gpt_num_units(const gpt_config *cfg);          /* n_layer + 2 */
gpt_unit_kind gpt_unit_kind_of(const gpt_config *cfg, int unit);
/* "embed", "block0".."block<L-1>", "head" into buf (always terminated). */
void          gpt_unit_name(const gpt_config *cfg, int unit, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Parameters                                                               */
/* ------------------------------------------------------------------------ */

/* Tensor order within each unit (the index into params[] and dparams[]). */
enum { GPT_P_WTE = 0, GPT_P_WPE = 1 };
enum {
    GPT_P_LN1_W = 0, GPT_P_LN1_B, GPT_P_QKV_W, GPT_P_QKV_B,
    GPT_P_ATTN_PROJ_W, GPT_P_ATTN_PROJ_B, GPT_P_LN2_W, GPT_P_LN2_B,
    GPT_P_FC_W, GPT_P_FC_B, GPT_P_FC_PROJ_W, GPT_P_FC_PROJ_B
};
enum { GPT_P_LNF_W = 0, GPT_P_LNF_B = 1, GPT_P_LM_W = 2 };

typedef enum { GPT_INIT_NORMAL, GPT_INIT_ZEROS, GPT_INIT_ONES } gpt_init_kind;

typedef struct gpt_param_info {
    const char   *name;      /* "qkv_w", ... (static string) */
    int           ndim;      /* 1 or 2 */
    size_t        shape[2];  /* shape[1] is 1 for vectors */
    size_t        numel;
    gpt_init_kind init;
    float         std;       /* for GPT_INIT_NORMAL */
    int           decay;     /* 1: weight decay applies (matrices) */
} gpt_param_info;

/* Fills out[0..n) for unit `unit` and returns n (0 for a bad unit).
 * Init as GPT-2: weights normal(0, 0.02); the two residual projections
 * (attn_proj_w, fc_proj_w) 0.02/sqrt(2*n_layer); biases 0; LN weights 1. */
int gpt_unit_params(const gpt_config *cfg, int unit, gpt_param_info out[GPT_MAX_PARAMS]);
/* Total parameters of the model (sum over units). */
size_t gpt_num_params(const gpt_config *cfg);

/* Initial values of elements [offset, offset+n) of tensor `index` of unit
 * `unit`. Each element is a pure function of (seed, unit, index, element),
 * so a rank can initialise only its shard and every shard count gives the
 * same model. */
void gpt_param_init(const gpt_param_info *p, uint64_t seed, int unit, int index,
                    size_t offset, size_t n, float *out);

/* ------------------------------------------------------------------------ */
/* Saved activations                                                        */
/* ------------------------------------------------------------------------ */

/* A block's saves, by index; sizes in floats for a (B, T) call:
 *   ln1, ln2        B*T*C   LayerNorm output BEFORE the affine (x-mean)*rstd;
 *                           the affine output is recomputed in the backward,
 *                           so the block's backward never needs its input
 *   ln1_mean/_rstd,
 *   ln2_mean/_rstd  B*T     (the backward reads rstd only; mean is kept for
 *                           inspection and may be dropped by a policy)
 *   qkv             B*T*3C  q | k | v per token
 *   attn_probs      B*H*T*T softmax(q k^T / sqrt(C/H)), causal (upper part 0)
 *   attn_out        B*T*C   heads concatenated, before the output projection
 *   mlp_up          B*T*4C  fc output before GELU
 *   mlp_act         B*T*4C  after GELU
 * In all 14*B*T*C + B*H*T*T + 4*B*T floats per block. The embedding and
 * head units save nothing (see gpt_head_forward). */
enum {
    GPT_S_LN1 = 0, GPT_S_LN1_MEAN, GPT_S_LN1_RSTD, GPT_S_QKV, GPT_S_ATTN_PROBS,
    GPT_S_ATTN_OUT, GPT_S_LN2, GPT_S_LN2_MEAN, GPT_S_LN2_RSTD, GPT_S_MLP_UP,
    GPT_S_MLP_ACT
};

typedef struct gpt_saves {
    float *p[GPT_MAX_SAVES];    /* p[GPT_S_*]: caller-owned buffers */
} gpt_saves;

/* Names of the saves ("ln1", "qkv", ...) or NULL past the end. */
const char *gpt_save_name(int index);
/* Element counts (floats) of a block's saves for (B, T): writes
 * sizes_out[0..GPT_MAX_SAVES) and returns GPT_MAX_SAVES. */
int gpt_block_save_sizes(const gpt_config *cfg, int B, int T, size_t sizes_out[GPT_MAX_SAVES]);
/* The FLOPs of the matrix products that make each save from the block's
 * input and its other saves (what gpt_block_recompute runs for it alone;
 * attention's are split between its two outputs), into flops_out; returns
 * the whole forward's. */
double gpt_block_save_flops(const gpt_config *cfg, int B, int T, double flops_out[GPT_MAX_SAVES]);
/* Same for any unit: returns the number of saves (0 for embed and head). */
int gpt_unit_save_sizes(const gpt_config *cfg, int unit, int B, int T,
                        size_t sizes_out[GPT_MAX_SAVES]);

/* ------------------------------------------------------------------------ */
/* Workspace and threads                                                    */
/* ------------------------------------------------------------------------ */

typedef struct gpt_workspace {
    float  *buf;    /* caller-owned scratch */
    size_t  n;      /* its size in floats */
    /* bf16 copies of the unit's parameters, in params[] order, or NULL:
     * when given (and gpt_bf16_available()), the unit's matrix products
     * take bf16 inputs with f32 accumulation; everything else stays f32 */
    const uint16_t *const *params_bf16;
    /* called, when not NULL, between a block's kernels with between_arg:
     * the runtime's collectives advance there (strata_call_progress) */
    void (*between)(void *arg);
    void *between_arg;
} gpt_workspace;

/* Floats of scratch that any unit's forward or backward needs for (B, T),
 * and what one unit needs (embed: 0). */
size_t gpt_workspace_floats(const gpt_config *cfg, int B, int T);
size_t gpt_unit_workspace_floats(const gpt_config *cfg, int unit, int B, int T);

/* Threads of the kernels: n <= 0 means the number of cores this process
 * may run on (sched_getaffinity), so ranks that mpirun binds to cores do
 * not fight over one. With OpenMP they are one team for every kernel, the
 * matrix products split between them and the BLAS held to one thread
 * (openblas_set_num_threads where the BLAS has it, else OPENBLAS_NUM_THREADS
 * and OMP_NUM_THREADS, which only work before the BLAS first runs); without
 * OpenMP the BLAS gets the n threads. Results do not depend on the count.
 * Returns the count chosen. */
int gpt_threads_init(int n);
/* Where the kernels' OpenMP is GCC's libgomp and neither GOMP_SPINCOUNT nor
 * OMP_WAIT_POLICY is set: sets GOMP_SPINCOUNT so that waiting threads spin
 * about 0.1 ms, not 3 ms, and executes the program again with argv (the
 * count is read before main). Call first in main; returns when it did
 * nothing. */
void gpt_threads_reexec(char **argv);
int gpt_affinity_cores(void);
/* The BLAS and the kernels it runs in buf (e.g. "OpenBLAS 0.3.21,
 * Cooperlake kernels", with "(OPENBLAS_CORETYPE=X)" when that forces
 * them); returns buf. */
const char *gpt_blas_name(char *buf, size_t len);

/* The f32 matrix products (gemm.c): oneDNN where it has AVX2 kernels or
 * wider for this CPU, else the CBLAS; chosen once, from the CPU's features
 * (never from OPENBLAS_CORETYPE or a timing), or by STRATA_GEMM=onednn|
 * openblas. gpt_threads_init makes the choice; gpt_sgemm1 runs one product
 * (row-major, C = alpha op(A) op(B) + beta C, op transposing where ta/tb)
 * on the calling thread alone. */
typedef struct {
    char library[32];       /* "oneDNN 2.6.3", "OpenBLAS 0.3.21" */
    char kernels[32];       /* oneDNN's ISA ("avx512_core_bf16") or OpenBLAS's core */
    char blas[128];         /* gpt_blas_name: what OpenBLAS alone would run */
    char note[96];          /* "" or why STRATA_GEMM was not followed */
    int fallback_avoided;   /* oneDNN runs where OpenBLAS would run a narrower core */
} gpt_gemm_desc;
void gpt_gemm_init(void);
void gpt_gemm_info(gpt_gemm_desc *d);
/* One line for the banner: "oneDNN 2.6.3, avx512_core_bf16 ISA (not
 * OpenBLAS 0.3.21, Prescott kernels: a fallback avoided)" */
const char *gpt_gemm_name(char *buf, size_t len);
void gpt_sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);

/* Floating-point operations of one forward+backward per token at length T
 * (matrix products and attention; attention counted over the full T x T,
 * the model count that PyTorch's and llm.c's figures use, though the CPU
 * kernels skip most of the causal upper half). Used for GFLOP/s reports. */
double gpt_flops_per_token(const gpt_config *cfg, int T);

/* ------------------------------------------------------------------------ */
/* Units                                                                    */
/* ------------------------------------------------------------------------ */

/* All return STRATA_ERR_INVALID on a bad shape, a NULL buffer, or a ws
 * smaller than gpt_unit_workspace_floats(); nothing is written then. */

/* tokens [B*T] (0..255) -> x_out [B*T*C]. */
strata_status_t gpt_embed_forward(const gpt_config *cfg, int B, int T,
                                  const float *const params[], const int32_t *tokens,
                                  float *x_out);
/* dparams[WTE] and [WPE] += the gradients for dx [B*T*C]. */
strata_status_t gpt_embed_backward(const gpt_config *cfg, int B, int T,
                                   const int32_t *tokens, const float *dx,
                                   float *const dparams[]);

/* x_in [B*T*C] -> x_out [B*T*C] (x_out must not alias x_in); fills every
 * buffer in saves (sizes from gpt_block_save_sizes). x_out may be NULL
 * when only the saves are wanted (the MLP's output projection is then
 * skipped). */
strata_status_t gpt_block_forward(const gpt_config *cfg, int B, int T,
                                  const float *const params[], const float *x_in,
                                  float *x_out, const gpt_saves *saves,
                                  const gpt_workspace *ws);
/* Matrix products a recompute ran: linear layers and attention (its two
 * T x T products count as one), and their FLOPs. */
typedef struct gpt_recompute_count {
    long   products;
    double flops;
} gpt_recompute_count;

/* A block's saves made again before its backward, from x_in and the saves
 * the caller still holds: held[s] nonzero means saves->p[s] still has the
 * forward's values (it is read, and may be overwritten with the same
 * values); the others are written. Only the ops whose outputs are needed
 * run: an op whose saved outputs are all held is skipped unless a needed
 * op reads its unsaved output (the layernorms' affine output, the
 * residual after attention), and the MLP's output projection never runs
 * (the unit's output is kept). With nothing held it runs every op of
 * gpt_block_forward but that one. The results equal the forward's bit for
 * bit. count (may be NULL) += the matrix products run. */
strata_status_t gpt_block_recompute(const gpt_config *cfg, int B, int T,
                                    const float *const params[], const float *x_in,
                                    const gpt_saves *saves, const unsigned char held[GPT_MAX_SAVES],
                                    const gpt_workspace *ws, gpt_recompute_count *count);
/* dx_out [B*T*C] -> dx_in [B*T*C] (written, not accumulated; must not alias
 * dx_out); dparams += parameter gradients. Reads only the saves and the
 * params, never the forward's input. */
strata_status_t gpt_block_backward(const gpt_config *cfg, int B, int T,
                                   const float *const params[], const gpt_saves *saves,
                                   const float *dx_out, float *dx_in,
                                   float *const dparams[], const gpt_workspace *ws);

/* The head: final LayerNorm, logits = ln(x) lm_w^T, softmax cross-entropy.
 * Forward and backward are fused (one call while the head's parameters are
 * gathered, nothing saved):
 *  - targets [B*T]: next byte, or < 0 for a position that carries no loss;
 *    may be NULL (then no loss, no gradient);
 *  - *loss_sum_p: SUM of -log p(target) over positions with a target (the
 *    caller divides by the count, e.g. over all ranks); may be NULL;
 *  - dx_in [B*T*C], if not NULL: written with d(grad_scale * loss_sum)/dx,
 *    and dparams += the head's gradients (dparams may be NULL only when
 *    dx_in is); grad_scale is typically 1 / (tokens with a target in the
 *    global batch);
 *  - logits [B*T*256], if not NULL: written (for decoding).
 */
strata_status_t gpt_head_forward(const gpt_config *cfg, int B, int T,
                                 const float *const params[], const float *x_in,
                                 const int32_t *targets, float grad_scale,
                                 double *loss_sum_p, float *dx_in,
                                 float *const dparams[], float *logits,
                                 const gpt_workspace *ws);

/* ------------------------------------------------------------------------ */
/* Kernels (exposed for the tests). N = rows, all row-major.                */
/* ------------------------------------------------------------------------ */

/* xhat = (x - mean) * rstd, y = xhat * w + b, per row of C; xhat may be NULL. */
void gpt_layernorm_forward(float *y, float *xhat, float *mean, float *rstd,
                           const float *x, const float *w, const float *b,
                           size_t N, int C);
/* dx += dL/dx, dw += dL/dw, db += dL/db from dy, using xhat and rstd. */
void gpt_layernorm_backward(float *dx, float *dw, float *db, const float *dy,
                            const float *xhat, const float *w, const float *rstd,
                            size_t N, int C);
/* y = xhat * w + b (recomputes a LayerNorm output from its saved xhat). */
void gpt_layernorm_affine(float *y, const float *xhat, const float *w, const float *b,
                          size_t N, int C);
/* y [N, OC] = x [N, IC] W^T + b; W [OC, IC]; b may be NULL. */
void gpt_matmul_forward(float *y, const float *x, const float *W, const float *b,
                        size_t N, int IC, int OC);
/* dx [N, IC] = dy W (or += when accumulate), dW += dy^T x, db += colsum dy.
 * dx, dW, db may be NULL (that part is skipped). */
void gpt_matmul_backward(float *dx, float *dW, float *db, const float *dy,
                         const float *x, const float *W, size_t N, int IC, int OC,
                         int accumulate);
/* Causal attention over qkv [B, T, 3C] -> out [B, T, C], probs [B, H, T, T]. */
void gpt_attention_forward(float *out, float *probs, const float *qkv,
                           int B, int T, int C, int H);
/* dqkv [B, T, 3C] = gradient from dout [B, T, C]; dprob_scratch [B*H*T*T]
 * (the (b, h) pairs run in parallel, each on its own T x T, of which the
 * blocks on or below the diagonal are written). */
void gpt_attention_backward(float *dqkv, float *dprob_scratch, const float *dout,
                            const float *qkv, const float *probs,
                            int B, int T, int C, int H);
/* The same products with bf16 weights W (and x, dy rounded to bf16 here),
 * f32 accumulation and output (gemm_bf16.c, oneDNN); dW accumulates as
 * above; dx is written. STRATA_ERR_UNSUPPORTED where
 * gpt_bf16_available() is 0. */
strata_status_t gpt_matmul_forward_bf16(float *y, const float *x, const uint16_t *W,
                                        const float *b, size_t N, int IC, int OC);
strata_status_t gpt_matmul_backward_bf16(float *dx, float *dW, float *db, const float *dy,
                                         const float *x, const uint16_t *W, size_t N, int IC,
                                         int OC);
/* 1 where this build has oneDNN and the CPU bf16 matrix instructions
 * (AVX512_BF16 or AMX). */
int gpt_bf16_available(void);
/* GELU, tanh approximation. */
void gpt_gelu_forward(float *y, const float *x, size_t n);
/* dx = dy * gelu'(x); dx may alias dy. */
void gpt_gelu_backward(float *dx, const float *x, const float *dy, size_t n);
/* y += x (the residual); y = a + b; y = x: split between the threads. */
void gpt_residual_add(float *y, const float *x, size_t n);
void gpt_add(float *y, const float *a, const float *b, size_t n);
void gpt_copy(float *y, const float *x, size_t n);
/* Softmax cross-entropy over rows of V logits: returns the sum of losses
 * over rows with target >= 0; if dlogits is not NULL, writes
 * (softmax - onehot) * scale there (0 for rows without target).
 * dlogits may equal logits (computed in place). */
double gpt_crossentropy(float *dlogits, const float *logits, const int32_t *targets,
                        float scale, size_t N, int V);

/* ------------------------------------------------------------------------ */
/* Data                                                                     */
/* ------------------------------------------------------------------------ */

/* Batch rows are pure functions of (seed, step, global row), so the global
 * batch of a step does not depend on the number of ranks: rank r of a run
 * with B rows per rank asks for rows r*B .. r*B+B-1. */

typedef enum { GPT_SPLIT_TRAIN = 0, GPT_SPLIT_VAL = 1 } gpt_split;

typedef struct gpt_data gpt_data;   /* opaque */

/* The default task, generated, no file: "aaa+bbb=" and the answer, 16
 * bytes with a, b in 000..999. The answer is written least significant
 * digit first, each digit of the sum after the digit of b it adds, then the
 * carry out: 123+456=579 is "123+456=6957450\n" (6+3=9, 5+2=7, 4+1=5,
 * carry 0). Each sum digit then follows from the byte before it (a copy of
 * b's digit, found at a fixed place), one digit of a at a fixed place and
 * the carry (from the two bytes before them); written plainly ("=579"), no
 * single operand digit tells anything about a sum digit (mod 10), and
 * training sat on a plateau for a time that varied with the seed and the
 * BLAS kernels' rounding (examples/gpt/demo: 600 to 1500+ steps). Pairs
 * are split train/held-out by a fixed hash of (a, b) (gpt_add_is_heldout):
 * about 10% held out. Rows are examples packed end to end from position
 * 0; targets are only the answer bytes and the newline (others < 0). With
 * T = 16 every row is exactly one example at fixed positions, which learns
 * fastest; longer rows pack several examples at varying offsets and learn
 * far more slowly (see gpt_data_seq_hint). */
strata_status_t gpt_data_addition(gpt_data **data_p);
/* Any file at byte level; the last val_frac (0 < val_frac < 1) is the
 * validation split. Fails with a message in why for a missing file or one
 * too short for rows of T+1 bytes in either split. */
strata_status_t gpt_data_text(const char *path, double val_frac, int T,
                              gpt_data **data_p, char *why, size_t why_len);
void gpt_data_destroy(gpt_data *data);
int  gpt_data_is_addition(const gpt_data *data);
/* The sequence length a task is made for: GPT_ADD_LEN (16) for addition,
 * 0 (any) for text. A trainer should default to it: rows of one example
 * at fixed places learn far faster (with the answer written plainly, a
 * 4-layer model that reached 99.7% at one example per row stayed at 0%,
 * loss 1.38, after 2500 steps of batch 8 at T = 64). */
int  gpt_data_seq_hint(const gpt_data *data);
/* Bytes in a split (text data); 0 for the addition task. */
size_t gpt_data_split_bytes(const gpt_data *data, gpt_split split);

/* Rows row0 .. row0+nrows-1 of the global batch of `step`, each of T
 * tokens: inputs [nrows*T], targets [nrows*T] (the next byte, or -1 where
 * no loss applies). */
strata_status_t gpt_data_rows(const gpt_data *data, gpt_split split, uint64_t seed,
                              int64_t step, int64_t row0, int nrows, int T,
                              int32_t *inputs, int32_t *targets);

#define GPT_ADD_LEN     16    /* "aaa+bbb=" answer "\n" */
#define GPT_ADD_PROMPT   8    /* "aaa+bbb=" */
#define GPT_ADD_ANSWER   7    /* answer bytes: b0 s0 b1 s1 b2 s2 carry (0 = least significant) */
/* 1 if the pair (a, b) is held out from training; symmetric in a, b, so
 * b+a is never a training example when a+b is held out. */
int  gpt_add_is_heldout(int a, int b);
/* The first n held-out pairs in a fixed, shuffled order (a[i], b[i]);
 * returns how many were written (n, or all held-out pairs if fewer). */
int64_t gpt_add_heldout_pairs(int64_t n, int *a, int *b);
/* Writes the 16 bytes of the example (no terminating NUL). */
void gpt_add_format(int a, int b, char out[GPT_ADD_LEN]);
/* The sum that the answer bytes (as written) encode, or -1 if any is not
 * a digit. */
int  gpt_add_decode(const int32_t answer[GPT_ADD_ANSWER]);
/* 1 if the answer bytes are exactly those of a+b's example (the copied
 * digits of b included), else 0: what held-out accuracy counts. */
int  gpt_add_correct(int a, int b, const int32_t answer[GPT_ADD_ANSWER]);

/* For the functions here that explain a failure in why[why_len]: writes
 * the message into why (when why is not NULL and len > 0) and returns st. */
strata_status_t gpt_why_fail(strata_status_t st, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
