/*
 * ckpt_cmd.c - `strata ckpt`: inspect, verify and compare checkpoints.
 *
 *   strata ckpt info FILE      header, step, every tensor's dtype, shape, bytes
 *   strata ckpt verify FILE    checksums and completeness; exit 1 on any problem
 *   strata ckpt diff A B       max absolute / relative difference per tensor;
 *                              exit 0 identical, 1 different, 2 error
 *
 * One process: files are read with HDF5's serial driver, whatever world
 * size wrote them.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "strata.h"

int strata_cmd_ckpt(int argc, char **argv);

static const char *const usage_text =
    "usage: strata ckpt info FILE\n"
    "       strata ckpt verify FILE\n"
    "       strata ckpt diff A B\n"
    "Inspect, verify and compare strata HDF5 checkpoints (docs/checkpoint-format.md).\n"
    "Run 'strata ckpt SUBCOMMAND --help' for details.\n";

static const struct {
    const char *name;
    int nargs;
    const char *help;
} subs[] = {
    { "info", 1,
      "usage: strata ckpt info FILE\n"
      "Print the checkpoint's header (format version, strata version, creation time,\n"
      "world and shard size), its step and data position, the model configuration,\n"
      "and every dataset with its dtype, shape and bytes.\n" },
    { "verify", 1,
      "usage: strata ckpt verify FILE\n"
      "Check the header, that every tensor is covered by checksummed regions, that\n"
      "every region hashes (XXH3-64) to its recorded value and that no tensor is\n"
      "missing. Works whatever world size wrote the file. Prints one line per\n"
      "problem; exit status 0 when the file is sound, 1 otherwise.\n" },
    { "diff", 2,
      "usage: strata ckpt diff A B\n"
      "For every tensor under /model, /optim and the 16-bit copies, print the\n"
      "maximum absolute difference and the maximum relative difference\n"
      "|a-b| / max(|a|,|b|) between the two files. Exit status 0 when identical,\n"
      "1 when a value, shape or tensor differs, 2 on an error.\n" },
    { NULL, 0, NULL }
};

int strata_cmd_ckpt(int argc, char **argv)
{
    if (argc < 2) { fputs(usage_text, stderr); return 2; }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) { fputs(usage_text, stdout); return 0; }
    int which = -1;
    for (int i = 0; subs[i].name; i++) if (!strcmp(argv[1], subs[i].name)) which = i;
    if (which < 0) {
        fprintf(stderr, "strata ckpt: unknown subcommand '%s'\n%s", argv[1], usage_text);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(subs[which].help, stdout); return 0; }
    if (argc - 2 != subs[which].nargs) { fputs(subs[which].help, stderr); return 2; }

    /* a one-rank context, for error messages */
    strata_context_t *ctx = NULL;
    if (STRATA_OK != strata_init(MPI_COMM_SELF, NULL, &ctx)) {
        fprintf(stderr, "strata ckpt: cannot initialise strata\n");
        return 2;
    }
    int rc = 0;
    strata_status_t st;
    switch (which) {
    case 0:
        st = strata_ckpt_info(ctx, argv[2], stdout);
        if (STRATA_OK != st) { fprintf(stderr, "strata ckpt info: %s\n", strata_last_error(ctx)); rc = 1; }
        break;
    case 1:
        st = strata_ckpt_verify(ctx, argv[2], stdout);
        rc = STRATA_OK == st ? 0 : 1;
        break;
    default: {
        int differs = 0;
        st = strata_ckpt_diff(ctx, argv[2], argv[3], stdout, &differs);
        if (STRATA_OK != st) { fprintf(stderr, "strata ckpt diff: %s\n", strata_last_error(ctx)); rc = 2; }
        else rc = differs ? 1 : 0;
        break;
    }
    }
    strata_finalize(ctx);
    return rc;
}
