/*
 * calibrate_cmd.c - `mpirun -np N strata calibrate --out FILE`: measures
 * this machine into a planner hardware file (docs/planner.md): sgemm by
 * shape, memcpy bandwidth, MPI all-gather / reduce-scatter / all-to-all /
 * all-reduce busbw by message size and rank count (2, 4, .. N), and disk
 * write/read bandwidth. Each figure is the median of a few repeats; on a
 * shared machine the numbers move with the load. sgemm and memcpy run on
 * every rank at once, so a profile is for that many ranks on this node.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>
#include <mpi.h>

#include "strata.h"
#include "tools/cmds.h"

#define REPS 5

static double now(void)
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

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return t[n / 2];
}

/* Each figure is a rate over a window of WINDOW_S seconds, all ranks
 * starting together (a barrier), the median of WREPS windows. A window is
 * many scheduler time slices long: where ranks share cores, each one's
 * rate is its share, not the speed of a short call that ran alone inside
 * one slice (0.5 ms calls made 4 ranks on 2 cores look as fast as 2). The
 * windows of all figures are taken in turn, round after round, so that a
 * slow second of a shared machine lands on one window of each figure, not
 * on every window of one (one figure at a time moved the sgemm rate
 * between 112 and 152 GFLOP/s from run to run here). */
#define WINDOW_S 0.05
#define WREPS 7

static double window_rate(void (*op)(void *), void *arg, double work)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now(), t;
    long n = 0;
    do {
        op(arg);
        n++;
    } while ((t = now() - t0) < WINDOW_S);
    return work * (double)n / t;
}

/* the command's options */
typedef struct {
    const char *out, *name, *dir;
    size_t hbm, host, max, disk;
    int M, K, N, threads;
} copts_t;

/* Declared weak, as examples/gpt/threads.c does: OpenBLAS has it, a
 * reference CBLAS does not (and is single-threaded anyway). */
void openblas_set_num_threads(int n) __attribute__((weak));

static void blas_threads(int n)
{
    if (openblas_set_num_threads) openblas_set_num_threads(n);
}

/* The rank's threads as one team, the way train_gpt runs its products:
 * each thread computes its share of the rows with a single-threaded BLAS
 * call, all starting together, and a call ends when the last one does.
 * The other way, one call on the BLAS's own thread pool, is measured too;
 * a shape's rate is the better of the two. */
#define TEAM_MAX 64
typedef struct {
    int n, quit;
    pthread_t tid[TEAM_MAX];
    pthread_barrier_t go, done;
    void (*part)(void *arg, int t, int n);
    void *arg;
} team_t;

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

/* n threads in all, this one included; fewer if threads cannot start */
static void team_start(team_t *tm, int n)
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

static void team_stop(team_t *tm)
{
    if (tm->n > 1) {
        tm->quit = 1;
        pthread_barrier_wait(&tm->go);
        for (int t = 1; t < tm->n; t++) pthread_join(tm->tid[t], NULL);
    }
    pthread_barrier_destroy(&tm->go);
    pthread_barrier_destroy(&tm->done);
}

typedef struct { int M, K, N; float *a, *b, *c; char *src, *dst; size_t bytes; team_t *tm; } calib_job_t;

static void sgemm_rows(void *p, int t, int n)
{
    const calib_job_t *j = p;
    int i0 = (int)((long)j->M * t / n), i1 = (int)((long)j->M * (t + 1) / n);
    if (i1 > i0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, i1 - i0, j->N, j->K, 1.0f, j->a + (size_t)i0 * j->K,
                    j->K, j->b, j->K, 0.0f, j->c + (size_t)i0 * j->N, j->N);
}

/* one call on the BLAS's own threads */
static void sgemm_op(void *p) { sgemm_rows(p, 0, 1); }

static void sgemm_team_op(void *p)
{
    calib_job_t *j = p;
    team_run(j->tm, sgemm_rows, j);
}

static void memcpy_op(void *p)
{
    const calib_job_t *j = p;
    if (j->bytes) memcpy(j->dst, j->src, j->bytes);
}

static void no_op(void *p) { (void)p; }

