/*
 * strata - the command-line tool.
 *
 *   strata config [-v] [NAME=VALUE ...]   print the options in effect
 *   strata version                        library and build information
 *   strata ckpt info|verify|diff ...      inspect checkpoints (tools/ckpt_cmd.c)
 *   strata plan [OPTIONS] PROGRAM         schedule and simulate a step program
 *   strata trace FILE...                  transfer overlap per step from rank traces
 *   strata flight FILE...                 suspect ranks from the flight records (tools/flight_cmd.c)
 *   strata calibrate [--out FILE]         measure this machine into a hardware file (mpirun)
 *   strata run [OPTIONS] -- LAUNCHER ...  run a job, restarting it when a rank dies (tools/run_cmd.c)
 *
 * Each subcommand is a row of the subcommands table below.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tools/cmds.h"

typedef struct {
    const char *name;
    const char *args;
    const char *doc;
    int (*run)(int argc, char **argv);
} subcommand_t;

static int cmd_config(int argc, char **argv)
{
    int verbose = 0;
    char err[512];
    strata_config_t *cfg = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) {
        fprintf(stderr, "strata config: out of memory\n");
        return 1;
    }
    if (STRATA_OK != strata_config_read_env(cfg, err, sizeof err)) {
        fprintf(stderr, "strata config: %s\n", err);
        strata_config_destroy(cfg);
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) { verbose = 1; continue; }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata config [-v] [NAME=VALUE ...]\n"
                   "Print every option with its value: defaults, then STRATA_<NAME> environment\n"
                   "variables, then NAME=VALUE arguments. -v adds each option's documentation.\n");
            goto out;
        }
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "strata config: expected NAME=VALUE, got '%s'\n", argv[i]);
            rc = 2;
            goto out;
        }
        *eq = '\0';
        if (STRATA_OK != strata_config_set(cfg, argv[i], eq + 1, err, sizeof err)) {
            fprintf(stderr, "strata config: %s\n", err);
            rc = 2;
            goto out;
        }
    }
    strata_config_print(cfg, stdout, verbose);
out:
    strata_config_destroy(cfg);
    return rc;
}

static int cmd_version(int argc, char **argv)
{
    (void)argc; (void)argv;
    printf("strata %s (library %s)\n", STRATA_VERSION_STRING, strata_version_string());
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mpi, &len);
    char *nl = strchr(mpi, '\n');
    if (nl) *nl = '\0';
    printf("MPI: %s\n", mpi);
#ifdef HAVE_CUDA
    printf("CUDA: compiled in (cuda backend where a device answers)\n");
#else
    printf("CUDA: not compiled in (host backend only)\n");
#endif
#ifdef HAVE_NCCL
    printf("NCCL: compiled in\n");
#else
    printf("NCCL: not compiled in\n");
#endif
    return 0;
}



static const subcommand_t subcommands[] = {
    { "config",  "[-v] [NAME=VALUE ...]", "print the options in effect (defaults + STRATA_* + args)", cmd_config },
    { "version", "",                      "print library, MPI and build information",                 cmd_version },
    { "ckpt",    "info|verify|diff FILE...", "inspect, verify (checksums) and compare HDF5 checkpoints", strata_cmd_ckpt },
    { "plan",    "[OPTIONS] PROGRAM",     "schedule and simulate a step program; --model/--hw: plan a model", cmd_plan },
    { "trace",   "[--merge|--plot OUT] FILE...", "transfer overlap per step; one merged trace; a step drawn", cmd_trace },
    { "flight",  "FILE...",               "where the ranks parted ways, from their flight records",    cmd_flight },
    { "calibrate", "[--out FILE]",        "measure this machine into a planner hardware file (mpirun)", cmd_calibrate },
    { "run",     "[OPTIONS] -- mpirun ...", "run a job; restart it on the ranks left when a rank dies", cmd_run },
    { NULL, NULL, NULL, NULL }
};

static void usage(FILE *out)
{
    fprintf(out, "usage: strata COMMAND [ARGS...]\n\n"
                 "strata %s - MPI-distributed FSDP training with memory offload tiers.\n\n"
                 "Commands:\n", STRATA_VERSION_STRING);
    for (const subcommand_t *c = subcommands; c->name; c++)
        fprintf(out, "  %-8s %-24s %s\n", c->name, c->args, c->doc);
    fprintf(out, "\nRun 'strata COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) return cmd_version(0, NULL);
    for (const subcommand_t *c = subcommands; c->name; c++)
        if (!strcmp(argv[1], c->name)) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "strata: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
