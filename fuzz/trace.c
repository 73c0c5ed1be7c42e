/* fuzz/trace.c - the trace reader (tools/trace_read.c, what `strata trace`
 * and its --merge read) on arbitrary bytes: it appends events or refuses
 * the text with a message, and on a refusal keeps what it held. The
 * events found go through the per-step analysis too. */
#include "fuzz.h"
#include "tools/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    sched_trace_events_t evs = { 0 };
    if (sched_trace_parse((const char *)data, size, &evs, err, sizeof err) == STRATA_OK) {
        FUZZ_ASSERT(evs.nevents >= 0 && evs.nevents <= evs.cap);
        sched_trace_step_t *steps = NULL;
        int nsteps = 0;
        if (sched_trace_analyze(&evs, &steps, &nsteps, err, sizeof err) == STRATA_OK)
            FUZZ_ASSERT(nsteps >= 0);
        free(steps);
        int before = evs.nevents;
        /* a second, refused text leaves the events as they were */
        if (sched_trace_parse("[{", 2, &evs, err, sizeof err) != STRATA_OK)
            FUZZ_ASSERT(evs.nevents == before);
    } else {
        FUZZ_ASSERT(err[0] && evs.nevents == 0);
    }
    sched_trace_events_free(&evs);
    return 0;
}
