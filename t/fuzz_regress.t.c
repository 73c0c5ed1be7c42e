/*
 * fuzz_regress.t.c - inputs the fuzzers (fuzz/) found that broke a
 * parser's contract, kept as regression tests. Trace reader: a file
 * refused part-way through must leave the events as they were (it kept the
 * events before the bad one); a pid or step beyond an int is refused, not
 * converted (undefined behaviour).
 */
#include "config.h"
#include "tools/trace.h"
#include "t/tap.h"

#include <string.h>

/* Parse text into a list that already holds one event; returns the status
 * and whether the list still holds exactly that one event. */
static strata_status_t parse_onto_one(const char *text, int *kept_p, char *err, size_t errlen)
{
    static const char first[] = "[{\"ph\":\"X\",\"name\":\"F u0\",\"cat\":\"compute\",\"pid\":0,\"ts\":1,\"dur\":2}]";
    sched_trace_events_t evs = { 0 };
    if (STRATA_OK != sched_trace_parse(first, strlen(first), &evs, err, errlen) || 1 != evs.nevents)
        bail_out("the base trace does not parse: %s", err);
    strata_status_t st = sched_trace_parse(text, strlen(text), &evs, err, errlen);
    *kept_p = 1 == evs.nevents && !strcmp(evs.ev[0].name, "F u0");
    sched_trace_events_free(&evs);
    return st;
}

int main(void)
{
    char err[512] = "";
    int kept = 0;
    plan(6);

    /* found by fuzz/trace.c: a good event, then one whose "ph" is a number */
    const char *bad_second = "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"name\": \"AG u1\", \"cat\": \"comm\", \"pid\": 0, \"ts\": 150, \"dur\": 100},\n"
        "{\"ph\":  0, \"tid\": 1, \"ts\": 10, \"dur\": 200}\n]}";
    ok(STRATA_ERR_FORMAT == parse_onto_one(bad_second, &kept, err, sizeof err) && strstr(err, "event 2"),
       "a bad second event is refused naming it: %s", err);
    ok(kept, "and the good first event of the refused file is not kept");

    const char *big_pid = "[{\"ph\":\"X\",\"name\":\"F u0\",\"cat\":\"compute\",\"pid\":1e300,\"ts\":1,\"dur\":2}]";
    ok(STRATA_ERR_FORMAT == parse_onto_one(big_pid, &kept, err, sizeof err) && strstr(err, "pid"),
       "a pid beyond an int is refused: %s", err);
    ok(kept, "and adds nothing");

    const char *big_step = "[{\"ph\":\"X\",\"name\":\"step\",\"cat\":\"step\",\"pid\":0,\"ts\":1,\"dur\":2,"
                           "\"args\":{\"step\":-3e10}}]";
    ok(STRATA_ERR_FORMAT == parse_onto_one(big_step, &kept, err, sizeof err) && strstr(err, "step"),
       "a step beyond an int is refused: %s", err);
    ok(kept, "and adds nothing");
    return done_testing();
}
