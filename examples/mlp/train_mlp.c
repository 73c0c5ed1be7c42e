/*
 * train_mlp.c - examples/mlp's model (mlp_model.c) trained the way a real
 * program does, after mlp.c, the smallest first read:
 *
 *   - its units' backwards checked against their forwards first
 *     (strata_unit_gradcheck, --gradcheck);
 *   - checkpoints saved every --save-every steps and at the end
 *     (strata_model_save into --ckpt DIR), and --resume continuing from
 *     DIR's newest (strata_ckpt_find_latest, strata_model_load) on any
 *     number of ranks;
 *   - evaluation on held-out samples (strata_model_eval);
 *   - an activation policy under a device budget (--policy, --device-mem):
 *     the budget each needs is printed after the first step;
 *   - the model hash, the same for any run that trains the same values.
 *
 *     mpirun -np 4 examples/mlp/train_mlp --steps 40 --ckpt /tmp/mlp-ckpt
 *     mpirun -np 2 examples/mlp/train_mlp --steps 60 --ckpt /tmp/mlp-ckpt --resume
 *
 * The global batch is --batch samples per rank times the ranks: a run on
 * 1 rank with --batch 8 and one on 4 ranks with --batch 2 see the same
 * samples and print the same losses (to float rounding: the ranks sum
 * gradients in another order). The parameters resumed from a checkpoint
 * are bitwise those saved, whatever the ranks.
 */
#include "config.h"
#include "mlp_model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELD_OUT_SEED 0x5eedull   /* held-out samples: another stream than training's */

typedef struct {
    int layers, width, batch, steps, save_every, eval_every, eval_n, print_every, gradcheck;
    unsigned long long seed;
    float lr;
    const char *ckpt, *policy, *device_mem;
    int resume;
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N train_mlp [options]\n"
        "  --layers L        units (layers), default 4\n"
        "  --width D         features per layer, default 32\n"
        "  --batch B         samples per rank per step, default 8\n"
        "  --steps K         train until step K, default 40\n"
        "  --lr LR           AdamW learning rate, default 3e-3\n"
        "  --seed N          parameter and data seed, default 1234\n"
        "  --ckpt DIR        save checkpoints into DIR\n"
        "  --save-every K    and every K steps (default: only at the end)\n"
        "  --resume          first load DIR's newest checkpoint and go on from its step\n"
        "  --eval-every K    held-out loss every K steps and at the end, default 10\n"
        "  --eval-n N        held-out samples, default 64\n"
        "  --policy P        activation policy, e.g. \"pre=host\" or \"auto\"\n"
        "  --device-mem SZ   device budget, e.g. 256k (the option device_mem)\n"
        "  --gradcheck       check every unit's backward before training\n"
        "  --print-every K   training loss every K steps, default 10\n");
}

