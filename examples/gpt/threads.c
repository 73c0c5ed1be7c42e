/*
 * threads.c - how many threads the GPT kernels use. A rank that mpirun
 * binds to a set of cores should use exactly those: OpenBLAS would
 * otherwise start one thread per core of the machine in every rank, and
 * four ranks on two cores would fight over them. The same count goes to
 * the BLAS and to the OpenMP loops of kernels.c.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "examples/gpt/gpt.h"

/* Declared weak and without cblas.h: present in OpenBLAS, absent from a
 * reference CBLAS, where the environment variables below are all we have. */
void openblas_set_num_threads(int n) __attribute__((weak));

static int threads_now = 1;

int gpt_affinity_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (0 == sched_getaffinity(0, sizeof(set), &set)) {
        int n = CPU_COUNT(&set);
        if (0 < n)
            return n;
    }
    return 1;
}

static void blas_threads(int n)
{
    if (NULL != openblas_set_num_threads) {
        openblas_set_num_threads(n);
    } else {
        char buf[16];
        snprintf(buf, sizeof(buf), "%d", n);
        setenv("OPENBLAS_NUM_THREADS", buf, 1);
        setenv("OMP_NUM_THREADS", buf, 1);
    }
}

int gpt_threads_init(int n)
{
    if (0 >= n)
        n = gpt_affinity_cores();
    blas_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    threads_now = n;
    return n;
}

int gpt_blas_serial_begin(void)
{
#ifdef _OPENMP
    if (1 < threads_now && NULL != openblas_set_num_threads) {
        openblas_set_num_threads(1);
        return threads_now;
    }
#endif
    return 0;
}

void gpt_blas_serial_end(int token)
{
    if (0 < token)
        openblas_set_num_threads(token);
}