/* write + fsync, then read back after dropping the file from the page cache */
static int disk_bw(const char *dir, size_t bytes, double *w_p, double *r_p)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/strata-calibrate.%d", dir, (int)getpid());
    char *buf = malloc(bytes);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (!buf || fd < 0) { free(buf); if (fd >= 0) close(fd); return -1; }
    memset(buf, 7, bytes);
    double t0 = now();
    int bad = (ssize_t)bytes != write(fd, buf, bytes) || fsync(fd);
    *w_p = (double)bytes / (now() - t0);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    t0 = now();
    bad |= (ssize_t)bytes != pread(fd, buf, bytes, 0);
    *r_p = (double)bytes / (now() - t0);
    close(fd);
    unlink(path);
    free(buf);
    return bad ? -1 : 0;
}

/* busbw of collective k over comm for a message of S bytes (the full
 * size): the nonblocking calls the runtime starts (comm/mpi.c), waited for
 * at once; Open MPI runs them by other algorithms than the blocking ones
 * (measured here: a 1 MiB all-gather on 2 ranks 0.23 ms against 0.09) */
static double coll_busbw(int k, MPI_Comm comm, size_t S)
{
    int n;
    MPI_Comm_size(comm, &n);
    size_t per = S / (size_t)n;
    char *in = calloc(S, 1), *out = calloc(S, 1);
    double t[REPS];
    for (int r = 0; in && out && r < REPS; r++) {
        MPI_Barrier(comm);
        double t0 = now();
        MPI_Request q;
        if (0 == k) MPI_Iallgather(in, (int)per, MPI_BYTE, out, (int)per, MPI_BYTE, comm, &q);
        else if (1 == k) MPI_Ireduce_scatter_block(in, out, (int)(per / 4), MPI_FLOAT, MPI_SUM, comm, &q);
        else if (2 == k) MPI_Ialltoall(in, (int)per, MPI_BYTE, out, (int)per, MPI_BYTE, comm, &q);
        else MPI_Iallreduce(in, out, (int)(S / 4), MPI_FLOAT, MPI_SUM, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        double dt = now() - t0;
        MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    free(in); free(out);
    double f = (double)(n - 1) / n * (3 == k ? 2.0 : 1.0);
    return (double)S * f / median(t, REPS);
}

/* collectives.compute_cost: the compute time a collective costs here, per
 * second of its own. A 1 MiB all-gather (about one example GPT block's
 * parameters) started nonblocking, then sgemm calls at --shape for about
 * twice its time, the request tested between calls as the runtime's units
 * do, then waited for; against the calls alone (t_s), each the slowest
 * rank's time, medians of REPS: cost = (t_both - t_s) / t_table, with
 * t_table the pair's seconds by the busbw tables, which are what the
 * planner multiplies by it. 0: they run beside the compute; 1: the compute
 * waits out their time (MPI advances a collective only inside its calls,
 * and its copies and sums take the cores the compute has); above 1 where
 * two in flight, or ranks sharing cores, slow each other more. */
/* The collectives of the measurement: an all-gather and a reduce-scatter
 * of 1 MiB each over every rank, with their buffers */
typedef struct {
    calib_job_t *job;
    int per;                 /* bytes each rank contributes to the gather */
    char *ag_in, *ag_out;
    float *rs_in, *rs_out;
} ovl_t;

/* ROUNDS rounds back to back, each `calls` sgemm calls with the
 * collectives of `mask` in flight (1 the all-gather, 2 the reduce-scatter,
 * 3 both) and waited for at the round's end; mask 4: first an 8-byte
 * blocking all-reduce, as the runtime's comm_check makes before each
 * collective. The ranks start together once and drift apart as they do
 * in training. The slowest rank's seconds per round. */
#define ROUNDS 8
static double overlap_round(const ovl_t *v, int mask, long calls)
{
    MPI_Request req[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    int flag, one = 1, all;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now(), dt, slowest;
    for (int r = 0; r < ROUNDS; r++) {
        if (mask & 4) MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (mask & 1) MPI_Iallgather(v->ag_in, v->per, MPI_BYTE, v->ag_out, v->per, MPI_BYTE, MPI_COMM_WORLD, &req[0]);
        if (mask & 2) MPI_Ireduce_scatter_block(v->rs_in, v->rs_out, v->per / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                                &req[1]);
        for (long k = 0; k < calls; k++) {
            sgemm_team_op(v->job);
            if (mask & 3) MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
        }
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    dt = (now() - t0) / ROUNDS;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static double overlap_median(const ovl_t *v, int mask, long calls)
{
    double t[3];
    for (int r = 0; r < 3; r++) t[r] = overlap_round(v, mask, calls);
    return median(t, 3);
}

/* (t_both - t_s) / t_table for the collectives of mask */
static double compute_cost_of(const ovl_t *v, int mask, double t_table)
{
    double tc = overlap_median(v, mask, 0), t1 = overlap_median(v, 0, 1);
    long calls = t1 > 0 ? (long)(2 * tc / t1) + 1 : 1;
    double ts = overlap_median(v, 0, calls), tb = overlap_median(v, mask, calls);
    return t_table > 0 && tb > ts ? (tb - ts) / t_table : 0;
}

/* collectives.sync_s: what the compute waits at each collective's start.
 * The runtime's comm_check (on by default) makes a small blocking
 * all-reduce there, and ranks that computed the same work arrive apart (a
 * shared machine's noise, ranks sharing cores): the first waits for the
 * last. About 1 ms of sgemm calls (a unit's compute) and the all-reduce,
 * round after round, against the calls alone: the difference per round. */
static double coll_sync(const ovl_t *v)
{
    double t1 = overlap_median(v, 0, 1);
    long calls = t1 > 0 ? (long)(1e-3 / t1) + 1 : 1;
    double ts = overlap_median(v, 0, calls), tb = overlap_median(v, 4, calls);
    return tb > ts ? tb - ts : 0;
}

static double coll_compute_cost(const copts_t *o, team_t *tm, double t_table, double *sync_p)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t S = (1ul << 20) / (4 * (size_t)n) * 4 * (size_t)n;
    calib_job_t j = { o->M, o->K, o->N, calloc((size_t)o->M * o->K, 4), calloc((size_t)o->K * o->N, 4),
                      calloc((size_t)o->M * o->N, 4), NULL, NULL, 0, tm };
    ovl_t v = { &j, (int)(S / (size_t)n), calloc(S / (size_t)n, 1), calloc(S, 1), calloc(S, 1),
                calloc(S / (size_t)n, 1) };
    int ok = j.a && j.b && j.c && v.ag_in && v.ag_out && v.rs_in && v.rs_out, all;
    double cost = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        blas_threads(1);
        cost = compute_cost_of(&v, 3, t_table);
        *sync_p = coll_sync(&v);
    }
    free(j.a); free(j.b); free(j.c); free(v.ag_in); free(v.ag_out); free(v.rs_in); free(v.rs_out);
    return cost;
}

/* The tables, the latency, and in *pair_p the seconds of the 1 MiB
 * all-gather plus the 1 MiB reduce-scatter over every rank as the tables
 * give them (what the planner would charge for that pair) */
static json_t *colls(int size, int rank, const size_t *sizes, int nsizes, double *lat_p, double *pair_p)
{
    static const char *const names[4] = { "all_gather", "reduce_scatter", "all_to_all", "all_reduce" };
    json_t *c = json_object();
    json_t *tab[4];
    for (int k = 0; k < 4; k++) tab[k] = json_array();
    int groups[16], ng = 0;
    for (int g = 2; g <= size && ng < 8; g *= 2) groups[ng++] = g;
    if (size > 1 && groups[ng - 1] != size) groups[ng++] = size;
    for (int gi = 0; gi < ng; gi++) {
        int g = groups[gi];
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, rank < g ? 0 : MPI_UNDEFINED, rank, &sub);
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < nsizes; s++) {
                size_t S = sizes[s] / (4 * (size_t)g) * 4 * (size_t)g;
                double bw = MPI_COMM_NULL != sub ? coll_busbw(k, sub, S) : 0;
                if (g == size && k < 2 && (1ul << 20) == sizes[s] && bw > 0)
                    *pair_p += (double)S * (g - 1) / g / bw;
                json_array_append_new(tab[k], json_pack("{s:i,s:I,s:f}", "ranks", g, "bytes", (json_int_t)S, "busbw", bw));
            }
        if (MPI_COMM_NULL != sub) MPI_Comm_free(&sub);
    }
    /* latency: an 8-byte all-reduce over everyone */
    double t[REPS], x = 0, y;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[r] = now() - t0;
    }
    *lat_p = median(t, REPS);
    for (int k = 0; k < 4; k++)
        json_object_set_new(c, names[k], json_pack("{s:o,s:O}", "intra", tab[k], "inter", tab[k]));
    return c;
}


