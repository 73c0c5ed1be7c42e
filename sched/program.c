/*
 * program.c - the step program: recorded on the first step, checked on
 * every later one, printed, and parsed from text for `strata plan`.
 */
#include "config.h"
#include "sched/sched_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void forget(sched_program_t *p)
{
    for (int u = 0; u < p->nunits; u++) free(p->units[u].saves);
    free(p->units);
    p->units = NULL;
    p->nunits = p->cap_units = p->nnames = 0;
    p->resident_bytes = 0;
    p->reserve_bytes = 0;
    p->optim_s = 0;
    p->recording = 0;
}

strata_status_t sched_program_create(sched_program_t **prog_p)
{
    if (!prog_p) return STRATA_ERR_INVALID;
    sched_program_t *p = calloc(1, sizeof *p);
    if (!p) return STRATA_ERR_NOMEM;
    *prog_p = p;
    return STRATA_OK;
}

void sched_program_destroy(sched_program_t *prog)
{
    if (!prog) return;
    forget(prog);
    free(prog);
}

strata_status_t sched_record_begin(sched_program_t *prog)
{
    if (!prog) return STRATA_ERR_INVALID;
    forget(prog);
    prog->recording = 1;
    return STRATA_OK;
}

static int valid_name(const char *name)
{
    if (!name || !*name || strlen(name) >= SCHED_NAME_MAX) return 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && '_' != *c && '.' != *c && '-' != *c) return 0;
    return 1;
}

strata_status_t sched_record_unit(sched_program_t *prog, const char *name, size_t ag_bytes,
                                  int *unit_p, char *err, size_t errlen)
{
    if (!prog || !prog->recording)
        return sched_fail(err, errlen, STRATA_ERR_STATE, "record_unit outside record_begin/record_end");
    if (name && *name && !valid_name(name))
        return sched_fail(err, errlen, STRATA_ERR_INVALID,
                          "unit name '%s': use letters, digits, '_', '.', '-' (at most %d)", name,
                          SCHED_NAME_MAX - 1);
    if (prog->nunits == prog->cap_units) {
        int cap = prog->cap_units ? 2 * prog->cap_units : 16;
        sched_unit_t *u = realloc(prog->units, (size_t)cap * sizeof *u);
        if (!u)
            return sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory recording unit %d", prog->nunits);
        prog->units = u;
        prog->cap_units = cap;
    }
    sched_unit_t *u = &prog->units[prog->nunits];
    memset(u, 0, sizeof *u);
    if (name && *name) snprintf(u->name, sizeof u->name, "%s", name);
    else snprintf(u->name, sizeof u->name, "u%d", prog->nunits);
    u->ag_bytes = ag_bytes;
    if (unit_p) *unit_p = prog->nunits;
    prog->nunits++;
    return STRATA_OK;
}

strata_status_t sched_record_save(sched_program_t *prog, const char *name, size_t bytes,
                                  char *err, size_t errlen)
{
    if (!prog || !prog->recording || 0 == prog->nunits)
        return sched_fail(err, errlen, STRATA_ERR_STATE, "record_save before any record_unit");
    if (!valid_name(name))
        return sched_fail(err, errlen, STRATA_ERR_INVALID,
                          "save name '%s': use letters, digits, '_', '.', '-' (at most %d)",
                          name ? name : "(null)", SCHED_NAME_MAX - 1);
    sched_unit_t *u = &prog->units[prog->nunits - 1];
    for (int i = 0; i < u->nsaves; i++)
        if (!strcmp(u->saves[i].name, name))
            return sched_fail(err, errlen, STRATA_ERR_INVALID,
                              "unit %d (%s) saves '%s' twice; each name once per unit",
                              prog->nunits - 1, u->name, name);
    int id = sched_program_name_id(prog, name);
    if (id < 0) {
        if (SCHED_MAX_NAMES == prog->nnames)
            return sched_fail(err, errlen, STRATA_ERR_OVERFLOW, "more than %d distinct save names",
                              SCHED_MAX_NAMES);
        id = prog->nnames++;
        snprintf(prog->names[id], SCHED_NAME_MAX, "%s", name);
    }
    sched_save_t *s = realloc(u->saves, (size_t)(u->nsaves + 1) * sizeof *s);
    if (!s) return sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory recording a save");
    u->saves = s;
    snprintf(s[u->nsaves].name, SCHED_NAME_MAX, "%s", name);
    s[u->nsaves].name_id = id;
    s[u->nsaves].is_input = !strcmp(name, SCHED_INPUT_NAME);
    s[u->nsaves].bytes = bytes;
    s[u->nsaves].cost_s = 0;
    u->nsaves++;
    return STRATA_OK;
}

