/*
 * trace.c - per-rank Chrome trace-event JSON: a cheap thread-safe writer
 * (events buffered in memory, written whole) that the runtime records its
 * ops into, and simulated steps traced the same way. Reading traces back
 * and the per-step analysis behind `strata trace` are tools/'s
 * (tools/trace.h).
 */
#include "config.h"
#include "sched/sched_impl.h"

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
        if (i + 1 < n && ev[i + 1].time_s == ev[i].time_s) continue;   /* one sample per instant */
        size_t b[STRATA_TIER_COUNT];
        for (int t = 0; t < STRATA_TIER_COUNT; t++) b[t] = cur[t] > 0 ? (size_t)cur[t] : 0;
        if (STRATA_OK != sched_trace_memory(tr, t0 + ev[i].time_s, b)) goto out;
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
