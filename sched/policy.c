/*
 * policy.c - activation policies per saved name, the link model and the
 * scheduler's options from the config table.
 */
#include "config.h"
#include "sched/sched_impl.h"
#include "base/base.h"       /* the options struct (sched_opts_from_config) */

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char *const action_names[SCHED_ACTION_COUNT] = { "keep", "host", "storage", "recompute" };
static const char *const engine_names[SCHED_ENGINE_COUNT] = { "compute", "comm", "d2h", "h2d", "io" };

const char *sched_action_name(sched_action_t a)
{
    return a >= 0 && a < SCHED_ACTION_COUNT ? action_names[a] : "?";
}

const char *sched_engine_name(sched_engine_t e)
{
    return e >= 0 && e < SCHED_ENGINE_COUNT ? engine_names[e] : "?";
}

const char *sched_mode_name(sched_mode_t m)
{
    return SCHED_MODE_NAIVE == m ? "naive" : SCHED_MODE_NONE == m ? "none" : "lhs";
}

/* Copy [b, e) without surrounding whitespace into out (size SCHED_NAME_MAX);
 * -1 if it does not fit. */
static int trimmed(const char *b, const char *e, char *out)
{
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    if ((size_t)(e - b) >= SCHED_NAME_MAX) return -1;
    memcpy(out, b, (size_t)(e - b));
    out[e - b] = '\0';
    return 0;
}

strata_status_t sched_policy_parse(const char *text, sched_policy_t *pol_p, char *err, size_t errlen)
{
    sched_policy_t pol;
    char name[SCHED_NAME_MAX], act[SCHED_NAME_MAX];
    if (!text || !pol_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "policy: NULL argument");
    memset(&pol, 0, sizeof pol);
    pol.dflt = SCHED_KEEP;

    if (0 == trimmed(text, text + strlen(text), name) && !strcasecmp(name, "auto")) {
        pol.is_auto = 1;
        *pol_p = pol;
        return STRATA_OK;
    }
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        char item[SCHED_NAME_MAX * 2];
        snprintf(item, sizeof item, "%.*s", (int)(end - p), p);
        if (!eq) {
            if (0 == trimmed(p, end, name) && !*name) {   /* empty item: "a=host,,b=keep" or trailing ',' */
                p = *end ? end + 1 : end;
                continue;
            }
            return sched_fail(err, errlen, STRATA_ERR_CONFIG,
                              "activation policy: '%s' is not NAME=ACTION (e.g. qkv=host,*=keep, or auto)",
                              item);
        }
        if (trimmed(p, eq, name) || trimmed(eq + 1, end, act))
            return sched_fail(err, errlen, STRATA_ERR_CONFIG,
                              "activation policy: '%s': name or action too long", item);
        if (!*name)
            return sched_fail(err, errlen, STRATA_ERR_CONFIG, "activation policy: '%s' has no name", item);
        int a;
        for (a = 0; a < SCHED_ACTION_COUNT; a++)
            if (!strcasecmp(act, action_names[a])) break;
        if (SCHED_ACTION_COUNT == a)
            return sched_fail(err, errlen, STRATA_ERR_CONFIG,
                              "activation policy: '%s' for '%s' is not an action "
                              "(keep, host, storage, recompute)", act, name);
        if (!strcmp(name, "*")) {
            if (pol.has_default)
                return sched_fail(err, errlen, STRATA_ERR_CONFIG, "activation policy: '*' given twice");
            pol.has_default = 1;
            pol.dflt = (sched_action_t)a;
        } else {
            for (int i = 0; i < pol.nrules; i++)
                if (!strcmp(pol.rules[i].name, name))
                    return sched_fail(err, errlen, STRATA_ERR_CONFIG,
                                      "activation policy: '%s' given twice", name);
            if (SCHED_MAX_NAMES == pol.nrules)
                return sched_fail(err, errlen, STRATA_ERR_CONFIG, "activation policy: more than %d names",
                                  SCHED_MAX_NAMES);
            snprintf(pol.rules[pol.nrules].name, SCHED_NAME_MAX, "%s", name);
            pol.rules[pol.nrules].action = (sched_action_t)a;
            pol.nrules++;
        }
        p = *end ? end + 1 : end;
    }
    *pol_p = pol;
    return STRATA_OK;
}

