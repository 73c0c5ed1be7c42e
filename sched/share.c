/*
 * share.c - what ops running at once on different engines share: the
 * sharing rule (processor sharing over the resources of sched_res_t),
 * pure so that it is tested alone; sched_simulate runs it over time.
 */
#include "config.h"
#include "sched/sched.h"

const char *sched_res_name(sched_res_t r)
{
    static const char *names[SCHED_RES_COUNT] = { "link", "copy_engines", "hbm", "nic" };
    return r >= 0 && r < SCHED_RES_COUNT ? names[r] : "?";
}

void sched_share_speeds(int n, const double (*demand)[SCHED_RES_COUNT],
                        const double cap[SCHED_RES_COUNT], double *speed)
{
    double factor[SCHED_RES_COUNT];
    for (int r = 0; r < SCHED_RES_COUNT; r++) {
        double sum = 0;
        int users = 0;
        for (int i = 0; i < n; i++)
            if (demand[i][r] > 0) {
                sum += demand[i][r];
                users++;
            }
        /* an op's own seconds are its rate alone (PCIe's 53 GB/s one way,
         * 50 both ways at once): the capacity limits ops together, never
         * one alone. Every op on an oversubscribed resource gets the same
         * fraction of its demand: together they use exactly the capacity */
        factor[r] = cap[r] > 0 && users > 1 && sum > cap[r] ? cap[r] / sum : 1.0;
    }
    for (int i = 0; i < n; i++) {
        speed[i] = 1.0;
        for (int r = 0; r < SCHED_RES_COUNT; r++)
            if (demand[i][r] > 0 && factor[r] < speed[i]) speed[i] = factor[r];
    }
}
