/* fuzz/fuzz.h - shared by the libFuzzer harnesses: the input as a
 * NUL-terminated string (the parsers take C strings). */
#ifndef STRATA_FUZZ_H
#define STRATA_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A malloc'd copy of data with a NUL after it; NULL when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Crash on purpose (so libFuzzer saves the input) when a property fails. */
#define FUZZ_ASSERT(cond) \
    do { if (!(cond)) { fprintf(stderr, "fuzz: %s:%d: %s fails\n", __FILE__, __LINE__, #cond); abort(); } } while (0)

#endif
