/*
 * gpt_fsdp_cuda.c - the GPT's units on a CUDA device (gpt_fsdp_dev.h): the
 * same steps as model.c's gpt_block_forward/backward, gpt_head_forward and
 * the embedding, through kernels_gpu.cu's kernels and cuBLAS, all queued on
 * the call's stream, none waited for. With bf16 compute the forward's
 * matrix products take the gathered bf16 parameters and a bf16 copy of
 * their input with f32 accumulation; everything else (and the backward)
 * runs in f32 on parameters widened from the gathered bf16 copy.
 */
#include "config.h"
#include "examples/gpt/gpt_fsdp_dev.h"

#include <string.h>

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)   /* libgpt_cuda is built with NCCL */
#include <cuda_runtime_api.h>
#include "examples/gpt/gpt_cuda.h"

int gpt_dev_built(void) { return 1; }

#define TRY(x) do { strata_status_t st_ = (x); if (STRATA_OK != st_) return st_; } while (0)
#define CK(x)  do { int rc_ = (x); if (rc_) return dev_fail(call, rc_, #x); } while (0)

/* A launch or cuBLAS failure: the runtime reports the unit and phase. */
static strata_status_t dev_fail(strata_unit_call_t *call, int rc, const char *what)
{
    strata_log(strata_call_context(call), STRATA_LOG_ERROR, "gpt unit %d: %s failed (%d: %s)",
               strata_call_unit_index(call), what, rc,
               cudaGetErrorString((cudaError_t)rc));
    return STRATA_ERR_CUDA;
}

/* the compute stream the head last ran on, for gpt_dev_read */
static void *last_stream;

static int use_tf32;
void gpt_dev_set_tf32(int on) { use_tf32 = on; }

/* The GEMMs' workspace (GPT_BLAS_WORKSPACE, 32 MiB), once per process: a
 * block of the device tier (tag workspace), so it counts in device_mem,
 * in the tier's peaks and in the admission of the step program (it is in
 * use when step 1 is recorded). gpt_dev_setup makes it before the model,
 * on the context the model will use; the handle lives until
 * gpt_dev_teardown (strata_finalize would free the block anyway). */
static strata_block_t *blas_ws;
static void *blas_h;

strata_status_t gpt_dev_setup(strata_context_t *ctx)
{
    if (NULL != blas_h) return STRATA_OK;
    strata_status_t st = strata_block_alloc(ctx, STRATA_TIER_DEVICE, GPT_BLAS_WORKSPACE,
                                            STRATA_TAG_WORKSPACE, &blas_ws);
    if (STRATA_OK != st) return st;
    blas_h = gpt_cublas_create(strata_block_ptr(blas_ws, STRATA_TIER_DEVICE), GPT_BLAS_WORKSPACE,
                               use_tf32);
    if (NULL != blas_h) return STRATA_OK;
    strata_log(ctx, STRATA_LOG_ERROR, "cuBLAS/cuBLASLt handle creation failed");
    strata_block_free(blas_ws);
    blas_ws = NULL;
    return STRATA_ERR_CUDA;
}

void gpt_dev_teardown(void)
{
    gpt_cublas_destroy(blas_h);
    blas_h = NULL;
    strata_block_free(blas_ws);
    blas_ws = NULL;
}

/* one cuBLAS handle per process: callbacks run on the thread that steps,
 * all on the context's one compute stream (so one workspace serves) */
static void *blas(strata_unit_call_t *call)
{
    if (NULL == blas_h)
        strata_log(strata_call_context(call), STRATA_LOG_ERROR, "gpt unit %d: no cuBLAS handle: "
                   "gpt_dev_setup was not called (or failed) before the model's first step",
                   strata_call_unit_index(call));
    return blas_h;
}

typedef struct {
    strata_unit_call_t *call;
    void               *s, *h;
    const float        *p[GPT_MAX_PARAMS];
    const uint16_t     *pb[GPT_MAX_PARAMS];   /* bf16 compute: the gathered copy */
    uint16_t           *xb;                   /* bf16 compute: an input's copy */
} dev_t_;

static strata_status_t ws(strata_unit_call_t *call, size_t bytes, void **p)
{
    return strata_call_workspace(call, bytes ? bytes : 1, p);
}

/* The unit's parameters as f32 device pointers (bf16: widened into a
 * workspace), and the bf16 staging of a product's input (xb_elems). */
