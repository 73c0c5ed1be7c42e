/*
 * trace_plot.c - `strata trace --plot OUT.png [--step N] [--title T] FILE...`:
 * one step of a run as a timeline, one row per engine per rank, drawn by
 * gnuplot (pngcairo) from a script this file writes: compute, all-gather,
 * reduce-scatter, D2H, H2D and storage I/O each a colour, and the compute
 * engine's waits marked: its WAIT events (waiting for a transfer) and the
 * other gaps (idle).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/trace_json.h"

#define NENG 5
static const char *const engines[NENG] = { "compute", "comm", "d2h", "h2d", "io" };

/* K_WAIT: the runtime's WAIT events (compute waiting for a transfer);
 * K_IDLE: other gaps of the compute engine (waiting for a collective, ...) */
enum { K_COMPUTE, K_AG, K_RS, K_D2H, K_H2D, K_IO, K_OTHER, K_WAIT, K_IDLE, NKIND };
static const char *const kind_title[NKIND] = {
    "compute", "all-gather", "reduce-scatter", "D2H", "H2D", "storage I/O", "other comm",
    "waits for transfers", "compute idle"
};
static const char *const kind_color[NKIND] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#bcbd22", "#000000",
    "#7f7f7f"
};

static int engine_of(const char *cat)
{
    for (int i = 0; i < NENG; i++) if (!strcmp(cat, engines[i])) return i;
    return -1;
}

static int kind_of(int engine, const char *name)
{
    switch (engine) {
    case 0: return !strcmp(name, "WAIT") ? K_WAIT : K_COMPUTE;
    case 1: return !strcmp(name, "AG") ? K_AG : !strcmp(name, "RS") ? K_RS : K_OTHER;
    case 2: return K_D2H;
    case 3: return K_H2D;
    default: return K_IO;
    }
}

typedef struct { double x0, x1; int row, kind; } box_t;
typedef struct { box_t *b; size_t n, cap; } boxes_t;

static void add_box(boxes_t *bs, double x0, double x1, int row, int kind)
{
    if (bs->n == bs->cap) {
        size_t cap = bs->cap ? 2 * bs->cap : 256;
        box_t *nb = realloc(bs->b, cap * sizeof *nb);
        if (!nb) return;
        bs->b = nb;
        bs->cap = cap;
    }
    bs->b[bs->n++] = (box_t){ x0, x1, row, kind };
}

/* Step `step`'s window on every rank: lo = earliest start, hi = latest
 * end; step <= 0 takes the last step. Returns the step or -1. */
static int step_window(json_t *ev, int step, int *nranks, double *lo, double *hi)
{
    size_t i;
    json_t *e;
    int last = 0;
    *nranks = 0;
    json_array_foreach(ev, i, e) {
        int s = (int)tj_num(json_object_get(e, "args"), "step", 0);
        int pid = (int)tj_num(e, "pid", 0);
        if (pid + 1 > *nranks) *nranks = pid + 1;
        if ('X' == tj_str(e, "ph")[0] && !strcmp(tj_str(e, "name"), "step") && s > last) last = s;
    }
    if (step <= 0) step = last;
    *lo = 1e300;
    *hi = -1e300;
    json_array_foreach(ev, i, e) {
        if ('X' != tj_str(e, "ph")[0] || strcmp(tj_str(e, "name"), "step") ||
            (int)tj_num(json_object_get(e, "args"), "step", 0) != step) continue;
        double ts = tj_num(e, "ts", 0), te = ts + tj_num(e, "dur", 0);
        if (ts < *lo) *lo = ts;
        if (te > *hi) *hi = te;
    }
    return *lo < *hi ? step : -1;
}

static int box_cmp(const void *a, const void *b)
{
    const box_t *x = a, *y = b;
    if (x->row != y->row) return x->row - y->row;
    return (x->x0 > y->x0) - (x->x0 < y->x0);
}

/* The engines' boxes within [lo, hi], then the compute rows' gaps longer
 * than 0.5% of the step as idle. */
static void collect(json_t *ev, double lo, double hi, boxes_t *bs)
{
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        int eng = engine_of(tj_str(e, "cat"));
        if ('X' != tj_str(e, "ph")[0] || eng < 0) continue;
        double ts = tj_num(e, "ts", 0), te = ts + tj_num(e, "dur", 0);
        if (te <= lo || ts >= hi) continue;
        add_box(bs, ts < lo ? lo : ts, te > hi ? hi : te, (int)tj_num(e, "pid", 0) * NENG + eng,
                kind_of(eng, tj_str(e, "name")));
    }
    qsort(bs->b, bs->n, sizeof *bs->b, box_cmp);
    size_t n = bs->n;
    double end = lo;
    for (size_t k = 0; k < n; k++) {
        const box_t b = bs->b[k];
        if (b.row % NENG) continue;
        if (k == 0 || bs->b[k - 1].row != b.row) end = lo;
        if (b.x0 - end > 0.005 * (hi - lo)) add_box(bs, end, b.x0, b.row, K_IDLE);
        if (b.x1 > end) end = b.x1;
    }
}