strata_status_t sched_record_save_cost(sched_program_t *prog, int unit, int save, double seconds,
                                       char *err, size_t errlen)
{
    if (!prog || unit < 0 || unit >= prog->nunits || save < 0 || save >= prog->units[unit].nsaves)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_save_cost: no save %d in unit %d",
                          save, unit);
    if (!(seconds >= 0))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_save_cost: %g s is not a duration",
                          seconds);
    prog->units[unit].saves[save].cost_s = seconds;
    prog->units[unit].save_costs = 1;
    return STRATA_OK;
}

/* act: per save of x, or NULL to take acts by name */
static double recompute_s(const sched_unit_t *x, const sched_action_t *act, const sched_actions_t *acts)
{
    double sum = 0;
    int rec = 0;
    for (int i = 0; i < x->nsaves; i++)
        if (!x->saves[i].is_input &&   /* REGEN of the unit before makes it */
            SCHED_RECOMPUTE == (act ? act[i] : acts->action[x->saves[i].name_id])) {
            rec = 1;
            sum += x->saves[i].cost_s;
        }
    if (!rec) return 0;
    return x->save_costs ? sum : x->cost_s[SCHED_COST_FWD];
}

double sched_unit_recompute_seconds(const sched_unit_t *x, const sched_action_t *act)
{
    return x && act ? recompute_s(x, act, NULL) : 0;
}

double sched_recompute_seconds(const sched_program_t *prog, int unit, const sched_actions_t *acts)
{
    if (!prog || !acts || unit < 0 || unit >= prog->nunits) return 0;
    return recompute_s(&prog->units[unit], NULL, acts);
}

strata_status_t sched_record_cost(sched_program_t *prog, int unit, sched_cost_t which,
                                  double seconds, char *err, size_t errlen)
{
    if (!prog || unit < 0 || unit >= prog->nunits || which < 0 || which >= SCHED_COST_COUNT)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_cost: no unit %d or cost %d", unit,
                          (int)which);
    if (!(seconds >= 0))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_cost: %g s is not a duration", seconds);
    prog->units[unit].cost_s[which] = seconds;
    return STRATA_OK;
}

strata_status_t sched_record_cost_res(sched_program_t *prog, int unit, sched_cost_t which,
                                      sched_res_t res, double bytes, char *err, size_t errlen)
{
    if (!prog || unit < 0 || unit >= prog->nunits || which < 0 || which >= SCHED_COST_COUNT ||
        res < 0 || res >= SCHED_RES_COUNT)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_cost_res: no unit %d, cost %d or resource %d",
                          unit, (int)which, (int)res);
    if (!(bytes >= 0))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_cost_res: %g is not a byte count", bytes);
    prog->units[unit].res_bytes[which][res] = bytes;
    return STRATA_OK;
}

strata_status_t sched_record_unit_mem(sched_program_t *prog, int unit, size_t grad_bytes,
                                      size_t out_bytes, size_t gin_bytes, const size_t work[2],
                                      char *err, size_t errlen)
{
    if (!prog || unit < 0 || unit >= prog->nunits)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "record_unit_mem: no unit %d", unit);
    sched_unit_t *u = &prog->units[unit];
    u->mem_set = 1;
    u->grad_bytes = grad_bytes;
    u->out_bytes = out_bytes;
    u->gin_bytes = gin_bytes;
    u->work_bytes[0] = work ? work[0] : 0;
    u->work_bytes[1] = work ? work[1] : 0;
    return STRATA_OK;
}

int sched_unit_input(const sched_unit_t *u)
{
    for (int i = u->nsaves - 1; i >= 0; i--)
        if (u->saves[i].is_input) return i;
    return -1;
}