static int copts_parse(int argc, char **argv, copts_t *o)
{
    const char *omp = getenv("OMP_NUM_THREADS");
    *o = (copts_t){ NULL, "cpu-calibrated", "/tmp", 4ul << 30, 8ul << 30, 8ul << 20, 64ul << 20, 256, 128, 512,
                    omp && atoi(omp) > 0 ? atoi(omp) : 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!v) { fprintf(stderr, "strata calibrate: %s needs a value (or is unknown)\n", a); return -1; }
        i++;
        size_t *sz = !strcmp(a, "--hbm") ? &o->hbm : !strcmp(a, "--host") ? &o->host :
                     !strcmp(a, "--max") ? &o->max : !strcmp(a, "--disk") ? &o->disk : NULL;
        if (sz) {
            if (STRATA_OK != strata_parse_size(v, sz) || 0 == *sz) {
                fprintf(stderr, "strata calibrate: %s: expected a size (e.g. 4G), got '%s'\n", a, v);
                return -1;
            }
        } else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--name")) o->name = v;
        else if (!strcmp(a, "--dir")) o->dir = v;
        else if (!strcmp(a, "--shape")) {
            if (3 != sscanf(v, "%d,%d,%d", &o->M, &o->K, &o->N) || o->M < 1 || o->K < 1 || o->N < 1) {
                fprintf(stderr, "strata calibrate: --shape: expected M,K,N, got '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--threads")) {
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > TEAM_MAX) {
                fprintf(stderr, "strata calibrate: --threads: expected 1..%d, got '%s'\n", TEAM_MAX, v);
                return -1;
            }
            o->threads = (int)t;
        } else {
            fprintf(stderr, "strata calibrate: unknown option '%s'\n", a);
            return -1;
        }
    }
    return 0;
}

