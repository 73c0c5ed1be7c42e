/* fuzz/program.c - the step-program text parser (sched_program_parse, the
 * format `strata plan` reads) on arbitrary text. A program that parses
 * compares equal to itself and prints; a refusal says why and returns no
 * program. */
#include <stdio.h>
#include "fuzz.h"
#include "sched/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    char err[256] = "";
    sched_program_t *prog = NULL;
    if (sched_program_parse(text, &prog, err, sizeof err) == STRATA_OK) {
        FUZZ_ASSERT(sched_program_compare(prog, prog, err, sizeof err) == STRATA_OK);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            sched_program_print(prog, f);
            fclose(f);
            free(buf);
        }
        sched_program_destroy(prog);
    } else {
        FUZZ_ASSERT(err[0] && !prog);
    }
    free(text);
    return 0;
}
