/*
 * trace_read.c - reading a rank's Chrome trace back: jansson parses the
 * JSON; this file only picks out the events strata's writer makes
 * (sched/trace.c) and what Chrome's loader tolerates beyond strict JSON,
 * an array that was never closed (the run was cut short).
 */
#include "config.h"
#include "base/file.h"
#include "tools/trace.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int engine_of(const char *cat)
{
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        if (!strcmp(cat, sched_engine_name((sched_engine_t)e))) return e;
    return -1;
}

static strata_status_t push_event(sched_trace_events_t *evs, const sched_trace_event_t *e)
{
    if (evs->nevents == evs->cap) {
        int cap = evs->cap ? 2 * evs->cap : 1024;
        sched_trace_event_t *x = realloc(evs->ev, (size_t)cap * sizeof *x);
        if (!x) return STRATA_ERR_NOMEM;
        evs->ev = x;
        evs->cap = cap;
    }
    evs->ev[evs->nevents++] = *e;
    return STRATA_OK;
}

/* A number field into *out (scaled); absent leaves *out. 0, or -1 when the
 * field is there but not a number. */
static int get_number(json_t *obj, const char *key, double scale, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v) * scale;
    return 0;
}

/* A string field into out (truncated to len); absent leaves out. */
static int get_string(json_t *obj, const char *key, char *out, size_t len)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v)) return -1;
    snprintf(out, len, "%s", json_string_value(v));
    return 0;
}

/* Event number i (from 1) of the array: kept, skipped (someone else's, or
 * a kind we do not read) or a FORMAT error naming the field. */
static strata_status_t take_event(json_t *o, size_t i, sched_trace_events_t *evs, char *err, size_t errlen)
{
    sched_trace_event_t e = { .engine = -1, .step = -1 };
    char ph[8] = "", cat[32] = "";
    double pid = 0, step = -1;
    const char *what = NULL;
    if (!json_is_object(o)) return sched_fail(err, errlen, STRATA_ERR_FORMAT, "event %zu is not an object", i);
    json_t *args = json_object_get(o, "args");
    if (get_string(o, "ph", ph, sizeof ph)) what = "\"ph\" a string";
    else if (get_string(o, "name", e.name, sizeof e.name)) what = "\"name\" a string";
    else if (get_string(o, "cat", cat, sizeof cat)) what = "\"cat\" a string";
    else if (get_number(o, "pid", 1, &pid)) what = "\"pid\" a number";
    else if (get_number(o, "ts", 1e-6, &e.ts)) what = "\"ts\" a number";
    else if (get_number(o, "dur", 1e-6, &e.dur)) what = "\"dur\" a number";
    if (what) return sched_fail(err, errlen, STRATA_ERR_FORMAT, "event %zu: expected %s", i, what);
    if (json_is_object(args) && json_is_number(json_object_get(args, "step")))   /* else no step */
        step = json_number_value(json_object_get(args, "step"));
    if (!ph[0]) return STRATA_OK;   /* not an event we know: ignore */
    if (!(pid >= INT_MIN && pid <= INT_MAX) || !(step >= INT_MIN && step <= INT_MAX))
        return sched_fail(err, errlen, STRATA_ERR_FORMAT, "event %zu: expected %s within an int", i,
                          pid >= INT_MIN && pid <= INT_MAX ? "args.step" : "\"pid\"");
    e.rank = (int)pid;
    e.step = (int)step;
    e.ph = ph[0];
    e.engine = engine_of(cat);
    e.is_step = !strcmp(e.name, "step");
    if (!e.is_step && 'X' == e.ph && e.engine < 0) return STRATA_OK;   /* someone else's range */
    if (e.dur < 0) return sched_fail(err, errlen, STRATA_ERR_FORMAT, "event %zu: expected a non-negative dur", i);
    return push_event(evs, &e);
}

static int is_space(char c) { return ' ' == c || '\t' == c || '\r' == c || '\n' == c; }

/* The text closed as Chrome closes a trace cut short: trailing spaces and
 * one trailing comma dropped, then "]" (a bare array) or "]}" (the
 * {"traceEvents":[ form). NULL without memory. */
static char *closed(const char *text, size_t len, size_t *n_p)
{
    size_t n = len;
    while (n > 0 && is_space(text[n - 1])) n--;
    if (n > 0 && ',' == text[n - 1]) n--;
    size_t b = 0;
    while (b < n && is_space(text[b])) b++;
    const char *tail = b < n && '{' == text[b] ? "]}" : "]";
    char *s = malloc(n + 3);
    if (!s) return NULL;
    memcpy(s, text, n);
    memcpy(s + n, tail, strlen(tail) + 1);
    *n_p = n + strlen(tail);
    return s;
}

/* The document, or NULL with jansson's error (of the text as given). */
static json_t *load(const char *text, size_t len, json_error_t *jerr)
{
    json_t *root = json_loadb(text, len, 0, jerr);
    if (root) return root;
    size_t n;
    char *s = closed(text, len, &n);
    if (!s) return NULL;
    json_error_t again;
    root = json_loadb(s, n, 0, &again);   /* the first error is the one reported */
    free(s);
    return root;
}