static void write_script(FILE *g, const char *out, const char *title, int step, int nranks,
                         double lo, double hi, double xmax_ms, const boxes_t *bs)
{
    int rows = nranks * NENG;
    fprintf(g, "set terminal pngcairo size 1100,%d noenhanced font 'sans,9'\n", 120 + 26 * rows);
    fprintf(g, "set output '%s'\nset title '%s%sstep %d, %d rank%s (%.1f ms)'\n", out, title,
            *title ? ": " : "", step, nranks, 1 == nranks ? "" : "s", (hi - lo) / 1e3);
    fprintf(g, "set xlabel 'time in the step (ms)'\nset xrange [0:%g]\nset yrange [%g:-0.5]\n",
            xmax_ms > 0 ? xmax_ms : (hi - lo) / 1e3, rows - 0.5);
    fprintf(g, "set key outside right top\nset grid xtics\nset style fill solid 1.0 border lc rgb 'white'\n");
    fprintf(g, "set ytics (");
    for (int r = 0; r < rows; r++)
        fprintf(g, "%s'rank %d %s' %d", r ? ", " : "", r / NENG, engines[r % NENG], r);
    fprintf(g, ")\n");
    int used[NKIND] = { 0 };
    for (int k = 0; k < NKIND; k++) {
        fprintf(g, "$k%d << EOD\n", k);
        for (size_t i = 0; i < bs->n; i++) {
            const box_t *b = &bs->b[i];
            if (b->kind != k) continue;
            double h = K_IDLE == k ? 0.12 : K_WAIT == k ? 0.25 : 0.38;  /* idle: a thin bar */
            fprintf(g, "%.6f %d %.6f %.2f\n", (b->x0 + b->x1) / 2e3 - lo / 1e3, b->row,
                    (b->x1 - b->x0) / 2e3, h);
            used[k] = 1;
        }
        fprintf(g, "EOD\n");
    }
    fprintf(g, "plot");
    for (int k = 0, first = 1; k < NKIND; k++) {
        if (!used[k]) continue;
        fprintf(g, "%s $k%d using 1:2:3:4 with boxxyerror lc rgb '%s' title '%s'", first ? "" : ",",
                k, kind_color[k], kind_title[k]);
        first = 0;
    }
    fprintf(g, "\n");
}

/* gnuplot's path, or NULL: STRATA_GNUPLOT, else "gnuplot" on PATH. */
static const char *find_gnuplot(char *buf, size_t len)
{
    const char *gp = getenv("STRATA_GNUPLOT");
    if (gp && *gp) return access(gp, X_OK) ? NULL : gp;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, len, "%.*s/gnuplot", (int)n, p);
        if (!access(buf, X_OK)) return buf;
        p += n + (':' == p[n]);
    }
    return NULL;
}

int trace_plot_cmd(const char *out, int step, const char *title, double xmax_ms, char **files,
                   int n)
{
    char err[1024], gpbuf[4096], cmd[4200];
    if (strchr(out, '\'') || strchr(title, '\'')) {
        fprintf(stderr, "strata trace: --plot and --title take no single quotes\n");
        return 2;
    }
    const char *gp = find_gnuplot(gpbuf, sizeof gpbuf);
    if (!gp) {
        fprintf(stderr, "strata trace: --plot draws with gnuplot, which is not installed (%s); "
                "install it (Debian: apt-get install gnuplot-nox) or set STRATA_GNUPLOT\n",
                getenv("STRATA_GNUPLOT") ? getenv("STRATA_GNUPLOT") : "not on PATH");
        return 1;
    }
    json_t *ev = trace_merge_load(files, n, err, sizeof err);
    if (!ev) { fprintf(stderr, "strata trace: %s\n", err); return 1; }
    int nranks, rc = 1;
    double lo, hi;
    boxes_t bs = { 0 };
    int s = step_window(ev, step, &nranks, &lo, &hi);
    if (s < 0) {
        fprintf(stderr, "strata trace: no step %d in these traces\n", step);
        goto out;
    }
    collect(ev, lo, hi, &bs);
    snprintf(cmd, sizeof cmd, "'%s'", gp);
    FILE *g = popen(cmd, "w");
    if (!g) { perror(gp); goto out; }
    write_script(g, out, title, s, nranks, lo, hi, xmax_ms, &bs);
    int st = pclose(g);
    if (0 != st) fprintf(stderr, "strata trace: gnuplot failed (status %d) drawing %s\n", st, out);
    else printf("%s: step %d, %d ranks, %zu boxes\n", out, s, nranks, bs.n);
    rc = 0 != st;
out:
    free(bs.b);
    json_decref(ev);
    return rc;
}
