/*
 * trace.c - per-rank Chrome trace-event JSON: a cheap thread-safe writer
 * (events buffered in memory, written whole), a small reader for exactly
 * that format (tolerant of spacing, key order, unknown keys and a missing
 * closing bracket, as Chrome's own loader is), and the per-step analysis
 * behind `strata trace`.
 */
#include "config.h"
#include "sched/sched_impl.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer -------------------------------------------------------------- */

typedef struct {
    char   ph;                 /* 'X' op or step, 'C' memory */
    int    engine;             /* -1: step track */
    char   name[16];
    double ts, dur;
    int    unit;               /* X op: unit; step: step number */
    char   save[SCHED_NAME_MAX];
    size_t bytes;
    size_t mem[STRATA_TIER_COUNT];
} rec_t;

struct sched_trace {
    int rank;
    pthread_mutex_t lock;
    rec_t *rec;
    int n, cap;
};

strata_status_t sched_trace_create(int rank, sched_trace_t **tr_p)
{
    if (!tr_p) return STRATA_ERR_INVALID;
    sched_trace_t *tr = calloc(1, sizeof *tr);
    if (!tr) return STRATA_ERR_NOMEM;
    tr->rank = rank;
    pthread_mutex_init(&tr->lock, NULL);
    *tr_p = tr;
    return STRATA_OK;
}

void sched_trace_destroy(sched_trace_t *tr)
{
    if (!tr) return;
    pthread_mutex_destroy(&tr->lock);
    free(tr->rec);
    free(tr);
}

static strata_status_t push(sched_trace_t *tr, const rec_t *r)
{
    strata_status_t st = STRATA_OK;
    pthread_mutex_lock(&tr->lock);
    if (tr->n == tr->cap) {
        int cap = tr->cap ? 2 * tr->cap : 1024;
        rec_t *x = realloc(tr->rec, (size_t)cap * sizeof *x);
        if (!x) st = STRATA_ERR_NOMEM;
        else {
            tr->rec = x;
            tr->cap = cap;
        }
    }
    if (STRATA_OK == st) tr->rec[tr->n++] = *r;
    pthread_mutex_unlock(&tr->lock);
    return st;
}

strata_status_t sched_trace_op(sched_trace_t *tr, sched_engine_t engine, const char *name,
                               double start_s, double dur_s, int unit, const char *save, size_t bytes)
{
    if (!tr || !name || engine < 0 || engine >= SCHED_ENGINE_COUNT) return STRATA_ERR_INVALID;
    rec_t r = { .ph = 'X', .engine = engine, .ts = start_s, .dur = dur_s, .unit = unit, .bytes = bytes };
    snprintf(r.name, sizeof r.name, "%s", name);
    if (save) snprintf(r.save, sizeof r.save, "%s", save);
    return push(tr, &r);
}

strata_status_t sched_trace_step(sched_trace_t *tr, int step, double start_s, double dur_s)
{
    if (!tr) return STRATA_ERR_INVALID;
    rec_t r = { .ph = 'X', .engine = -1, .name = "step", .ts = start_s, .dur = dur_s, .unit = step };
    return push(tr, &r);
}

