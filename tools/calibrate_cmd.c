/*
 * calibrate_cmd.c - `mpirun -np N strata calibrate --out FILE`: measures
 * this machine into a planner hardware file (docs/planner.md): sgemm by
 * shape on the rank's threads, memcpy bandwidth, MPI all-gather /
 * reduce-scatter / all-to-all / all-reduce busbw by message size and rank
 * count (2, 4, .. N), what collectives and copies cost the compute
 * (calibrate_costs.c), and disk write/read bandwidth. Each figure is the
 * median of a few repeats; on a shared machine the numbers move with the
 * load. Everything runs on every rank at once, so a profile is for that
 * many ranks on this node.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <mpi.h>

#include "strata.h"
#include "base/base.h"
#include "comm/comm.h"
#include "tools/calibrate.h"
#include "tools/cmds.h"

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
    double t0 = calib_now(), t;
    long n = 0;
    do {
        op(arg);
        n++;
    } while ((t = calib_now() - t0) < WINDOW_S);
    return work * (double)n / t;
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
    double t0 = calib_now();
    int bad = (ssize_t)bytes != write(fd, buf, bytes) || fsync(fd);
    *w_p = (double)bytes / (calib_now() - t0);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    t0 = calib_now();
    bad |= (ssize_t)bytes != pread(fd, buf, bytes, 0);
    *r_p = (double)bytes / (calib_now() - t0);
    close(fd);
    unlink(path);
    free(buf);
    return bad ? -1 : 0;
}

/* Repeats of a collective's timing and of the latency's: with 5, two
 * repeats that met a descheduled rank on a loaded machine set the median
 * (a 2-rank table at 3 MB/s and a 15 ms latency, once, made the planner's
 * step 5x train_gpt's) */
#define COLL_REPS 9
#define LAT_REPS 25

/* busbw of collective k over comm for a message of S bytes (the full
 * size): the nonblocking calls the runtime starts (comm/mpi.c; its
 * reduce-scatter is comm/rs.c's point-to-point one), waited for at once;
 * Open MPI runs them by other algorithms than the blocking ones (measured
 * here: a 1 MiB all-gather on 2 ranks 0.23 ms against 0.09) */
