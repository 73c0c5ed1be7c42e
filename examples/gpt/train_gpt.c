/*
 * train_gpt.c - the main job of strata: a GPT-2-style model trained with
 * fully sharded data parallelism over MPI ranks, on CPUs.
 *
 *     mpirun -np 4 examples/gpt/train_gpt                      (addition task)
 *     mpirun -np 2 examples/gpt/train_gpt --data ../shared/data/tinyshakespeare.txt \
 *            --layers 4 --dim 128 --heads 4 --seq 64 --batch 8 --steps 2000
 *
 * Every unit of the model (embedding, each block, head) is one FSDP unit
 * (gpt_fsdp.c); each rank trains on its own rows of every global batch
 * (rows are pure functions of seed, step and global row index, so a run
 * on any number of ranks with the same global batch sees the same data).
 * See usage() for the options and docs/train_gpt.md for the output formats.
 */
#include "config.h"
#include "examples/gpt/train_gpt.h"
#include "examples/gpt/gpt_fsdp_dev.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>     /* sysconf */

/* ------------------------------------------------------------------ helpers --- */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

/* The signals a job takes: the stop requests, and SIGUSR2 (the runtime's
 * flight record). */
static void job_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

/* The one thread that takes them: their handlers (the flag below, the
 * runtime's watchdog wake-up) run here. Every other thread blocks them,
 * so that no signal lands in a thread in the middle of a kernel, a BLAS
 * call or an MPI call: a SIGUSR1 that did so corrupted the heap inside a
 * oneDNN product, now and then, on an AVX-512 KVM guest. */
static void *signal_main(void *arg)
{
    sigset_t set;
    job_signals(&set);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    (void)arg;
    for (;;) pause();
    return NULL;
}

/* Called with the job's signals blocked, before any other thread starts
 * (threads inherit the mask): they stay blocked on this thread and every
 * later one, and go to signal_main. */
static void signal_thread_start(void)
{
    pthread_t tid;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (0 != pthread_create(&tid, &a, signal_main, NULL)) {
        /* no thread: the handlers run on whichever thread gets them */
        sigset_t set;
        job_signals(&set);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    pthread_attr_destroy(&a);
}

/* Stop requests: a flag checked at the end of every step. */
static void stop_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT:  return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default:      return "a signal";
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Linear warmup, then cosine from lr to lr * min_lr_frac at the last step;
 * step counts from 0. */
static double lr_at(const options *o, int step)
{
    if (step < o->warmup) return o->lr * (step + 1) / o->warmup;
    int span = o->steps - o->warmup > 1 ? o->steps - o->warmup - 1 : 1;
    double t = (double)(step - o->warmup) / span;
    if (t > 1) t = 1;
    return o->lr * (o->min_lr_frac + (1 - o->min_lr_frac) * 0.5 * (1 + cos(M_PI * t)));
}

typedef struct {
    strata_context_t *ctx;
    strata_model_t   *model;
    int               rank, W;
    const char       *locked;   /* the checkpoint directory this job locked, or NULL */
    int               writing;  /* a checkpoint is being written in the background */
} run_t;

/* Report a failure of the runtime and end the job: a failure on some ranks
 * only would leave the others waiting in a collective, so with more than
 * one rank the job is aborted. */
static int fail(run_t *r, const char *what, strata_status_t st)
{
    fprintf(stderr, PROG " (rank %d): %s failed: %s: %s\n", r->rank, what, strata_strerror(st),
            NULL != r->ctx ? strata_last_error(r->ctx) : "");
    fflush(stderr);
    fflush(stdout);
    if (NULL != r->ctx) strata_flight_dump(r->ctx, "fatal");   /* what led here, per rank */
    if (1 < r->W) {
        strata_abandon(r->ctx);      /* no spill directory left behind */
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    strata_model_destroy(r->model);
    strata_finalize(r->ctx);
    MPI_Finalize();
    exit(1);
}

#define CHECK(r, what, call) do { strata_status_t st_ = (call); \
    if (STRATA_OK != st_) fail((r), (what), st_); } while (0)

/* On the cuda backend the model's output (the head's loss, the decoded
 * tokens) is device memory. */
static int on_device(const run_t *r)
{
    return 0 == strcmp(strata_backend_name(r->ctx), "cuda");
}

static double out_double(run_t *r, const void *out)
{
    double v;
    if (!on_device(r)) return *(const double *)out;
    CHECK(r, "loss", gpt_dev_read(&v, out, sizeof v));
    return v;
}

/* A call that fails the same way on every rank (a budget too small, a
 * bad option): said once by rank 0, and every rank exits with rc; a
 * failure on some ranks only goes to fail(). */
static void check_all_rc(run_t *r, const char *what, strata_status_t st, int rc)
{
    int bad = STRATA_OK != st, nbad = bad;
    MPI_Allreduce(&bad, &nbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == nbad) return;
    if (nbad < r->W) {
        if (bad) fail(r, what, st);
        MPI_Barrier(MPI_COMM_WORLD);        /* the failing rank aborts the job */
    }
    if (0 == r->rank)
        fprintf(stderr, PROG ": %s failed: %s: %s\n", what, strata_strerror(st),
                NULL != r->ctx ? strata_last_error(r->ctx) : "");
    fflush(stderr);
    /* the next job finds the directory free, not a lock to take over */
    if (NULL != r->locked) strata_ckpt_dir_unlock(r->ctx, r->locked);
    strata_model_destroy(r->model);
    strata_finalize(r->ctx);
    MPI_Finalize();
    exit(rc);
}

static void check_all(run_t *r, const char *what, strata_status_t st)
{
    check_all_rc(r, what, st, 1);
}

/* The model's set-up refused what the options asked for (a shard size
 * that does not divide the ranks, a device budget too small, a policy
 * naming a save twice): the usage status 2, as for a bad flag. */
static void check_setup(run_t *r, const char *what, strata_status_t st)
{
    int usage = STRATA_ERR_INVALID == st || STRATA_ERR_CONFIG == st || STRATA_ERR_TIER_FULL == st;
    check_all_rc(r, what, st, usage ? 2 : 1);
}

static void *xcalloc(run_t *r, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (NULL == p) fail(r, "calloc", STRATA_ERR_NOMEM);
    return p;
}

/* Sum a few floats over all ranks (in place). */
static void sum_all(run_t *r, float *v, size_t n)
{
    CHECK(r, "allreduce", strata_allreduce(strata_world_group(r->ctx), v, v, n, STRATA_F32,
                                           STRATA_SUM));
}

/* FNV-1a over the fp32 bytes of every parameter in canonical order (units in
 * order, parameters in registration order): the same for any rank count. */
static uint64_t param_hash(run_t *r)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int u = 0; u < strata_model_unit_count(r->model); u++) {
        strata_unit_t *unit = strata_model_unit(r->model, u);
        for (int i = 0; i < strata_unit_param_count(unit); i++) {
            const char *name;
            size_t numel;
            int nd;
            size_t dims[4];
            CHECK(r, "param info", strata_unit_param_info(unit, i, &name, &numel, &nd, dims));
            float *buf = xcalloc(r, numel, sizeof(float));
            CHECK(r, "read_param", strata_unit_read_param(unit, i, buf, numel));
            const unsigned char *p = (const unsigned char *)buf;
            for (size_t k = 0; k < numel * sizeof(float); k++) {
                h ^= p[k];
                h *= 0x100000001b3ull;
            }
            free(buf);
        }
    }
    return h;
}

