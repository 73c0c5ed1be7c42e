/*
 * test_fault.c - the test-fault switch (see test_fault.h for what it is
 * and when it is compiled in).
 */
#include "config.h"
#include "base/test_fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int test_fault_parse(const char *spec, const char *name, uint64_t *n_p)
{
    int found = 0;
    uint64_t n = 0;
    size_t nlen = strlen(name);
    for (const char *p = spec; *p;) {
        const char *at = strchr(p, '@'), *comma = strchr(p, ',');
        if (!comma) comma = p + strlen(p);
        if (!at || at > comma || at == p) return -1;
        char *end;
        errno = 0;
        if (at[1] < '0' || at[1] > '9') return -1;     /* strtoull takes "-1" */
        unsigned long long v = strtoull(at + 1, &end, 10);
        if (errno || end != comma || 0 == v || v > (1ULL << 63)) return -1;
        if ((size_t)(at - p) == nlen && 0 == strncmp(p, name, nlen)) {
            found = 1;
            n = v;
        }
        p = *comma ? comma + 1 : comma;
        if (',' == *comma && !*p) return -1;            /* a trailing comma */
    }
    if (found) *n_p = n;
    return found;
}

#ifdef STRATA_TEST_HOOKS
uint64_t test_fault_arg(const char *name)
{
    static volatile int warned;
    const char *spec = getenv(TEST_FAULT_ENV);
    uint64_t n = 0;
    if (!spec) return 0;
    int rc = test_fault_parse(spec, name, &n);
    if (0 > rc && !warned) {
        warned = 1;
        fprintf(stderr, "strata: ignoring " TEST_FAULT_ENV "='%s': it takes NAME@N[,NAME@N...] "
                "with N >= 1\n", spec);
    }
    return 1 == rc ? n : 0;
}
#else
uint64_t test_fault_arg(const char *name)
{
    (void)name;
    return 0;
}
#endif
