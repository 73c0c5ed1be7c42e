/*
 * threads.c - how many threads the GPT kernels use. A rank that mpirun
 * binds to a set of cores should use exactly those: OpenBLAS would
 * otherwise start one thread per core of the machine in every rank, and
 * four ranks on two cores would fight over them. Where the kernels have
 * OpenMP, the rank's threads are one OpenMP team and the BLAS runs on one
 * thread per call: kernels.c splits each matrix product between the team
 * itself. A BLAS with its own thread pool beside the team would put three
 * threads or more on two cores, each team spinning while the other
 * computes (measured: a 2-thread rank 3.5x slower than two 1-thread ranks).
 * Without OpenMP the count goes to the BLAS.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "examples/gpt/gpt.h"

/* Declared weak and without cblas.h: present in OpenBLAS, absent from a
 * reference CBLAS, where the environment variables below are all we have. */
void openblas_set_num_threads(int n) __attribute__((weak));

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
#ifdef _OPENMP
    blas_threads(1);
    omp_set_num_threads(n);
#else
    blas_threads(n);
#endif
    gpt_gemm_init();
    return n;
}

/* GCC's libgomp lets a waiting thread spin up to about 3 ms (GOMP_SPINCOUNT
 * 300000) at each barrier and between parallel regions before it sleeps.
 * Where another process shares the cores, the spinning thread takes the
 * core its team mate needs to reach the barrier: measured on 2 shared
 * cores, a 2-thread rank of the 8-layer dim-256 model ran at 380 tokens/s
 * with the default and at 870-1430 with GOMP_SPINCOUNT=10000 (about
 * 0.1 ms, far above the gap between two kernels), the results bitwise the
 * same. libgomp reads the count once, when it loads, before main; so when
 * neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set, the program sets the
 * count and executes itself again (once: the second run finds it set).
 * Call first thing in main, before MPI_Init; returns when nothing was
 * done or the exec failed. */
void gpt_threads_reexec(char **argv)
{
#if defined(_OPENMP) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
    if (NULL != getenv("GOMP_SPINCOUNT") || NULL != getenv("OMP_WAIT_POLICY"))
        return;
    /* the file's own path, not /proc/self/exe: the new image's name (ps,
     * top, pgrep) comes from the path executed */
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (0 >= n || (ssize_t)sizeof(path) - 1 <= n)
        return;
    path[n] = '\0';
    if (0 != setenv("GOMP_SPINCOUNT", "10000", 1))
        return;
    execv(path, argv);
    unsetenv("GOMP_SPINCOUNT");         /* not re-run: leave the environment as it was */
#else
    (void)argv;
#endif
}