/* ---------------------------------------------------------------- evaluation --- */

/* Exact-match accuracy of greedily decoded answers (every answer byte,
 * the copied digits of b too, gpt_add_correct) over the first eval_n
 * held-out pairs; each rank decodes its share, every prompt is 8 bytes so
 * a batch decodes in lockstep (one eval per answer byte). */
static double addition_accuracy(run_t *r, const options *o)
{
    const int P = GPT_ADD_PROMPT, WD = GPT_ADD_PROMPT + GPT_ADD_ANSWER;
    int *a = xcalloc(r, o->eval_n, sizeof(int)), *b = xcalloc(r, o->eval_n, sizeof(int));
    int n = (int)gpt_add_heldout_pairs(o->eval_n, a, b);
    int per = (n + r->W - 1) / r->W, lo = r->rank * per, hi = lo + per < n ? lo + per : n;
    int R = o->batch * o->accum < 64 ? 64 : o->batch * o->accum;
    if (R > per) R = per;
    int32_t *tok = xcalloc(r, (size_t)R * WD, sizeof(int32_t));
    int32_t *cur = xcalloc(r, (size_t)R * WD, sizeof(int32_t));
    int32_t *next = xcalloc(r, (size_t)R, sizeof(int32_t));
    float right = 0;
    for (int c0 = 0; c0 < per; c0 += R) {
        char ex[GPT_ADD_LEN];
        for (int k = 0; k < R; k++) {
            int i = lo + c0 + k < hi ? lo + c0 + k : 0;   /* padding rows decode pair 0 */
            gpt_add_format(a[i], b[i], ex);
            for (int t = 0; t < P; t++) tok[(size_t)k * WD + t] = (unsigned char)ex[t];
        }
        for (int T = P; T < WD; T++) {
            for (int k = 0; k < R; k++)
                memcpy(cur + (size_t)k * T, tok + (size_t)k * WD, sizeof(int32_t) * T);
            gpt_batch bt = { .B = R, .T = T, .decode = 1 };
            const void *out;
            size_t ob;
            CHECK(r, "eval", strata_model_eval(r->model, cur, (size_t)R * T * sizeof(int32_t),
                                               &bt, &out, &ob));
            if (on_device(r))   /* the decoded tokens are on the device */
                CHECK(r, "eval", gpt_dev_read(next, out, (size_t)R * sizeof(int32_t)));
            else
                memcpy(next, out, (size_t)R * sizeof(int32_t));
            for (int k = 0; k < R; k++) tok[(size_t)k * WD + T] = next[k];
        }
        for (int k = 0; k < R && lo + c0 + k < hi; k++) {
            int i = lo + c0 + k;
            right += gpt_add_correct(a[i], b[i], tok + (size_t)k * WD + P);
        }
    }
    sum_all(r, &right, 1);
    free(a);
    free(b);
    free(tok);
    free(cur);
    free(next);
    return 0 < n ? right / n : 0.0;
}

