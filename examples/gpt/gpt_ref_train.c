/*
 * gpt_ref_train.c - the whole GPT model on one process, trained with plain
 * AdamW: no sharding, no offload, every activation kept. It exists to check
 * that the model learns (and how fast it computes) independently of the
 * FSDP runtime, and as the reference the runtime's losses can be compared
 * against. Not installed.
 *
 *   gpt_ref_train [--layers 4 --dim 128 --heads 4 --seq 16|64 --batch 8]
 *                 [--steps 300 --lr 1e-3 --seed 1 --threads N]
 *                 [--data FILE] [--eval-every N --eval-n 500]
 *
 * Prints one line per --log-every steps and, at the end, either
 * "held-out accuracy: NN.N%" (the default addition task) or
 * "val loss: X.XXXX" (--data FILE).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/gpt/gpt.h"

/* ------------------------------------------------------------ options --- */

typedef struct {
    gpt_config cfg;
    int        batch, steps, threads, log_every, eval_every, eval_n, val_batches;
    int        warmup, seq_given;
    double     lr, wd, clip;
    uint64_t   seed;
    const char *data;
} options;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: gpt_ref_train [options]\n"
        "  --layers N      transformer blocks (4)\n"
        "  --dim N         model width (128)\n"
        "  --heads N       attention heads (4)\n"
        "  --seq N         sequence length (addition: 16, one example per row;\n"
        "                  --data: 64)\n"
        "  --batch N       rows per step (8)\n"
        "  --steps N       optimizer steps (300)\n"
        "  --lr X          peak AdamW learning rate (1e-3); linear warmup, cosine to lr/10\n"
        "  --warmup N      warmup steps (steps/10, at most 100)\n"
        "  --wd X          weight decay on matrices (0.1)\n"
        "  --clip X        global gradient norm clip, 0 = off (1.0)\n"
        "  --seed N        initialisation and data seed (1)\n"
        "  --threads N     kernel threads (0 = the cores this process may use)\n"
        "  --data FILE     train on FILE at byte level (last 10%% validates);\n"
        "                  default: the generated addition task\n"
        "  --eval-every N  evaluate every N steps (0 = only at the end)\n"
        "  --eval-n N      held-out sums decoded per evaluation (500)\n"
        "  --val-batches N validation batches for --data (20)\n"
        "  --log-every N   progress line every N steps (10)\n");
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){ .cfg = { 4, 128, 4, 0 }, .batch = 8, .steps = 300, .threads = 0,
                    .log_every = 10, .eval_every = 0, .eval_n = 500, .val_batches = 20,
                    .warmup = -1, .lr = 1e-3, .wd = 0.1, .clip = 1.0, .seed = 1, .data = NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (0 == strcmp(a, "--help") || 0 == strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (NULL == v) {
            fprintf(stderr, "gpt_ref_train: %s needs a value (see --help)\n", a);
            return -1;
        }
        i++;
        if      (0 == strcmp(a, "--layers"))      o->cfg.n_layer = atoi(v);
        else if (0 == strcmp(a, "--dim"))         o->cfg.dim = atoi(v);
        else if (0 == strcmp(a, "--heads"))       o->cfg.n_head = atoi(v);
        else if (0 == strcmp(a, "--seq"))         o->cfg.max_seq = atoi(v), o->seq_given = 1;
        else if (0 == strcmp(a, "--batch"))       o->batch = atoi(v);
        else if (0 == strcmp(a, "--steps"))       o->steps = atoi(v);
        else if (0 == strcmp(a, "--lr"))          o->lr = atof(v);
        else if (0 == strcmp(a, "--warmup"))      o->warmup = atoi(v);
        else if (0 == strcmp(a, "--wd"))          o->wd = atof(v);
        else if (0 == strcmp(a, "--clip"))        o->clip = atof(v);
        else if (0 == strcmp(a, "--seed"))        o->seed = strtoull(v, NULL, 10);
        else if (0 == strcmp(a, "--threads"))     o->threads = atoi(v);
        else if (0 == strcmp(a, "--data"))        o->data = v;
        else if (0 == strcmp(a, "--eval-every"))  o->eval_every = atoi(v);
        else if (0 == strcmp(a, "--eval-n"))      o->eval_n = atoi(v);
        else if (0 == strcmp(a, "--val-batches")) o->val_batches = atoi(v);
        else if (0 == strcmp(a, "--log-every"))   o->log_every = atoi(v);
        else {
            fprintf(stderr, "gpt_ref_train: unknown option %s (see --help)\n", a);
            return -1;
        }
    }
    if (0 > o->warmup)
        o->warmup = o->steps / 10 < 100 ? o->steps / 10 : 100;
    if (1 > o->log_every)
        o->log_every = 1;
    return 0;
}

