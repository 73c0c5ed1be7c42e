/*
 * unit_fsdp_straggler.t.c - the straggler check's decision, without MPI:
 * fsdp_straggler_find names a rank whose busy time over the window and in
 * its typical step are both above ratio times the other ranks' median and
 * above it by the floor (2 ms a step); nothing on a balanced window, on
 * noise below the floor, on one slow step, or with fewer than 2 ranks.
 */
#include <string.h>

#include "fsdp/fsdp.h"
#include "tap.h"

#define MAXW 8

/* busy per step (seconds) for W ranks over `steps` steps, each rank's
 * typical step that figure too unless typ is given */
static int find(const double *per_step, const double *typ, int W, int steps, double ratio,
                int *slow, double *median)
{
    double busy[MAXW], t[MAXW];
    for (int r = 0; r < W; r++) {
        busy[r] = per_step[r] * steps;
        t[r] = typ ? typ[r] : per_step[r];
    }
    return fsdp_straggler_find(busy, t, W, steps, ratio, slow, median);
}

static int none_slow(const int *slow, int W)
{
    for (int r = 0; r < W; r++)
        if (slow[r]) return 0;
    return 1;
}

int main(void)
{
    plan(13);
    int slow[MAXW];
    double med[MAXW];

    double even[4] = { 0.020, 0.021, 0.019, 0.020 };
    ok(0 == find(even, NULL, 4, 10, 1.5, slow, med) && none_slow(slow, 4),
       "balanced: no rank is named");

    double one[4] = { 0.020, 0.021, 0.045, 0.019 };
    int n = find(one, NULL, 4, 10, 1.5, slow, med);
    ok(1 == n && slow[2] && !slow[0] && !slow[1] && !slow[3], "one slow rank (2.25x): it alone");
    is_double(med[2], 0.200, 1e-9, "its median is the other ranks' median busy time");
    ok(0 == find(one, NULL, 4, 10, 2.5, slow, med), "ratio 2.5: 2.25x is not slow enough");

    /* tiny steps: 3x the others, but 1 ms a step is scheduler noise */
    double tiny[3] = { 0.0005, 0.0015, 0.0005 };
    ok(0 == find(tiny, NULL, 3, 10, 1.5, slow, med), "3x but 1 ms a step: below the floor");
    double above[3] = { 0.0005, 0.0030, 0.0005 };
    ok(1 == find(above, NULL, 3, 10, 1.5, slow, med) && slow[1], "2.5 ms a step more: named");

    /* one long step (a page-in, a preemption) is not a persistent straggler */
    double spike[3] = { 0.020, 0.060, 0.020 }, spike_typ[3] = { 0.020, 0.021, 0.020 };
    ok(0 == find(spike, spike_typ, 3, 10, 1.5, slow, med),
       "a slow window from one long step, typical step even: not named");

    double one_rank[1] = { 1.0 };
    ok(0 == find(one_rank, NULL, 1, 10, 1.5, slow, med) && !slow[0] && 0 == med[0],
       "W = 1: nothing to compare with");

    double two[2] = { 0.020, 0.040 };
    n = find(two, NULL, 2, 10, 1.5, slow, med);
    ok(1 == n && !slow[0] && slow[1], "W = 2: the slower of two (2x) is named, not the other");
    is_double(med[1], 0.200, 1e-9, "W = 2: the median of the others is the other rank");
    double two_even[2] = { 0.020, 0.028 };
    ok(0 == find(two_even, NULL, 2, 10, 1.5, slow, med), "W = 2: 1.4x is not named");

    ok(0 == find(one, NULL, 4, 0, 1.5, slow, med) && none_slow(slow, 4), "an empty window: none");

    /* two slow ranks of three: each one's others' median takes in the other */
    double pair[3] = { 0.020, 0.050, 0.050 };
    ok(0 == find(pair, NULL, 3, 10, 1.5, slow, med),
       "two of three slow: no rank is slower than the rest");
    return done_testing();
}
