/*
 * gpt_cuda.h - the GPT's kernels on a CUDA device (kernels_gpu.cu). Every
 * call queues work on the stream it is given (strata_call_stream's, a
 * cudaStream_t as void *) and returns without waiting; pointers are device
 * pointers. Status 0 on success, else a CUDA or cuBLAS error code (the
 * launch's, not the kernel's: kernel faults show at the runtime's next
 * event query).
 */
#ifndef STRATA_EXAMPLES_GPT_CUDA_H
#define STRATA_EXAMPLES_GPT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int gpt_cuda_embed(void *stream, float *out, const int32_t *tok, const float *wte,
                   const float *wpe, int B, int T, int C);
int gpt_cuda_layernorm(void *stream, float *y, float *xhat, float *mean, float *rstd,
                       const float *x, const float *w, const float *b, size_t N, int C);
int gpt_cuda_layernorm_backward(void *stream, float *dx, float *dw, float *db,
                                const float *dy, const float *xhat, const float *w,
                                const float *rstd, size_t N, int C);
int gpt_cuda_gelu(void *stream, float *y, const float *x, size_t n);
int gpt_cuda_gelu_backward(void *stream, float *dx, const float *x, const float *dy, size_t n);
/* Row losses into loss_rows [N] (device, double): the caller sums them. */
int gpt_cuda_crossentropy(void *stream, double *loss_rows, float *dlogits,
                          const float *logits, const int32_t *targets, float scale,
                          size_t N, int V);
/* AdamW on n shard elements at step t (1-based). */
int gpt_cuda_adamw(void *stream, float *p, const float *g, float *m, float *v, size_t n,
                   int t, float lr, float beta1, float beta2, float eps, float wd);
int gpt_cuda_to_bf16(void *stream, uint16_t *dst, const float *src, size_t n);
int gpt_cuda_to_f32(void *stream, float *dst, const uint16_t *src, size_t n);

/* GEMMs through cuBLASLt (the attention's through cuBLAS) on the stream
 * each call is given. The handle owns no device memory: workspace (bytes)
 * is the caller's, used by every GEMM in turn, so all calls must queue on
 * one stream. tf32 != 0: f32 products in TF32 (off: f32 stays f32).
 * GPT_BLAS_WORKSPACE is what cuBLAS recommends for Hopper (32 MiB). */
#define GPT_BLAS_WORKSPACE ((size_t)32 << 20)
void *gpt_cublas_create(void *workspace, size_t bytes, int tf32);
void  gpt_cublas_destroy(void *handle);
/* y [N, OC] = x [N, IC] W^T (+ b broadcast when b != NULL), row-major as
 * kernels.c; with pre != NULL, pre = x W^T + b and y = GELU(pre) (the bias
 * and GELU in cuBLASLt's epilogue where it has one, else the kernels).
 * bf16 != 0: x and W are bf16 (uint16_t), accumulation f32. */
int gpt_cuda_matmul(void *handle, void *stream, float *y, float *pre, const void *x,
                    const void *W, const float *b, size_t N, int IC, int OC, int bf16);
/* Causal attention over qkv [B, T, 3C] (f32) in five launches whatever B:
 * qkv split by head into qkvh [3, B, H, T, hd] (what the backward reads),
 * scores and P V as strided-batched GEMMs over the B*H pairs into oh
 * [B, H, T, hd] (scratch), one softmax launch over all B*H*T rows, out
 * [B, T, C] merged from oh; probs [B, H, T, T]. */
int gpt_cuda_attention(void *handle, void *stream, float *out, float *probs, float *qkvh,
                       float *oh, const float *qkv, int B, int T, int C, int H);
/* Backward in seven: dqkv [B, T, 3C] from dout [B, T, C] and the forward's
 * qkvh and probs; dP [B, H, T, T], dqkvh [3 B T C] and doh [B T C] scratch. */
int gpt_cuda_attention_backward(void *handle, void *stream, float *dqkv, float *dP,
                                float *dqkvh, float *doh, const float *dout,
                                const float *qkvh, const float *probs, int B, int T, int C,
                                int H);

/* What the units need besides the kernels above (all queued on stream):
 * y = a + b (y may be a); y = xhat * w + b per row of C; the embedding's
 * gradients (dwte, dwpe +=, rows summed in row order); *sum += the N row
 * losses in row order. */
int gpt_cuda_add(void *stream, float *y, const float *a, const float *b, size_t n);
int gpt_cuda_layernorm_affine(void *stream, float *y, const float *xhat, const float *w,
                              const float *b, size_t N, int C);
int gpt_cuda_embed_backward(void *stream, float *dwte, float *dwpe, const int32_t *tok,
                            const float *dx, int B, int T, int C);
int gpt_cuda_sum_rows(void *stream, double *sum, const double *rows, size_t N);
/* next[r] = argmax over V of logits row (r, T-1), for the B rows (first
 * maximum, as the host decoder). */
int gpt_cuda_argmax_last(void *stream, int32_t *next, const float *logits, int B, int T,
                         int V);
/* The matrix product's backward, f32: dx [N, IC] = dy W (+= with
 * accumulate; skipped when NULL), dW [OC, IC] += dy^T x, db += colsum dy
 * (each skipped when NULL). */
int gpt_cuda_matmul_backward(void *handle, void *stream, float *dx, float *dW, float *db,
                             const float *dy, const float *x, const float *W, size_t N,
                             int IC, int OC, int accumulate);

#ifdef __cplusplus
}
#endif
#endif
