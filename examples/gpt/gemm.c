/*
 * gemm.c - which library runs the f32 matrix products, chosen once per
 * process from the CPU's features, and the one-thread product the kernels
 * call (kernels.c splits a product's rows between the rank's threads).
 *
 * OpenBLAS picks its kernels from a table of CPU models: Debian's 0.3.21
 * runs its Prescott (SSE3) kernels on an Emerald Rapids Xeon it does not
 * know, at a fifth of the machine's rate, and OPENBLAS_CORETYPE (an
 * environment's setting, not ours to change) forces any family on any CPU.
 * oneDNN picks its kernels from the CPUID feature bits alone. So where
 * oneDNN is built in and has AVX2 kernels or better for this CPU, the
 * products go to oneDNN's dnnl_sgemm; else to the CBLAS. Measured (2
 * threads, rows split as kernels.c does, best of repeats, GFLOP/s): on a
 * Zen 4 the model's shapes oneDNN 72-146 against OpenBLAS forced to
 * Prescott 23-67 in the same process (its own Cooperlake pick 63-122,
 * even with oneDNN within the noise); on an Emerald Rapids Xeon, 1024^3:
 * oneDNN 254-317, OpenBLAS's own pick (Prescott) 49-59. make demo with
 * OPENBLAS_CORETYPE=Prescott on the Zen 4: 84 s on oneDNN, 201 s on
 * OpenBLAS. The choice uses no timing on purpose: a measurement on a
 * shared machine could pick differently from one run to the next, and the
 * two libraries round differently, so the bits of a run would depend on
 * the load. Within one library the result does not depend on how rows are
 * split at multiples of 48 (kernels.c), which t/gpt-threads.t asserts.
 *
 * STRATA_GEMM=onednn|openblas overrides the choice (to compare the two).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "examples/gpt/gpt.h"

/* Declared weak and without their header: present in OpenBLAS, absent from
 * a reference CBLAS. */
char *openblas_get_corename(void) __attribute__((weak));
char *openblas_get_config(void) __attribute__((weak));

enum { LIB_UNSET, LIB_CBLAS, LIB_ONEDNN };
static int lib;
static char why[96];        /* a note for the banner (a refused STRATA_GEMM) */

#ifdef HAVE_DNNL
static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "baseline";
    }
}

/* oneDNN's f32 kernels for this CPU are AVX2 or wider (every ISA value
 * above avx2 includes its bits) */
static int onednn_strong(void)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2;
}
#endif

void gpt_gemm_init(void)
{
    if (LIB_UNSET != lib) return;
    const char *e = getenv("STRATA_GEMM");
    int want = LIB_UNSET;
    if (NULL != e && 0 == strcmp(e, "openblas")) want = LIB_CBLAS;
    else if (NULL != e && 0 == strcmp(e, "onednn")) want = LIB_ONEDNN;
    else if (NULL != e && '\0' != *e && 0 != strcmp(e, "auto"))
        snprintf(why, sizeof(why), "; STRATA_GEMM=%.20s ignored: auto, onednn or openblas", e);
#ifdef HAVE_DNNL
    if (LIB_UNSET == want) want = onednn_strong() ? LIB_ONEDNN : LIB_CBLAS;
#else
    if (LIB_ONEDNN == want) snprintf(why, sizeof(why), "; STRATA_GEMM=onednn: built without oneDNN");
    want = LIB_CBLAS;
#endif
#ifdef _OPENMP
#pragma omp critical(gpt_gemm_init)
#endif
    lib = want;
}

void gpt_sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    if (LIB_UNSET == lib) gpt_gemm_init();
#ifdef HAVE_DNNL
    if (LIB_ONEDNN == lib) {
        /* oneDNN threads a call made outside a parallel region over
         * omp_get_max_threads(): held to one here, as the split in
         * kernels.c (and the bits) assume */
        int nt = 1;
#ifdef _OPENMP
        if (!omp_in_parallel()) nt = omp_get_max_threads();
        if (1 < nt) omp_set_num_threads(1);
#endif
        dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B,
                                     ldb, beta, C, ldc);