strata_status_t sched_trace_memory(sched_trace_t *tr, double t_s, const size_t bytes[STRATA_TIER_COUNT])
{
    if (!tr || !bytes) return STRATA_ERR_INVALID;
    rec_t r = { .ph = 'C', .engine = -1, .name = "memory", .ts = t_s };
    memcpy(r.mem, bytes, sizeof r.mem);
    return push(tr, &r);
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ('"' == c || '\\' == c) fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

strata_status_t sched_trace_write(sched_trace_t *tr, const char *path, char *err, size_t errlen)
{
    if (!tr || !path) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace write: NULL argument");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return sched_fail(err, errlen, STRATA_ERR_IO, "cannot write trace %s: %s", tmp, strerror(errno));
    pthread_mutex_lock(&tr->lock);
    int R = tr->rank;
    fprintf(f, "{\"traceEvents\":[\n");
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"rank %d\"}},\n", R, R);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"step\"}}", R);
    for (int e = 0; e < SCHED_ENGINE_COUNT; e++)
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                R, e + 1, sched_engine_name((sched_engine_t)e));
    for (int i = 0; i < tr->n; i++) {
        const rec_t *r = &tr->rec[i];
        fprintf(f, ",\n{\"ph\":\"%c\",\"name\":", r->ph);
        put_string(f, r->name);
        if ('C' == r->ph) {
            fprintf(f, ",\"pid\":%d,\"ts\":%.3f,\"args\":{\"device\":%zu,\"host\":%zu,\"storage\":%zu}}", R,
                    r->ts * 1e6, r->mem[0], r->mem[1], r->mem[2]);
        } else if (r->engine < 0) {
            fprintf(f, ",\"cat\":\"step\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%d}}",
                    R, r->ts * 1e6, r->dur * 1e6, r->unit);
        } else {
            fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"unit\":%d,\"name\":",
                    sched_engine_name((sched_engine_t)r->engine), R, r->engine + 1, r->ts * 1e6, r->dur * 1e6,
                    r->unit);
            put_string(f, r->save);
            fprintf(f, ",\"bytes\":%zu}}", r->bytes);
        }
    }
    fprintf(f, "\n]}\n");
    pthread_mutex_unlock(&tr->lock);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        remove(tmp);
        return sched_fail(err, errlen, STRATA_ERR_IO, "writing trace %s failed", tmp);
    }
    if (rename(tmp, path)) {
        remove(tmp);
        return sched_fail(err, errlen, STRATA_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    }
    return STRATA_OK;
}

strata_status_t sched_trace_add_sim(sched_trace_t *tr, const sched_t *s, int step, double t0,
                                    char *err, size_t errlen)
{
    if (!tr || !s) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace: NULL argument");
    double *start = malloc(((size_t)s->nops + 1) * sizeof(double));
    double *end = malloc(((size_t)s->nops + 1) * sizeof(double));
    sched_mem_event_t *ev = NULL;
    sched_result_t r;
    int n = 0;
    strata_status_t st = STRATA_ERR_NOMEM;
    if (!start || !end) goto out;
    if (STRATA_OK != (st = sched_simulate(s, &r, start, end, err, errlen))) goto out;
    st = STRATA_ERR_NOMEM;
    for (int i = 0; i < s->nops; i++) {
        const sched_op_t *o = &s->ops[i];
        const char *save = o->save >= 0 ? s->prog->units[o->unit].saves[o->save].name : NULL;
        if (STRATA_OK != sched_trace_op(tr, o->engine, sched_op_kind_name(o->kind), t0 + start[i],
                                        end[i] - start[i], o->unit, save, o->bytes)) goto out;
    }
    if (sched_mem_events(s, start, end, &ev, &n)) goto out;
    long long cur[STRATA_TIER_COUNT] = { (long long)s->prog->resident_bytes, 0, 0 };
    for (int i = 0; i < n; i++) {
        cur[ev[i].tier] += ev[i].delta;
        if (i + 1 < n && ev[i + 1].t == ev[i].t) continue;   /* one sample per instant */
        size_t b[STRATA_TIER_COUNT];
        for (int t = 0; t < STRATA_TIER_COUNT; t++) b[t] = cur[t] > 0 ? (size_t)cur[t] : 0;
        if (STRATA_OK != sched_trace_memory(tr, t0 + ev[i].t, b)) goto out;
    }
    if (STRATA_OK != sched_trace_step(tr, step, t0, r.step_s)) goto out;
    st = STRATA_OK;
out:
    if (STRATA_ERR_NOMEM == st) sched_fail(err, errlen, st, "out of memory tracing the schedule");
    free(ev);
    free(start);
    free(end);
    return st;
}

/* ---- reader ---------------------------------------------------------------- */

typedef struct {
    const char *p, *end, *text;
    char *err;
    size_t errlen;
} reader_t;

static int line_of(const reader_t *r)
{
    int line = 1;
    for (const char *c = r->text; c < r->p && c < r->end; c++) if ('\n' == *c) line++;
    return line;
}

static strata_status_t bad(reader_t *r, const char *what)
{
    char near[24];
    size_t n = 0;
    for (const char *c = r->p; c < r->end && n < sizeof near - 1 && '\n' != *c; c++) near[n++] = *c;
    near[n] = '\0';
    return sched_fail(r->err, r->errlen, STRATA_ERR_FORMAT, "line %d: expected %s%s%s%s", line_of(r), what,
                      r->p < r->end ? ", found '" : " before the end of the file", r->p < r->end ? near : "",
                      r->p < r->end ? "'" : "");
}