/* Mean loss per byte over val_batches global batches of the validation split. */
static double validation_loss(run_t *r, const options *o, const gpt_data *data)
{
    const int B = o->batch, T = o->cfg.max_seq;
    int32_t *in = xcalloc(r, (size_t)B * T, sizeof(int32_t));
    int32_t *tg = xcalloc(r, (size_t)B * T, sizeof(int32_t));
    float acc[2] = { 0, 0 };    /* loss sum, targets */
    for (int k = 0; k < o->val_batches; k++) {
        CHECK(r, "data", gpt_data_rows(data, GPT_SPLIT_VAL, o->seed, k, (int64_t)r->rank * B, B,
                                       T, in, tg));
        gpt_batch bt = { .B = B, .T = T, .targets = tg };
        const void *out;
        size_t ob;
        CHECK(r, "eval", strata_model_eval(r->model, in, (size_t)B * T * sizeof(int32_t), &bt,
                                           &out, &ob));
        acc[0] += (float)out_double(r, out);
        for (int i = 0; i < B * T; i++) acc[1] += 0 <= tg[i];
    }
    sum_all(r, acc, 2);
    free(in);
    free(tg);
    return acc[0] / (0 < acc[1] ? acc[1] : 1);
}

/* ---------------------------------------------------------------- checkpoints --- */

typedef struct { uint64_t seed, global_rows; } rng_state;

/* The model's configuration as the checkpoint records it (config.<key>):
 * a resume with another one is refused. kv: the values' storage. */
enum { NCONFIG = 8 };
static void ckpt_config(const run_t *r, const options *o, char kv[NCONFIG][32],
                        strata_ckpt_kv_t config[NCONFIG])
{
    static const char *const keys[NCONFIG] = { "model", "layers", "dim", "heads", "vocab", "seq",
                                               "global_batch", "data" };
    snprintf(kv[0], 32, "gpt");
    snprintf(kv[1], 32, "%d", o->cfg.n_layer);
    snprintf(kv[2], 32, "%d", o->cfg.dim);
    snprintf(kv[3], 32, "%d", o->cfg.n_head);
    snprintf(kv[4], 32, "%d", GPT_VOCAB);
    snprintf(kv[5], 32, "%d", o->cfg.max_seq);
    snprintf(kv[6], 32, "%d", o->batch * o->accum * r->W);
    for (int i = 0; i < NCONFIG; i++) config[i] = (strata_ckpt_kv_t){ keys[i], kv[i] };
    config[7].value = NULL != o->data ? o->data : "addition";
}

/* "checkpoint: PATH (SIZE MiB in|after S s)", rank 0's, on stdout (stderr with --json). */
static void ckpt_said(const options *o, const char *path, double s, const char *how)
{
    struct stat sb;
    double mib = 0 == stat(path, &sb) ? sb.st_size / 1048576.0 : 0;
    fprintf(o->json ? stderr : stdout, "checkpoint: %s (%.1f MiB %s %.2f s)\n", path, mib, how, s);
    fflush(o->json ? stderr : stdout);
}

static int ckpt_async(const run_t *r)
{
    char v[16] = "";
    strata_config_get(strata_get_config(r->ctx), "ckpt_async", v, sizeof(v));
    return 0 == strcmp(v, "on");
}

/* Wait for the checkpoint written in the background, if any: its failure
 * ends the job as a synchronous save's would; its file is named once done. */
static void ckpt_wait(run_t *r, const options *o)
{
    char done[1024];
    double t0 = now();
    check_all(r, "checkpoint save", strata_model_save_wait(r->model, done, sizeof(done)));
    r->writing = 0;
    if (0 == r->rank && done[0]) ckpt_said(o, done, now() - t0, "written; waited");
}

static void save_ckpt(run_t *r, const options *o, int steps_done, char *path, size_t len)
{
    char kv[NCONFIG][32];
    strata_ckpt_kv_t config[NCONFIG];
    ckpt_config(r, o, kv, config);
    rng_state rs = { o->seed, (uint64_t)o->batch * o->accum * r->W };
    strata_model_ckpt_t info = { .data_pos = (uint64_t)steps_done, .rng = &rs,
                                 .rng_len = sizeof(rs),
                                 .nconfig = NCONFIG, .config = config };
    /* the one written in the background first, said when it is done */
    ckpt_wait(r, o);
    double t0 = now();
    /* a failed save fails on every rank alike (the ranks agree on it):
     * said once, and every rank exits 1 */
    check_all(r, "checkpoint save", strata_model_save(r->model, o->ckpt_dir, &info, path, len));
    r->writing = ckpt_async(r);
    if (0 == r->rank && r->writing) {
        fprintf(o->json ? stderr : stdout, "checkpoint: %s staged in %.2f s, written in the "
                "background\n", path, now() - t0);
        fflush(o->json ? stderr : stdout);
    } else if (0 == r->rank) {
        ckpt_said(o, path, now() - t0, "in");
    }
}