/* host_link.compute_cost: what a host-link copy costs the compute here.
 * On a CPU node the runtime's copy engine is a thread that memcpys beside
 * the rank's compute threads, on the same cores. 1 MiB copies on such a
 * thread while the team runs sgemm calls for about twice their time,
 * against each alone (every rank at once, the slowest rank's time,
 * medians of REPS): (t_both - t_s) / t_copy. */
typedef struct { const char *src; char *dst; size_t bytes; long n; } copy_job_t;

static void *copy_main(void *p)
{
    const copy_job_t *c = p;
    for (long i = 0; i < c->n; i++) memcpy(c->dst, c->src, c->bytes);
    return NULL;
}

/* the slowest rank's seconds for `calls` sgemm calls with (copies) the copy thread running */
static double copy_round(calib_job_t *j, copy_job_t *c, long calls, int copies)
{
    pthread_t tid;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now(), dt, slowest;
    int started = copies && 0 == pthread_create(&tid, NULL, copy_main, c);
    for (long k = 0; k < calls; k++) sgemm_team_op(j);
    if (started) pthread_join(tid, NULL);
    else if (copies) copy_main(c);
    dt = now() - t0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static double copy_median(calib_job_t *j, copy_job_t *c, long calls, int copies)
{
    double t[REPS];
    for (int r = 0; r < REPS; r++) t[r] = copy_round(j, c, calls, copies);
    return median(t, REPS);
}

static double link_compute_cost(const copts_t *o, team_t *tm)
{
    size_t mb = 1ul << 20;
    calib_job_t j = { o->M, o->K, o->N, calloc((size_t)o->M * o->K, 4), calloc((size_t)o->K * o->N, 4),
                      calloc((size_t)o->M * o->N, 4), NULL, NULL, 0, tm };
    char *src = calloc(mb, 1), *dst = calloc(mb, 1);
    int ok = j.a && j.b && j.c && src && dst, all;
    double cost = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        blas_threads(1);
        copy_job_t c = { src, dst, mb, 16 };
        double tc = copy_median(&j, &c, 0, 1), t1 = copy_median(&j, &c, 1, 0);
        long calls = t1 > 0 ? (long)(2 * tc / t1) + 1 : 1;
        double ts = copy_median(&j, &c, calls, 0), tb = copy_median(&j, &c, calls, 1);
        cost = tc > 0 && tb > ts ? (tb - ts) / tc : 0;
    }
    free(j.a); free(j.b); free(j.c); free(src); free(dst);
    return cost;
}