size_t sched_unit_out_bytes(const sched_program_t *prog, int u)
{
    if (prog->units[u].mem_set) return prog->units[u].out_bytes;
    if (u + 1 >= prog->nunits) return 0;
    int in = sched_unit_input(&prog->units[u + 1]);
    return in < 0 ? 0 : prog->units[u + 1].saves[in].bytes;
}

sched_action_t sched_save_effective(int unit, const sched_save_t *sv, int action)
{
    /* in pairs: an odd unit's input is made again from the even unit's
     * before it, whose input must therefore stay */
    if (sv->is_input && SCHED_RECOMPUTE == action && !(unit & 1)) return SCHED_KEEP;
    return (sched_action_t)action;
}

int sched_unit_regen(const sched_program_t *prog, const sched_actions_t *acts, int u)
{
    if (!prog || !acts || u < 0 || u + 1 >= prog->nunits) return 0;
    const sched_unit_t *next = &prog->units[u + 1];
    int in = sched_unit_input(next);
    return in >= 0 && SCHED_RECOMPUTE == sched_save_effective(u + 1, &next->saves[in],
                                                              acts->action[next->saves[in].name_id]);
}

size_t sched_unit_grad_bytes(const sched_unit_t *u)
{
    return u->mem_set ? u->grad_bytes : u->ag_bytes;
}

strata_status_t sched_record_end(sched_program_t *prog, size_t resident_bytes, double optim_s,
                                 char *err, size_t errlen)
{
    if (!prog || !prog->recording)
        return sched_fail(err, errlen, STRATA_ERR_STATE, "record_end without record_begin");
    if (0 == prog->nunits)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "the step recorded no units");
    if (!(optim_s >= 0))
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "optimizer time %g s is not a duration", optim_s);
    prog->resident_bytes = resident_bytes;
    prog->optim_s = optim_s;
    prog->recording = 0;
    return STRATA_OK;
}

/* ---- checking later steps ------------------------------------------------ */

strata_status_t sched_check_save(const sched_program_t *ref, int unit, int index,
                                 const char *name, size_t bytes, char *err, size_t errlen)
{
    char a[32], b[32];
    if (!ref || !name) return sched_fail(err, errlen, STRATA_ERR_INVALID, "check_save: NULL argument");
    if (unit < 0 || unit >= ref->nunits)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed: unit %d ran, but the recorded step has %d units",
                          unit, ref->nunits);
    const sched_unit_t *u = &ref->units[unit];
    if (index >= u->nsaves)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed at unit %d (%s): save #%d '%s' (%s) is extra; the "
                          "recorded unit saved %d", unit, u->name, index, name,
                          strata_format_size(bytes, a, sizeof a), u->nsaves);
    const sched_save_t *s = &u->saves[index];
    if (strcmp(s->name, name))
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed at unit %d (%s): save #%d is '%s', recorded '%s'",
                          unit, u->name, index, name, s->name);
    if (s->bytes != bytes)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed at unit %d (%s): save '%s' is %s (%zu bytes), "
                          "recorded %s (%zu bytes)", unit, u->name, name,
                          strata_format_size(bytes, a, sizeof a), bytes,
                          strata_format_size(s->bytes, b, sizeof b), s->bytes);
    return STRATA_OK;
}

strata_status_t sched_check_unit(const sched_program_t *ref, int unit, int nsaves,
                                 size_t ag_bytes, char *err, size_t errlen)
{
    char a[32], b[32];
    if (!ref) return sched_fail(err, errlen, STRATA_ERR_INVALID, "check_unit: NULL program");
    if (unit < 0 || unit >= ref->nunits)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed: unit %d ran, but the recorded step has %d units",
                          unit, ref->nunits);
    const sched_unit_t *u = &ref->units[unit];
    if (u->ag_bytes != ag_bytes)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed at unit %d (%s): gathered parameters are %s, recorded %s",
                          unit, u->name, strata_format_size(ag_bytes, a, sizeof a),
                          strata_format_size(u->ag_bytes, b, sizeof b));
    if (nsaves != u->nsaves)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed at unit %d (%s): %d saves, recorded %d%s%s%s", unit,
                          u->name, nsaves, u->nsaves, nsaves < u->nsaves ? " (first missing: '" : "",
                          nsaves < u->nsaves ? u->saves[nsaves].name : "",
                          nsaves < u->nsaves ? "')" : "");
    return STRATA_OK;
}

