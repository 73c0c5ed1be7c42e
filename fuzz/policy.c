/* fuzz/policy.c - the activation-policy parser (sched_policy_parse) on
 * arbitrary text: it either refuses the text with a message or returns a
 * policy whose rules have non-empty, terminated names. The input's first
 * line is also parsed as a step program so that resolving a parsed policy
 * against a program is fuzzed too. */
#include "fuzz.h"
#include "sched/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    char err[256] = "";
    sched_policy_t pol;
    if (sched_policy_parse(text, &pol, err, sizeof err) == STRATA_OK) {
        FUZZ_ASSERT(pol.nrules >= 0 && pol.nrules <= SCHED_MAX_NAMES);
        for (int i = 0; i < pol.nrules; i++)
            FUZZ_ASSERT(pol.rules[i].name[0] && memchr(pol.rules[i].name, 0, SCHED_NAME_MAX));
        sched_program_t *prog = NULL;
        if (!pol.is_auto && sched_program_parse("unit u0 ag_bytes=4K\nsave qkv 4K\nsave mlp 8K\n",
                                                &prog, err, sizeof err) == STRATA_OK) {
            sched_actions_t acts;
            (void)sched_policy_resolve(&pol, prog, &acts, err, sizeof err);
            sched_program_destroy(prog);
        }
    } else {
        FUZZ_ASSERT(err[0]);   /* a refusal says why */
    }
    free(text);
    return 0;
}