static void ws(reader_t *r)
{
    while (r->p < r->end && isspace((unsigned char)*r->p)) r->p++;
}

static int peek(reader_t *r)
{
    ws(r);
    return r->p < r->end ? (unsigned char)*r->p : -1;
}

/* A string into out (truncated to len; escapes beyond \" \\ \/ kept as is). */
static strata_status_t rd_string(reader_t *r, char *out, size_t len)
{
    if ('"' != peek(r)) return bad(r, "a string");
    r->p++;
    size_t n = 0;
    while (r->p < r->end && '"' != *r->p) {
        char c = *r->p++;
        if ('\\' == c && r->p < r->end) {
            c = *r->p++;
            if ('u' == c) { r->p += r->p + 4 <= r->end ? 4 : 0; c = '?'; }
            else if ('n' == c) c = '\n';
            else if ('t' == c) c = '\t';
        }
        if (out && n + 1 < len) out[n++] = c;
    }
    if (r->p >= r->end) return bad(r, "the end of a string");
    r->p++;
    if (out && len) out[n] = '\0';
    return STRATA_OK;
}

static strata_status_t rd_number(reader_t *r, double *out)
{
    ws(r);
    char buf[64];
    size_t n = 0;
    while (r->p + n < r->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", r->p[n])) n++;
    memcpy(buf, r->p, n);
    buf[n] = '\0';
    char *e;
    double d = strtod(buf, &e);
    if (0 == n || *e) return bad(r, "a number");
    r->p += n;
    *out = d;
    return STRATA_OK;
}

static strata_status_t skip_value(reader_t *r, int depth);

static strata_status_t skip_container(reader_t *r, int depth, char close)
{
    r->p++;
    if (close == peek(r)) { r->p++; return STRATA_OK; }
    for (;;) {
        strata_status_t st;
        if ('}' == close) {
            if (STRATA_OK != (st = rd_string(r, NULL, 0))) return st;
            if (':' != peek(r)) return bad(r, "':'");
            r->p++;
        }
        if (STRATA_OK != (st = skip_value(r, depth + 1))) return st;
        int c = peek(r);
        if (',' == c) { r->p++; continue; }
        if (close == c) { r->p++; return STRATA_OK; }
        return bad(r, '}' == close ? "',' or '}'" : "',' or ']'");
    }
}

static strata_status_t skip_value(reader_t *r, int depth)
{
    if (depth > 64) return bad(r, "less nesting");
    int c = peek(r);
    if ('"' == c) return rd_string(r, NULL, 0);
    if ('{' == c) return skip_container(r, depth, '}');
    if ('[' == c) return skip_container(r, depth, ']');
    for (const char *const *w = (const char *const[]){ "true", "false", "null", NULL }; *w; w++)
        if ((size_t)(r->end - r->p) >= strlen(*w) && !strncmp(r->p, *w, strlen(*w))) {
            r->p += strlen(*w);
            return STRATA_OK;
        }
    double d;
    return rd_number(r, &d);
}

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

static strata_status_t rd_event(reader_t *r, sched_trace_events_t *evs)
{
    sched_trace_event_t e;
    char key[32], ph[8] = "", cat[32] = "";
    double num;
    strata_status_t st;
    memset(&e, 0, sizeof e);
    e.engine = -1;
    e.step = -1;
    if ('{' != peek(r)) return bad(r, "an event object '{'");
    r->p++;
    if ('}' == peek(r)) { r->p++; return STRATA_OK; }
    for (;;) {
        if (STRATA_OK != (st = rd_string(r, key, sizeof key))) return st;
        if (':' != peek(r)) return bad(r, "':'");
        r->p++;
        if (!strcmp(key, "ph")) st = rd_string(r, ph, sizeof ph);
        else if (!strcmp(key, "name")) st = rd_string(r, e.name, sizeof e.name);
        else if (!strcmp(key, "cat")) st = rd_string(r, cat, sizeof cat);
        else if (!strcmp(key, "pid")) { st = rd_number(r, &num); e.rank = (int)num; }
        else if (!strcmp(key, "ts")) { st = rd_number(r, &num); e.ts = num * 1e-6; }
        else if (!strcmp(key, "dur")) { st = rd_number(r, &num); e.dur = num * 1e-6; }
        else if (!strcmp(key, "args") && '{' == peek(r)) {
            r->p++;
            if ('}' == peek(r)) r->p++;
            else for (;;) {
                if (STRATA_OK != (st = rd_string(r, key, sizeof key))) return st;
                if (':' != peek(r)) return bad(r, "':'");
                r->p++;
                if (!strcmp(key, "step") && '"' != peek(r)) { st = rd_number(r, &num); e.step = (int)num; }
                else st = skip_value(r, 1);
                if (STRATA_OK != st) return st;
                int c = peek(r);
                if (',' == c) { r->p++; continue; }
                if ('}' == c) { r->p++; break; }
                return bad(r, "',' or '}' in args");
            }
        } else st = skip_value(r, 1);
        if (STRATA_OK != st) return st;
        int c = peek(r);
        if (',' == c) { r->p++; continue; }
        if ('}' == c) { r->p++; break; }
        return bad(r, "',' or '}' after an event's field");
    }
    if (!ph[0]) return STRATA_OK;   /* not an event we know: ignore */
    e.ph = ph[0];
    e.engine = engine_of(cat);
    e.is_step = !strcmp(e.name, "step");
    if (!e.is_step && 'X' == e.ph && e.engine < 0) return STRATA_OK;   /* someone else's range */
    if (e.dur < 0) return bad(r, "a non-negative dur");
    return push_event(evs, &e);
}

strata_status_t sched_trace_parse(const char *text, size_t len, sched_trace_events_t *evs,
                                  char *err, size_t errlen)
{
    reader_t r = { text, text + len, text, err, errlen };
    strata_status_t st;
    char key[32];
    int c = peek(&r);
    if (!text || !evs) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace parse: NULL argument");
    int nest = 0;
    if ('{' == c) {   /* {"traceEvents": [...], other keys...} */
        r.p++;
        for (;;) {
            if (STRATA_OK != (st = rd_string(&r, key, sizeof key))) return st;
            if (':' != peek(&r)) return bad(&r, "':'");
            r.p++;
            if (!strcmp(key, "traceEvents")) break;
            if (STRATA_OK != (st = skip_value(&r, 1))) return st;
            if (',' != peek(&r)) return bad(&r, "a \"traceEvents\" array");
            r.p++;
        }
        nest = 1;
        c = peek(&r);
    }
    if ('[' != c) return bad(&r, "a JSON array of trace events");
    r.p++;
    int first = 1;
    for (;;) {
        c = peek(&r);
        if (-1 == c) break;   /* Chrome accepts an unterminated array: a trace cut short */
        if (']' == c) {
            r.p++;
            if (nest) {   /* rest of the object: skip other keys */
                while (',' == peek(&r)) {
                    r.p++;
                    if (STRATA_OK != (st = rd_string(&r, key, sizeof key))) return st;
                    if (':' != peek(&r)) return bad(&r, "':'");
                    r.p++;
                    if (STRATA_OK != (st = skip_value(&r, 1))) return st;
                }
                if ('}' != peek(&r)) return bad(&r, "'}' closing the trace");
                r.p++;
            }
            if (-1 != peek(&r)) return bad(&r, "nothing after the trace");
            break;
        }
        if (!first) {
            if (',' != c) return bad(&r, "',' or ']' between events");
            r.p++;
            if (-1 == peek(&r)) break;
        }
        first = 0;
        if (STRATA_OK != (st = rd_event(&r, evs))) return st;
    }
    return STRATA_OK;
}

strata_status_t sched_trace_read(const char *path, sched_trace_events_t *evs, char *err, size_t errlen)
{
    if (!path || !evs) return sched_fail(err, errlen, STRATA_ERR_INVALID, "trace read: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return sched_fail(err, errlen, STRATA_ERR_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            char *x = realloc(buf, cap);
            if (!x) { free(buf); fclose(f); return sched_fail(err, errlen, STRATA_ERR_NOMEM, "%s: out of memory", path); }
            buf = x;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (0 == k) break;
    }
    int rerr = ferror(f);
    fclose(f);
    if (rerr) { free(buf); return sched_fail(err, errlen, STRATA_ERR_IO, "%s: read error", path); }
    char msg[512];
    int before = evs->nevents;
    strata_status_t st = sched_trace_parse(buf, n, evs, msg, sizeof msg);
    free(buf);
    if (STRATA_OK != st) {
        evs->nevents = before;
        return sched_fail(err, errlen, st, "%s: not a strata trace: %s", path, msg);
    }
    return STRATA_OK;
}

void sched_trace_events_free(sched_trace_events_t *evs)
{
    if (!evs) return;
    free(evs->ev);
    memset(evs, 0, sizeof *evs);
}

/* ---- analysis --------------------------------------------------------------- */

typedef struct { double a, b; } iv_t;

static int cmp_iv(const void *x, const void *y)
{
    const iv_t *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge overlapping intervals in place; returns the new count. */
static int merge(iv_t *iv, int n)
{
    if (n <= 1) return n;
    qsort(iv, (size_t)n, sizeof *iv, cmp_iv);
    int m = 0;
    for (int i = 1; i < n; i++) {
        if (iv[i].a <= iv[m].b) { if (iv[i].b > iv[m].b) iv[m].b = iv[i].b; }
        else iv[++m] = iv[i];
    }
    return m + 1;
}

static double measure(const iv_t *iv, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += iv[i].b - iv[i].a;
    return s;
}

static double overlap(const iv_t *x, int nx, const iv_t *y, int ny)
{
    double s = 0;
    for (int i = 0, j = 0; i < nx && j < ny;) {
        double a = x[i].a > y[j].a ? x[i].a : y[j].a, b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (b > a) s += b - a;
        if (x[i].b < y[j].b) i++; else j++;
    }
    return s;
}

typedef struct { int rank, step; double t0, t1; } window_t;

static int cmp_ev_ts(const void *x, const void *y)
{
    const sched_trace_event_t *a = *(sched_trace_event_t *const *)x, *b = *(sched_trace_event_t *const *)y;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The step windows of one rank. */
static int windows_of(const sched_trace_events_t *evs, int rank, window_t **w_p, int *n_p)
{
    int n = 0, ninst = 0;
    double lo = 1e300, hi = -1e300;
    for (int i = 0; i < evs->nevents; i++) {
        const sched_trace_event_t *e = &evs->ev[i];
        if (e->rank != rank) continue;
        if (e->is_step && 'X' == e->ph) n++;
        if (e->is_step && ('i' == e->ph || 'I' == e->ph)) ninst++;
        if ('X' == e->ph || 'i' == e->ph || 'I' == e->ph) {
            if (e->ts < lo) lo = e->ts;
            if (e->ts + e->dur > hi) hi = e->ts + e->dur;
        }
    }
    window_t *w = calloc((size_t)(n + ninst + 1), sizeof *w);
    if (!w) return -1;
    int k = 0;
    if (n > 0) {
        for (int i = 0; i < evs->nevents; i++) {
            const sched_trace_event_t *e = &evs->ev[i];
            if (e->rank == rank && e->is_step && 'X' == e->ph)
                w[k++] = (window_t){ rank, e->step >= 0 ? e->step : k, e->ts, e->ts + e->dur };
        }
    } else if (ninst > 0) {
        const sched_trace_event_t **marks = malloc((size_t)ninst * sizeof *marks);
        if (!marks) { free(w); return -1; }
        int m = 0;
        for (int i = 0; i < evs->nevents; i++) {
            const sched_trace_event_t *e = &evs->ev[i];
            if (e->rank == rank && e->is_step && ('i' == e->ph || 'I' == e->ph)) marks[m++] = e;
        }
        qsort(marks, (size_t)m, sizeof *marks, cmp_ev_ts);
        /* a mark starts a step, which lasts until the next mark or the end */
        for (int i = 0; i < m; i++) {
            double t1 = i + 1 < m ? marks[i + 1]->ts : hi;
            if (t1 > marks[i]->ts) w[k++] = (window_t){ rank, marks[i]->step >= 0 ? marks[i]->step : i, marks[i]->ts, t1 };
        }
        free(marks);
    } else if (hi > lo) {
        w[k++] = (window_t){ rank, 0, lo, hi };
    }
    *w_p = w;
    *n_p = k;
    return 0;
}

static int cmp_step(const void *x, const void *y)
{
    const sched_trace_step_t *a = x, *b = y;
    return (a->step > b->step) - (a->step < b->step);
}

strata_status_t sched_trace_analyze(const sched_trace_events_t *evs, sched_trace_step_t **steps_p,
                                    int *nsteps_p, char *err, size_t errlen)
{
    if (!evs || !steps_p || !nsteps_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "analyze: NULL argument");
    sched_trace_step_t *steps = NULL;
    int nsteps = 0;
    iv_t *iv[SCHED_ENGINE_COUNT + 2] = { NULL };
    int nv[SCHED_ENGINE_COUNT + 2];
    strata_status_t st = STRATA_ERR_NOMEM;
    int *ranks = malloc(((size_t)evs->nevents + 1) * sizeof(int)), nranks = 0;
    if (!ranks) goto out;
    for (int i = 0; i < evs->nevents; i++) {
        int seen = 0;
        for (int k = 0; k < nranks && !seen; k++) seen = ranks[k] == evs->ev[i].rank;
        if (!seen) ranks[nranks++] = evs->ev[i].rank;
    }
    for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++)
        if (!(iv[e] = malloc(((size_t)evs->nevents + 1) * sizeof(iv_t)))) goto out;
    const int XFER = SCHED_ENGINE_COUNT, BUSY = SCHED_ENGINE_COUNT + 1;   /* unions */

    for (int ri = 0; ri < nranks; ri++) {
        window_t *w;
        int nw;
        if (windows_of(evs, ranks[ri], &w, &nw)) goto out;
        for (int k = 0; k < nw; k++) {
            for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) nv[e] = 0;
            for (int i = 0; i < evs->nevents; i++) {
                const sched_trace_event_t *x = &evs->ev[i];
                if (x->rank != ranks[ri] || 'X' != x->ph || x->engine < 0) continue;
                double a = x->ts > w[k].t0 ? x->ts : w[k].t0;
                double b = x->ts + x->dur < w[k].t1 ? x->ts + x->dur : w[k].t1;
                if (b <= a) continue;
                iv[x->engine][nv[x->engine]++] = (iv_t){ a, b };
                if (SCHED_D2H == x->engine || SCHED_H2D == x->engine || SCHED_IO == x->engine)
                    iv[XFER][nv[XFER]++] = (iv_t){ a, b };
                else iv[BUSY][nv[BUSY]++] = (iv_t){ a, b };
            }
            for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) nv[e] = merge(iv[e], nv[e]);
            /* find or add the step */
            int s;
            for (s = 0; s < nsteps && steps[s].step != w[k].step; s++) {}
            if (s == nsteps) {
                sched_trace_step_t *x = realloc(steps, (size_t)(nsteps + 1) * sizeof *x);
                if (!x) { free(w); goto out; }
                steps = x;
                memset(&steps[nsteps], 0, sizeof steps[nsteps]);
                steps[nsteps++].step = w[k].step;
            }
            sched_trace_step_t *t = &steps[s];
            double len = w[k].t1 - w[k].t0;
            t->ranks++;
            if (len > t->step_s) t->step_s = len;
            t->transfer_s += measure(iv[XFER], nv[XFER]);
            t->hidden_s += overlap(iv[XFER], nv[XFER], iv[BUSY], nv[BUSY]);
            t->exposed_s += measure(iv[XFER], nv[XFER]) -
                            overlap(iv[XFER], nv[XFER], iv[SCHED_COMPUTE], nv[SCHED_COMPUTE]);
            for (int e = 0; e < SCHED_ENGINE_COUNT; e++) t->wait_s[e] += len - measure(iv[e], nv[e]);
        }
        free(w);
    }
    for (int s = 0; s < nsteps; s++) {
        sched_trace_step_t *t = &steps[s];
        t->transfer_s /= t->ranks;
        t->hidden_s /= t->ranks;
        t->exposed_s /= t->ranks;
        for (int e = 0; e < SCHED_ENGINE_COUNT; e++) t->wait_s[e] /= t->ranks;
        t->overlap_frac = t->transfer_s > 0 ? t->hidden_s / t->transfer_s : 1.0;
    }
    if (nsteps > 1) qsort(steps, (size_t)nsteps, sizeof *steps, cmp_step);
    if (0 == nsteps) {
        st = sched_fail(err, errlen, STRATA_ERR_FORMAT, "the trace holds no timed events");
        goto out;
    }
    *steps_p = steps;
    *nsteps_p = nsteps;
    steps = NULL;
    st = STRATA_OK;
out:
    if (STRATA_ERR_NOMEM == st) sched_fail(err, errlen, st, "out of memory analysing the trace");
    free(steps);
    free(ranks);
    for (int e = 0; e < SCHED_ENGINE_COUNT + 2; e++) free(iv[e]);
    return st;
}