static strata_status_t dev_begin(strata_unit_call_t *call, const unit_rec *u, size_t xb_elems,
                                 dev_t_ *d)
{
    memset(d, 0, sizeof *d);
    d->call = call;
    d->s = strata_call_stream(call);
    d->h = blas(call);
    if (NULL == d->h) return STRATA_ERR_CUDA;
    int bf16 = STRATA_BF16 == strata_call_compute_dtype(call);
    float *conv = NULL;
    if (bf16) {
        TRY(ws(call, u->numel * sizeof(float), (void **)&conv));
        TRY(ws(call, xb_elems * sizeof(uint16_t), (void **)&d->xb));
    }
    for (int i = 0; i < u->np; i++) {
        void *ptr;
        size_t n;
        TRY(strata_call_param(call, i, &ptr, &n));
        if (bf16) {
            CK(gpt_cuda_to_f32(d->s, conv, ptr, n));
            d->pb[i] = ptr;
            d->p[i] = conv;
            conv += n;
        } else {
            d->p[i] = ptr;
        }
    }
    return STRATA_OK;
}

/* y [N, OC] = x W^T (+ b); wi, bi: parameter indices (bi < 0: none);
 * pre != NULL: pre = x W^T + b, y = GELU(pre) (fused in the GEMM). */
static strata_status_t mm(dev_t_ *d, float *y, float *pre, const float *x, int wi, int bi,
                          size_t N, int IC, int OC)
{
    strata_unit_call_t *call = d->call;
    const float *b = 0 <= bi ? d->p[bi] : NULL;
    if (NULL != d->xb) {
        CK(gpt_cuda_to_bf16(d->s, d->xb, x, N * IC));
        CK(gpt_cuda_matmul(d->h, d->s, y, pre, d->xb, d->pb[wi], b, N, IC, OC, 1));
    } else {
        CK(gpt_cuda_matmul(d->h, d->s, y, pre, x, d->p[wi], b, N, IC, OC, 0));
    }
    return STRATA_OK;
}

static strata_status_t grads(strata_unit_call_t *call, const unit_rec *u, float *g[])
{
    for (int i = 0; i < u->np; i++) TRY(strata_call_grad(call, i, &g[i], NULL));
    return STRATA_OK;
}

/* ---- embed ---------------------------------------------------------------- */

strata_status_t gpt_dev_embed_forward(strata_unit_call_t *call, const unit_rec *u)
{
    const gpt_batch *b = strata_call_batch(call);
    const int C = u->cfg->dim;
    const void *tok;
    size_t bytes;
    float *x;
    dev_t_ d;
    TRY(strata_call_input(call, &tok, &bytes));
    if (NULL == b || bytes != (size_t)b->B * b->T * sizeof(int32_t)) return STRATA_ERR_MISMATCH;
    TRY(dev_begin(call, u, 0, &d));
    TRY(strata_call_output(call, (size_t)b->B * b->T * C * sizeof(float), (void **)&x));
    CK(gpt_cuda_embed(d.s, x, tok, d.p[GPT_P_WTE], d.p[GPT_P_WPE], b->B, b->T, C));
    return STRATA_OK;
}

strata_status_t gpt_dev_embed_backward(strata_unit_call_t *call, const unit_rec *u)
{
    const gpt_batch *b = strata_call_batch(call);
    const void *tok, *dx;
    float *g[GPT_MAX_PARAMS];
    TRY(strata_call_input(call, &tok, NULL));
    TRY(strata_call_grad_output(call, &dx, NULL));
    TRY(grads(call, u, g));
    CK(gpt_cuda_embed_backward(strata_call_stream(call), g[GPT_P_WTE], g[GPT_P_WPE], tok, dx,
                               b->B, b->T, u->cfg->dim));
    return STRATA_OK;
}

/* ---- block ---------------------------------------------------------------- */

