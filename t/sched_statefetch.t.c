/* sched_statefetch.t - when training state on storage is fetched
 * (sched_state_fetch): with nothing known, one position before each use;
 * a slow disk moves fetches earlier, one engine serving them in use
 * order; the host room bounds how many wait; a fetch is never after its
 * use nor before the buffer's previous use; bad input is refused. */
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "sched/sched.h"
#include "tap.h"

#define N(a) ((int)(sizeof a / sizeof a[0]))

static int same(const int *a, const int *b, int n)
{
    return 0 == memcmp(a, b, (size_t)n * sizeof *a);
}

/* "1 3 5" */
static const char *list(const int *a, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? " " : "", a[i]);
    return buf;
}

/* A step of 4 units, one micro-batch, prefetch 1, clipping, as the runtime
 * lists it: F0..F3 (0..3), B3..B0 (4..7), the updates of units 3..0
 * (8..11); masters gathered ahead, again for the backward (unit 3 stays
 * gathered), then each update's master and moments. */
static const sched_fetch_use_t step4[] = {
    { 0, 0, 0, 100 }, { 0, 0, 1, 100 }, { 1, 0, 2, 100 }, { 2, 0, 3, 100 },
    { 4, 3, 2, 100 }, { 5, 2, 1, 100 }, { 6, 1, 0, 100 },
    { 8, 4, 3, 100 }, { 8, 0, 3, 200 }, { 9, 5, 2, 100 }, { 9, 0, 2, 200 },
    { 10, 6, 1, 100 }, { 10, 0, 1, 200 }, { 11, 7, 0, 100 }, { 11, 0, 0, 200 },
};
static const int step4_default[] = { 0, 0, 0, 1, 3, 4, 5, 7, 7, 8, 8, 9, 9, 10, 10 };

static void defaults(void)
{
    double zero[12] = { 0 }, cost[12];
    int at[N(step4)];
    char err[256], b[128];
    for (int q = 0; q < 12; q++) cost[q] = 0.01;
    is_int(sched_state_fetch(step4, N(step4), zero, 12, 1e6, 1LL << 40, at, NULL, err, sizeof err),
           STRATA_OK, "no costs recorded: planned");
    ok(same(at, step4_default, N(step4)), "no costs: one position before each use, not before "
       "the buffer is down again (%s)", list(at, N(step4), b, sizeof b));
    sched_state_fetch(step4, N(step4), cost, 12, 0, 1LL << 40, at, NULL, err, sizeof err);
    ok(same(at, step4_default, N(step4)), "bandwidth unknown: the same");
    sched_state_fetch(step4, N(step4), cost, 12, 1e12, 1LL << 40, at, NULL, err, sizeof err);
    ok(same(at, step4_default, N(step4)), "a disk compute hides: the same, never later");
}

