/*
 * unit_test_fault.t.c - the parser of STRATA_TEST_FAULT (base/test_fault.h),
 * good and bad specs; and the switch itself: armed in a build with the
 * test hooks, inert without them.
 */
#include "config.h"
#include "base/test_fault.h"
#include "t/tap.h"

#include <stdlib.h>

static const struct {
    const char *spec, *name;
    int         rc;
    uint64_t    n;
} cases[] = {
    { "ckpt_kill@600", "ckpt_kill", 1, 600 },
    { "spill_enospc@3,ckpt_kill@7", "ckpt_kill", 1, 7 },
    { "spill_enospc@3,ckpt_kill@7", "spill_enospc", 1, 3 },
    { "ckpt_kill@1,ckpt_kill@9", "ckpt_kill", 1, 9 },     /* the last one counts */
    { "ckpt_kill@600", "ckpt", 0, 0 },                    /* whole names only */
    { "ckpt_kill@600", "ckpt_kill_more", 0, 0 },
    { "", "ckpt_kill", 0, 0 },
    { "ckpt_kill", "ckpt_kill", -1, 0 },                  /* no count */
    { "ckpt_kill@", "ckpt_kill", -1, 0 },
    { "ckpt_kill@0", "ckpt_kill", -1, 0 },                /* counts start at 1 */
    { "ckpt_kill@-1", "ckpt_kill", -1, 0 },
    { "ckpt_kill@12k", "ckpt_kill", -1, 0 },
    { "ckpt_kill@99999999999999999999", "ckpt_kill", -1, 0 },
    { "@5", "ckpt_kill", -1, 0 },
    { "ckpt_kill@5,", "ckpt_kill", -1, 0 },
    { "other@x,ckpt_kill@5", "ckpt_kill", -1, 0 },        /* a bad item spoils all */
    { NULL, NULL, 0, 0 }
};

int main(void)
{
    int n = 0;
    while (cases[n].spec) n++;
    plan(2 * n + 3);
    for (int i = 0; i < n; i++) {
        uint64_t got = 12345;
        int rc = test_fault_parse(cases[i].spec, cases[i].name, &got);
        is_int(rc, cases[i].rc, "'%s' for %s: %d", cases[i].spec, cases[i].name, cases[i].rc);
        is_int((long long)got, 1 == cases[i].rc ? (long long)cases[i].n : 12345,
               "'%s' for %s: count %s", cases[i].spec, cases[i].name,
               1 == cases[i].rc ? "written" : "untouched");
    }
    unsetenv(TEST_FAULT_ENV);
    is_int((long long)test_fault_arg("ckpt_kill"), 0, "unset: nothing armed");
    setenv(TEST_FAULT_ENV, "ckpt_kill@42", 1);
#ifdef STRATA_TEST_HOOKS
    is_int((long long)test_fault_arg("ckpt_kill"), 42, "hooks compiled in: ckpt_kill@42 armed");
#else
    is_int((long long)test_fault_arg("ckpt_kill"), 0, "no hooks compiled in: the variable is ignored");
#endif
    setenv(TEST_FAULT_ENV, "ckpt_kill@nope", 1);
    is_int((long long)test_fault_arg("ckpt_kill"), 0, "malformed: nothing armed");
    return 0;
}
