/*
 * trace_merge.c - `strata trace --merge OUT.json FILE...`: one Chrome trace
 * (Trace Event Format, for Perfetto or chrome://tracing) from the per-rank
 * files a run writes, one process per rank, with flow arrows from each
 * offloaded activation's D2H to the H2D that brings it back.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "tools/trace_json.h"

double tj_num(const json_t *o, const char *key, double def)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

const char *tj_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* The event array of one file: {"traceEvents": [...]} or a bare array. */
static json_t *load_events(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    FILE *f = base_fopen_regular(path, err, errlen);
    if (!f) return NULL;
    json_t *root = json_loadf(f, 0, &je);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s: not JSON (line %d: %s)", path, je.line, je.text);
        return NULL;
    }
    json_t *ev = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(ev)) {
        snprintf(err, errlen, "%s: no traceEvents array: not a Chrome trace", path);
        json_decref(root);
        return NULL;
    }
    json_incref(ev);
    json_decref(root);
    return ev;
}

/* The one pid of a file's events (its rank), or -1 with a message. */
static int file_rank(const char *path, const json_t *ev, char *err, size_t errlen)
{
    int rank = -1;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        json_t *p = json_object_get(e, "pid");
        if (!json_is_integer(p)) continue;
        int r = (int)json_integer_value(p);
        if (rank >= 0 && r != rank) {
            snprintf(err, errlen, "%s holds events of pids %d and %d: not one rank's trace", path, rank, r);
            return -1;
        }
        rank = r;
    }
    if (rank < 0) snprintf(err, errlen, "%s has no events with a pid", path);
    return rank;
}

/* ------------------------------------------------------------ flows --- */

typedef struct { int unit, tid, pid; const char *name; double mid, ts; } xfer_t;

static int xfer_cmp(const void *a, const void *b)
{
    const xfer_t *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int same_act(const xfer_t *a, const xfer_t *b)
{
    return a->pid == b->pid && a->unit == b->unit && !strcmp(a->name, b->name);
}

static json_t *flow(const char *ph, long id, const xfer_t *x)
{
    /* bound to the slice around ts on that thread: the transfer's middle */
    json_t *e = json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:f}", "ph", ph, "name", "activation",
                          "cat", "offload", "id", (json_int_t)id, "pid", x->pid, "tid", x->tid,
                          "ts", x->mid);
    if (e && 'f' == ph[0]) json_object_set_new(e, "bp", json_string("e"));
    return e;
}

/* Pair the k-th D2H of an activation (rank, unit, name) with its k-th H2D,
 * in time order, and append an "s"/"f" pair for each. Returns the pairs. */
static long add_flows(json_t *out, xfer_t *d, size_t nd, xfer_t *h, size_t nh)
{
    qsort(d, nd, sizeof *d, xfer_cmp);
    qsort(h, nh, sizeof *h, xfer_cmp);
    long id = 0;
    size_t i = 0, j = 0;
    while (i < nd && j < nh) {
        int c = xfer_cmp(&d[i], &h[j]);
        if (same_act(&d[i], &h[j])) {
            if (d[i].ts <= h[j].ts) {
                id++;
                json_array_append_new(out, flow("s", id, &d[i]));
                json_array_append_new(out, flow("f", id, &h[j]));
                i++;
            }
            j++;
        } else if (c < 0) i++;
        else j++;
    }
    return id;
}

/* ------------------------------------------------------------ merge --- */

static double min_ts(json_t **evs, int n)
{
    double t0 = 1e300;
    for (int f = 0; f < n; f++) {
        size_t i;
        json_t *e;
        json_array_foreach(evs[f], i, e) {
            double ts = tj_num(e, "ts", 1e300);
            if ('M' != tj_str(e, "ph")[0] && ts < t0) t0 = ts;
        }
    }
    return t0 < 1e300 ? t0 : 0;
}

static void add_meta(json_t *out, int rank, int has_name)
{
    char nm[32];
    snprintf(nm, sizeof nm, "rank %d", rank);
    if (!has_name)
        json_array_append_new(out, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M", "name",
                                             "process_name", "pid", rank, "tid", 0, "args", "name",
                                             nm));
    json_array_append_new(out, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "ph", "M", "name",
                                         "process_sort_index", "pid", rank, "tid", 0, "args",
                                         "sort_index", rank));
}