static void slow_disk(void)
{
    /* three uses at 3, 5, 7; 1 s a position; reads of 2 s */
    sched_fetch_use_t u[] = { { 3, 0, 0, 100 }, { 5, 0, 1, 100 }, { 7, 0, 2, 100 } };
    double one[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, w, w0;
    int at[3], dflt[3] = { 2, 4, 6 }, want[3] = { 1, 3, 5 };
    char err[256], b[64];
    is_int(sched_state_fetch(u, 3, one, 8, 50, 1LL << 40, at, &w, err, sizeof err), STRATA_OK, "slow disk: planned");
    ok(same(at, want, 3), "slow disk: each read two positions ahead (%s)", list(at, 3, b, sizeof b));
    w0 = sched_state_fetch_wait(u, 3, one, 8, 50, dflt);
    ok(0 == w && w0 > 0.5, "and no use waits (%.2f s), where one position ahead waits %.2f s", w, w0);
    /* two reads due at the same position: the engine serves them one
     * after the other, so the first goes a read earlier still */
    sched_fetch_use_t two[] = { { 4, 0, 0, 100 }, { 4, 0, 1, 100 } };
    int want2[2] = { 0, 2 };
    sched_state_fetch(two, 2, one, 8, 50, 1LL << 40, at, &w, err, sizeof err);
    ok(same(at, want2, 2) && 0 == w, "two reads due together: issued at 0 and 2 (%s), none waits",
       list(at, 2, b, sizeof b));
    /* nothing hides it: as early as allowed, and the use waits */
    sched_fetch_use_t late[] = { { 6, 4, 0, 1000 } };
    sched_state_fetch(late, 1, one, 8, 50, 1LL << 40, at, &w, err, sizeof err);
    ok(4 == at[0] && w > 17, "a read no position hides: at its earliest (%d), waiting %.1f s", at[0], w);
}

static void room(void)
{
    /* reads of 4 s: unbounded, the first two would wait from position 0 */
    sched_fetch_use_t u[] = { { 3, 0, 0, 100 }, { 5, 0, 1, 100 }, { 7, 0, 2, 100 } };
    double one[8] = { 1, 1, 1, 1, 1, 1, 1, 1 }, w_free, w_room;
    int at[3], free_at[3] = { 0, 0, 3 }, want[3] = { 0, 3, 5 }, dflt[3] = { 2, 4, 6 };
    char err[256], b[64];
    sched_state_fetch(u, 3, one, 8, 25, 1LL << 40, at, &w_free, err, sizeof err);
    ok(same(at, free_at, 3), "room enough: as early as the reads need (%s)", list(at, 3, b, sizeof b));
    sched_state_fetch(u, 3, one, 8, 25, 100, at, &w_room, err, sizeof err);
    ok(same(at, want, 3), "room for one read waiting: each waits alone (%s)", list(at, 3, b, sizeof b));
    long long held[8] = { 0 }, most = 0;
    for (int i = 0; i < 3; i++)
        for (int p = at[i]; p < u[i].pos; p++) held[p] += u[i].bytes;
    for (int p = 0; p < 8; p++) most = held[p] > most ? held[p] : most;
    ok(100 == most && w_room >= w_free, "at most 100 bytes wait at any position; the uses wait "
       "no less (%.1f s, %.1f s with room to spare)", w_room, w_free);
    sched_state_fetch(u, 3, one, 8, 25, 0, at, NULL, err, sizeof err);
    ok(same(at, dflt, 3), "no room: one position ahead, which is always allowed (%s)", list(at, 3, b, sizeof b));
}

/* Random steps: every fetch between the buffer's previous use and its
 * own, never later than one position ahead; with no earliest bound and
 * room to spare, no use waits longer than under the default. */
static void random_steps(void)
{
    sched_fetch_use_t u[64];
    double c[40], w, w0;
    int at[64], dflt[64], bad_range = 0, worse = 0;
    char err[256];
    srand(7);
    for (int r = 0; r < 300; r++) {
        int npos = 1 + rand() % 40, n = rand() % 64, free_e = r % 2;
        for (int q = 0; q < npos; q++) c[q] = (rand() % 4) * 0.25;
        for (int i = 0, p = 0; i < n; i++) {
            p += rand() % 3 == 0;
            if (p >= npos) p = npos - 1;
            u[i] = (sched_fetch_use_t){ p, free_e ? 0 : rand() % (p + 1), i % 5, rand() % 1000 };
        }
        double bw = (rand() % 3) * 500.0;
        long long rm = r % 3 ? 1LL << 40 : rand() % 3000;
        if (STRATA_OK != sched_state_fetch(u, n, c, npos, bw, rm, at, &w, err, sizeof err)) {
            bad_range++;
            diag("%s", err);
            continue;
        }
        for (int i = 0; i < n; i++) {
            dflt[i] = u[i].pos > 0 ? u[i].pos - 1 : 0;
            if (dflt[i] < u[i].earliest) dflt[i] = u[i].earliest;
            bad_range += at[i] < u[i].earliest || at[i] > u[i].pos || at[i] > dflt[i];
        }
        w0 = sched_state_fetch_wait(u, n, c, npos, bw, dflt);
        worse += free_e && r % 3 && w > w0 + 1e-9;
    }
    ok(0 == bad_range, "300 random steps: every fetch at or after its earliest, never after its "
       "use nor later than one position ahead");
    ok(0 == worse, "and with room to spare, no plan waits longer than one position ahead");
}

static void bad_input(void)
{
    sched_fetch_use_t u[] = { { 1, 0, 0, 10 }, { 2, 0, 1, 10 } };
    double c[3] = { 1, 1, 1 };
    int at[2];
    char err[256];
    strata_status_t st;
    u[1].bytes = -5;
    st = sched_state_fetch(u, 2, c, 3, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "use 1 (unit 1) reads -5 bytes"), "negative bytes refused: %s", err);
    u[1].bytes = 10;
    st = sched_state_fetch(u, 2, c, 0, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "0 compute positions"), "zero positions refused: %s", err);
    u[1].pos = 3;
    st = sched_state_fetch(u, 2, c, 3, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "at position 3, earliest 0, of 3 positions"),
       "a use past the last position refused: %s", err);
    u[1].pos = 2, u[1].earliest = 3;
    st = sched_state_fetch(u, 2, c, 3, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "earliest 3"), "earliest after the use refused: %s", err);
    u[1].earliest = 0, u[0].pos = 2, u[1].pos = 1;
    st = sched_state_fetch(u, 2, c, 3, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "list the uses in step order"), "uses out of order refused: %s", err);
    u[0].pos = 1, u[1].pos = 2;
    st = sched_state_fetch(u, 2, c, 3, 10, -1, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "host room of -1 bytes"), "negative room refused: %s", err);
    c[1] = -1;
    st = sched_state_fetch(u, 2, c, 3, 10, 100, at, NULL, err, sizeof err);
    ok(STRATA_ERR_INVALID == st && strstr(err, "position 1 takes -1 s"), "negative cost refused: %s", err);
    c[1] = 1;
    is_int(sched_state_fetch(u, 0, c, 3, 10, 100, NULL, NULL, err, sizeof err), STRATA_OK,
           "no uses: nothing to do");
}

int main(void)
{
    plan(23);
    defaults();
    slow_disk();
    room();
    random_steps();
    bad_input();
    return done_testing();
}