/* The events of a loaded document into evs; the document is freed. */
static strata_status_t take_events(json_t *root, sched_trace_events_t *evs, char *err, size_t errlen)
{
    json_t *arr = json_is_object(root) ? json_object_get(root, "traceEvents") : root;
    strata_status_t st = STRATA_OK;
    if (!json_is_array(arr)) {
        st = sched_fail(err, errlen, STRATA_ERR_FORMAT, "expected a JSON array of trace events or an object "
                        "with a \"traceEvents\" array");
    } else {
        size_t i;
        json_t *o;
        int before = evs->nevents;
        json_array_foreach(arr, i, o) {
            if (STRATA_OK != (st = take_event(o, i + 1, evs, err, errlen))) break;
        }
        if (STRATA_ERR_NOMEM == st) sched_fail(err, errlen, st, "out of memory reading the trace");
        if (STRATA_OK != st) evs->nevents = before;   /* a refused file adds nothing */
    }
    json_decref(root);
    return st;
}

strata_status_t sched_trace_parse(const char *text, size_t len, sched_trace_events_t *evs,
                                  char *err, size_t errlen)
{
    if (!text || !evs) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace parse: NULL argument");
    json_error_t jerr;
    json_t *root = load(text, len, &jerr);
    if (!root) return sched_fail(err, errlen, STRATA_ERR_FORMAT, "line %d: %s", jerr.line, jerr.text);
    return take_events(root, evs, err, errlen);
}

/* A file fed to jansson as it reads (json_load_callback): its first `left`
 * bytes, then `tail`. The file is never held whole in memory. */
typedef struct {
    FILE       *f;
    uint64_t    left;
    const char *tail;
    int         error;
} feed_t;

static size_t feed(void *buf, size_t len, void *data)
{
    feed_t *d = data;
    if (d->left > 0) {
        size_t k = fread(buf, 1, len < d->left ? len : (size_t)d->left, d->f);
        if (k > 0) {
            d->left -= k;
            return k;
        }
        if (ferror(d->f)) {
            d->error = 1;
            return (size_t)-1;
        }
        d->left = 0;
    }
    size_t k = strlen(d->tail) < len ? strlen(d->tail) : len;
    memcpy(buf, d->tail, k);
    d->tail += k;
    return k;
}

/* Where a file cut short ends as Chrome closes it (closed() above, without
 * reading the whole file): *n_p, its length less trailing spaces and one
 * trailing comma, and the tail that closes it. -1 on a read error. */
static int cut_short_end(FILE *f, uint64_t size, uint64_t *n_p, const char **tail_p)
{
    char blk[65536];
    uint64_t n = size;
    int comma = 0, done = 0;
    while (n > 0 && !done) {         /* backwards, a block at a time */
        size_t k = n < sizeof blk ? (size_t)n : sizeof blk;
        if (fseeko(f, (off_t)(n - k), SEEK_SET) || k != fread(blk, 1, k, f)) return -1;
        while (k > 0 && is_space(blk[k - 1])) k--, n--;
        if (k > 0) {
            comma = ',' == blk[k - 1];
            done = 1;
        }
    }
    if (comma) n--;
    if (fseeko(f, 0, SEEK_SET)) return -1;
    int first = ' ';
    for (uint64_t i = 0; i < n && EOF != first && is_space((char)first); i++) first = fgetc(f);
    *tail_p = '{' == first ? "]}" : "]";
    *n_p = n;
    return fseeko(f, 0, SEEK_SET);
}

strata_status_t sched_trace_read(const char *path, sched_trace_events_t *evs, char *err, size_t errlen)
{
    if (!path || !evs) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace read: NULL argument");
    char why[600];
    struct stat sb;
    FILE *f = base_fopen_regular(path, why, sizeof why);   /* a FIFO would block */
    if (!f) return sched_fail(err, errlen, STRATA_ERR_IO, "%s", why);
    if (fstat(fileno(f), &sb)) {
        fclose(f);
        return sched_fail(err, errlen, STRATA_ERR_IO, "%s: %s", path, strerror(errno));
    }
    /* jansson reads the file as it parses (only the document is in
     * memory); a file cut short is read again, closed as Chrome would */
    json_error_t jerr, again;
    feed_t d = { f, (uint64_t)sb.st_size, "", 0 };
    json_t *root = json_load_callback(feed, &d, 0, &jerr);
    if (!root && !d.error && 0 == cut_short_end(f, (uint64_t)sb.st_size, &d.left, &d.tail))
        root = json_load_callback(feed, &d, 0, &again);   /* the first error is the one reported */
    int rerr = d.error;
    fclose(f);
    if (rerr) return sched_fail(err, errlen, STRATA_ERR_IO, "%s: read error", path);
    char msg[512];
    strata_status_t st = root ? take_events(root, evs, msg, sizeof msg) : STRATA_ERR_FORMAT;
    if (!root) snprintf(msg, sizeof msg, "line %d: %s", jerr.line, jerr.text);
    if (STRATA_OK != st) return sched_fail(err, errlen, st, "%s: not a strata trace: %s", path, msg);
    return STRATA_OK;
}

void sched_trace_events_free(sched_trace_events_t *evs)
{
    if (!evs) return;
    free(evs->ev);
    memset(evs, 0, sizeof *evs);
}
