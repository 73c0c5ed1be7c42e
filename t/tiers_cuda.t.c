/* tiers_cuda.t - the cuda backend: device and pinned-host blocks, bit-exact
 * moves device <-> host <-> storage through the copy streams. Skips where
 * no CUDA device answers (or the build has no CUDA). */
#include "config.h"
#include "strata.h"
#include "tap.h"
#include "tiers_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

int main(void)
{
    int n = 0;
    if (cudaSuccess != cudaGetDeviceCount(&n) || 0 == n) skip_all("no CUDA device");
    char root[] = "/tmp/strata-tcuda-XXXXXX";
    if (!mkdtemp(root)) bail_out("mkdtemp");
    strata_config_t *cfg = NULL;
    strata_context_t *ctx;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create");
    strata_config_set(cfg, "backend", "cuda", NULL, 0);
    strata_config_set(cfg, "device_mem", "256M", NULL, 0);
    strata_config_set(cfg, "host_mem", "256M", NULL, 0);
    strata_config_set(cfg, "chunk_size", "1M", NULL, 0);
    strata_config_set(cfg, "spill_dir", root, NULL, 0);
    strata_status_t st = strata_init(MPI_COMM_WORLD, cfg, &ctx);
    strata_config_destroy(cfg);
    if (STRATA_OK != st) bail_out("strata_init");
    plan(6);
    is_string(strata_backend_name(ctx), "cuda", "cuda backend in use");
    const size_t sizes[] = { 1, 1000003, 17 * 1024 * 1024 + 5 };
    for (int k = 0; k < 3; k++) {
        size_t sz = sizes[k];
        uint8_t *src = malloc(sz), *back = malloc(sz);
        for (size_t i = 0; i < sz; i++) src[i] = (uint8_t)(i * 13 + k);
        strata_block_t *b;
        int good = STRATA_OK == strata_block_alloc(ctx, STRATA_TIER_DEVICE, sz, STRATA_TAG_PARAM, &b);
        good &= cudaSuccess == cudaMemcpy(strata_block_ptr(b, STRATA_TIER_DEVICE), src, sz, cudaMemcpyHostToDevice);
        good &= STRATA_OK == move_wait(b, STRATA_TIER_PINNED_HOST, 1) &&
                0 == memcmp(strata_block_ptr(b, STRATA_TIER_PINNED_HOST), src, sz);
        good &= STRATA_OK == move_wait(b, STRATA_TIER_STORAGE, 1);
        good &= STRATA_OK == move_wait(b, STRATA_TIER_DEVICE, 1);
        good &= cudaSuccess == cudaMemcpy(back, strata_block_ptr(b, STRATA_TIER_DEVICE), sz, cudaMemcpyDeviceToHost) &&
                0 == memcmp(back, src, sz);
        ok(good, "%zu bytes: device -> host -> storage -> device bit-exact (%s)", sz, strata_last_error(ctx));
        strata_block_free(b);
        free(src);
        free(back);
    }
    strata_block_t *x = NULL;
    is_int(strata_block_alloc(ctx, STRATA_TIER_DEVICE, 512u << 20, STRATA_TAG_PARAM, &x), STRATA_ERR_TIER_FULL,
           "device budget enforced");
    ok(NULL == x, "no block on failure");
    strata_finalize(ctx);
    rmdir(root);
    return done_testing();
}
#else
int main(void)
{
    skip_all("no CUDA device (built without CUDA)");
}
#endif