/* ------------------------------------------------------------------ setup --- */

/* Everything a run holds from setup to the end. */
typedef struct {
    run_t            r;
    options          o;
    gpt_data        *data;
    gpt_fsdp        *g;
    strata_config_t *cfg;               /* until strata_init copies it */
    int              threads, start;    /* start: the first step of this run */
    int32_t         *in, *tg;           /* accum micro-batches of batch x seq tokens */
    gpt_batch       *bt;
    double          *loss;              /* accum micro-batches' losses of the step */
    char             ckpt_path[1024];   /* the last checkpoint written or loaded */
} trainer;

/* Checks that fail the same way on every rank: 0, or -2 with why. */
static int check_options(const options *o, char *why, size_t len)
{
    if (NULL != o->trace && (0 == strlen(o->trace) || strlen(o->trace) >= 500))
        snprintf(why, len, "--trace needs a file name of 1..499 characters");
    else if (NULL != o->schedule && strcmp(o->schedule, "lhs") && strcmp(o->schedule, "naive"))
        snprintf(why, len, "--schedule is lhs or naive, not '%s'", o->schedule);
    else if (NULL != o->act_policy && gpt_fsdp_check_policy(o->act_policy, why, len))
        ;
    else if (o->resume && NULL == o->ckpt_dir)
        snprintf(why, len, "--resume needs --ckpt-dir (where to look)");
    else
        return 0;
    return -2;
}

/* The task (a text file, or the addition task) and the sequence length it
 * implies: 0, or -2 with why. */
static int load_data(options *o, gpt_data **data, char *why, size_t len)
{
    if (NULL != o->data) {
        if (0 == o->cfg.max_seq) o->cfg.max_seq = 64;
        if (STRATA_OK != gpt_config_validate(&o->cfg, why, len) ||
            STRATA_OK != gpt_data_text(o->data, 0.1, o->cfg.max_seq, data, why, len))
            return -2;
    } else {
        if (STRATA_OK != gpt_data_addition(data)) {
            snprintf(why, len, "cannot make the addition task");
            return -2;
        }
        if (0 == o->cfg.max_seq) o->cfg.max_seq = gpt_data_seq_hint(*data);
        if (o->cfg.max_seq < GPT_ADD_PROMPT + GPT_ADD_ANSWER) {
            snprintf(why, len, "the addition task needs --seq of at least %d (a prompt and its "
                     "answer)", GPT_ADD_PROMPT + GPT_ADD_ANSWER);
            return -2;
        }
    }
    if (NULL != o->device && 0 == strcmp(o->device, "cuda") && 0 == gpt_dev_count()) {
        snprintf(why, len, "--device cuda: no CUDA device answers (%s); use --device host or "
                 "auto", gpt_dev_built() ? "cudaGetDeviceCount found none"
                                         : "this build has no CUDA");
        return -2;
    }
    return STRATA_OK == gpt_shape_validate(&o->cfg, o->batch, o->cfg.max_seq, why, len) ? 0 : -2;
}

/* Options and data. -1: go on; else the exit status (0 after --help). */
static int setup_options(trainer *t, int argc, char **argv)
{
    const int rank = t->r.rank, W = t->r.W;
    char why[600];
    int prc = train_parse(argc, argv, &t->o, 0 == rank);
    if (0 == prc) prc = check_options(&t->o, why, sizeof why);
    if (0 == prc) prc = train_split_batch(&t->o, W, why, sizeof why);
    if (0 == prc) prc = load_data(&t->o, &t->data, why, sizeof why);
    /* ranks agree before any collective: a file missing on one node only
     * must not leave the others waiting in strata_init */
    int refused = 0 > prc, nrefused = refused;
    MPI_Allreduce(&refused, &nrefused, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == prc && 0 < nrefused) prc = -1;     /* another rank said why */
    if (0 == prc) return -1;
    if (-2 == prc && nrefused == W && 0 == rank)
        fprintf(stderr, PROG ": %s\n", why);
    else if (-2 == prc && nrefused < W)
        fprintf(stderr, PROG " (rank %d): %s\n", rank, why);
    return 1 == prc ? 0 : 2;
}

/* The runtime's options: defaults, STRATA_* environment, then the flags.
 * -1: go on; 2: refused (said once). */