strata_status_t sched_policy_resolve(const sched_policy_t *pol, const sched_program_t *prog,
                                     sched_actions_t *acts_p, char *err, size_t errlen)
{
    sched_actions_t acts;
    char list[1024];
    if (!pol || !prog || !acts_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "resolve: NULL argument");
    if (pol->is_auto)
        return sched_fail(err, errlen, STRATA_ERR_INVALID, "policy 'auto' is resolved by sched_plan_auto");
    for (int i = 0; i < pol->nrules; i++)
        if (sched_program_name_id(prog, pol->rules[i].name) < 0)
            return sched_fail(err, errlen, STRATA_ERR_NOT_FOUND,
                              "activation policy names '%s', which the model does not save; it saves: %s",
                              pol->rules[i].name, sched_program_name_list(prog, list, sizeof list));
    acts.nnames = prog->nnames;
    for (int n = 0; n < prog->nnames; n++) {
        /* '*=recompute' keeps the inputs it starts from; only a rule that
         * names them recomputes them (in pairs: sched_save_effective) */
        acts.action[n] = SCHED_RECOMPUTE == pol->dflt && !strcmp(prog->names[n], SCHED_INPUT_NAME)
                       ? SCHED_KEEP : pol->dflt;
        for (int i = 0; i < pol->nrules; i++)
            if (!strcmp(pol->rules[i].name, prog->names[n])) acts.action[n] = pol->rules[i].action;
    }
    *acts_p = acts;
    return STRATA_OK;
}

void sched_actions_fill(sched_actions_t *acts, const sched_program_t *prog, sched_action_t a)
{
    acts->nnames = prog->nnames;
    for (int n = 0; n < SCHED_MAX_NAMES; n++) acts->action[n] = a;
    /* as '*=recompute': the inputs a recompute starts from stay */
    int in = sched_program_name_id(prog, SCHED_INPUT_NAME);
    if (SCHED_RECOMPUTE == a && in >= 0) acts->action[in] = SCHED_KEEP;
}

const char *sched_actions_string(const sched_actions_t *acts, const sched_program_t *prog,
                                 char *buf, size_t len)
{
    size_t off = 0;
    if (!len) return buf;
    buf[0] = '\0';
    for (int n = 0; n < acts->nnames && n < prog->nnames && off < len; n++) {
        sched_action_t a = acts->action[n];
        int k = snprintf(buf + off, len - off, "%s%s=%s", n ? "," : "", prog->names[n],
                         sched_action_name(a));
        if (k < 0) break;
        off += (size_t)k;
    }
    return buf;
}

/* ---- link model and options ---------------------------------------------- */

double sched_link_time(const sched_link_t *link, sched_engine_t engine, size_t bytes)
{
    double bw = 0;
    switch (engine) {
    case SCHED_D2H: bw = link->d2h_bw; break;
    case SCHED_H2D: bw = link->h2d_bw; break;
    case SCHED_IO:  bw = link->storage_bw; break;
    default: return 0;
    }
    /* unpaced engines take no modelled time, as in tiers/engine.c */
    if (!(bw > 0)) return 0;
    return link->latency + (double)bytes / bw;
}

void sched_opts_defaults(sched_opts_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->mode = SCHED_MODE_LHS;
    opts->prefetch = 1;
    opts->lookahead = 8;
}

strata_status_t sched_opts_from_config(const strata_config_t *cfg, sched_opts_t *opts_p,
                                       char *err, size_t errlen)
{
    sched_opts_t o;
    if (!cfg || !opts_p) return sched_fail(err, errlen, STRATA_ERR_INVALID, "opts: NULL argument");
    sched_opts_defaults(&o);
    /* the option table accepts only these two (config.c) */
    if (0 == cfg->schedule) o.mode = SCHED_MODE_LHS;
    else if (1 == cfg->schedule) o.mode = SCHED_MODE_NAIVE;
    else
        return sched_fail(err, errlen, STRATA_ERR_CONFIG, "schedule %d: use lhs or naive", cfg->schedule);
    if (cfg->prefetch < 0)
        return sched_fail(err, errlen, STRATA_ERR_CONFIG, "prefetch %d: must be >= 0", cfg->prefetch);
    o.budget[STRATA_TIER_DEVICE] = SIZE_MAX == cfg->device_mem ? 0 : cfg->device_mem;
    /* host_mem=auto depends on the machine, which this pure code does not
     * read: unlimited here; the runtime passes its host tier's budget and
     * strata plan simulates without one */
    o.budget[STRATA_TIER_PINNED_HOST] = SIZE_MAX == cfg->host_mem ||
                                        STRATA_SIZE_AUTO == cfg->host_mem ? 0 : cfg->host_mem;
    o.budget[STRATA_TIER_STORAGE] = SIZE_MAX == cfg->storage_mem ? 0 : cfg->storage_mem;
    o.link.d2h_bw = cfg->link_d2h_bw;
    o.link.h2d_bw = cfg->link_h2d_bw;
    o.link.storage_bw = cfg->link_storage_bw;
    o.link.latency = cfg->link_latency;
    o.link.chunk = cfg->chunk_size;
    o.prefetch = cfg->prefetch;
    *opts_p = o;
    return STRATA_OK;
}
