/*
 * gemm_bf16.c - matrix products with bf16 inputs and f32 accumulation and
 * output, for --dtype bf16, through oneDNN's matmul primitive (its AMX and
 * AVX512_BF16 kernels). Chosen over OpenBLAS's cblas_sbgemm because the
 * OpenBLAS that Debian ships (0.3.21) is built without it; measured here
 * (Xeon with AMX, one thread, CPU time): oneDNN bf16 450-960 GFLOP/s on
 * the model's shapes against 145-170 for OpenBLAS sgemm.
 *
 * Primitives are created per call; oneDNN's primitive cache makes a
 * repeated shape cost ~0.05 ms. Activations are rounded to bf16 into
 * buffers kept here, grown to the largest product seen (allocated in the
 * first step, reused after). Without oneDNN, or on a CPU without bf16
 * matrix instructions, gpt_bf16_available() is 0 and nothing here runs.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "examples/gpt/gpt.h"

#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static int state;           /* 0 unknown, 1 usable, -1 not */

int gpt_bf16_available(void)
{
    if (0 == state) {
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        int bf16 = dnnl_cpu_isa_avx512_core_bf16 == isa || dnnl_cpu_isa_avx512_core_amx == isa;
        state = bf16 && dnnl_success == dnnl_engine_create(&engine, dnnl_cpu, 0) &&
                dnnl_success == dnnl_stream_create(&stream, engine, dnnl_stream_default_flags)
                ? 1 : -1;
    }
    return 1 == state;
}

/* C [M, N] (row stride ldc) = op(A) op(B) (+ C when accumulate); op(A) is
 * M x K, op(B) K x N; a transposed operand is stored the other way round
 * with the given leading dimension. */
static strata_status_t matmul(int ta, int tb, int M, int N, int K, const uint16_t *A, int lda,
                              const uint16_t *B, int ldb, int accumulate, float *C, int ldc)
{
    dnnl_memory_desc_t am, bm, cm;
    dnnl_dims_t ad = { M, K }, bd = { K, N }, cd = { M, N };
    dnnl_dims_t as = { ta ? 1 : lda, ta ? lda : 1 }, bs = { tb ? 1 : ldb, tb ? ldb : 1 };
    dnnl_dims_t cs = { ldc, 1 };
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t mem[3] = { NULL, NULL, NULL };
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&am, 2, ad, dnnl_bf16, as);
    if (dnnl_success == s) s = dnnl_memory_desc_init_by_strides(&bm, 2, bd, dnnl_bf16, bs);
    if (dnnl_success == s) s = dnnl_memory_desc_init_by_strides(&cm, 2, cd, dnnl_f32, cs);
    if (dnnl_success == s) s = dnnl_matmul_desc_init(&md, &am, &bm, NULL, &cm);
    if (dnnl_success == s) s = dnnl_primitive_attr_create(&attr);
    if (dnnl_success == s && accumulate) {
        s = dnnl_post_ops_create(&po);
        if (dnnl_success == s) s = dnnl_post_ops_append_sum(po, 1.0f);
        if (dnnl_success == s) s = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (dnnl_success == s) s = dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL);
    if (dnnl_success == s) s = dnnl_primitive_create(&prim, pd);
    if (dnnl_success == s) s = dnnl_memory_create(&mem[0], &am, engine, (void *)A);
    if (dnnl_success == s) s = dnnl_memory_create(&mem[1], &bm, engine, (void *)B);
    if (dnnl_success == s) s = dnnl_memory_create(&mem[2], &cm, engine, C);
    if (dnnl_success == s) {
        dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, mem[0] }, { DNNL_ARG_WEIGHTS, mem[1] },
                                    { DNNL_ARG_DST, mem[2] } };
        s = dnnl_primitive_execute(prim, stream, 3, args);
        if (dnnl_success == s) s = dnnl_stream_wait(stream);
    }
    for (int i = 0; i < 3; i++)
        if (NULL != mem[i]) dnnl_memory_destroy(mem[i]);
    if (NULL != prim) dnnl_primitive_destroy(prim);
    if (NULL != pd) dnnl_primitive_desc_destroy(pd);
    if (NULL != po) dnnl_post_ops_destroy(po);
    if (NULL != attr) dnnl_primitive_attr_destroy(attr);
    return dnnl_success == s ? STRATA_OK : STRATA_ERR_UNSUPPORTED;
}

#else

int gpt_bf16_available(void) { return 0; }

static strata_status_t matmul(int ta, int tb, int M, int N, int K, const uint16_t *A, int lda,
                              const uint16_t *B, int ldb, int accumulate, float *C, int ldc)
{
    return STRATA_ERR_UNSUPPORTED;
}

#endif

/* f32 -> bf16, round to nearest even, NaN kept quiet: strata_f32_to_bf16's
 * rounding, written branch-free so that it vectorises (the library's loop
 * took a fifth of a bf16 training step). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && 11 <= __GNUC__
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void round_bf16(uint16_t *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof(u));
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t q = (u >> 16) | 0x0040u;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
    }
}

/* Two grow-only buffers for activations rounded to bf16. */
static uint16_t *conv[2];
static size_t conv_n[2];

static const uint16_t *to_bf16(int slot, const float *x, size_t n)
{
    if (conv_n[slot] < n) {
        uint16_t *p = realloc(conv[slot], n * sizeof(uint16_t));
        if (NULL == p) return NULL;
        conv[slot] = p;
        conv_n[slot] = n;
    }
    round_bf16(conv[slot], x, n);
    return conv[slot];
}

strata_status_t gpt_matmul_forward_bf16(float *y, const float *x, const uint16_t *W,
                                        const float *b, size_t N, int IC, int OC)
{
    const uint16_t *xb = to_bf16(0, x, N * IC);
    if (NULL == xb) return STRATA_ERR_NOMEM;
    if (NULL != b)
        for (size_t i = 0; i < N; i++)
            memcpy(y + i * OC, b, sizeof(float) * OC);
    /* y [N, OC] = x [N, IC] W^T, W stored [OC, IC] */
    return matmul(0, 1, (int)N, OC, IC, xb, IC, W, IC, NULL != b, y, OC);
}

strata_status_t gpt_matmul_backward_bf16(float *dx, float *dW, float *db, const float *dy,
                                         const float *x, const uint16_t *W, size_t N, int IC,
                                         int OC)
{
    strata_status_t st = STRATA_OK;
    const uint16_t *dyb = to_bf16(0, dy, N * OC);
    if (NULL == dyb) return STRATA_ERR_NOMEM;
    if (NULL != dx)     /* dx [N, IC] = dy [N, OC] W [OC, IC] */
        st = matmul(0, 0, (int)N, IC, OC, dyb, OC, W, IC, 0, dx, IC);
    if (STRATA_OK == st && NULL != dW) {   /* dW [OC, IC] += dy^T x */
        const uint16_t *xb = to_bf16(1, x, N * IC);
        st = NULL == xb ? STRATA_ERR_NOMEM
                        : matmul(1, 0, OC, IC, (int)N, dyb, OC, xb, IC, 1, dW, IC);
    }
    if (STRATA_OK == st && NULL != db)
        gpt_matmul_backward(NULL, NULL, db, dy, x, NULL, N, IC, OC, 0);
    return st;
}