static int parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){ .layers = 4, .width = 32, .batch = 8, .steps = 40, .eval_every = 10,
                      .eval_n = 64, .print_every = 10, .seed = 1234, .lr = 3e-3f };
    static const struct option longopts[] = {
        { "layers", 1, NULL, 'l' }, { "width", 1, NULL, 'w' }, { "batch", 1, NULL, 'b' },
        { "steps", 1, NULL, 's' }, { "lr", 1, NULL, 'r' }, { "seed", 1, NULL, 'e' },
        { "ckpt", 1, NULL, 'c' }, { "save-every", 1, NULL, 'S' }, { "resume", 0, NULL, 'R' },
        { "eval-every", 1, NULL, 'E' }, { "eval-n", 1, NULL, 'n' }, { "policy", 1, NULL, 'p' },
        { "device-mem", 1, NULL, 'd' }, { "gradcheck", 0, NULL, 'g' },
        { "print-every", 1, NULL, 'P' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while (-1 != (c = getopt_long(argc, argv, "h", longopts, NULL))) {
        switch (c) {
        case 'l': o->layers = atoi(optarg); break;
        case 'w': o->width = atoi(optarg); break;
        case 'b': o->batch = atoi(optarg); break;
        case 's': o->steps = atoi(optarg); break;
        case 'r': o->lr = strtof(optarg, NULL); break;
        case 'e': o->seed = strtoull(optarg, NULL, 0); break;
        case 'c': o->ckpt = optarg; break;
        case 'S': o->save_every = atoi(optarg); break;
        case 'R': o->resume = 1; break;
        case 'E': o->eval_every = atoi(optarg); break;
        case 'n': o->eval_n = atoi(optarg); break;
        case 'p': o->policy = optarg; break;
        case 'd': o->device_mem = optarg; break;
        case 'g': o->gradcheck = 1; break;
        case 'P': o->print_every = atoi(optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (o->layers < 1 || o->layers > MLP_MAX_LAYERS || o->width < 1 || o->batch < 1 ||
        o->steps < 0 || o->eval_n < 1 || o->print_every < 1 || (o->resume && !o->ckpt)) {
        fprintf(stderr, "train_mlp: bad option value (see --help; --resume needs --ckpt)\n");
        return 2;
    }
    return 0;
}

/* FNV-1a over the f32 bytes of every parameter, units and parameters in
 * order: equal for equal values, whatever the ranks. Collective. */
static strata_status_t model_hash(strata_model_t *m, unsigned long long *hash_p)
{
    unsigned long long h = 0xcbf29ce484222325ull;
    strata_status_t st = STRATA_OK;
    for (int u = 0; STRATA_OK == st && u < strata_model_unit_count(m); u++) {
        strata_unit_t *unit = strata_model_unit(m, u);
        for (int i = 0; STRATA_OK == st && i < strata_unit_param_count(unit); i++) {
            size_t numel;
            st = strata_unit_param_info(unit, i, NULL, &numel, NULL, NULL);
            float *v = STRATA_OK == st ? malloc(numel * sizeof *v) : NULL;
            if (STRATA_OK == st && !v) st = STRATA_ERR_NOMEM;
            if (STRATA_OK == st) st = strata_unit_read_param(unit, i, v, numel);
            const unsigned char *p = (const unsigned char *)v;
            for (size_t k = 0; STRATA_OK == st && k < numel * sizeof *v; k++)
                h = (h ^ p[k]) * 0x100000001b3ull;
            free(v);
        }
    }
    if (STRATA_OK == st) *hash_p = h;
    return st;
}

/* Mean squared error of the model on the held-out samples, batch rows at
 * a time. strata_model_eval is collective, so every rank evaluates them
 * all (and gets the same answer). */
static strata_status_t evaluate(strata_model_t *m, const options_t *o, double *loss_p)
{
    const size_t n = (size_t)o->batch * o->width;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    strata_status_t st = x && y ? STRATA_OK : STRATA_ERR_NOMEM;
    double sum = 0;
    for (int first = 0; STRATA_OK == st && first < o->eval_n; first += o->batch) {
        const int rows = o->eval_n - first < o->batch ? o->eval_n - first : o->batch;
        const float *out;
        size_t bytes;
        mlp_data(o->seed ^ HELD_OUT_SEED, (uint64_t)first, rows, o->width, x, y);
        st = strata_model_eval(m, x, (size_t)rows * o->width * sizeof *x, NULL,
                               (const void **)&out, &bytes);
        for (size_t i = 0; STRATA_OK == st && i < (size_t)rows * o->width; i++)
            sum += (double)(out[i] - y[i]) * (out[i] - y[i]);
    }
    free(x);
    free(y);
    if (STRATA_OK == st) *loss_p = sum / ((double)o->eval_n * o->width);
    return st;
}

/* Every unit's backward against its forward, on one held-out batch */
static strata_status_t gradcheck(strata_model_t *m, const options_t *o, int rank)
{
    const size_t n = (size_t)o->batch * o->width;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    strata_status_t st = x && y ? STRATA_OK : STRATA_ERR_NOMEM;
    if (STRATA_OK == st) mlp_data(o->seed ^ HELD_OUT_SEED, 0, o->batch, o->width, x, y);
    for (int u = 0; STRATA_OK == st && u < strata_model_unit_count(m); u++) {
        strata_unit_t *unit = strata_model_unit(m, u);
        strata_gradcheck_t rep = STRATA_GRADCHECK_INIT;
        st = strata_unit_gradcheck(m, unit, x, n * sizeof *x, NULL, 16, 1e-3, &rep);
        if (STRATA_OK == st && 0 == rank)
            printf("gradcheck %s: max rel err %.2g over %d elements: %s\n",
                   strata_unit_name(unit), rep.max_rel_err, rep.nprobed,
                   rep.max_rel_err < 1e-2 ? "ok" : "WRONG");
    }
    free(x);
    free(y);
    return st;
}

/* The model's step count and data position from DIR's newest checkpoint */
static strata_status_t resume(strata_context_t *ctx, strata_model_t *m, const options_t *o,
                              int *step_p)
{
    char path[4096];
    strata_model_ckpt_t info = { 0 };
    unsigned long long h;
    strata_status_t st = strata_ckpt_find_latest(ctx, o->ckpt, path, sizeof path);
    if (STRATA_OK == st) st = strata_model_load(m, path, &info);
    if (STRATA_OK == st) st = model_hash(m, &h);
    if (STRATA_OK != st) return st;
    *step_p = (int)info.data_pos;   /* the data are indexed by step */
    if (0 == strata_rank(ctx))
        printf("resumed from %s at step %d, param_hash %016llx\n", path, *step_p, h);
    return STRATA_OK;
}

static strata_status_t save(strata_model_t *m, const options_t *o, int step, int rank)
{
    char path[4096];
    strata_model_ckpt_t info = { .data_pos = (uint64_t)step };
    strata_status_t st = strata_model_save(m, o->ckpt, &info, path, sizeof path);
    if (STRATA_OK == st && 0 == rank) printf("saved step %d to %s\n", step, path);
    return st;
}

/* After the first step, what the policy in force and keeping every
 * activation need of the device (the program is recorded by then) */
static void print_needs(strata_model_t *m, const options_t *o, int rank)
{
    size_t need = 0, keep = 0;
    if (STRATA_OK == strata_model_plan_need(m, NULL, &need, NULL) &&
        STRATA_OK == strata_model_plan_need(m, "*=keep", &keep, NULL) && 0 == rank)
        printf("policy %s needs device_mem >= %zu; keeping every activation needs %zu\n",
               o->policy, need, keep);
}

static strata_status_t train(strata_context_t *ctx, strata_model_t *m, mlp_t *mlp,
                             const options_t *o, int step)
{
    const int rank = strata_rank(ctx), W = strata_world_size(ctx);
    mlp_train_t a = { .batch = o->batch, .accum = 1, .steps = 1, .data_seed = o->seed,
                      .data_rank = rank, .data_ranks = W };
    strata_status_t st = STRATA_OK;
    const int first = step;
    double eval = 0;
    for (; STRATA_OK == st && step < o->steps; step++) {
        float loss, sum;
        a.first_step = step;
        if (STRATA_OK != (st = mlp_train(m, mlp, &a, &loss))) break;
        MPI_Allreduce(&loss, &sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        const int done = step + 1;
        if (0 == rank && (0 == done % o->print_every || done == o->steps))
            printf("step %4d  loss %.6f\n", done, sum / W);
        if (step == first && o->policy) print_needs(m, o, rank);
        if (o->eval_every > 0 && (0 == done % o->eval_every || done == o->steps)) {
            if (STRATA_OK != (st = evaluate(m, o, &eval))) break;
            if (0 == rank) printf("step %4d  held-out loss %.6f\n", done, eval);
        }
        if (o->ckpt && ((o->save_every > 0 && 0 == done % o->save_every) || done == o->steps))
            st = save(m, o, done, rank);
    }
    strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
    unsigned long long h = 0;
    if (STRATA_OK == st) st = strata_model_stats(m, &ms);
    if (STRATA_OK == st) st = model_hash(m, &h);
    if (STRATA_OK == st && 0 == rank)
        printf("final step %d  param_hash %016llx  peak device %zu bytes, offloaded %zu\n",
               o->steps, h, ms.peak_device_bytes, ms.offload_bytes);
    return st;
}

int main(int argc, char **argv)
{
    options_t o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;

    /* the runtime's options: defaults, STRATA_* environment, then the flags */
    strata_config_t *cfg = NULL;
    char err[256] = "out of memory";
    if (STRATA_OK != strata_config_create(&cfg) ||
        STRATA_OK != strata_config_read_env(cfg, err, sizeof err) ||
        (o.device_mem && STRATA_OK != strata_config_set(cfg, "device_mem", o.device_mem, err,
                                                         sizeof err))) {
        fprintf(stderr, "train_mlp: %s\n", err);
        strata_config_destroy(cfg);
        return 1;
    }
    strata_context_t *ctx = NULL;
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) {
        fprintf(stderr, "train_mlp: strata_init: %s\n", strata_strerror(st));
        return 1;
    }
    const int rank = strata_rank(ctx);

    strata_model_t *model = NULL;
    mlp_t mlp = { .chunk_rows = 16 };
    strata_model_opts_t opts;
    strata_model_opts_default(&opts);
    opts.lr = o.lr;
    opts.seed = o.seed;
    int step = 0;
    if (STRATA_OK != (st = strata_model_create(ctx, &opts, &model)) ||
        STRATA_OK != (st = mlp_build(model, &mlp, o.layers, o.width)) ||
        STRATA_OK != (st = strata_model_commit(model)) ||
        (o.policy && STRATA_OK != (st = strata_model_set_act_policy(model, o.policy))) ||
        (o.gradcheck && STRATA_OK != (st = gradcheck(model, &o, rank))) ||
        (o.resume && STRATA_OK != (st = resume(ctx, model, &o, &step))) ||
        STRATA_OK != (st = train(ctx, model, &mlp, &o, step))) {
        fprintf(stderr, "train_mlp (rank %d): %s: %s\n", rank, strata_strerror(st),
                strata_last_error(ctx));
        rc = 1;
    }
    strata_model_destroy(model);
    strata_finalize(ctx);
    return rc;
}
