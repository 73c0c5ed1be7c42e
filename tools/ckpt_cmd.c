/*
 * ckpt_cmd.c - `strata ckpt`: inspect, verify and compare checkpoints.
 *
 *   strata ckpt info FILE      header, step, every tensor's dtype, shape, bytes
 *   strata ckpt verify PATH    checksums and completeness of a file, or of every
 *                              step-*.h5 of a directory and what its latest
 *                              names; exit 1 on any problem
 *   strata ckpt unlock DIR     remove the job lock of a checkpoint directory
 *   strata ckpt diff A B       max absolute / relative difference per tensor;
 *                              exit 0 identical, 1 different, 2 error
 *
 * One process: files are read with HDF5's serial driver, whatever world
 * size wrote them.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata.h"

int strata_cmd_ckpt(int argc, char **argv);

static const char *const usage_text =
    "usage: strata ckpt info FILE\n"
    "       strata ckpt verify FILE|DIR\n"
    "       strata ckpt unlock DIR\n"
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
      "usage: strata ckpt verify FILE|DIR\n"
      "Check the header, that every tensor is covered by checksummed regions, that\n"
      "every region hashes (XXH3-64) to its recorded value and that no tensor is\n"
      "missing. Works whatever world size wrote the file. Prints one line per\n"
      "problem; exit status 0 when the file is sound, 1 otherwise. Given a\n"
      "directory: every step-*.h5 in it, and that 'latest' names one that is sound.\n" },
    { "unlock", 1,
      "usage: strata ckpt unlock DIR\n"
      "Remove DIR/lock, the lock a training job holds on its checkpoint directory,\n"
      "after printing its holder. Only when that job is gone: a live job keeps\n"
      "writing. Jobs on the same host (dead pid) or in the same SLURM job take a\n"
      "dead holder's lock over by themselves.\n" },
    { "diff", 2,
      "usage: strata ckpt diff A B\n"
      "For every tensor under /model, /optim and the 16-bit copies, print the\n"
      "maximum absolute difference and the maximum relative difference\n"
      "|a-b| / max(|a|,|b|) between the two files. Exit status 0 when identical,\n"
      "1 when a value, shape or tensor differs, 2 on an error.\n" },
    { NULL, 0, NULL }
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every step-*.h5 of dir, and latest: 0 when all are sound */
static int verify_dir(strata_context_t *ctx, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "strata ckpt verify: cannot read %s\n", dir); return 1; }
    char *names[4096];
    int n = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        size_t l = strlen(e->d_name);
        if (!strncmp(e->d_name, "step-", 5) && l > 3 && !strcmp(e->d_name + l - 3, ".h5"))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    char path[4200], latest[256] = "", ok_latest = 0;
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(latest, sizeof latest, f)) latest[strcspn(latest, "\r\n")] = '\0';
        fclose(f);
    }
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int sound = STRATA_OK == strata_ckpt_verify(ctx, path, stdout);
        bad |= !sound;
        if (sound && !strcmp(names[i], latest)) ok_latest = 1;
        free(names[i]);
    }
    if (0 == n) { printf("%s: no checkpoint (step-*.h5) in it\n", dir); bad = 1; }
    if (!latest[0]) printf("%s/latest: missing\n", dir);
    else if (!ok_latest) printf("%s/latest: names %s, which is not a sound checkpoint here\n", dir, latest);
    else printf("%s/latest: %s, OK\n", dir, latest);
    return bad || !ok_latest;
}

static int unlock_dir(const char *dir)
{
    char who[600], path[4200];
    snprintf(path, sizeof path, "%s/" STRATA_CKPT_LOCK_NAME, dir);
    int known = 0 == strata_ckpt_lock_holder(dir, who, sizeof who);
    if (unlink(path)) {
        perror(path);
        return 1;
    }
    printf("removed %s (%s)\n", path, known ? who : "not a readable lock");
    return 0;
}

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
    case 1: {
        struct stat sb;
        if (0 == stat(argv[2], &sb) && S_ISDIR(sb.st_mode)) {
            rc = verify_dir(ctx, argv[2]);
        } else {
            st = strata_ckpt_verify(ctx, argv[2], stdout);
            rc = STRATA_OK == st ? 0 : 1;
        }
        break;
    }
    case 2:
        rc = unlock_dir(argv[2]);
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