/* -------------------------------------------------------------- model --- */

#define MAXU 258   /* units: embed + up to 256 blocks + head */

typedef struct {
    gpt_config     cfg;
    int            B, T;            /* allocation shape: batch x max_seq */
    int            nu, np[MAXU];
    gpt_param_info info[MAXU][GPT_MAX_PARAMS];
    float         *param[MAXU][GPT_MAX_PARAMS], *grad[MAXU][GPT_MAX_PARAMS];
    float         *m[MAXU][GPT_MAX_PARAMS], *v[MAXU][GPT_MAX_PARAMS];
    float         *flat;            /* params | grads | m | v, one allocation */
    size_t         nparams;
    gpt_saves      saves[MAXU];
    float         *act;             /* every save of every block */
    float         *x;               /* residual stream: (L+1) x B*T*C */
    float         *dx0, *dx1, *logits;
    gpt_workspace  ws;
} model;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (NULL == p) {
        fprintf(stderr, "gpt_ref_train: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

static void model_init(model *md, const gpt_config *cfg, int B, uint64_t seed)
{
    memset(md, 0, sizeof(*md));
    md->cfg = *cfg;
    md->B = B;
    md->T = cfg->max_seq;
    md->nu = gpt_num_units(cfg);
    md->nparams = gpt_num_params(cfg);
    md->flat = xcalloc(4 * md->nparams, sizeof(float));
    size_t off = 0;
    for (int u = 0; u < md->nu; u++) {
        md->np[u] = gpt_unit_params(cfg, u, md->info[u]);
        for (int i = 0; i < md->np[u]; i++) {
            size_t n = md->info[u][i].numel;
            md->param[u][i] = md->flat + off;
            md->grad[u][i] = md->flat + md->nparams + off;
            md->m[u][i] = md->flat + 2 * md->nparams + off;
            md->v[u][i] = md->flat + 3 * md->nparams + off;
            gpt_param_init(&md->info[u][i], seed, u, i, 0, n, md->param[u][i]);
            off += n;
        }
    }
    size_t sz[GPT_MAX_SAVES], per = 0;
    gpt_block_save_sizes(cfg, B, md->T, sz);
    for (int s = 0; s < GPT_MAX_SAVES; s++)
        per += sz[s];
    md->act = xcalloc(per * cfg->n_layer, sizeof(float));
    for (int l = 0; l < cfg->n_layer; l++) {
        float *p = md->act + per * l;
        for (int s = 0; s < GPT_MAX_SAVES; s++) {
            md->saves[l].p[s] = p;
            p += sz[s];
        }
    }
    size_t NC = (size_t)B * md->T * cfg->dim;
    md->x = xcalloc(NC * (cfg->n_layer + 1), sizeof(float));
    md->dx0 = xcalloc(NC, sizeof(float));
    md->dx1 = xcalloc(NC, sizeof(float));
    md->logits = xcalloc((size_t)B * md->T * GPT_VOCAB, sizeof(float));
    md->ws.n = gpt_workspace_floats(cfg, B, md->T);
    md->ws.buf = xcalloc(md->ws.n, sizeof(float));
}

static void model_free(model *md)
{
    free(md->flat);
    free(md->act);
    free(md->x);
    free(md->dx0);
    free(md->dx1);
    free(md->logits);
    free(md->ws.buf);
}

static void check(strata_status_t st, const char *what)
{
    if (STRATA_OK != st) {
        fprintf(stderr, "gpt_ref_train: %s failed: %s\n", what, strata_strerror(st));
        exit(1);
    }
}

/* One forward (and, if grad_scale > 0, backward) over B rows of T tokens.
 * Returns the loss sum over positions with a target; logits are kept in
 * md->logits when want_logits. */
static double model_step(model *md, int B, int T, const int32_t *in, const int32_t *tg,
                         float grad_scale, int want_logits)
{
    const gpt_config *cfg = &md->cfg;
    const int L = cfg->n_layer;
    const size_t NC = (size_t)B * T * cfg->dim;
    const size_t stride = (size_t)md->B * md->T * cfg->dim;
    double loss = 0.0;
    int backward = 0 < grad_scale;

    check(gpt_embed_forward(cfg, B, T, (const float *const *)md->param[0], in, md->x), "embed");
    for (int l = 0; l < L; l++)
        check(gpt_block_forward(cfg, B, T, (const float *const *)md->param[l + 1],
                                md->x + stride * l, md->x + stride * (l + 1), &md->saves[l],
                                &md->ws), "block forward");
    check(gpt_head_forward(cfg, B, T, (const float *const *)md->param[L + 1], md->x + stride * L,
                           tg, grad_scale, NULL == tg ? NULL : &loss,
                           backward ? md->dx0 : NULL, backward ? md->grad[L + 1] : NULL,
                           want_logits ? md->logits : NULL, &md->ws), "head");
    if (!backward)
        return loss;
    float *d = md->dx0, *e = md->dx1;
    for (int l = L - 1; l >= 0; l--) {
        check(gpt_block_backward(cfg, B, T, (const float *const *)md->param[l + 1], &md->saves[l],
                                 d, e, md->grad[l + 1], &md->ws), "block backward");
        float *t = d; d = e; e = t;
    }
    check(gpt_embed_backward(cfg, B, T, in, d, md->grad[0]), "embed backward");
    (void)NC;
    return loss;
}

static void adamw(model *md, int step, double lr, double wd, double clip)
{
    const double b1 = 0.9, b2 = 0.95, eps = 1e-8;
    double norm2 = 0.0;
    float *g = md->flat + md->nparams;
    for (size_t i = 0; i < md->nparams; i++)
        norm2 += (double)g[i] * g[i];
    double norm = sqrt(norm2), gs = 1.0;
    if (0 < clip && norm > clip)
        gs = clip / norm;
    /* float in the loop so it vectorises; the scalars are exact enough */
    const float fb1 = (float)b1, fb2 = (float)b2, flr = (float)lr, fgs = (float)gs;
    const float ic1 = (float)(1.0 / (1.0 - pow(b1, step)));
    const float ic2 = (float)(1.0 / (1.0 - pow(b2, step)));
    for (int u = 0; u < md->nu; u++)
        for (int i = 0; i < md->np[u]; i++) {
            float *p = md->param[u][i], *gr = md->grad[u][i], *m = md->m[u][i], *v = md->v[u][i];
            float dec = md->info[u][i].decay ? (float)(lr * wd) : 0.0f;
            for (size_t k = 0; k < md->info[u][i].numel; k++) {
                float gk = gr[k] * fgs;
                m[k] = fb1 * m[k] + (1.0f - fb1) * gk;
                v[k] = fb2 * v[k] + (1.0f - fb2) * gk * gk;
                p[k] -= flr * (m[k] * ic1) / (sqrtf(v[k] * ic2) + (float)eps) + dec * p[k];
            }
        }
}

static double lr_at(const options *o, int step)    /* step counts from 0 */
{
    if (step < o->warmup)
        return o->lr * (step + 1) / o->warmup;
    double t = (double)(step - o->warmup) / (o->steps - o->warmup > 0 ? o->steps - o->warmup : 1);
    return o->lr * (0.1 + 0.9 * 0.5 * (1.0 + cos(M_PI * t)));
}

/* ---------------------------------------------------------- evaluation --- */

/* Exact-match accuracy of greedily decoded answers (every byte,
 * gpt_add_correct) over the first n held-out
 * pairs: every prompt is 8 bytes, so a batch decodes in lockstep. */
static double addition_accuracy(model *md, int n)
{
    int *a = xcalloc(n, sizeof(int)), *b = xcalloc(n, sizeof(int));
    n = (int)gpt_add_heldout_pairs(n, a, b);
    int32_t *tok = xcalloc((size_t)md->B * md->T, sizeof(int32_t));
    int right = 0;
    for (int i0 = 0; i0 < n; i0 += md->B) {
        int B = n - i0 < md->B ? n - i0 : md->B;
        const int P = GPT_ADD_PROMPT, W = P + GPT_ADD_ANSWER;
        char ex[GPT_ADD_LEN];
        for (int r = 0; r < B; r++) {
            gpt_add_format(a[i0 + r], b[i0 + r], ex);
            for (int t = 0; t < P; t++)
                tok[(size_t)r * W + t] = (unsigned char)ex[t];
        }
        /* rows are W apart; decode position T-1 of the first T tokens */
        for (int T = P; T < W; T++) {
            int32_t *cur = xcalloc((size_t)B * T, sizeof(int32_t));
            for (int r = 0; r < B; r++)
                memcpy(cur + (size_t)r * T, tok + (size_t)r * W, sizeof(int32_t) * T);
            model_step(md, B, T, cur, NULL, 0.0f, 1);
            for (int r = 0; r < B; r++) {
                const float *lg = md->logits + ((size_t)r * T + T - 1) * GPT_VOCAB;
                int best = 0;
                for (int j = 1; j < GPT_VOCAB; j++)
                    best = lg[j] > lg[best] ? j : best;
                tok[(size_t)r * W + T] = best;
            }
            free(cur);
        }
        for (int r = 0; r < B; r++)
            right += gpt_add_correct(a[i0 + r], b[i0 + r], tok + (size_t)r * W + P);
    }
    free(tok);
    free(a);
    free(b);
    return 0 < n ? (double)right / n : 0.0;
}

static double val_loss(model *md, const gpt_data *data, const options *o)
{
    const int B = md->B, T = md->T;
    int32_t *in = xcalloc((size_t)B * T, sizeof(int32_t)), *tg = xcalloc((size_t)B * T, sizeof(int32_t));
    double sum = 0.0;
    long count = 0;
    for (int k = 0; k < o->val_batches; k++) {
        check(gpt_data_rows(data, GPT_SPLIT_VAL, o->seed, k, 0, B, T, in, tg), "data");
        sum += model_step(md, B, T, in, tg, 0.0f, 0);
        for (int i = 0; i < B * T; i++)
            count += 0 <= tg[i];
    }
    free(in);
    free(tg);
    return sum / (0 < count ? count : 1);
}

static void evaluate(model *md, const gpt_data *data, const options *o, int step, int final)
{
    if (gpt_data_is_addition(data)) {
        double acc = addition_accuracy(md, o->eval_n);
        if (final)
            printf("held-out accuracy: %.1f%%\n", 100.0 * acc);
        else
            printf("step %5d  held-out accuracy %.1f%% (%d sums)\n", step, 100.0 * acc, o->eval_n);
    } else {
        double vl = val_loss(md, data, o);
        if (final)
            printf("val loss: %.4f\n", vl);
        else
            printf("step %5d  val loss %.4f\n", step, vl);
    }
    fflush(stdout);
}

/* --------------------------------------------------------------- main --- */

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Wall time is what a user waits; CPU time of the process is what the
 * compute costs when other processes share the cores (with one thread the
 * two agree on an idle machine). Both are reported. */
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv)
{
    gpt_threads_reexec(argv);
    options o;
    char why[256];
    if (0 != parse(argc, argv, &o))
        return 2;
    gpt_data *data = NULL;
    if (!o.seq_given)           /* the task's own length, else 64 */
        o.cfg.max_seq = NULL == o.data ? GPT_ADD_LEN : 64;
    if (STRATA_OK != gpt_shape_validate(&o.cfg, o.batch, o.cfg.max_seq, why, sizeof(why)) ||
        1 > o.steps) {
        fprintf(stderr, "gpt_ref_train: %s\n", 1 > o.steps ? "steps must be at least 1" : why);
        return 2;
    }
    if (NULL == o.data && o.cfg.max_seq < GPT_ADD_PROMPT + GPT_ADD_ANSWER) {
        fprintf(stderr, "gpt_ref_train: the addition task needs --seq of at least %d "
                "(a prompt and its answer)\n", GPT_ADD_PROMPT + GPT_ADD_ANSWER);
        return 2;
    }
    if (NULL != o.data) {
        if (STRATA_OK != gpt_data_text(o.data, 0.1, o.cfg.max_seq, &data, why, sizeof(why))) {
            fprintf(stderr, "gpt_ref_train: %s\n", why);
            return 1;
        }
    } else {
        check(gpt_data_addition(&data), "addition data");
    }
    int threads = gpt_threads_init(o.threads);
    model *md = xcalloc(1, sizeof(model));
    model_init(md, &o.cfg, o.batch, o.seed);
    const int B = o.batch, T = o.cfg.max_seq;
    printf("gpt_ref_train: layers %d dim %d heads %d seq %d batch %d, %zu parameters, "
           "%d thread%s, data %s\n", o.cfg.n_layer, o.cfg.dim, o.cfg.n_head, T, B,
           md->nparams, threads, 1 == threads ? "" : "s", NULL != o.data ? o.data : "addition");

    int32_t *in = xcalloc((size_t)B * T, sizeof(int32_t)), *tg = xcalloc((size_t)B * T, sizeof(int32_t));
    const double flops_tok = gpt_flops_per_token(&o.cfg, T);
    double t_total = 0.0, c_total = 0.0, first_loss = 0.0, loss = 0.0;
    int timed = 0;
    for (int step = 0; step < o.steps; step++) {
        check(gpt_data_rows(data, GPT_SPLIT_TRAIN, o.seed, step, 0, B, T, in, tg), "data");
        long count = 0;
        for (int i = 0; i < B * T; i++)
            count += 0 <= tg[i];
        double t0 = now(), c0 = cpu_now();
        memset(md->flat + md->nparams, 0, sizeof(float) * md->nparams);
        double sum = model_step(md, B, T, in, tg, 1.0f / (0 < count ? count : 1), 0);
        double lr = lr_at(&o, step);
        adamw(md, step + 1, lr, o.wd, o.clip);
        double dt = now() - t0, dc = cpu_now() - c0;
        loss = sum / (0 < count ? count : 1);
        if (0 == step)
            first_loss = loss;
        if (0 < step) {        /* the first step pays for page faults and BLAS start */
            t_total += dt;
            c_total += dc;
            timed++;
        }
        if (0 == step % o.log_every || step == o.steps - 1) {
            printf("step %5d/%d  loss %.4f  lr %.2e  %8.0f tok/s  %6.2f GFLOP/s  %7.1f ms\n",
                   step + 1, o.steps, loss, lr, B * T / dt, flops_tok * B * T / dt / 1e9,
                   1e3 * dt);
            fflush(stdout);
        }
        if (0 < o.eval_every && 0 == (step + 1) % o.eval_every && step + 1 < o.steps)
            evaluate(md, data, &o, step + 1, 0);
    }
    if (0 < timed) {
        printf("summary: loss %.4f -> %.4f, %.0f tok/s, %.2f GFLOP/s, %.1f ms/step "
               "(wall, mean over steps 2..%d)\n", first_loss, loss, timed * (double)B * T / t_total,
               flops_tok * timed * B * T / t_total / 1e9, 1e3 * t_total / timed, o.steps);
        printf("summary: %.0f tok/s, %.2f GFLOP/s per CPU-second of this process, "
               "%.1f CPU-ms/step (%d thread%s)\n", timed * (double)B * T / c_total,
               flops_tok * timed * B * T / c_total / 1e9, 1e3 * c_total / timed, threads,
               1 == threads ? "" : "s");
    }
    evaluate(md, data, &o, o.steps, 1);

    free(in);
    free(tg);
    model_free(md);
    free(md);
    gpt_data_destroy(data);
    return 0;
}
