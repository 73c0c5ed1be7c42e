/* sched_policy.t - activation policy strings: good and bad input, the
 * names check against the program (unknown names list what it saves),
 * STRATA_ACT_POLICY through the config table. */
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "sched/sched.h"
#include "tap.h"

static const struct { const char *text, *needle; } bad[] = {
    { "qkv=hots",               "'hots' for 'qkv' is not an action" },
    { "qkv",                    "'qkv' is not NAME=ACTION" },
    { "=host",                  "has no name" },
    { "qkv=host,qkv=keep",      "'qkv' given twice" },
    { " qkv = host , qkv=keep", "'qkv' given twice" },
    { "*=keep,*=host",          "'*' given twice" },
    { "qkv=",                   "'' for 'qkv' is not an action" },
    { NULL, NULL }
};

int main(void)
{
    char err[1024] = "";
    sched_policy_t pol;
    sched_actions_t acts;
    plan(26);

    is_int(sched_policy_parse(" qkv = host ,mlp_up=STORAGE,\t*=keep ", &pol, err, sizeof err), STRATA_OK,
           "whitespace and case tolerated");
    ok(2 == pol.nrules && !strcmp(pol.rules[0].name, "qkv") && SCHED_HOST == pol.rules[0].action &&
       SCHED_STORAGE == pol.rules[1].action && pol.has_default && SCHED_KEEP == pol.dflt,
       "rules and default parsed");
    is_int(sched_policy_parse("auto", &pol, err, sizeof err), STRATA_OK, "auto");
    ok(pol.is_auto, "auto flagged");
    is_int(sched_policy_parse("  AUTO ", &pol, err, sizeof err), STRATA_OK, "auto with spaces");
    is_int(sched_policy_parse("", &pol, err, sizeof err), STRATA_OK, "empty = all keep");
    ok(!pol.is_auto && 0 == pol.nrules && SCHED_KEEP == pol.dflt, "empty policy keeps everything");
    is_int(sched_policy_parse("*=recompute,", &pol, err, sizeof err), STRATA_OK, "trailing comma tolerated");
    ok(SCHED_RECOMPUTE == pol.dflt, "default recompute");
    for (int i = 0; bad[i].text; i++) {
        strata_status_t st = sched_policy_parse(bad[i].text, &pol, err, sizeof err);
        ok(STRATA_ERR_CONFIG == st && strstr(err, bad[i].needle), "'%s' rejected: %s", bad[i].text, err);
    }

    /* against a program */
    sched_program_t *p;
    if (STRATA_OK != sched_program_parse("unit a\nsave qkv 1k\nsave mlp_up 2k\nunit b\nsave qkv 1k\nsave attn 1k\n",
                                         &p, err, sizeof err)) bail_out("%s", err);
    sched_policy_parse("qkv=host,mlp_up=storage,*=recompute", &pol, err, sizeof err);
    is_int(sched_policy_resolve(&pol, p, &acts, err, sizeof err), STRATA_OK, "resolve a policy against the program");
    ok(3 == acts.nnames && SCHED_HOST == acts.action[0] && SCHED_STORAGE == acts.action[1] &&
       SCHED_RECOMPUTE == acts.action[2], "per-name actions, default for the rest");
    is_string(sched_actions_string(&acts, p, err, sizeof err), "qkv=host,mlp_up=storage,attn=recompute",
              "actions print as a policy string");
    sched_policy_parse("qkv=host,mlp_dn=keep", &pol, err, sizeof err);
    is_int(sched_policy_resolve(&pol, p, &acts, err, sizeof err), STRATA_ERR_NOT_FOUND, "unknown name rejected");
    ok(strstr(err, "'mlp_dn'") && strstr(err, "qkv, mlp_up, attn"), "message lists the saved names: %s", err);
    sched_policy_parse("auto", &pol, err, sizeof err);
    is_int(sched_policy_resolve(&pol, p, &acts, err, sizeof err), STRATA_ERR_INVALID, "auto is not resolved here");

    /* STRATA_ACT_POLICY reaches the config row, and parses */
    strata_config_t *cfg = NULL;
    char text[512] = "";
    setenv("STRATA_ACT_POLICY", "attn=host,*=keep", 1);
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create failed");
    is_int(strata_config_read_env(cfg, err, sizeof err), STRATA_OK, "config with STRATA_ACT_POLICY");
    strata_config_get(cfg, "act_policy", text, sizeof text);
    strata_config_destroy(cfg);
    is_int(sched_policy_parse(text, &pol, err, sizeof err), STRATA_OK, "env policy parses");
    is_int(sched_policy_resolve(&pol, p, &acts, err, sizeof err), STRATA_OK, "env policy resolves");
    ok(SCHED_HOST == acts.action[2] && SCHED_KEEP == acts.action[0], "env policy applied");
    unsetenv("STRATA_ACT_POLICY");

    sched_program_destroy(p);
    return done_testing();
}
