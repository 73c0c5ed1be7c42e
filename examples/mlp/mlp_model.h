/*
 * mlp_model.h - the multi-layer perceptron of examples/mlp, shared by the
 * example program, the equivalence tests and the benchmark: one strata unit
 * per layer (y = relu(x W^T + b), the last layer linear), data generated
 * from a seed, a mean-squared-error loss.
 */
#ifndef MLP_MODEL_H
#define MLP_MODEL_H

#include <strata.h>

#define MLP_MAX_LAYERS 64

typedef struct {
    int layers;          /* units */
    int width;           /* features of every layer */
    int chunk_rows;      /* call strata_call_progress every this many rows; 0 = never */
    int save_names;      /* 0: every layer saves "pre"; k > 0: layer i saves "pre_" 'a'+i%k
                          * (several names, for mixed activation policies) */
    struct mlp_layer { int in, out, relu, chunk; char save[8]; } layer[MLP_MAX_LAYERS];  /* user_data */
} mlp_t;

typedef struct {
    int      batch;      /* samples per rank per micro-batch */
    int      accum;      /* micro-batches per step */
    int      steps;
    uint64_t data_seed;
    int      data_rank;  /* which slice of the global batch this rank takes */
    int      data_ranks; /* how many slices (the world size) */
    int      first_step; /* data of step first_step comes first (resuming) */
} mlp_train_t;

/* Register the units and their parameters (W ~ N(0, 1/width), b = 0). */
strata_status_t mlp_build(strata_model_t *model, mlp_t *mlp, int layers, int width);

/* Samples [first, first+n) of the generated task: x ~ N(0,1), y a smooth
 * function of x. Each sample depends only on (seed, index). */
void mlp_data(uint64_t seed, uint64_t first, int n, int width, float *x, float *y);

/* Train a.steps steps, numbered from a.first_step. Step s, micro-batch m, rank r takes the samples
 * starting at ((s*accum + m)*data_ranks + r)*batch, so a run on W ranks and
 * a run on one rank with batch W*accum*b (accum 1) see the same samples
 * per step. *loss_p (may be NULL): this rank's mean loss of the last
 * micro-batch. */
strata_status_t mlp_train(strata_model_t *model, const mlp_t *mlp, const mlp_train_t *a,
                          float *loss_p);

#endif
