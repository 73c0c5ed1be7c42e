/*
 * unit_fsdp_place.t.c - the state_place option's text, without MPI:
 * fsdp_place_parse gives each class (master, grad, optim) its tiers and
 * fraction, '*' covers the classes not named on their own in any order,
 * and bad text is refused with a message that names the item and what is
 * allowed; fsdp_place_tier splits the units at round(F * L).
 */
#include <string.h>

#include "fsdp/fsdp.h"
#include "tap.h"

static fsdp_place_t p[FSDP_NCLASS];
static char why[256];

static int parse(const char *text)
{
    why[0] = '\0';
    return fsdp_place_parse(text, p, why, sizeof why);
}

static int is_place(fsdp_class_t c, strata_tier_t first, strata_tier_t rest, double frac)
{
    return p[c].first == first && p[c].rest == rest && p[c].frac == frac;
}

int main(void)
{
    plan(26);
    const strata_tier_t D = STRATA_TIER_DEVICE, H = STRATA_TIER_PINNED_HOST,
                        S = STRATA_TIER_STORAGE;

    ok(0 == parse(NULL) && is_place(FSDP_CLASS_MASTER, D, D, 1.0) &&
       is_place(FSDP_CLASS_GRAD, D, D, 1.0) && is_place(FSDP_CLASS_OPTIM, D, D, 1.0),
       "no text: every class on the device");
    ok(0 == parse("*=device") && is_place(FSDP_CLASS_OPTIM, D, D, 1.0), "the default text");
    ok(0 == parse("optim=storage") && is_place(FSDP_CLASS_OPTIM, S, D, 1.0) &&
       is_place(FSDP_CLASS_MASTER, D, D, 1.0) && is_place(FSDP_CLASS_GRAD, D, D, 1.0),
       "one class named: the others stay on the device");
    ok(0 == parse("*=host") && is_place(FSDP_CLASS_MASTER, H, D, 1.0) &&
       is_place(FSDP_CLASS_GRAD, H, D, 1.0) && is_place(FSDP_CLASS_OPTIM, H, D, 1.0),
       "'*' names every class");
    ok(0 == parse("optim=storage,*=host") && is_place(FSDP_CLASS_OPTIM, S, D, 1.0) &&
       is_place(FSDP_CLASS_MASTER, H, D, 1.0), "a class named on its own wins over a later '*'");
    ok(0 == parse("*=host,optim=storage") && is_place(FSDP_CLASS_OPTIM, S, D, 1.0) &&
       is_place(FSDP_CLASS_GRAD, H, D, 1.0), "... and over an earlier one");
    ok(0 == parse("master=host:0.5") && is_place(FSDP_CLASS_MASTER, H, D, 0.5),
       "TIER:F: the first fraction there, the rest on the device");
    ok(0 == parse("optim=storage:0.25:host") && is_place(FSDP_CLASS_OPTIM, S, H, 0.25),
       "TIER:F:TIER2: the rest on TIER2");
    ok(0 == parse(" grad=host , master=storage") && is_place(FSDP_CLASS_GRAD, H, D, 1.0) &&
       is_place(FSDP_CLASS_MASTER, S, D, 1.0), "spaces after commas are allowed");
    ok(0 == parse("optim=host:0") && 0 == fsdp_place_split(&p[FSDP_CLASS_OPTIM], 12),
       "F = 0: no unit on the first tier");

    /* the split: the first round(F * L) units */
    fsdp_place_t q = { S, H, 0.5 };
    is_int(fsdp_place_split(&q, 12), 6, "half of 12 units: 6");
    is_int(fsdp_place_tier(&q, 5, 12), S, "unit 5 of 12 on the first tier");
    is_int(fsdp_place_tier(&q, 6, 12), H, "unit 6 of 12 on the rest's tier");
    q.frac = 1.0 / 3.0;
    is_int(fsdp_place_split(&q, 4), 1, "a third of 4 units rounds to 1");
    q.frac = 0.9;
    is_int(fsdp_place_split(&q, 5), 5, "0.9 of 5 units rounds to 5");
    q.frac = 1.0;
    is_int(fsdp_place_tier(&q, 0, 1), S, "F = 1: every unit on the first tier");

    /* bad input: refused, saying what is wrong */
    ok(-1 == parse("optim") && strstr(why, "'optim' is not CLASS=TIER"), "no '=': %s", why);
    ok(-1 == parse("optim=disk") && strstr(why, "'disk' is not a tier: device, host or storage"),
       "an unknown tier: %s", why);
    ok(-1 == parse("weights=host") && strstr(why, "'weights' is not a class of training state"),
       "an unknown class: %s", why);
    ok(-1 == parse("optim=host:1.5") && strstr(why, "fraction after ':' must be a number from 0 to 1"),
       "a fraction above 1: %s", why);
    ok(-1 == parse("optim=host:-0.1"), "a negative fraction");
    ok(-1 == parse("optim=host:x"), "a fraction that is not a number: %s", why);
    ok(-1 == parse("optim=host:0.5:ssd") && strstr(why, "'ssd' is not a tier"),
       "an unknown second tier: %s", why);
    ok(-1 == parse("=host") && strstr(why, "is not CLASS=TIER"), "no class: %s", why);
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ok(-1 == parse(big) && strstr(why, "longer than"), "text too long: %s", why);
    ok(0 == strcmp(fsdp_class_name(fsdp_sb_class(FSDP_SB_STATE1)), "optim") &&
       0 == strcmp(fsdp_class_name(fsdp_sb_class(FSDP_SB_GRAD)), "grad") &&
       0 == strcmp(fsdp_class_name(fsdp_sb_class(FSDP_SB_MASTER)), "master"),
       "each buffer's class");
    return done_testing();
}