static int setup_config(trainer *t)
{
    const options *o = &t->o;
    char err[512], thr[16], shard[16];
    if (STRATA_OK != strata_config_create(&t->cfg) ||
        STRATA_OK != strata_config_read_env(t->cfg, err, sizeof(err))) {
        if (0 == t->r.rank) fprintf(stderr, PROG ": %s\n", t->cfg ? err : "out of memory");
        return 2;
    }
    /* a flag not given leaves the STRATA_* value (or the default) alone */
    int threads = o->threads;
    if (0 > threads) {
        char v[32] = "0";
        strata_config_get(t->cfg, "threads", v, sizeof v);
        threads = atoi(v);
    }
    t->threads = gpt_threads_init(threads);
    snprintf(thr, sizeof(thr), "%d", t->threads);
    snprintf(shard, sizeof(shard), "%d", o->shard);
    if (0 == threads && 1 == t->threads && 1 < sysconf(_SC_NPROCESSORS_ONLN) && 0 == t->r.rank)
        fprintf(stderr, PROG ": --threads 0: this rank may run on 1 of the machine's %ld cores, "
                "so it uses 1 thread (mpirun binds each rank to one core by default; give "
                "ranks more with mpirun --map-by slot:PE=N or --bind-to none)\n",
                sysconf(_SC_NPROCESSORS_ONLN));
    struct { const char *name, *value; } flags[32] = {
        { "threads", thr }, { "shard_size", 0 > o->shard ? NULL : shard },
        { "device_mem", o->device_mem },
        { "host_mem", o->host_mem }, { "spill_dir", o->spill_dir },
        { "act_policy", o->act_policy }, { "schedule", o->schedule },
        { "ckpt_dir", o->ckpt_dir }, { "backend", o->device },
        { "state_place", o->state_place }
    };
    int nflags = 10;
    char setbuf[16][256];
    for (int i = 0; i < o->nsets; i++) {
        snprintf(setbuf[i], sizeof(setbuf[i]), "%s", o->sets[i]);
        char *eq = strchr(setbuf[i], '=');
        *eq = '\0';
        flags[nflags].name = setbuf[i];
        flags[nflags++].value = eq + 1;
    }
    for (int i = 0; i < nflags; i++) {
        if (NULL == flags[i].value) continue;
        if (STRATA_OK != strata_config_set(t->cfg, flags[i].name, flags[i].value, err,
                                           sizeof(err))) {
            if (0 == t->r.rank) fprintf(stderr, PROG ": %s\n", err);
            return 2;
        }
    }
    return -1;
}

/* The runtime, the model as FSDP units, the trace, the stop signals and
 * the batch buffers. */
static void setup_model(trainer *t)
{
    run_t *r = &t->r;
    const options *o = &t->o;
    strata_status_t init_st = strata_init(MPI_COMM_WORLD, t->cfg, &r->ctx);
    strata_config_destroy(t->cfg);            /* the context holds a copy */
    t->cfg = NULL;
    check_all(r, "strata_init", init_st);
    if (STRATA_BF16 == o->dtype && !gpt_bf16_available() && 0 == r->rank)
        fprintf(stderr, PROG ": --dtype bf16: %s, so the bf16 parameters are widened to f32 "
                "and the matrix products run in f32\n",
#ifdef HAVE_DNNL
                "this CPU has no bf16 matrix instructions (AVX512_BF16 or AMX)"
#else
                "this build has no oneDNN (install libdnnl-dev and reconfigure)"
#endif
                );
    strata_model_opts_t mo;
    strata_model_opts_default(&mo);
    mo.lr = (float)o->lr;
    mo.beta2 = (float)o->beta2;
    mo.weight_decay = (float)o->wd;
    mo.clip_norm = (float)o->clip;
    mo.compute_dtype = o->dtype;
    mo.reduce_dtype = o->reduce_dtype;
    mo.seed = o->seed;
    gpt_dev_set_tf32(o->tf32);
    /* cuBLAS's workspace: a device-tier block, in device_mem like the rest */
    if (on_device(r)) check_setup(r, "cuBLAS workspace", gpt_dev_setup(r->ctx));
    check_setup(r, "model create", strata_model_create(r->ctx, &mo, &r->model));
    check_setup(r, "model build", gpt_fsdp_build(r->model, &o->cfg, &t->g));
    check_setup(r, "model commit", strata_model_commit(r->model));
    if (NULL != o->trace) {
        /* --trace run/t.json -> run/t.<rank>.json, written when the model goes */
        char prefix[512];
        size_t n = strlen(o->trace);
        snprintf(prefix, sizeof(prefix), "%s", o->trace);
        if (5 < n && 0 == strcmp(o->trace + n - 5, ".json")) prefix[n - 5] = '\0';
        CHECK(r, "trace", strata_model_trace(r->model, prefix));
    }

    /* again: strata_init's flight recorder took SIGTERM over (main set
     * these first) */
    stop_handlers();

    const size_t rows = (size_t)o->accum * o->batch;
    t->in = xcalloc(r, rows * o->cfg.max_seq, sizeof(int32_t));
    t->tg = xcalloc(r, rows * o->cfg.max_seq, sizeof(int32_t));
    t->bt = xcalloc(r, o->accum, sizeof(gpt_batch));
    t->loss = xcalloc(r, o->accum, sizeof(double));
}

/* The step-*.h5 files of dir, newest first, as rank 0 sees them (every
 * rank gets its list, so that all try the same files in the same order):
 * a count, names into *buf as consecutive strings. */