/* One file's events into out, shifted by t0; its D2H/H2D into d/h. */
static void copy_file(json_t *out, json_t *ev, int rank, double t0, xfer_t *d, size_t *nd,
                      xfer_t *h, size_t *nh)
{
    size_t i;
    json_t *e;
    int has_name = 0;
    json_array_foreach(ev, i, e) {
        json_t *c = json_copy(e);
        double ts = tj_num(e, "ts", -1), rts = round((ts - t0) * 1e3) / 1e3;
        /* to the nanosecond: the shift must not add digits of rounding noise */
        if (ts >= 0) json_object_set_new(c, "ts", json_real(rts));
        has_name |= !strcmp(tj_str(e, "name"), "process_name");
        json_array_append_new(out, c);
        const char *nm = tj_str(e, "name");
        int d2h = !strcmp(nm, "D2H"), h2d = !strcmp(nm, "H2D");
        if ('X' != tj_str(e, "ph")[0] || !(d2h || h2d)) continue;
        json_t *a = json_object_get(e, "args");
        /* the flow's point from the rounded start, so that it lies inside the
         * slice as written even when the transfer took under a nanosecond */
        xfer_t x = { (int)tj_num(a, "unit", -1), (int)tj_num(e, "tid", 0), rank,
                     tj_str(a, "name"), rts + tj_num(e, "dur", 0) / 2, rts };
        if (d2h) d[(*nd)++] = x;
        else h[(*nh)++] = x;
    }
    add_meta(out, rank, has_name);
}

json_t *trace_merge_load(char **files, int n, char *err, size_t errlen)
{
    json_t **evs = calloc((size_t)n, sizeof *evs), *out = NULL;
    int *ranks = calloc((size_t)n, sizeof *ranks);
    xfer_t *d = NULL, *h = NULL;
    size_t total = 0, nd = 0, nh = 0;
    if (!evs || !ranks) { snprintf(err, errlen, "no memory"); goto out; }
    for (int f = 0; f < n; f++) {
        if (!(evs[f] = load_events(files[f], err, errlen))) goto out;
        if ((ranks[f] = file_rank(files[f], evs[f], err, errlen)) < 0) goto out;
        for (int g = 0; g < f; g++)
            if (ranks[g] == ranks[f]) {
                snprintf(err, errlen, "%s and %s are both rank %d's trace", files[g], files[f], ranks[f]);
                goto out;
            }
        total += json_array_size(evs[f]);
    }
    d = calloc(total + 1, sizeof *d);
    h = calloc(total + 1, sizeof *h);
    out = json_array();
    if (!d || !h || !out) { snprintf(err, errlen, "no memory"); json_decref(out); out = NULL; goto out; }
    double t0 = min_ts(evs, n);
    for (int f = 0; f < n; f++) copy_file(out, evs[f], ranks[f], t0, d, &nd, h, &nh);
    add_flows(out, d, nd, h, nh);
out:
    for (int f = 0; evs && f < n; f++) json_decref(evs[f]);
    free(evs);
    free(ranks);
    free(d);
    free(h);
    return out;
}

int trace_merge_cmd(const char *path, char **files, int n)
{
    char err[1024];
    json_t *ev = trace_merge_load(files, n, err, sizeof err);
    if (!ev) { fprintf(stderr, "strata trace: %s\n", err); return 1; }
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); json_decref(ev); return 1; }
    /* one event a line: greppable, and any JSON reader takes it */
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"strata trace --merge\"},"
               "\"traceEvents\":[\n");
    size_t i, flows = 0;
    json_t *e;
    json_array_foreach(ev, i, e) {
        char *s = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(15));
        fprintf(f, "%s%s\n", s ? s : "{}", i + 1 < json_array_size(ev) ? "," : "");
        free(s);
        flows += 's' == tj_str(e, "ph")[0];
    }
    fprintf(f, "]}\n");
    int bad = ferror(f) | (0 != fclose(f));
    if (bad) fprintf(stderr, "strata trace: writing %s failed\n", path);
    else printf("%s: %d rank%s, %zu events, %zu D2H->H2D flows\n", path, n, 1 == n ? "" : "s",
                json_array_size(ev), flows);
    json_decref(ev);
    return bad;
}

/* ----------------------------------------------------------- options --- */

int trace_export_cmd(int argc, char **argv)
{
    const char *merge = NULL, *plot = NULL, *title = "";
    int step = 0, nf = 0;
    double xmax = 0;
    char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--merge") && has) merge = argv[++i];
        else if (!strcmp(a, "--plot") && has) plot = argv[++i];
        else if (!strcmp(a, "--title") && has) title = argv[++i];
        else if (!strcmp(a, "--step") && has) step = atoi(argv[++i]);
        else if (!strcmp(a, "--xmax") && has) xmax = atof(argv[++i]);
        else if (!strcmp(a, "--merge") || !strcmp(a, "--plot") || !strcmp(a, "--title") ||
                 !strcmp(a, "--step") || !strcmp(a, "--xmax")) {
            fprintf(stderr, "strata trace: %s needs a value\n", a);
            free(files);
            return 2;
        } else if ('-' != a[0]) files[nf++] = argv[i];
    }
    int rc = -1;
    if (!merge && !plot && (step || *title || xmax)) {
        fprintf(stderr, "strata trace: --step, --title and --xmax go with --plot\n");
        rc = 2;
    } else if (merge || plot) {
        if (0 == nf) fprintf(stderr, "strata trace: no trace files given\n");
        rc = 0 == nf ? 2 : 0;
        if (0 == rc && merge) rc = trace_merge_cmd(merge, files, nf);
        if (0 == rc && plot) rc = trace_plot_cmd(plot, step, title, xmax, files, nf);
    }
    free(files);
    return rc;
}
