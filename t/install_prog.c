/* t/install_prog.c - built by t/install-pkgconfig.t outside the tree, against the
 * installed strata, with only `pkg-config --cflags --libs strata` and a
 * plain C compiler: strata.h (and the mpi.h it includes) must be found
 * and every symbol resolved from the installed libraries. */
#include <stdio.h>
#include <strata.h>

int main(void)
{
    strata_context_t *ctx = NULL;
    float one = 1.0f, sum = 0.0f;
    strata_status_t st = strata_init(MPI_COMM_WORLD, NULL, &ctx);
    if (st != STRATA_OK) {
        fprintf(stderr, "strata_init: %s\n", strata_strerror(st));
        return 1;
    }
    st = strata_allreduce(strata_world_group(ctx), &one, &sum, 1, STRATA_F32, STRATA_SUM);
    int size = strata_world_size(ctx);
    if (st != STRATA_OK || sum != (float)size) {
        fprintf(stderr, "allreduce: %s (sum %g on %d ranks)\n", strata_strerror(st), sum, size);
        strata_finalize(ctx);
        return 1;
    }
    /* the initialisers of the public structures, as a program writes them */
    strata_model_opts_t opts;
    strata_model_stats_t stats = STRATA_MODEL_STATS_INIT;
    strata_init_t init = STRATA_PARAM_NORMAL(0.02f);
    if (strata_model_opts_default(&opts) != STRATA_OK || stats.size != sizeof stats ||
        init.kind != STRATA_INIT_NORMAL) {
        fprintf(stderr, "the initialisers do not initialise\n");
        strata_finalize(ctx);
        return 1;
    }
    if (strata_rank(ctx) == 0)
        printf("strata %s: allreduce over %d rank(s) = %g\n", strata_version_string(), size, sum);
    return strata_finalize(ctx) == STRATA_OK ? 0 : 1;
}
