/*
 * trace_json.h - per-rank Chrome traces read with jansson, merged into one
 * trace (tools/trace_merge.c) and drawn as a timeline (tools/trace_plot.c).
 */
#ifndef STRATA_TOOLS_TRACE_JSON_H
#define STRATA_TOOLS_TRACE_JSON_H

#include <stddef.h>
#include <jansson.h>

/* The events of n per-rank trace files in one array, each event's pid its
 * rank (the pid its file uses; two files of one rank are an error), times
 * shifted so the earliest event is at 0 (ranks on one node share
 * CLOCK_MONOTONIC, so their times line up), a process_sort_index per rank,
 * and a flow ("s" -> "f") from each activation's D2H to its H2D.
 * Returns a new reference, or NULL with a message in err. */
json_t *trace_merge_load(char **files, int n, char *err, size_t errlen);

/* `strata trace --merge OUT FILE...` and `--plot OUT [--step N] [--title T]
 * [--xmax MS] FILE...` (both may be given): the exit status, or -1 when argv has
 * neither option (then the caller runs the report). */
int trace_export_cmd(int argc, char **argv);
int trace_merge_cmd(const char *out, char **files, int n);
int trace_plot_cmd(const char *out, int step, const char *title, double xmax_ms, char **files,
                   int n);

/* Small accessors: a member as a number (def when absent or not a number),
 * as a string ("" when absent). */
double      tj_num(const json_t *o, const char *key, double def);
const char *tj_str(const json_t *o, const char *key);

#endif
