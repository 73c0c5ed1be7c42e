/*
 * calibrate.h - the pieces of `strata calibrate` (tools/calibrate_cmd.c):
 * its options, the rank's thread team that runs sgemm as train_gpt runs
 * its products (calibrate_team.c), and the measurements of what
 * collectives and copies cost the compute (calibrate_costs.c).
 */
#ifndef STRATA_TOOLS_CALIBRATE_H
#define STRATA_TOOLS_CALIBRATE_H

#include <pthread.h>
#include <stddef.h>

#define REPS 5   /* repeats of a timing; the median counts */

/* the command's options */
typedef struct {
    const char *out, *name, *dir;
    size_t hbm, host, max, disk;
    int M, K, N, threads;
} copts_t;

double calib_now(void);
double calib_median(double *t, int n);   /* sorts t */
void calib_blas_threads(int n);           /* OpenBLAS's own pool; no-op elsewhere */

/* The rank's threads as one team, the way train_gpt runs its products:
 * each thread computes its share of the rows with a single-threaded BLAS
 * call, all starting together, and a call ends when the last one does. */
#define TEAM_MAX 64
typedef struct {
    int n, quit;
    pthread_t tid[TEAM_MAX];
    pthread_barrier_t go, done;
    void (*part)(void *arg, int t, int n);
    void *arg;
} team_t;

void team_start(team_t *tm, int n);   /* n threads in all, this one included; fewer if some cannot start */
void team_stop(team_t *tm);

/* an sgemm of M x K by K x N (B transposed, as a linear layer's forward),
 * or a memcpy of `bytes` from src to dst */
typedef struct { int M, K, N; float *a, *b, *c; char *src, *dst; size_t bytes; team_t *tm; } calib_job_t;

void calib_sgemm_op(void *job);        /* one call on the BLAS's own threads */
void calib_sgemm_team_op(void *job);   /* the team splits the rows */

/* collectives.compute_cost over every rank, against t_table (the 1 MiB
 * all-gather plus reduce-scatter by the busbw tables); *sync_p gets
 * collectives.sync_s */
double calib_coll_compute_cost(const copts_t *o, team_t *tm, double t_table, double *sync_p);
/* host_link.compute_cost */
double calib_link_compute_cost(const copts_t *o, team_t *tm);

#endif