strata_status_t sched_check_end(const sched_program_t *ref, int nunits, char *err, size_t errlen)
{
    if (!ref) return sched_fail(err, errlen, STRATA_ERR_INVALID, "check_end: NULL program");
    if (nunits != ref->nunits)
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed: the forward ran %d units, recorded %d", nunits,
                          ref->nunits);
    return STRATA_OK;
}

strata_status_t sched_program_compare(const sched_program_t *ref, const sched_program_t *now,
                                      char *err, size_t errlen)
{
    if (!ref || !now) return sched_fail(err, errlen, STRATA_ERR_INVALID, "compare: NULL program");
    int n = now->nunits < ref->nunits ? now->nunits : ref->nunits;
    for (int u = 0; u < n; u++) {
        const sched_unit_t *nu = &now->units[u];
        for (int i = 0; i < nu->nsaves; i++) {
            strata_status_t st = sched_check_save(ref, u, i, nu->saves[i].name, nu->saves[i].bytes,
                                                  err, errlen);
            if (STRATA_OK != st) return st;
        }
        strata_status_t st = sched_check_unit(ref, u, nu->nsaves, nu->ag_bytes, err, errlen);
        if (STRATA_OK != st) return st;
    }
    strata_status_t st = sched_check_end(ref, now->nunits, err, errlen);
    if (STRATA_OK != st) return st;
    if (ref->resident_bytes != now->resident_bytes) {
        char a[32], b[32];
        return sched_fail(err, errlen, STRATA_ERR_MISMATCH,
                          "step program changed: resident device bytes %s, recorded %s",
                          strata_format_size(now->resident_bytes, a, sizeof a),
                          strata_format_size(ref->resident_bytes, b, sizeof b));
    }
    return STRATA_OK;
}

/* ---- queries and printing ------------------------------------------------- */

int sched_program_name_id(const sched_program_t *prog, const char *name)
{
    if (!prog || !name) return -1;
    for (int i = 0; i < prog->nnames; i++)
        if (!strcmp(prog->names[i], name)) return i;
    return -1;
}

size_t sched_program_name_bytes(const sched_program_t *prog, int id)
{
    size_t sum = 0;
    for (int u = 0; prog && u < prog->nunits; u++)
        for (int i = 0; i < prog->units[u].nsaves; i++)
            if (prog->units[u].saves[i].name_id == id) sum += prog->units[u].saves[i].bytes;
    return sum;
}

const char *sched_program_name_list(const sched_program_t *prog, char *buf, size_t len)
{
    size_t off = 0;
    if (!len) return buf;
    buf[0] = '\0';
    for (int i = 0; prog && i < prog->nnames && off < len; i++) {
        int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", prog->names[i]);
        if (n < 0) break;
        off += (size_t)n;
    }
    if (prog && 0 == prog->nnames) snprintf(buf, len, "(none)");
    return buf;
}

void sched_program_print(const sched_program_t *prog, FILE *out)
{
    char a[32], b[32];
    if (!prog) return;
    fprintf(out, "program: %d units, resident %s, optimizer %.3f ms\n", prog->nunits,
            strata_format_size(prog->resident_bytes, a, sizeof a), prog->optim_s * 1e3);
    for (int u = 0; u < prog->nunits; u++) {
        const sched_unit_t *x = &prog->units[u];
        fprintf(out, "  %3d %-12s fwd %.3f ms  bwd %.3f ms  ag %.3f ms (%s)  rs %.3f ms\n", u,
                x->name, x->cost_s[SCHED_COST_FWD] * 1e3, x->cost_s[SCHED_COST_BWD] * 1e3,
                x->cost_s[SCHED_COST_AG] * 1e3, strata_format_size(x->ag_bytes, a, sizeof a),
                x->cost_s[SCHED_COST_RS] * 1e3);
        for (int i = 0; i < x->nsaves; i++)
            fprintf(out, "        save %-12s %s\n", x->saves[i].name,
                    strata_format_size(x->saves[i].bytes, b, sizeof b));
    }
}

