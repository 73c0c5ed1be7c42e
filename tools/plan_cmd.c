/*
 * plan_cmd.c - `strata plan PROGRAM`: schedule a step program described in
 * text (format in sched/sched.h, sched_program_parse) under a budget and a
 * link model, print the per-engine schedule and the simulated step, and
 * with --policy auto the chosen activation plan.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "base/base.h"     /* the options struct, for sched_opts_from_config */
#include "base/file.h"
#include "sched/sched.h"
#include "tools/cmds.h"

static void plan_usage(FILE *out)
{
    fprintf(out,
        "usage: strata plan [OPTIONS] PROGRAM   (PROGRAM a file, or - for stdin)\n"
        "   or: strata plan --model M --hw H ...  (a model on a machine: strata plan --model x --help)\n"
        "Schedule a step program and simulate it. Defaults come from the config table\n"
        "(STRATA_* variables); the flags override them.\n"
        "  --budget SIZE          device budget (device_mem)\n"
        "  --host-budget SIZE     pinned-host budget (host_mem; auto: no limit in this simulation)\n"
        "  --storage-budget SIZE  storage budget (storage_mem)\n"
        "  --policy TEXT          e.g. qkv=host,mlp_up=storage,*=keep, or auto (act_policy)\n"
        "  --schedule MODE        lhs, naive (schedule), none (nothing overlaps, collectives\n"
        "                         included: a compiler without latency hiding; a model only),\n"
        "                         both (naive and lhs) or all\n"
        "  --link-d2h BW, --link-h2d BW, --link-storage BW   bytes/s, e.g. 8G; 0 = unpaced\n"
        "  --link-latency SEC     per copy\n"
        "  --chunk SIZE           transfer chunk (chunk_size)\n"
        "  --prefetch N           all-gather lookahead in units\n"
        "  --lookahead N          activation prefetch lookahead in compute ops\n"
        "  --trace FILE           write the simulated step as a Chrome trace (lhs, or the mode given)\n"
        "  -q, --quiet            no per-engine op list\n"
        "PROGRAM lines ('#' comments; sizes take k/M/G, times are seconds):\n"
        "  resident SIZE\n"
        "  optim SECONDS\n"
        "  unit NAME [fwd=S] [bwd=S] [ag=S] [rs=S] [ag_bytes=SIZE] [repeat=N]\n"
        "  save NAME SIZE          (a save of the unit above)\n");
}

/* The whole of path ("-": stdin), or NULL with why[] saying why. */
static char *slurp(const char *path, char *why, size_t len)
{
    snprintf(why, len, "cannot read %s", path);
    FILE *f = strcmp(path, "-") ? base_fopen_regular(path, why, len) : stdin;   /* a FIFO would block */
    if (!f) return NULL;
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (0 == k) break;
        if (n + 1 == cap) {
            char *x = realloc(buf, cap *= 2);
            if (!x) { free(buf); buf = NULL; }
            buf = x;
        }
    }
    if (buf) buf[n] = '\0';
    if (f != stdin) fclose(f);
    return buf;
}

static void print_result(const char *mode, const sched_result_t *r, FILE *out)
{
    char a[32], b[32], c[32];
    fprintf(out, "%-6s step %10.3f ms  transfer %9.3f ms  exposed %9.3f ms  overlap %5.1f%%  "
                 "comm wait %8.3f ms  peak device %s host %s storage %s\n",
            mode, r->step_s * 1e3, r->transfer_s * 1e3, r->exposed_transfer_s * 1e3, r->overlap_frac * 100,
            r->comm_wait_s * 1e3, strata_format_size(r->peak[STRATA_TIER_DEVICE], a, sizeof a),
            strata_format_size(r->peak[STRATA_TIER_PINNED_HOST], b, sizeof b),
            strata_format_size(r->peak[STRATA_TIER_STORAGE], c, sizeof c));
    fprintf(out, "       busy:");
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        fprintf(out, " %s %.3f ms", sched_engine_name((sched_engine_t)e), r->busy_s[e] * 1e3);
    fputc('\n', out);
}