static double coll_busbw(int k, MPI_Comm comm, size_t S)
{
    int n;
    MPI_Comm_size(comm, &n);
    size_t per = S / (size_t)n;
    char *in = calloc(S, 1), *out = calloc(S, 1);
    double t[COLL_REPS];
    for (int r = 0; in && out && r < COLL_REPS; r++) {
        MPI_Barrier(comm);
        double t0 = calib_now();
        MPI_Request q;
        if (0 == k) MPI_Iallgather(in, (int)per, MPI_BYTE, out, (int)per, MPI_BYTE, comm, &q);
        else if (1 == k) {   /* the runtime's reduce-scatter (comm/rs.c) */
            comm_rs_t rs;
            int done = 0;
            comm_rs_start(&rs, comm, 1 + r, (const float *)in, (float *)out, per / 4, 0.0f);
            while (!done) comm_rs_test(&rs, &done);
            comm_rs_finish(&rs);
            comm_rs_release(&rs);
            q = MPI_REQUEST_NULL;
        }
        else if (2 == k) MPI_Ialltoall(in, (int)per, MPI_BYTE, out, (int)per, MPI_BYTE, comm, &q);
        else MPI_Iallreduce(in, out, (int)(S / 4), MPI_FLOAT, MPI_SUM, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        double dt = calib_now() - t0;
        MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    free(in); free(out);
    double f = (double)(n - 1) / n * (3 == k ? 2.0 : 1.0);
    return (double)S * f / calib_median(t, COLL_REPS);
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
    /* latency: an 8-byte all-reduce over everyone, the median of many:
     * one that waits out a rank's scheduler slice on a shared machine
     * (15 ms among 5 microsecond ones, here) must not set it */
    double t[LAT_REPS], x = 0, y;
    for (int r = 0; r < LAT_REPS; r++) {
        double t0 = calib_now();
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[r] = calib_now() - t0;
    }
    *lat_p = calib_median(t, LAT_REPS);
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

/* Every rank runs this at once, as training runs its ranks: where ranks
 * share cores, each one's rate is what a rank gets. The disk only on rank 0. */
static json_t *measure_local(const copts_t *o, team_t *tm, int rank, double *mc_p, double *peak_p, double *w_p,
                             double *r_p)
{
    enum { NS = 5 };   /* the last one is --shape, the target */
    const int shapes[NS][3] = { { 256, 128, 384 }, { 256, 128, 512 }, { 256, 512, 128 }, { 1024, 1024, 1024 },
                                { o->M, o->K, o->N } };
    calib_job_t j[NS];
    double pool[NS][WREPS], team[NS][WREPS], mc[WREPS], work[NS];
    size_t mb = 64ul << 20;
    calib_job_t cp = { 0, 0, 0, NULL, NULL, NULL, malloc(mb), malloc(mb), mb, NULL };
    int ok = cp.src && cp.dst;
    for (int i = 0; i < NS; i++) {
        int M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        j[i] = (calib_job_t){ M, K, N, calloc((size_t)M * K, 4), calloc((size_t)K * N, 4), calloc((size_t)M * N, 4),
                              NULL, NULL, 0, tm };
        ok = ok && j[i].a && j[i].b && j[i].c;
        work[i] = 2.0 * M * K * N;
    }
    if (ok) {
        memset(cp.src, 1, mb);
        memset(cp.dst, 0, mb);
    }
    /* every rank takes part in the barriers, also one out of memory. The
     * team's windows first, each round after a pause: OpenBLAS's own
     * threads spin for about 0.1 s after their last call (2^28 cycles)
     * before they sleep, and spinning they took a core from the team
     * (1024^3 on 2 threads: 207 GFLOP/s right after the BLAS's windows,
     * 385 after 0.2 s) */
    for (int w = 0; w < WREPS; w++) {
        if (tm->n > 1) {
            struct timespec pause = { 0, 200000000 };
            calib_blas_threads(1);
            nanosleep(&pause, NULL);
            for (int i = 0; i < NS; i++)
                team[i][w] = window_rate(ok ? calib_sgemm_team_op : no_op, &j[i], work[i]);
        }
        mc[w] = window_rate(ok ? memcpy_op : no_op, &cp, (double)mb);
        calib_blas_threads(tm->n);
        for (int i = 0; i < NS; i++)
            pool[i][w] = window_rate(ok ? calib_sgemm_op : no_op, &j[i], work[i]);
    }
    calib_blas_threads(1);   /* the costs below run the team */
    json_t *sg = json_array();
    double peak = 0, target = 0;   /* the best shape, recorded as best_flops */
    for (int i = 0; i < NS; i++) {
        double p = calib_median(pool[i], WREPS), t = tm->n > 1 ? calib_median(team[i], WREPS) : 0, f = ok ? (t > p ? t : p) : 0;
        if (f > peak) peak = f;
        if (NS - 1 == i) target = f;
        json_t *e = json_pack("{s:i,s:i,s:i,s:f,s:s}", "m", shapes[i][0], "k", shapes[i][1], "n", shapes[i][2],
                              "flops", f, "split", t > p ? "team" : "blas");
        if (NS - 1 == i) json_object_set_new(e, "target", json_true());
        json_array_append_new(sg, e);
        free(j[i].a); free(j[i].b); free(j[i].c);
    }
    *peak_p = peak;
    *mc_p = ok ? calib_median(mc, WREPS) : 0;
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
                "(dense_flops = the rate at --shape, mfu 1: bench/calibrate_mfu measures it for the GPT's\n"
                "kernels; --shape default the example GPT's 256,128,512;\n"
                "the other shapes are recorded beside it) on T threads per rank (default $OMP_NUM_THREADS\n"
                "or 1: what train_gpt --threads will use), memcpy, MPI busbw at 64k..--max over 2, 4, .. N\n"
                "ranks, what collectives and host copies cost the compute, disk write/read in --dir.\n"
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
    double sync = 0, ccost = size > 1 ? calib_coll_compute_cost(&o, &tm, pair, &sync) : 0;
    double lcost = calib_link_compute_cost(&o, &tm);
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
        json_t *hw = json_pack("{s:s,s:s,s:s,s:{s:I,s:f},s:{s:f,s:f,s:o},s:{s:f,s:f,s:f,s:f,s:f},s:I,s:f,s:{s:f,s:f},s:o}",
            "name", o.name, "source", "strata calibrate on this machine (compute and memcpy: medians of 7 windows of 0.05 s taken in turn, all ranks at once; collectives: medians of 9, latency of 25; the host link's compute cost: the median of 9 paired rounds; noisy under load)",
            "device", "cpu",
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