/* ---- text description ----------------------------------------------------- */

static int parse_seconds(const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0)) return -1;
    *out = d;
    return 0;
}

/* Tokenise one line in place: returns the count of whitespace-separated words. */
static int split(char *line, char **w, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r", &save); t && n < max; t = strtok_r(NULL, " \t\r", &save))
        w[n++] = t;
    return n;
}

typedef struct {
    char name[SCHED_NAME_MAX];
    double cost[SCHED_COST_COUNT];
    size_t ag_bytes;
    int repeat;
    int nsaves;
    char save_name[SCHED_MAX_NAMES][SCHED_NAME_MAX];
    size_t save_bytes[SCHED_MAX_NAMES];
    double save_cost[SCHED_MAX_NAMES];   /* < 0: none given */
} pending_unit_t;

static strata_status_t flush_unit(sched_program_t *p, pending_unit_t *pu, char *err, size_t errlen)
{
    for (int r = 0; r < pu->repeat; r++) {
        char name[SCHED_NAME_MAX + 16];
        if (pu->repeat > 1) snprintf(name, sizeof name, "%s%d", pu->name, r);
        else snprintf(name, sizeof name, "%s", pu->name);
        if (strlen(name) >= SCHED_NAME_MAX) name[SCHED_NAME_MAX - 1] = '\0';
        int u;
        strata_status_t st = sched_record_unit(p, name, pu->ag_bytes, &u, err, errlen);
        if (STRATA_OK != st) return st;
        for (int c = 0; c < SCHED_COST_COUNT; c++) p->units[u].cost_s[c] = pu->cost[c];
        for (int i = 0; i < pu->nsaves; i++) {
            st = sched_record_save(p, pu->save_name[i], pu->save_bytes[i], err, errlen);
            if (STRATA_OK == st && pu->save_cost[i] >= 0)
                st = sched_record_save_cost(p, u, i, pu->save_cost[i], err, errlen);
            if (STRATA_OK != st) return st;
        }
    }
    pu->repeat = 0;
    return STRATA_OK;
}

/* `unit NAME [KEY=VALUE]...`: the unit before it is recorded, this one
 * becomes the pending unit. 0, or -1 with msg saying why not. */
static int parse_unit_line(sched_program_t *p, pending_unit_t *pu, char **w, int n, char *msg, size_t len)
{
    static const char *const cost_keys[SCHED_COST_COUNT] = { "fwd", "bwd", "ag", "rs" };
    if (pu->repeat && STRATA_OK != flush_unit(p, pu, msg, len)) return -1;
    memset(pu, 0, sizeof *pu);
    pu->repeat = 1;
    if (n < 2 || strchr(w[1], '=')) { snprintf(msg, len, "unit needs a name"); return -1; }
    snprintf(pu->name, sizeof pu->name, "%s", w[1]);
    for (int i = 2; i < n; i++) {
        char *eq = strchr(w[i], '=');
        if (!eq) { snprintf(msg, len, "expected KEY=VALUE, got '%s'", w[i]); return -1; }
        *eq = '\0';
        const char *k = w[i], *v = eq + 1;
        int done = 0;
        for (int c = 0; c < SCHED_COST_COUNT; c++)
            if (!strcmp(k, cost_keys[c])) {
                if (parse_seconds(v, &pu->cost[c])) {
                    snprintf(msg, len, "bad seconds '%s' for %s", v, k);
                    return -1;
                }
                done = 1;
            }
        if (done) continue;
        if (!strcmp(k, "ag_bytes")) {
            if (STRATA_OK != strata_parse_size(v, &pu->ag_bytes)) {
                snprintf(msg, len, "bad size '%s' for ag_bytes", v);
                return -1;
            }
        } else if (!strcmp(k, "repeat")) {
            char *end;
            long r = strtol(v, &end, 10);
            if (end == v || *end || r < 1 || r > 100000) {
                snprintf(msg, len, "bad repeat '%s' (1..100000)", v);
                return -1;
            }
            pu->repeat = (int)r;
        } else {
            snprintf(msg, len, "unknown key '%s' (fwd, bwd, ag, rs, ag_bytes, repeat)", k);
            return -1;
        }
    }
    return 0;
}

