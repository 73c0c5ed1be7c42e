/*
 * sgemm_bench.c - the machine's reference: OpenBLAS sgemm on N x N x N
 * (1024 by default) with a given thread count, median GFLOP/s over
 * repeats. bench/run kernels sets train_gpt's model GFLOP/s against it.
 *
 *     sgemm_bench [--n N] [--threads T] [--repeats R]
 * prints one line: "sgemm n N threads T gflops X" (X: the median).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/stats.h"

void openblas_set_num_threads(int n) __attribute__((weak));

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
    int n = 1024, threads = 2, reps = 7;
    for (int i = 1; i < argc; i++) {
        int bad = i + 1 >= argc;
        if (!bad && 0 == strcmp(argv[i], "--n")) bad = arg_int(argv[++i], 16, 8192, &n);
        else if (!bad && 0 == strcmp(argv[i], "--threads"))
            bad = arg_int(argv[++i], 1, 1024, &threads);
        else if (!bad && 0 == strcmp(argv[i], "--repeats"))
            bad = arg_int(argv[++i], 1, 1000, &reps);
        else bad = 1;
        if (bad) {
            fprintf(stderr, "usage: sgemm_bench [--n 16..8192] [--threads 1..1024] "
                    "[--repeats 1..1000]\n");
            return 2;
        }
    }
    if (NULL != openblas_set_num_threads) openblas_set_num_threads(threads);
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    for (int r = 0; r < reps; r++) {
        double t = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        g[r] = 2.0 * n * n * (double)n / (now() - t) / 1e9;
    }
    printf("sgemm n %d threads %d gflops %.2f\n", n, threads, median(g, reps));
    free(a);
    free(b);
    free(c);
    free(g);
    return 0;
}
