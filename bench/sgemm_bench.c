/*
 * sgemm_bench.c - one candidate for the machine's reference: sgemm on
 * N x N x N (1024 by default) with a given thread count through OpenBLAS
 * (its own pick of kernels, or the core OPENBLAS_CORETYPE names) or
 * oneDNN's dnnl_sgemm, median GFLOP/s over repeats. bench/run kernels runs
 * every candidate, each in a process of its own (OpenBLAS reads the
 * variable once, when it loads), and sets train_gpt's model GFLOP/s
 * against the best.
 *
 *     sgemm_bench [--n N] [--threads T] [--repeats R] [--lib openblas|onednn]
 * prints one line: "sgemm n N threads T lib L kernels K gflops X" (X: the
 * median; K: OpenBLAS's core or oneDNN's ISA).
 */
#include "config.h"

#include <cblas.h>
#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/stats.h"

void openblas_set_num_threads(int n) __attribute__((weak));
char *openblas_get_corename(void) __attribute__((weak));

/* C = A B^T, row-major, n x n, on the library asked for */
static int product(int onednn, int n, const float *a, const float *b, float *c)
{
#ifdef HAVE_DNNL
    if (onednn) return dnnl_success == dnnl_sgemm('N', 'T', n, n, n, 1, a, n, b, n, 0, c, n) ? 0 : -1;
#else
    if (onednn) return -1;
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    return 0;
}

/* the kernels the library runs here: OpenBLAS's core, oneDNN's ISA */
static const char *kernels(int onednn)
{
#ifdef HAVE_DNNL
    if (onednn) {
        switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_avx2: return "avx2";
        case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
        case dnnl_cpu_isa_avx512_core: return "avx512_core";
        case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
        case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
        case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
        default: return "older";
        }
    }
#endif
    return NULL != openblas_get_corename ? openblas_get_corename() : "cblas";
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int arg_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || '\0' != *end || x < lo || x > hi)
        return -1;
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv)
{
    int n = 1024, threads = 2, reps = 7, onednn = 0;
    for (int i = 1; i < argc; i++) {
        int bad = i + 1 >= argc;
        if (!bad && 0 == strcmp(argv[i], "--n")) bad = arg_int(argv[++i], 16, 8192, &n);
        else if (!bad && 0 == strcmp(argv[i], "--threads"))
            bad = arg_int(argv[++i], 1, 1024, &threads);
        else if (!bad && 0 == strcmp(argv[i], "--repeats"))
            bad = arg_int(argv[++i], 1, 1000, &reps);
        else if (!bad && 0 == strcmp(argv[i], "--lib")) {
            const char *v = argv[++i];
            onednn = 0 == strcmp(v, "onednn");
            bad = !onednn && 0 != strcmp(v, "openblas");
        } else bad = 1;
        if (bad) {
            fprintf(stderr, "usage: sgemm_bench [--n 16..8192] [--threads 1..1024] "
                    "[--repeats 1..1000] [--lib openblas|onednn]\n");
            return 2;
        }
    }
    if (NULL != openblas_set_num_threads) openblas_set_num_threads(threads);
#ifdef _OPENMP
    omp_set_num_threads(threads);       /* oneDNN's team */
#endif
    size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float));
    float *c = malloc(nn * sizeof(float));
    double *g = malloc((size_t)reps * sizeof(double));
    if (!a || !b || !c || !g) {
        fprintf(stderr, "sgemm_bench: out of memory for n %d\n", n);
        return 1;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
        b[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
    }
    /* one call first: thread start-up and page faults are not the peak */
    if (0 != product(onednn, n, a, b, c)) {
        fprintf(stderr, "sgemm_bench: oneDNN's sgemm is not available in this build\n");
        return 1;
    }
    for (int r = 0; r < reps; r++) {
        double t = now();
        product(onednn, n, a, b, c);
        g[r] = 2.0 * n * n * (double)n / (now() - t) / 1e9;
    }
    printf("sgemm n %d threads %d lib %s kernels %s gflops %.2f\n", n, threads,
           onednn ? "onednn" : "openblas", kernels(onednn), median(g, reps));
    free(a);
    free(b);
    free(c);
    free(g);
    return 0;
}