/* `save NAME SIZE [cost=S]`: a save of the pending unit. */
static int parse_save_line(pending_unit_t *pu, char **w, int n, char *msg, size_t len)
{
    if (!pu->repeat) { snprintf(msg, len, "save before any unit"); return -1; }
    if (3 != n && 4 != n) { snprintf(msg, len, "save takes NAME SIZE [cost=S]"); return -1; }
    if (SCHED_MAX_NAMES == pu->nsaves) { snprintf(msg, len, "too many saves"); return -1; }
    if (strlen(w[1]) >= SCHED_NAME_MAX) { snprintf(msg, len, "name too long"); return -1; }
    snprintf(pu->save_name[pu->nsaves], SCHED_NAME_MAX, "%s", w[1]);
    if (STRATA_OK != strata_parse_size(w[2], &pu->save_bytes[pu->nsaves])) {
        snprintf(msg, len, "bad size '%s'", w[2]);
        return -1;
    }
    pu->save_cost[pu->nsaves] = -1;
    if (4 == n && (strncmp(w[3], "cost=", 5) || parse_seconds(w[3] + 5, &pu->save_cost[pu->nsaves]))) {
        snprintf(msg, len, "expected cost=SECONDS, got '%s'", w[3]);
        return -1;
    }
    pu->nsaves++;
    return 0;
}

/* One line, its comment cut off: a directive, or nothing. */
static int parse_line(sched_program_t *p, pending_unit_t *pu, char *line, size_t *resident, double *optim,
                      char *msg, size_t len)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *w[16];
    int n = split(line, w, 16);
    if (0 == n) return 0;
    if (!strcmp(w[0], "resident") || !strcmp(w[0], "optim")) {
        if (2 != n) { snprintf(msg, len, "'%s' takes one value", w[0]); return -1; }
        if ('r' == w[0][0] ? STRATA_OK != strata_parse_size(w[1], resident)
                           : 0 != parse_seconds(w[1], optim)) {
            snprintf(msg, len, "bad value '%s' for %s", w[1], w[0]);
            return -1;
        }
        return 0;
    }
    if (!strcmp(w[0], "unit")) return parse_unit_line(p, pu, w, n, msg, len);
    if (!strcmp(w[0], "save")) return parse_save_line(pu, w, n, msg, len);
    snprintf(msg, len, "unknown directive '%s' (resident, optim, unit, save)", w[0]);
    return -1;
}

strata_status_t sched_program_parse(const char *text, sched_program_t **prog_p,
                                    char *err, size_t errlen)
{
    sched_program_t *p = NULL;
    pending_unit_t *pu = calloc(1, sizeof *pu);
    char *copy = text ? strdup(text) : NULL;
    strata_status_t st = STRATA_ERR_NOMEM;
    size_t resident = 0;
    double optim = 0;
    int lineno = 0;
    char msg[256];

    if (!text || !prog_p) {
        st = sched_fail(err, errlen, STRATA_ERR_INVALID, "parse: NULL argument");
        goto out;
    }
    if (!pu || !copy || STRATA_OK != sched_program_create(&p)) {
        st = sched_fail(err, errlen, STRATA_ERR_NOMEM, "out of memory");
        goto out;
    }
    sched_record_begin(p);
    for (char *line = copy, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        lineno++;
        if (parse_line(p, pu, line, &resident, &optim, msg, sizeof msg)) {
            st = sched_fail(err, errlen, STRATA_ERR_FORMAT, "program line %d: %s", lineno, msg);
            goto out;
        }
    }
    if (pu->repeat && STRATA_OK != (st = flush_unit(p, pu, msg, sizeof msg))) {
        st = sched_fail(err, errlen, STRATA_ERR_FORMAT, "program: %s", msg);
        goto out;
    }
    st = sched_record_end(p, resident, optim, err, errlen);
    if (STRATA_OK != st) goto out;
    *prog_p = p;
    p = NULL;
out:
    sched_program_destroy(p);
    free(pu);
    free(copy);
    return st;
}