/* The block's saves: by name in training, scratch in eval. */
static strata_status_t block_saves(strata_unit_call_t *call, const unit_rec *u,
                                   const gpt_batch *b, float *S[])
{
    size_t sz[GPT_MAX_SAVES], total = 0;
    gpt_block_save_sizes(u->cfg, b->B, b->T, sz);
    float *buf = NULL;
    if (!strata_call_training(call)) {
        for (int s = 0; s < GPT_MAX_SAVES; s++) total += sz[s];
        TRY(ws(call, total * sizeof(float), (void **)&buf));
    }
    for (int s = 0; s < GPT_MAX_SAVES; s++) {
        if (NULL != buf) {
            S[s] = buf;
            buf += sz[s];
        } else {
            TRY(strata_save(call, gpt_save_name(s), sz[s] * sizeof(float), (void **)&S[s]));
        }
    }
    return STRATA_OK;
}

strata_status_t gpt_dev_block_forward(strata_unit_call_t *call, const unit_rec *u)
{
    const gpt_batch *b = strata_call_batch(call);
    const int C = u->cfg->dim, H = u->cfg->n_head, B = b->B, T = b->T;
    const size_t N = (size_t)B * T;
    const float *x;
    float *y, *a, *qkv, *oh, *S[GPT_MAX_SAVES];
    size_t bytes;
    dev_t_ d;
    TRY(strata_call_input(call, (const void **)&x, &bytes));
    if (bytes != N * C * sizeof(float)) return STRATA_ERR_MISMATCH;
    TRY(dev_begin(call, u, N * 4 * C, &d));
    TRY(strata_call_output(call, N * C * sizeof(float), (void **)&y));
    TRY(block_saves(call, u, b, S));
    /* a [N, C]; qkv [N, 3C] in rows (the save holds it split by head); oh
     * the heads' outputs before the merge */
    TRY(ws(call, N * 5 * C * sizeof(float), (void **)&a));
    qkv = a + N * C;
    oh = qkv + N * 3 * C;
    const float *const *P = d.p;
    void *s = d.s;
    CK(gpt_cuda_layernorm(s, a, S[GPT_S_LN1], S[GPT_S_LN1_MEAN], S[GPT_S_LN1_RSTD], x,
                          P[GPT_P_LN1_W], P[GPT_P_LN1_B], N, C));
    TRY(mm(&d, qkv, NULL, a, GPT_P_QKV_W, GPT_P_QKV_B, N, C, 3 * C));
    CK(gpt_cuda_attention(d.h, s, S[GPT_S_ATTN_OUT], S[GPT_S_ATTN_PROBS], S[GPT_S_QKV], oh,
                          qkv, B, T, C, H));
    TRY(mm(&d, a, NULL, S[GPT_S_ATTN_OUT], GPT_P_ATTN_PROJ_W, GPT_P_ATTN_PROJ_B, N, C, C));
    CK(gpt_cuda_add(s, y, x, a, N * C));
    CK(gpt_cuda_layernorm(s, a, S[GPT_S_LN2], S[GPT_S_LN2_MEAN], S[GPT_S_LN2_RSTD], y,
                          P[GPT_P_LN2_W], P[GPT_P_LN2_B], N, C));
    TRY(mm(&d, S[GPT_S_MLP_ACT], S[GPT_S_MLP_UP], a, GPT_P_FC_W, GPT_P_FC_B, N, C, 4 * C));
    TRY(mm(&d, a, NULL, S[GPT_S_MLP_ACT], GPT_P_FC_PROJ_W, GPT_P_FC_PROJ_B, N, 4 * C, C));
    CK(gpt_cuda_add(s, y, y, a, N * C));
    return STRATA_OK;
}

