/*
 * place.c - the state_place option's text (place.h): pure, for the
 * runtime and the planner alike.
 */
#include "config.h"
#include "base/place.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[FSDP_NCLASS] = { "master", "grad", "optim" };

const char *fsdp_class_name(fsdp_class_t c)
{
    return (unsigned)c < FSDP_NCLASS ? class_names[c] : "?";
}

static int tier_of(const char *s, size_t n, strata_tier_t *t)
{
    static const struct { const char *name; strata_tier_t tier; } names[] = {
        { "device", STRATA_TIER_DEVICE }, { "host", STRATA_TIER_PINNED_HOST },
        { "storage", STRATA_TIER_STORAGE } };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && 0 == strncmp(s, names[i].name, n)) {
            *t = names[i].tier;
            return 0;
        }
    return -1;
}

/* One item's value: TIER, TIER:F or TIER:F:TIER2. */
static int parse_value(const char *v, fsdp_place_t *p, char *why, size_t len)
{
    const char *c1 = strchr(v, ':');
    size_t n1 = c1 ? (size_t)(c1 - v) : strlen(v);
    *p = (fsdp_place_t){ .first = STRATA_TIER_DEVICE, .rest = STRATA_TIER_DEVICE, .frac = 1.0 };
    if (tier_of(v, n1, &p->first)) {
        snprintf(why, len, "'%.*s' is not a tier: device, host or storage", (int)n1, v);
        return -1;
    }
    if (!c1) return 0;
    char *end = NULL;
    p->frac = strtod(c1 + 1, &end);
    if (end == c1 + 1 || !(p->frac >= 0.0 && p->frac <= 1.0) || (*end && ':' != *end)) {
        snprintf(why, len, "'%s': the fraction after ':' must be a number from 0 to 1", v);
        return -1;
    }
    if (':' == *end && tier_of(end + 1, strlen(end + 1), &p->rest)) {
        snprintf(why, len, "'%s': '%s' is not a tier: device, host or storage", v, end + 1);
        return -1;
    }
    return 0;
}

int fsdp_place_parse(const char *text, fsdp_place_t p[FSDP_NCLASS], char *why, size_t len)
{
    for (int c = 0; c < FSDP_NCLASS; c++)
        p[c] = (fsdp_place_t){ STRATA_TIER_DEVICE, STRATA_TIER_DEVICE, 1.0 };
    if (!text) return 0;
    char buf[256];
    if (strlen(text) >= sizeof buf) {
        snprintf(why, len, "state_place is longer than %zu bytes", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, text);
    int named[FSDP_NCLASS] = { 0 };
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item)) item++;
        for (char *e = item + strlen(item); e > item && isspace((unsigned char)e[-1]); ) *--e = '\0';
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            snprintf(why, len, "state_place: '%s' is not CLASS=TIER (classes: master, grad, "
                     "optim, *)", item);
            return -1;
        }
        *eq = '\0';
        for (char *e = eq; e > item && isspace((unsigned char)e[-1]); ) *--e = '\0';
        char *val = eq + 1;
        while (isspace((unsigned char)*val)) val++;
        fsdp_place_t v;
        char vwhy[160];
        if (parse_value(val, &v, vwhy, sizeof vwhy)) {
            snprintf(why, len, "state_place: %s=%s", item, vwhy);
            return -1;
        }
        int hit = 0;
        for (int c = 0; c < FSDP_NCLASS; c++)
            if (0 == strcmp(item, "*") || 0 == strcmp(item, class_names[c])) {
                /* a class named on its own wins over '*', in any order */
                if (0 == strcmp(item, "*") && named[c]) { hit = 1; continue; }
                p[c] = v;
                if (strcmp(item, "*")) named[c] = 1;
                hit = 1;
            }
        if (!hit) {
            snprintf(why, len, "state_place: '%s' is not a class of training state (master, "
                     "grad, optim, or * for all)", item);
            return -1;
        }
    }
    return 0;
}

int fsdp_place_split(const fsdp_place_t *p, int L)
{
    double k = floor(p->frac * (double)L + 0.5);
    return k < 0 ? 0 : k > L ? L : (int)k;
}

strata_tier_t fsdp_place_tier(const fsdp_place_t *p, int ui, int L)
{
    return ui < fsdp_place_split(p, L) ? p->first : p->rest;
}

const fsdp_class_t fsdp_place_auto_order[FSDP_NCLASS] = { FSDP_CLASS_OPTIM, FSDP_CLASS_GRAD,
                                                          FSDP_CLASS_MASTER };

strata_tier_t fsdp_place_auto_tier(double host_free, double bytes)
{
    return 0.75 * host_free >= 2 * bytes ? STRATA_TIER_PINNED_HOST : STRATA_TIER_STORAGE;
}

const char *fsdp_place_describe(const int count[FSDP_NCLASS][STRATA_TIER_COUNT], int L,
                                char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < FSDP_NCLASS; c++)
        for (int t = 0; t < STRATA_TIER_COUNT; t++)
            if (count[c][t] && at < len)
                at += (size_t)snprintf(buf + at, len - at, "%s%s=%s:%d/%d", at ? "," : "",
                                       class_names[c], strata_tier_name((strata_tier_t)t),
                                       count[c][t], L);
    return buf;
}