static int list_ckpts(run_t *r, const char *dir, char *buf, int cap)
{
    int len = 0, n = 0;
    if (0 == r->rank) {
        struct dirent **ents = NULL;
        int k = scandir(dir, &ents, NULL, alphasort);
        for (int i = k - 1; i >= 0; i--) {
            const char *nm = ents[i]->d_name;
            size_t l = strlen(nm);
            if (!strncmp(nm, "step-", 5) && l > 8 && !strcmp(nm + l - 3, ".h5") &&
                len + (int)l + 1 < cap) {
                memcpy(buf + len, nm, l + 1);
                len += (int)l + 1;
                n++;
            }
            free(ents[i]);
        }
        free(ents);
    }
    int hdr[2] = { n, len };
    MPI_Bcast(hdr, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(buf, hdr[1], MPI_CHAR, 0, MPI_COMM_WORLD);
    return hdr[0];
}

/* --resume: the newest checkpoint that loads (every file skipped is named
 * with why, once). 0: resumed or nothing to resume; 1: files, none loads;
 * 2: the newest complete one is of another configuration. */
static int resume(trainer *t)
{
    run_t *r = &t->r;
    options *o = &t->o;
    static char names[1 << 16];
    int n = list_ckpts(r, o->ckpt_dir, names, sizeof names);
    if (0 == n) {
        if (0 == r->rank) printf("no checkpoint in %s; starting from step 0\n", o->ckpt_dir);
        return 0;
    }
    const char *nm = names;
    for (int i = 0; i < n; i++, nm += strlen(nm) + 1) {
        snprintf(t->ckpt_path, sizeof t->ckpt_path, "%.700s/%.255s", o->ckpt_dir, nm);
        rng_state rs;
        char kv[NCONFIG][32];
        strata_ckpt_kv_t config[NCONFIG];
        ckpt_config(r, o, kv, config);
        strata_model_ckpt_t info = { .rng = &rs, .rng_len = sizeof(rs), .nconfig = NCONFIG,
                                     .config = config };
        strata_status_t st = strata_model_load(r->model, t->ckpt_path, &info);
        if (STRATA_ERR_CONFIG == st && 2 == o->resume) {
            /* --resume-any-shape: said, then the tensors that fit load */
            if (0 == r->rank)
                fprintf(stderr, PROG ": resume: --resume-any-shape: %s\n", strata_last_error(r->ctx));
            info.nconfig = 0;
            st = strata_model_load(r->model, t->ckpt_path, &info);
        }
        if (STRATA_ERR_CONFIG == st) {
            /* not damaged: another model's or run's; an older file would
             * only hide that, and the first save would prune it */
            if (0 == r->rank)
                fprintf(stderr, PROG ": resume: refusing %s: %s (or --resume-any-shape to load "
                        "what fits, e.g. to fine-tune); nothing was written\n", t->ckpt_path,
                        strata_last_error(r->ctx));
            t->ckpt_path[0] = '\0';
            return 2;
        }
        if (STRATA_ERR_ACCESS == st) {
            /* not damaged either: falling back to an older file would lose
             * the steps since, and the first save would prune this one */
            if (0 == r->rank)
                fprintf(stderr, PROG ": resume: %s; not falling back to an older checkpoint; "
                        "nothing was written\n", strata_last_error(r->ctx));
            t->ckpt_path[0] = '\0';
            return 1;
        }
        if (STRATA_OK != st) {
            if (0 == r->rank)
                fprintf(stderr, PROG ": resume: skipping %s: %s\n", t->ckpt_path,
                        strata_last_error(r->ctx));
            continue;
        }
        t->start = (int)info.data_pos;
        if (rs.seed != o->seed && 0 == r->rank)
            fprintf(stderr, PROG ": the checkpoint's data seed is %llu; continuing with it "
                    "(--seed %llu ignored)\n", (unsigned long long)rs.seed,
                    (unsigned long long)o->seed);
        o->seed = rs.seed;
        if (0 == r->rank) printf("resumed from %s at step %d\n", t->ckpt_path, t->start);
        return 0;
    }
    t->ckpt_path[0] = '\0';
    if (0 == r->rank)
        fprintf(stderr, PROG ": resume: %d checkpoint file%s in %s, none loads (each is named "
                "above with why); not starting from step 0 over them: move them away to start "
                "afresh\n", n, 1 == n ? "" : "s", o->ckpt_dir);
    return 1;
}

/* ------------------------------------------------------------ the step --- */

/* This rank's rows of every micro-batch of `step`; the number of target
 * tokens among them. */
static float load_batch(trainer *t, int step)
{
    const options *o = &t->o;
    const int B = o->batch, T = o->cfg.max_seq;
    float cnt = 0;
    for (int m = 0; m < o->accum; m++) {
        int64_t row0 = ((int64_t)m * t->r.W + t->r.rank) * B;
        int32_t *in = t->in + (size_t)m * B * T, *tg = t->tg + (size_t)m * B * T;
        CHECK(&t->r, "data", gpt_data_rows(t->data, GPT_SPLIT_TRAIN, o->seed, step, row0, B, T,
                                           in, tg));
        for (int i = 0; i < B * T; i++) cnt += 0 <= tg[i];
    }
    return cnt;
}

/* The first forward refused the job (on every rank: the plan is agreed):
 * said once, and the job ends with its own status. A tier full that is no
 * refusal goes on to fail(). */
static void refused(trainer *t)
{
    run_t *r = &t->r;
    strata_admission_t a = { .size = sizeof a };
    if (STRATA_OK != strata_model_admission(r->model, &a) || !a.refused) return;
    char pol[512] = "";
    strata_config_get(strata_get_config(r->ctx), "act_policy", pol, sizeof pol);
    if (0 == r->rank) report_refusal(&t->o, &a, pol, strata_last_error(r->ctx));
    strata_model_destroy(r->model);
    strata_finalize(r->ctx);
    MPI_Finalize();
    exit(TRAIN_EXIT_REFUSED);
}

/* One optimizer step: every micro-batch forward and backward, then the
 * update; and what it measured. */
static step_report train_step(trainer *t, int step)
{
    run_t *r = &t->r;
    const options *o = &t->o;
    const int B = o->batch, M = o->accum, T = o->cfg.max_seq;
    double t0 = now();
    float cnt = load_batch(t, step);
    /* each rank differentiates its micro-batch's loss scaled so that the
     * runtime's average over ranks and micro-batches is the gradient of
     * the mean over every token of the global batch */
    sum_all(r, &cnt, 1);
    float scale = (float)((double)r->W * M / (0 < cnt ? cnt : 1));
    step_report s = { .done = step + 1, .lr = lr_at(o, step), .ms = STRATA_MODEL_STATS_INIT };
    CHECK(r, "set_lr", strata_model_set_lr(r->model, (float)s.lr));
    /* a checkpoint written in the background that failed fails this on
     * every rank alike: said once, exit 1, as a synchronous save's failure */
    if (r->writing) check_all(r, "step_begin", strata_model_step_begin(r->model, M));
    else CHECK(r, "step_begin", strata_model_step_begin(r->model, M));
    double lsum = 0, *loss = t->loss;
    for (int m = 0; m < M; m++) {
        t->bt[m] = (gpt_batch){ .B = B, .T = T, .targets = t->tg + (size_t)m * B * T,
                                .grad_scale = scale };
        const void *out;
        size_t ob;
        strata_status_t st = strata_model_forward(r->model, t->in + (size_t)m * B * T,
                                                  (size_t)B * T * sizeof(int32_t), &t->bt[m],
                                                  &out, &ob);
        if (STRATA_ERR_TIER_FULL == st) refused(t);
        CHECK(r, "forward", st);
        /* cuda: kept on the device, read once after the step */
        if (on_device(r)) CHECK(r, "loss", gpt_dev_loss_keep(m, out));
        else loss[m] = *(const double *)out;
        CHECK(r, "backward", strata_model_backward(r->model, NULL, 0));
    }
    CHECK(r, "step_end", strata_model_step_end(r->model));
    if (on_device(r)) CHECK(r, "loss", gpt_dev_loss_fetch(loss, M));
    for (int m = 0; m < M; m++) lsum += loss[m];   /* micro-batch order, as before */
    float red[2] = { (float)lsum, 0 != stop_signal || s.done == o->stop_at };
    sum_all(r, red, 2);
    s.loss = red[0] / (0 < cnt ? cnt : 1);
    s.stop = 0 != red[1];
    s.dt = now() - t0;
    for (int k = 0; k < 3; k++) {
        strata_tier_usage_t u;
        if (STRATA_OK == strata_tier_usage(r->ctx, (strata_tier_t)k, &u)) s.peak[k] = u.peak;
    }
    CHECK(r, "stats", strata_model_stats(r->model, &s.ms));
    return s;
}

/* Held-out accuracy or validation loss in the middle of the run. */
static void evaluate(trainer *t, int done)
{
    if (gpt_data_is_addition(t->data)) {
        double acc = addition_accuracy(&t->r, &t->o);
        if (0 == t->r.rank)
            printf("step %5d  held-out accuracy %.1f%% (%d sums)\n", done, 100 * acc, t->o.eval_n);
    } else {
        double vl = validation_loss(&t->r, &t->o, t->data);
        if (0 == t->r.rank) printf("step %5d  val loss %.4f\n", done, vl);
    }
    fflush(stdout);
}

/* whether something done every `every` steps is due after step `done`
 * (not at the last step: the end does it anyway) */
static int due(int every, int done, int steps)
{
    return 0 < every && 0 == done % every && done < steps;
}

/* ---------------------------------------------------------- the training --- */

/* A non-finite loss or gradient norm at a step: said once (rank 0), with
 * the unit whose gradient is not finite where the runtime found one. */
static void report_nonfinite(trainer *t, const step_report *s)
{
    char unit[160] = "";
    int ui = s->ms.grad_nonfinite_unit;
    strata_unit_t *u = 0 <= ui ? strata_model_unit(t->r.model, ui) : NULL;
    if (u) snprintf(unit, sizeof(unit), " (first in unit %d, %s)", ui, strata_unit_name(u));
    fprintf(stderr, PROG ": step %d: the %s is not finite (loss %g, gradient norm %g)%s; "
            "stopping without a checkpoint%s%s\n", s->done,
            isfinite(s->loss) ? "gradient norm" : "loss", s->loss, s->ms.grad_norm, unit,
            t->ckpt_path[0] ? ": the last good one stays " : "", t->ckpt_path);
}

/* Steps from t->start to --steps or a stop request; then a checkpoint, and
 * the summary if the run is finished. */
static int train(trainer *t)
{
    const options *o = &t->o;
    const int rank = t->r.rank, W = t->r.W;
    run_stats rs = { .start = t->start, .first_loss = NAN, .last = { .loss = NAN },
                     .tokens_step = (double)W * o->accum * o->batch * o->cfg.max_seq,
                     .flops_tok = gpt_flops_per_token(&o->cfg, o->cfg.max_seq) };
    if (0 == rank) report_banner(o, W, t->threads, strata_get_config(t->r.ctx));
    step_report s = rs.last;
    int step;
    for (step = t->start; step < o->steps && !s.stop; step++) {
        s = train_step(t, step);
        report_add(&rs, &s);
        if (0 == rank) report_step(o, &rs, &s);
        if (!isfinite(s.loss) || !isfinite(s.ms.grad_norm)) {
            if (0 == rank) report_nonfinite(t, &s);
            return 3;
        }
        if (!s.stop && due(o->eval_every, s.done, o->steps)) evaluate(t, s.done);
        if (!s.stop && NULL != o->ckpt_dir && due(o->ckpt_every, s.done, o->steps))
            save_ckpt(&t->r, o, s.done, t->ckpt_path, sizeof(t->ckpt_path));
    }
    const int steps_done = step, saved = NULL != o->ckpt_dir && steps_done > t->start;
    /* the device as the last step left it (cuda): the final JSON's device_* */
    strata_device_memory_t dev;
    const int have_dev = STRATA_OK == strata_device_memory(t->r.ctx, &dev);
    if (saved) save_ckpt(&t->r, o, steps_done, t->ckpt_path, sizeof(t->ckpt_path));
    if (NULL != o->ckpt_dir) ckpt_wait(&t->r, o);   /* the last one is on disk before the summary */

    if (s.stop) {       /* no summary: the run is not finished */
        char why[64];
        if (0 != stop_signal) snprintf(why, sizeof(why), "%s received", signal_name(stop_signal));
        else snprintf(why, sizeof(why), "%s", steps_done == o->stop_at ? "--stop-at" :
                      "a stop signal reached another rank");
        if (0 == rank) report_stop(o, steps_done, why, NULL != o->ckpt_dir ? t->ckpt_path : NULL);
        return 0;
    }
    run_result res = { .steps_done = steps_done, .addition = gpt_data_is_addition(t->data),
                       .param_hash = param_hash(&t->r), .ckpt = saved ? t->ckpt_path : NULL,
                       .recomputed = gpt_fsdp_recomputed(t->g), .have_dev = have_dev };
    if (have_dev) res.dev = dev;
    res.metric = res.addition ? addition_accuracy(&t->r, o) : validation_loss(&t->r, o, t->data);
    if (0 == rank) report_summary(o, &rs, &res);
    return 0;
}

int main(int argc, char **argv)
{
    /* A stop request from the first instant is a stop, not death: blocked
     * (a blocked signal stays pending across the re-exec) until the
     * handlers are in, then delivered to them on the signal thread; the
     * job stops after its first step with a checkpoint. */
    sigset_t stops;
    job_signals(&stops);
    pthread_sigmask(SIG_BLOCK, &stops, NULL);
    gpt_threads_reexec(argv);
    stop_handlers();
    signal_thread_start();
    trainer t;
    memset(&t, 0, sizeof(t));
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t.r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.r.W);

    int rc = setup_options(&t, argc, argv);
    if (0 > rc) rc = setup_config(&t);
    int locked = 0;
    if (0 > rc) {
        setup_model(&t);
        if (NULL != t.o.ckpt_dir) {
            /* a writable directory that no other job uses, checked before
             * any step: not found out at the first save */
            if (STRATA_OK == strata_ckpt_dir_lock(t.r.ctx, t.o.ckpt_dir)) {
                locked = 1;
                t.r.locked = t.o.ckpt_dir;
            }
            else {
                if (0 == t.r.rank) fprintf(stderr, PROG ": %s\n", strata_last_error(t.r.ctx));
                rc = 2;
            }
        }
        if (0 > rc && t.o.resume) {
            int rrc = resume(&t);
            if (rrc) rc = rrc;
        }
        if (0 > rc) rc = train(&t);
    }
    if (locked && STRATA_OK != strata_ckpt_dir_unlock(t.r.ctx, t.o.ckpt_dir))
        fprintf(stderr, PROG ": %s\n", strata_last_error(t.r.ctx));
    free(t.in);
    free(t.tg);
    free(t.bt);
    free(t.loss);
    strata_model_destroy(t.r.model);
    gpt_dev_teardown();
    gpt_fsdp_destroy(t.g);
    gpt_data_destroy(t.data);
    strata_config_destroy(t.cfg);     /* set only when setup_config refused */
    strata_finalize(t.r.ctx);
    MPI_Finalize();
    return rc;
}