strata_status_t gpt_dev_block_backward(strata_unit_call_t *call, const unit_rec *u)
{
    const gpt_batch *b = strata_call_batch(call);
    const int C = u->cfg->dim, H = u->cfg->n_head, B = b->B, T = b->T;
    const size_t N = (size_t)B * T;
    const float *dxo;
    float *dxi, *D[GPT_MAX_PARAMS], *S[GPT_MAX_SAVES], *y, *dy, *big, *dP, *dqkvh, *doh;
    size_t sz[GPT_MAX_SAVES], dyb, dxb;
    dev_t_ d;
    TRY(strata_call_grad_output(call, (const void **)&dxo, &dyb));
    TRY(strata_call_grad_input(call, (void **)&dxi, &dxb));
    if (NULL == dxo || N * C * sizeof(float) != dyb || N * C * sizeof(float) != dxb)
        return STRATA_ERR_MISMATCH;
    TRY(dev_begin(call, u, 0, &d));
    d.xb = NULL;   /* the backward runs in f32 */
    TRY(grads(call, u, D));
    gpt_block_save_sizes(u->cfg, B, T, sz);
    for (int s = 0; s < GPT_MAX_SAVES; s++) {
        size_t bytes;
        TRY(strata_saved(call, gpt_save_name(s), (void **)&S[s], &bytes));
        if (sz[s] * sizeof(float) != bytes) return STRATA_ERR_MISMATCH;
    }
    /* y, dy [N, C]; big [N, 4C]; the attention's dq, dk, dv and dO split
     * by head [4 N C] */
    TRY(ws(call, N * 10 * C * sizeof(float), (void **)&y));
    TRY(ws(call, (size_t)B * H * T * T * sizeof(float), (void **)&dP));
    dy = y + N * C;
    big = dy + N * C;
    dqkvh = big + N * 4 * C;
    doh = dqkvh + N * 3 * C;
    const float *const *P = d.p;
    void *s = d.s, *h = d.h;
    CK(gpt_cuda_matmul_backward(h, s, big, D[GPT_P_FC_PROJ_W], D[GPT_P_FC_PROJ_B], dxo,
                                S[GPT_S_MLP_ACT], P[GPT_P_FC_PROJ_W], N, 4 * C, C, 0));
    CK(gpt_cuda_gelu_backward(s, big, S[GPT_S_MLP_UP], big, N * 4 * C));
    CK(gpt_cuda_layernorm_affine(s, y, S[GPT_S_LN2], P[GPT_P_LN2_W], P[GPT_P_LN2_B], N, C));
    CK(gpt_cuda_matmul_backward(h, s, dy, D[GPT_P_FC_W], D[GPT_P_FC_B], big, y, P[GPT_P_FC_W],
                                N, C, 4 * C, 0));
    CK(cudaMemcpyAsync(dxi, dxo, N * C * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CK(gpt_cuda_layernorm_backward(s, dxi, D[GPT_P_LN2_W], D[GPT_P_LN2_B], dy, S[GPT_S_LN2],
                                   P[GPT_P_LN2_W], S[GPT_S_LN2_RSTD], N, C));
    CK(gpt_cuda_matmul_backward(h, s, dy, D[GPT_P_ATTN_PROJ_W], D[GPT_P_ATTN_PROJ_B], dxi,
                                S[GPT_S_ATTN_OUT], P[GPT_P_ATTN_PROJ_W], N, C, C, 0));
    CK(gpt_cuda_attention_backward(h, s, big, dP, dqkvh, doh, dy, S[GPT_S_QKV],
                                   S[GPT_S_ATTN_PROBS], B, T, C, H));
    CK(gpt_cuda_layernorm_affine(s, y, S[GPT_S_LN1], P[GPT_P_LN1_W], P[GPT_P_LN1_B], N, C));
    CK(gpt_cuda_matmul_backward(h, s, dy, D[GPT_P_QKV_W], D[GPT_P_QKV_B], big, y,
                                P[GPT_P_QKV_W], N, C, 3 * C, 0));
    CK(gpt_cuda_layernorm_backward(s, dxi, D[GPT_P_LN1_W], D[GPT_P_LN1_B], dy, S[GPT_S_LN1],
                                   P[GPT_P_LN1_W], S[GPT_S_LN1_RSTD], N, C));
    return STRATA_OK;
}

/* ---- head ----------------------------------------------------------------- */

/* Eval on the device: the loss sum of the targets, or the next token of
 * each row (decode). */
static strata_status_t head_eval(strata_unit_call_t *call, const unit_rec *u, dev_t_ *d,
                                 const gpt_batch *b, const float *x)
{
    const int C = u->cfg->dim, V = GPT_VOCAB;
    const size_t N = (size_t)b->B * b->T;
    float *xhat, *y, *mean, *rstd, *lg;
    double *rows;
    int32_t *tg;
    void *out;
    TRY(ws(call, (2 * N * C + 2 * N + N * V) * sizeof(float), (void **)&xhat));
    y = xhat + N * C;
    mean = y + N * C;
    rstd = mean + N;
    lg = rstd + N;
    CK(gpt_cuda_layernorm(d->s, y, xhat, mean, rstd, x, d->p[GPT_P_LNF_W], d->p[GPT_P_LNF_B],
                          N, C));
    TRY(mm(d, lg, NULL, y, GPT_P_LM_W, -1, N, C, V));
    if (b->decode) {
        TRY(strata_call_output(call, (size_t)b->B * sizeof(int32_t), &out));
        CK(gpt_cuda_argmax_last(d->s, out, lg, b->B, b->T, V));
        return STRATA_OK;
    }
    TRY(strata_call_output(call, sizeof(double), &out));
    CK(cudaMemsetAsync(out, 0, sizeof(double), d->s));
    if (NULL == b->targets) return STRATA_OK;
    TRY(ws(call, N * sizeof(double), (void **)&rows));
    TRY(ws(call, N * sizeof(int32_t), (void **)&tg));
    CK(cudaMemcpyAsync(tg, b->targets, N * sizeof(int32_t), cudaMemcpyHostToDevice, d->s));
    CK(gpt_cuda_crossentropy(d->s, rows, NULL, lg, tg, 0.0f, N, V));
    CK(gpt_cuda_sum_rows(d->s, out, rows, N));
    return STRATA_OK;
}

strata_status_t gpt_dev_head_forward(strata_unit_call_t *call, const unit_rec *u)
{
    const gpt_batch *b = strata_call_batch(call);
    const int C = u->cfg->dim, V = GPT_VOCAB;
    if (NULL == b) return STRATA_ERR_INVALID;
    const size_t N = (size_t)b->B * b->T;
    for (size_t i = 0; NULL != b->targets && i < N; i++)
        if (V <= b->targets[i]) return STRATA_ERR_INVALID;
    const float *x;
    double *loss, *rows;
    float *dx, *dg, *g[GPT_MAX_PARAMS], *xhat, *y, *mean, *rstd, *lg;
    int32_t *tg;
    dev_t_ d;
    TRY(strata_call_input(call, (const void **)&x, NULL));
    TRY(dev_begin(call, u, N * C, &d));
    last_stream = d.s;
    if (!strata_call_training(call)) return head_eval(call, u, &d, b, x);
    if (NULL == b->targets) return STRATA_ERR_INVALID;
    TRY(strata_call_output(call, sizeof(double), (void **)&loss));
    TRY(strata_save(call, "head_dx", N * C * sizeof(float), (void **)&dx));
    TRY(strata_save(call, "head_grads", u->numel * sizeof(float), (void **)&dg));
    TRY(ws(call, (2 * N * C + 2 * N + N * V) * sizeof(float), (void **)&xhat));
    TRY(ws(call, N * sizeof(double), (void **)&rows));
    TRY(ws(call, N * sizeof(int32_t), (void **)&tg));
    y = xhat + N * C;
    mean = y + N * C;
    rstd = mean + N;
    lg = rstd + N;
    for (int i = 0; i < u->np; i++) {
        g[i] = dg;
        dg += u->info[i].numel;
    }
    void *s = d.s;
    const float *const *P = d.p;
    CK(cudaMemsetAsync(g[0], 0, u->numel * sizeof(float), s));
    CK(cudaMemcpyAsync(tg, b->targets, N * sizeof(int32_t), cudaMemcpyHostToDevice, s));
    CK(gpt_cuda_layernorm(s, y, xhat, mean, rstd, x, P[GPT_P_LNF_W], P[GPT_P_LNF_B], N, C));
    TRY(mm(&d, lg, NULL, y, GPT_P_LM_W, -1, N, C, V));
    CK(gpt_cuda_crossentropy(s, rows, lg, lg, tg, b->grad_scale, N, V));
    CK(cudaMemsetAsync(loss, 0, sizeof *loss, s));
    CK(gpt_cuda_sum_rows(s, loss, rows, N));
    CK(gpt_cuda_matmul_backward(d.h, s, NULL, g[GPT_P_LM_W], NULL, lg, y, P[GPT_P_LM_W], N, C,
                                V, 0));
    CK(gpt_cuda_matmul_backward(d.h, s, y, NULL, NULL, lg, y, P[GPT_P_LM_W], N, C, V, 0));
    CK(cudaMemsetAsync(dx, 0, N * C * sizeof(float), s));
    CK(gpt_cuda_layernorm_backward(s, dx, g[GPT_P_LNF_W], g[GPT_P_LNF_B], y, xhat,
                                   P[GPT_P_LNF_W], rstd, N, C));
    return STRATA_OK;
}

strata_status_t gpt_dev_head_backward(strata_unit_call_t *call, const unit_rec *u)
{
    float *dx, *sdx, *sg, *g;
    size_t dxb, sdxb, sgb, n;
    void *s = strata_call_stream(call);
    TRY(strata_call_grad_input(call, (void **)&dx, &dxb));
    TRY(strata_saved(call, "head_dx", (void **)&sdx, &sdxb));
    TRY(strata_saved(call, "head_grads", (void **)&sg, &sgb));
    if (dxb != sdxb || u->numel * sizeof(float) != sgb) return STRATA_ERR_MISMATCH;
    CK(cudaMemcpyAsync(dx, sdx, dxb, cudaMemcpyDeviceToDevice, s));
    for (int i = 0; i < u->np; i++) {   /* gradients accumulate over micro-batches */
        TRY(strata_call_grad(call, i, &g, &n));
        CK(gpt_cuda_add(s, g, g, sg, n));
        sg += n;
    }
    return STRATA_OK;
}

int gpt_dev_count(void)
{
    int n = 0;
    if (cudaSuccess != cudaGetDeviceCount(&n)) {
        (void)cudaGetLastError();
        n = 0;
    }
    return n;
}

strata_status_t gpt_dev_read(void *dst, const void *src, size_t bytes)
{
    cudaStream_t s = (cudaStream_t)last_stream;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
    if (cudaSuccess == e) e = cudaStreamSynchronize(s);
    return cudaSuccess == e ? STRATA_OK : STRATA_ERR_CUDA;
}

static double *loss_slots;   /* device: one double per micro-batch of the step */
static int      loss_nslots;

strata_status_t gpt_dev_loss_keep(int m, const void *loss)
{
    cudaStream_t s = (cudaStream_t)last_stream;
    if (m >= loss_nslots) {   /* the first step's first 64, then doubled: with a wait */
        int n = m < 64 ? 64 : 2 * m;
        double *p = NULL;
        if (cudaSuccess != cudaStreamSynchronize(s) || cudaSuccess != cudaMalloc((void **)&p,
                                                                              n * sizeof *p))
            return STRATA_ERR_CUDA;
        if (loss_slots && cudaSuccess != cudaMemcpy(p, loss_slots, loss_nslots * sizeof *p,
                                                    cudaMemcpyDeviceToDevice))
            return STRATA_ERR_CUDA;
        cudaFree(loss_slots);
        loss_slots = p;
        loss_nslots = n;
    }
    cudaError_t e = cudaMemcpyAsync(loss_slots + m, loss, sizeof(double),
                                    cudaMemcpyDeviceToDevice, s);
    return cudaSuccess == e ? STRATA_OK : STRATA_ERR_CUDA;
}

strata_status_t gpt_dev_loss_fetch(double *dst, int n)
{
    if (n > loss_nslots) return STRATA_ERR_INVALID;
    return 0 < n ? gpt_dev_read(dst, loss_slots, (size_t)n * sizeof *dst) : STRATA_OK;
}

#else   /* no CUDA: never called (strata_call_stream is NULL on the host backend) */

int gpt_dev_built(void) { return 0; }
void gpt_dev_set_tf32(int on) { (void)on; }
strata_status_t gpt_dev_setup(strata_context_t *ctx)
{
    (void)ctx;
    return STRATA_OK;
}
void gpt_dev_teardown(void) {}
#define NO_DEV(name) \
    strata_status_t name(strata_unit_call_t *call, const unit_rec *u) \
    { (void)call; (void)u; return STRATA_ERR_UNSUPPORTED; }
NO_DEV(gpt_dev_embed_forward)
NO_DEV(gpt_dev_embed_backward)
NO_DEV(gpt_dev_block_forward)
NO_DEV(gpt_dev_block_backward)
NO_DEV(gpt_dev_head_forward)
NO_DEV(gpt_dev_head_backward)

int gpt_dev_count(void) { return 0; }

strata_status_t gpt_dev_loss_keep(int m, const void *loss)
{
    (void)m; (void)loss;
    return STRATA_ERR_UNSUPPORTED;
}

strata_status_t gpt_dev_loss_fetch(double *dst, int n)
{
    (void)dst; (void)n;
    return STRATA_ERR_UNSUPPORTED;
}

strata_status_t gpt_dev_read(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return STRATA_OK;
}
#endif
