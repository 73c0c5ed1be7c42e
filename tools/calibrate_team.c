/*
 * calibrate_team.c - the clock, medians, and the rank's thread team that
 * runs calibrate's sgemm calls as train_gpt runs its products (one
 * single-threaded BLAS call per thread over its share of the rows), or on
 * the BLAS's own threads.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tools/calibrate.h"

double calib_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double calib_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return t[n / 2];
}

/* Declared weak, as examples/gpt/threads.c does: OpenBLAS has it, a
 * reference CBLAS does not (and is single-threaded anyway). */
void openblas_set_num_threads(int n) __attribute__((weak));

void calib_blas_threads(int n)
{
    if (openblas_set_num_threads) openblas_set_num_threads(n);
}

typedef struct { team_t *tm; int t; } team_arg_t;

static void *team_main(void *p)
{
    team_arg_t a = *(team_arg_t *)p;
    free(p);
    for (;;) {
        pthread_barrier_wait(&a.tm->go);
        if (a.tm->quit) return NULL;
        a.tm->part(a.tm->arg, a.t, a.tm->n);
        pthread_barrier_wait(&a.tm->done);
    }
}

void team_start(team_t *tm, int n)
{
    memset(tm, 0, sizeof *tm);
    n = n < 1 ? 1 : n > TEAM_MAX ? TEAM_MAX : n;
    pthread_barrier_init(&tm->go, NULL, (unsigned)n);
    pthread_barrier_init(&tm->done, NULL, (unsigned)n);
    tm->n = 1;
    for (int t = 1; t < n; t++) {
        team_arg_t *a = malloc(sizeof *a);
        if (a) *a = (team_arg_t){ tm, t };
        if (!a || pthread_create(&tm->tid[t], NULL, team_main, a)) {
            free(a);
            break;
        }
        tm->n++;
    }
    if (tm->n != n) {   /* the barriers count the threads that run */
        pthread_barrier_destroy(&tm->go);
        pthread_barrier_destroy(&tm->done);
        pthread_barrier_init(&tm->go, NULL, (unsigned)tm->n);
        pthread_barrier_init(&tm->done, NULL, (unsigned)tm->n);
    }
}

static void team_run(team_t *tm, void (*part)(void *, int, int), void *arg)
{
    if (1 == tm->n) {
        part(arg, 0, 1);
        return;
    }
    tm->part = part;
    tm->arg = arg;
    pthread_barrier_wait(&tm->go);
    part(arg, 0, tm->n);
    pthread_barrier_wait(&tm->done);
}

void team_stop(team_t *tm)
{
    if (tm->n > 1) {
        tm->quit = 1;
        pthread_barrier_wait(&tm->go);
        for (int t = 1; t < tm->n; t++) pthread_join(tm->tid[t], NULL);
    }
    pthread_barrier_destroy(&tm->go);
    pthread_barrier_destroy(&tm->done);
}

static void sgemm_rows(void *p, int t, int n)
{
    const calib_job_t *j = p;
    int i0 = (int)((long)j->M * t / n), i1 = (int)((long)j->M * (t + 1) / n);
    if (i1 > i0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, i1 - i0, j->N, j->K, 1.0f, j->a + (size_t)i0 * j->K,
                    j->K, j->b, j->K, 0.0f, j->c + (size_t)i0 * j->N, j->N);
}

/* one call on the BLAS's own threads */
void calib_sgemm_op(void *p) { sgemm_rows(p, 0, 1); }

/* The team splits the rows. With OpenMP, an OpenMP team does, as
 * train_gpt's kernels run their products (examples/gpt/kernels.c): its
 * threads spin a while between calls and start the next at once. The
 * pthread team sleeps on a barrier between calls, and waking it took
 * half the rate of these small shapes (about 196 GFLOP/s against 400 for
 * the same calls in OpenMP's team, 256 x 128 x 512 on 2 threads). */
void calib_sgemm_team_op(void *p)
{
    calib_job_t *j = p;
#ifdef _OPENMP
    int n = j->tm->n;
    if (n > 1) {
#pragma omp parallel num_threads(n)
        sgemm_rows(j, omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    team_run(j->tm, sgemm_rows, j);
}
