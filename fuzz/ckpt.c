/* fuzz/ckpt.c - checkpoint open and verify (strata_ckpt_verify, then
 * strata_ckpt_info, as `strata ckpt verify|info` run them) on a file
 * holding arbitrary bytes: each returns a status, never crashes. Crashes
 * inside HDF5 itself are upstream bugs: fuzz/README.md lists the known
 * ones, and fuzz/run excludes them. */
#include <stdio.h>
#include <unistd.h>
#include "fuzz.h"
#include "strata.h"

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    snprintf(path, sizeof path, "/tmp/strata-fuzz-ckpt-%d.h5", (int)getpid());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t put = fwrite(data, 1, size, f);
    if (fclose(f) || put != size) return 0;
    FILE *sink = fopen("/dev/null", "w");
    strata_status_t st = strata_ckpt_verify(NULL, path, sink);
    if (st == STRATA_OK) FUZZ_ASSERT(strata_ckpt_info(NULL, path, sink) == STRATA_OK);
    else (void)strata_ckpt_info(NULL, path, sink);
    if (sink) fclose(sink);
    unlink(path);
    return 0;
}