/* Every rank runs this at once, as training runs its ranks: where ranks
 * share cores, each one's rate is what a rank gets. The disk only on rank 0. */
static json_t *measure_local(const copts_t *o, team_t *tm, int rank, double *mc_p, double *peak_p, double *w_p,
                             double *r_p)
{
    enum { NS = 5 };   /* the last one is --shape, the target */
    const int shapes[NS][3] = { { 256, 128, 384 }, { 256, 128, 512 }, { 256, 512, 128 }, { 1024, 1024, 1024 },
                                { o->M, o->K, o->N } };
    calib_job_t j[NS];
    double pool[NS][WREPS], team[NS][WREPS], mc[WREPS];
    size_t mb = 64ul << 20;
    calib_job_t cp = { 0, 0, 0, NULL, NULL, NULL, malloc(mb), malloc(mb), mb, NULL };
    int ok = cp.src && cp.dst;
    for (int i = 0; i < NS; i++) {
        int M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        j[i] = (calib_job_t){ M, K, N, calloc((size_t)M * K, 4), calloc((size_t)K * N, 4), calloc((size_t)M * N, 4),
                              NULL, NULL, 0, tm };
        ok = ok && j[i].a && j[i].b && j[i].c;
    }
    if (ok) {
        memset(cp.src, 1, mb);
        memset(cp.dst, 0, mb);
    }
    /* every rank takes part in the barriers, also one out of memory */
    for (int w = 0; w < WREPS; w++) {
        for (int i = 0; i < NS; i++) {
            double work = 2.0 * shapes[i][0] * shapes[i][1] * shapes[i][2];
            blas_threads(tm->n);
            pool[i][w] = window_rate(ok ? sgemm_op : no_op, &j[i], work);
            blas_threads(1);
            team[i][w] = tm->n > 1 ? window_rate(ok ? sgemm_team_op : no_op, &j[i], work) : 0;
        }
        mc[w] = window_rate(ok ? memcpy_op : no_op, &cp, (double)mb);
    }
    json_t *sg = json_array();
    double peak = 0, target = 0;   /* the best shape, recorded as best_flops */
    for (int i = 0; i < NS; i++) {
        double p = median(pool[i], WREPS), t = tm->n > 1 ? median(team[i], WREPS) : 0, f = ok ? (t > p ? t : p) : 0;
        if (f > peak) peak = f;
        if (NS - 1 == i) target = f;
        json_t *e = json_pack("{s:i,s:i,s:i,s:f,s:s}", "m", shapes[i][0], "k", shapes[i][1], "n", shapes[i][2],
                              "flops", f, "split", t > p ? "team" : "blas");
        if (NS - 1 == i) json_object_set_new(e, "target", json_true());
        json_array_append_new(sg, e);
        free(j[i].a); free(j[i].b); free(j[i].c);
    }
    *peak_p = peak;
    *mc_p = ok ? median(mc, WREPS) : 0;
    free(cp.src); free(cp.dst);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank && disk_bw(o->dir, o->disk, w_p, r_p)) *w_p = *r_p = 0;
    return json_pack("{s:o,s:f,s:f,s:i}", "shapes", sg, "target_flops", target, "best_flops", peak, "threads", tm->n);
}

