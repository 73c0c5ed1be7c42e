/*
 * trace_cmd.c - `strata trace FILES...`: merge per-rank Chrome traces and
 * report per step how long transfers took, how much of that was hidden
 * under compute or communication, and how long each engine waited.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tools/trace.h"
#include "tools/cmds.h"
#include "tools/trace_json.h"

static void trace_usage(FILE *out)
{
    fprintf(out,
        "usage: strata trace FILE...\n"
        "Merge the per-rank trace files a run wrote (Chrome trace-event JSON, one per\n"
        "rank) and print per step, averaged over ranks: the step time (longest rank),\n"
        "the time transfers (d2h, h2d, storage io) were running, how much of it was\n"
        "hidden under compute or communication (overlap), how much ran while compute\n"
        "was idle (exposed), and how long each engine was idle (wait).\n"
        "Steps are the \"step\" events; a trace without them is one step.\n"
        "  --merge OUT.json  write one Chrome trace of all ranks instead (a process\n"
        "                    per rank; flows link each activation's D2H to its H2D)\n"
        "  --plot OUT.png    draw one step as a timeline with gnuplot instead\n"
        "                    (--step N: which, default the last; --title TEXT;\n"
        "                    --xmax MS: the time axis, to compare pictures)\n");
}

int cmd_trace(int argc, char **argv)
{
    char err[1024];
    sched_trace_events_t evs = { 0 };
    int nfiles = 0, rc = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { trace_usage(stdout); return 0; }
        if ('-' == argv[i][0] && argv[i][1]) {
            if (!strcmp(argv[i], "--merge") || !strcmp(argv[i], "--plot") ||
                !strcmp(argv[i], "--step") || !strcmp(argv[i], "--title") ||
                !strcmp(argv[i], "--xmax")) continue;
            fprintf(stderr, "strata trace: unknown option '%s'\n", argv[i]);
            trace_usage(stderr);
            return 2;
        }
    }
    if ((rc = trace_export_cmd(argc, argv)) >= 0) return rc;
    rc = 1;
    for (int i = 1; i < argc; i++) {
        if (STRATA_OK != sched_trace_read(argv[i], &evs, err, sizeof err)) {
            fprintf(stderr, "strata trace: %s\n", err);
            goto out;
        }
        nfiles++;
    }
    if (0 == nfiles) { trace_usage(stderr); rc = 2; goto out; }
    sched_trace_step_t *steps;
    int n;
    if (STRATA_OK != sched_trace_analyze(&evs, &steps, &n, err, sizeof err)) {
        fprintf(stderr, "strata trace: %s\n", err);
        goto out;
    }
    printf("%d file%s, %d event%s\n", nfiles, 1 == nfiles ? "" : "s", evs.nevents, 1 == evs.nevents ? "" : "s");
    printf("%6s %5s %12s %12s %12s %8s %12s", "step", "ranks", "step_ms", "transfer_ms", "hidden_ms", "overlap",
           "exposed_ms");
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++) printf(" %9s_wait", sched_engine_name((sched_engine_t)e));
    printf("\n");
    double tt = 0, th = 0;
    for (int s = 0; s < n; s++) {
        const sched_trace_step_t *t = &steps[s];
        printf("%6d %5d %12.3f %12.3f %12.3f %7.1f%% %12.3f", t->step, t->ranks, t->step_s * 1e3,
               t->transfer_s * 1e3, t->hidden_s * 1e3, t->overlap_frac * 100, t->exposed_s * 1e3);
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++) printf(" %11.3f ms", t->wait_s[e] * 1e3);
        printf("\n");
        tt += t->transfer_s;
        th += t->hidden_s;
    }
    printf("total: transfer %.3f ms, hidden %.3f ms, overlap %.1f%%\n", tt * 1e3, th * 1e3,
           tt > 0 ? 100 * th / tt : 100.0);
    free(steps);
    rc = 0;
out:
    sched_trace_events_free(&evs);
    return rc;
}