int cmd_plan(int argc, char **argv)
{
    char err[1024];
    strata_config_t cfg;
    const char *path = NULL, *trace = NULL, *mode = NULL;
    int quiet = 0, lookahead = -1, rc = 1;
    sched_program_t *prog = NULL;
    char *text = NULL;

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--model") || !strcmp(argv[i], "--hw")) return cmd_plan_model(argc, argv);
    /* the options by value: this tool hands them to the scheduler's
     * internal sched_opts_from_config (base/base.h has the struct) */
    config_defaults(&cfg);
    if (STRATA_OK != strata_config_read_env(&cfg, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        return 2;
    }
    static const struct { const char *flag, *opt; } map[] = {
        { "--budget", "device_mem" }, { "--host-budget", "host_mem" }, { "--storage-budget", "storage_mem" },
        { "--policy", "act_policy" }, { "--link-d2h", "link_d2h_bw" }, { "--link-h2d", "link_h2d_bw" },
        { "--link-storage", "link_storage_bw" }, { "--link-latency", "link_latency" },
        { "--chunk", "chunk_size" }, { "--prefetch", "prefetch" }, { NULL, NULL }
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { plan_usage(stdout); return 0; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { quiet = 1; continue; }
        int known = 0;
        for (int m = 0; map[m].flag; m++)
            if (!strcmp(a, map[m].flag)) {
                known = 1;
                if (i + 1 >= argc) { fprintf(stderr, "strata plan: %s needs a value\n", a); return 2; }
                const char *v = argv[++i];
                char sz[64];
                /* bandwidths read like sizes: "8G" = 8 GiB/s */
                if (!strncmp(map[m].opt, "link_", 5) && strcmp(map[m].opt, "link_latency")) {
                    size_t bytes;
                    if (STRATA_OK != strata_parse_size(v, &bytes)) {
                        fprintf(stderr, "strata plan: %s: bad bandwidth '%s' (e.g. 8G)\n", a, v);
                        return 2;
                    }
                    snprintf(sz, sizeof sz, "%zu", bytes);
                    v = sz;
                }
                if (STRATA_OK != strata_config_set(&cfg, map[m].opt, v, err, sizeof err)) {
                    fprintf(stderr, "strata plan: %s: %s\n", a, err);
                    return 2;
                }
            }
        if (known) continue;
        if (!strcmp(a, "--schedule") || !strcmp(a, "--lookahead") || !strcmp(a, "--trace")) {
            if (i + 1 >= argc) { fprintf(stderr, "strata plan: %s needs a value\n", a); return 2; }
            const char *v = argv[++i];
            if ('s' == a[2]) mode = v;
            else if ('t' == a[2]) trace = v;
            else {
                char *end;
                long n = strtol(v, &end, 10);
                if (end == v || *end || n < 0 || n > 1000000) {
                    fprintf(stderr, "strata plan: --lookahead: bad count '%s'\n", v);
                    return 2;
                }
                lookahead = (int)n;
            }
            continue;
        }
        if ('-' == a[0] && a[1]) { fprintf(stderr, "strata plan: unknown option '%s'\n", a); plan_usage(stderr); return 2; }
        if (path) { fprintf(stderr, "strata plan: one PROGRAM only\n"); return 2; }
        path = a;
    }
    if (!path) { plan_usage(stderr); return 2; }
    /* the runtime's option knows lhs and naive; none, both and all are this tool's */
    int all = mode && !strcmp(mode, "all"), none = mode && !strcmp(mode, "none");
    int both = all || (mode && !strcmp(mode, "both"));
    if (mode && !both && !none && STRATA_OK != strata_config_set(&cfg, "schedule", mode, err, sizeof err)) {
        fprintf(stderr, "strata plan: --schedule: %s, or none, both or all\n", err);
        return 2;
    }
    sched_opts_t opts;
    if (STRATA_OK != sched_opts_from_config(&cfg, &opts, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        return 2;
    }
    if (lookahead >= 0) opts.lookahead = lookahead;
    if (none) opts.mode = SCHED_MODE_NONE;
    char why[600];
    if (!(text = slurp(path, why, sizeof why))) { fprintf(stderr, "strata plan: %s\n", why); return 1; }
    if (STRATA_OK != sched_program_parse(text, &prog, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s: %s\n", path, err);
        goto out;
    }
    if (!quiet) sched_program_print(prog, stdout);

    sched_policy_t pol;
    sched_actions_t acts;
    if (STRATA_OK != sched_policy_parse(cfg.act_policy, &pol, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        goto out;
    }
    if (pol.is_auto) {
        sched_result_t pred;
        if (STRATA_OK != sched_plan_auto(prog, &opts, &acts, &pred, err, sizeof err)) {
            fprintf(stderr, "strata plan: %s\n", err);
            goto out;
        }
        sched_plan_print(prog, &acts, &pred, stdout);
    } else if (STRATA_OK != sched_policy_resolve(&pol, prog, &acts, err, sizeof err)) {
        fprintf(stderr, "strata plan: %s\n", err);
        goto out;
    }
    char pstr[1024];
    printf("policy: %s\n", sched_actions_string(&acts, prog, pstr, sizeof pstr));

    rc = 0;
    /* all: none, naive, lhs (the order of more overlap); both: naive, lhs */
    static const sched_mode_t order[] = { SCHED_MODE_NONE, SCHED_MODE_NAIVE, SCHED_MODE_LHS };
    for (int k = 0; k < 3; k++) {
        int m = (int)order[k];
        if (both ? (!all && SCHED_MODE_NONE == m) : m != (int)opts.mode) continue;
        sched_opts_t o = opts;
        o.mode = (sched_mode_t)m;
        sched_t *s = NULL;
        sched_result_t r;
        if (STRATA_OK != sched_build(prog, &acts, &o, &s, err, sizeof err) ||
            STRATA_OK != sched_simulate(s, &r, NULL, NULL, err, sizeof err)) {
            fprintf(stderr, "strata plan: %s: %s\n", sched_mode_name(o.mode), err);
            sched_destroy(s);
            rc = 1;
            continue;
        }
        if (!quiet) sched_print(s, stdout);
        print_result(sched_mode_name(o.mode), &r, stdout);
        if (trace && (!both || SCHED_MODE_LHS == o.mode)) {
            sched_trace_t *tr = NULL;
            if (STRATA_OK != sched_trace_create(0, &tr) || STRATA_OK != sched_trace_add_sim(tr, s, 0, 0, err, sizeof err) ||
                STRATA_OK != sched_trace_write(tr, trace, err, sizeof err)) {
                fprintf(stderr, "strata plan: %s\n", err);
                rc = 1;
            }
            sched_trace_destroy(tr);
        }
        sched_destroy(s);
    }
out:
    sched_program_destroy(prog);
    free(text);
    return rc;
}