int cmd_calibrate(int argc, char **argv)
{
    copts_t o;
    int rc = copts_parse(argc, argv, &o);
    if (rc) {
        fprintf(rc > 0 ? stdout : stderr, "usage: mpirun -np N strata calibrate [--out FILE] [--name NAME] "
                "[--hbm SIZE] [--host SIZE]\n  [--dir DIR] [--disk SIZE] [--max SIZE] [--shape M,K,N] [--threads T]\n"
                "Measures this machine into a planner hardware file (docs/planner.md): sgemm by shape\n"
                "(dense_flops = the rate at --shape, mfu 1; default the example GPT's 256,128,512;\n"
                "the other shapes are recorded beside it) on T threads per rank (default $OMP_NUM_THREADS\n"
                "or 1: what train_gpt --threads will use), memcpy, MPI busbw at 64k..--max over 2, 4, .. N\n"
                "ranks, the compute time a collective costs, disk write/read in --dir.\n"
                "--hbm/--host: the budgets to plan with (train_gpt's 4G and 8G).\n");
        return rc > 0 ? 0 : 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double mc = 0, peak = 0, wbw = 0, rbw = 0, lat = 0;
    team_t tm;
    team_start(&tm, o.threads);
    json_t *sg = measure_local(&o, &tm, rank, &mc, &peak, &wbw, &rbw);
    if (0 != rank) {
        json_decref(sg);
        sg = NULL;
    }
    MPI_Bcast(&mc, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    size_t sizes[3] = { 64ul << 10, 1ul << 20, o.max };
    json_t *c = NULL;
    double pair = 0;
    if (size > 1) c = colls(size, rank, sizes, 3, &lat, &pair);
    double sync = 0, ccost = size > 1 ? coll_compute_cost(&o, &tm, pair, &sync) : 0;
    double lcost = link_compute_cost(&o, &tm);
    team_stop(&tm);
    if (0 == rank) {
        if (!c) {   /* one rank: no collective runs; a placeholder at memcpy speed */
            json_t *t = json_pack("[{s:i,s:i,s:f}]", "ranks", 2, "bytes", 1 << 20, "busbw", mc);
            c = json_pack("{s:{s:O,s:O},s:{s:O,s:O},s:{s:O,s:O},s:{s:O,s:O}}", "all_gather", "intra", t, "inter", t,
                          "reduce_scatter", "intra", t, "inter", t, "all_to_all", "intra", t, "inter", t,
                          "all_reduce", "intra", t, "inter", t);
            json_decref(t);
        }
        json_object_set_new(c, "domain_size", json_integer(size > 1 ? size : 2));
        json_object_set_new(c, "latency_s", json_real(lat));
        json_object_set_new(c, "compute_cost", json_real(ccost));
        json_object_set_new(c, "sync_s", json_real(sync));
        json_object_set_new(c, "note", json_string("measured by strata calibrate: one node, so inter = intra"));
        double target = json_number_value(json_object_get(sg, "target_flops"));
        json_t *hw = json_pack("{s:s,s:s,s:{s:I,s:f},s:{s:f,s:f,s:o},s:{s:f,s:f,s:f,s:f,s:f},s:I,s:f,s:{s:f,s:f},s:o}",
            "name", o.name, "source", "strata calibrate on this machine (compute and memcpy: medians of 7 windows of 0.05 s taken in turn, all ranks at once; collectives: medians of 5; noisy under load)",
            /* hbm bandwidth counts traffic (the planner's elementwise op
             * reads and writes its bytes): a memcpy moves each byte twice */
            "hbm", "usable_bytes", (json_int_t)o.hbm, "bandwidth", 2 * mc,
            "compute", "dense_flops", target, "mfu", 1.0, "sgemm", sg,
            "host_link", "d2h_bw", mc, "h2d_bw", mc, "both_bw", mc, "latency_s", 0.0, "compute_cost", lcost,
            "host_bytes", (json_int_t)o.host, "storage_bw", wbw < rbw ? wbw : rbw,
            "disk", "write_bw", wbw, "read_bw", rbw, "collectives", c);
        char *txt = json_dumps(hw, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        FILE *f = o.out ? fopen(o.out, "w") : stdout;
        if (!f || !txt || EOF == fputs(txt, f) || EOF == fputc('\n', f)) {
            fprintf(stderr, "strata calibrate: cannot write %s\n", o.out ? o.out : "stdout");
            rc = 1;
        }
        if (f && f != stdout) fclose(f);
        free(txt);
        json_decref(hw);
    } else if (c) {
        json_decref(c);
    }
    MPI_Finalize();
    return rc;
}
