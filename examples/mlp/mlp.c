/*
 * mlp.c - the smallest complete use of the strata library API: a
 * multi-layer perceptron, one FSDP unit per layer, trained on generated
 * data. Launch with mpirun:
 *
 *     mpirun -np 4 examples/mlp/mlp --layers 4 --width 64 --steps 50
 *
 * Every rank takes its own slice of each global batch; parameters,
 * gradients and optimizer state are sharded over --shard ranks (default:
 * all) and replicated over the W/S shard groups. train_mlp.c, next to it,
 * trains the same model as a real program does: checkpoints and resume,
 * held-out evaluation, an activation policy under a device budget, the
 * model hash, and a gradient check of its units.
 */
#include "config.h"
#include "mlp_model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N mlp [options]\n"
        "  --layers L      units (layers), default 4\n"
        "  --width D       features per layer, default 64\n"
        "  --batch B       samples per rank per micro-batch, default 16\n"
        "  --accum M       micro-batches per step (gradient accumulation), default 1\n"
        "  --steps K       training steps, default 50\n"
        "  --shard S       shard group size (divides N; 0 = N), default 0\n"
        "  --optimizer O   adamw or sgd, default adamw\n"
        "  --lr LR         learning rate, default 1e-3 (adamw) / 1e-2 (sgd)\n"
        "  --prefetch P    all-gather lookahead in units, default from STRATA_PREFETCH (1)\n"
        "  --seed N        parameter and data seed, default 1234\n"
        "  --help          this text\n");
}

int main(int argc, char **argv)
{
    int layers = 4, width = 64, batch = 16, accum = 1, steps = 50, shard = 0, prefetch = -1;
    float lr = -1;
    unsigned long long seed = 1234;
    strata_optim_kind_t optim = STRATA_OPTIM_ADAMW;
    static const struct option longopts[] = {
        { "layers", 1, NULL, 'l' }, { "width", 1, NULL, 'w' }, { "batch", 1, NULL, 'b' },
        { "accum", 1, NULL, 'a' },  { "steps", 1, NULL, 's' }, { "shard", 1, NULL, 'S' },
        { "optimizer", 1, NULL, 'o' }, { "lr", 1, NULL, 'r' }, { "prefetch", 1, NULL, 'p' },
        { "seed", 1, NULL, 'e' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while (-1 != (c = getopt_long(argc, argv, "h", longopts, NULL))) {
        switch (c) {
        case 'l': layers = atoi(optarg); break;
        case 'w': width = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'a': accum = atoi(optarg); break;
        case 's': steps = atoi(optarg); break;
        case 'S': shard = atoi(optarg); break;
        case 'p': prefetch = atoi(optarg); break;
        case 'r': lr = strtof(optarg, NULL); break;
        case 'e': seed = strtoull(optarg, NULL, 0); break;
        case 'o':
            if (!strcmp(optarg, "adamw")) optim = STRATA_OPTIM_ADAMW;
            else if (!strcmp(optarg, "sgd")) optim = STRATA_OPTIM_SGD;
            else { fprintf(stderr, "mlp: unknown optimizer '%s' (adamw, sgd)\n", optarg); return 2; }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (layers < 1 || layers > MLP_MAX_LAYERS || width < 1 || batch < 1 || accum < 1 ||
        steps < 0 || shard < 0) {
        fprintf(stderr, "mlp: bad option value (layers 1..%d, others positive)\n", MLP_MAX_LAYERS);
        return 2;
    }

    /* the runtime's options: defaults, STRATA_* environment, then the flags */
    strata_config_t *cfg = NULL;
    char err[256];
    if (STRATA_OK != strata_config_create(&cfg) ||
        STRATA_OK != strata_config_read_env(cfg, err, sizeof err) ||
        STRATA_OK != strata_config_set_int(cfg, "shard_size", shard, err, sizeof err) ||
        (prefetch >= 0 && STRATA_OK != strata_config_set_int(cfg, "prefetch", prefetch, err, sizeof err))) {
        fprintf(stderr, "mlp: %s\n", cfg ? err : "out of memory");
        strata_config_destroy(cfg);
        return 1;
    }

    strata_context_t *ctx = NULL;
    strata_model_t *model = NULL;
    mlp_t mlp = { .chunk_rows = 16 };
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) {
        fprintf(stderr, "mlp: strata_init: %s\n", strata_strerror(st));
        return 1;
    }
    int rank = strata_rank(ctx), W = strata_world_size(ctx);

    strata_model_opts_t opts;
    strata_model_opts_default(&opts);
    opts.optimizer = optim;
    opts.lr = lr > 0 ? lr : STRATA_OPTIM_SGD == optim ? 1e-2f : 1e-3f;
    opts.seed = seed;
    if (STRATA_OK != (st = strata_model_create(ctx, &opts, &model))) goto fail;
    if (STRATA_OK != (st = mlp_build(model, &mlp, layers, width))) goto fail;
    if (STRATA_OK != (st = strata_model_commit(model))) goto fail;
    if (0 == rank)
        printf("mlp: %d ranks, shard group %d, %d layers x %d, batch %d x %d ranks x %d micro, "
               "%s lr %g\n", W, shard ? shard : W, layers, width, batch, W, accum,
               STRATA_OPTIM_SGD == optim ? "sgd" : "adamw", opts.lr);

    mlp_train_t a = { .batch = batch, .accum = accum, .steps = 1, .data_seed = seed,
                      .data_rank = rank, .data_ranks = W };
    double tsum = 0;
    for (int s = 0; s < steps; s++) {
        float loss, mean;
        /* one step at a time so progress shows; the data index follows s */
        a.data_seed = seed + (uint64_t)s * 7919u;
        if (STRATA_OK != (st = mlp_train(model, &mlp, &a, &loss))) goto fail;
        MPI_Allreduce(&loss, &mean, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
        strata_model_stats(model, &ms);
        if (0 == rank && (0 == s % 10 || s == steps - 1))
            printf("step %4d  loss %.6f  step %.2f ms (compute %.2f, exposed comm %.2f, "
                   "optim %.2f)\n", s, mean / W, ms.step_s * 1e3, ms.compute_s * 1e3,
                   ms.exposed_comm_s * 1e3, ms.optim_s * 1e3);
        if (0 == rank && ms.transfer_s > 0 && (0 == s % 10 || s == steps - 1))
            printf("           activations: transfer %.2f ms, exposed %.2f ms, overlap %.0f%%, "
                   "%zu bytes offloaded; peak device %zu, host %zu\n", ms.transfer_s * 1e3,
                   ms.exposed_transfer_s * 1e3, 100 * ms.overlap_frac, ms.offload_bytes,
                   ms.peak_device_bytes, ms.peak_host_bytes);
        if (s > 0) tsum += ms.step_s;   /* step 1 records and plans */
    }
    if (0 == rank && steps > 1) printf("mean step %.2f ms over steps 2..%d\n", tsum / (steps - 1) * 1e3, steps);
    strata_model_destroy(model);
    strata_finalize(ctx);
    return 0;
fail:
    fprintf(stderr, "mlp (rank %d): %s: %s\n", rank, strata_strerror(st), strata_last_error(ctx));
    strata_model_destroy(model);
    strata_finalize(ctx);
    return 1;
}