#ifdef _OPENMP
        if (1 < nt) omp_set_num_threads(nt);
#endif
        if (dnnl_success == s) return;
        /* only a bad argument fails, which the CBLAS below reports */
    }
#endif
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* OpenBLAS's pick is a known core of the CPU's vector width or wider:
 * anything else on an AVX2 or AVX-512 CPU is a fallback (Prescott on an
 * unknown model, or a family forced by OPENBLAS_CORETYPE). */
static int openblas_fallback(const char *core)
{
    static const char *const avx512[] = { "SkylakeX", "Cooperlake", "SapphireRapids", NULL };
    static const char *const avx2[] = { "Haswell", "Zen", "SkylakeX", "Cooperlake",
                                        "SapphireRapids", NULL };
    const char *const *ok = NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) ok = avx512;
    else if (__builtin_cpu_supports("avx2")) ok = avx2;
#endif
    if (NULL == ok || NULL == core) return 0;
    for (; NULL != *ok; ok++)
        if (0 == strcmp(*ok, core)) return 0;
    return 1;
}

const char *gpt_blas_name(char *buf, size_t len)
{
    if (NULL == openblas_get_corename) {
        snprintf(buf, len, "a CBLAS other than OpenBLAS");
        return buf;
    }
    /* the config string begins "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": its first two words */
    char name[32] = "OpenBLAS", ver[32] = "";
    if (NULL != openblas_get_config) sscanf(openblas_get_config(), "%31s %31s", name, ver);
    const char *forced = getenv("OPENBLAS_CORETYPE");
    int f = NULL != forced && '\0' != *forced;
    snprintf(buf, len, "%s%s%s, %s kernels%s%.32s%s", name, *ver ? " " : "", ver,
             openblas_get_corename(), f ? " (OPENBLAS_CORETYPE=" : "", f ? forced : "",
             f ? ")" : "");
    return buf;
}

void gpt_gemm_info(gpt_gemm_desc *d)
{
    gpt_gemm_init();
    memset(d, 0, sizeof(*d));
    gpt_blas_name(d->blas, sizeof(d->blas));
    snprintf(d->note, sizeof(d->note), "%s", why);
#ifdef HAVE_DNNL
    if (LIB_ONEDNN == lib) {
        const dnnl_version_t *v = dnnl_version();
        snprintf(d->library, sizeof(d->library), "oneDNN %d.%d.%d", v->major, v->minor,
                 v->patch);
        snprintf(d->kernels, sizeof(d->kernels), "%s", isa_name(dnnl_get_effective_cpu_isa()));
        d->fallback_avoided = NULL != openblas_get_corename &&
                              openblas_fallback(openblas_get_corename());
        return;
    }
#endif
    /* the CBLAS runs them: its name and its kernels as gpt_blas_name says */
    char *comma = strstr(d->blas, ", ");
    size_t n = NULL != comma ? (size_t)(comma - d->blas) : strlen(d->blas);
    snprintf(d->library, sizeof(d->library), "%.*s", (int)n, d->blas);
    snprintf(d->kernels, sizeof(d->kernels), "%s",
             NULL != openblas_get_corename ? openblas_get_corename() : "unknown");
}

const char *gpt_gemm_name(char *buf, size_t len)
{
    gpt_gemm_desc d;
    gpt_gemm_info(&d);
    if (0 == strncmp(d.library, "oneDNN", 6))
        snprintf(buf, len, "%s, %s ISA (not %s%s)%s", d.library, d.kernels, d.blas,
                 d.fallback_avoided ? ": a fallback avoided" : "", d.note);
    else
        snprintf(buf, len, "%s%s", d.blas, d.note);
    return buf;
}
