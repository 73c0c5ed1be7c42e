/*
 * flight_cmd.c - strata flight FILES...: read every rank's flight record
 * (docs/flight.md) and say where the ranks part ways: per group, the first
 * sequence number at which they disagree (operation or size), or that some
 * ranks never entered an operation the others did, or the operation all
 * entered and none finished. A rank of the world without a record is a
 * suspect too (the only ones when every record is a watchdog timeout's),
 * and a rank whose process did not run (its watchdog woke late) while the
 * others waited is the one suspect. Records from several hosts add a line
 * "ranks by host: H R,R; H R,R". The last line is "suspect ranks: R[,R...]" (or "none").
 * Exit 0: no suspect; 1: suspects named; 2: unreadable input.
 */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "tools/cmds.h"

typedef struct {
    int     rank, world;
    double  wall;            /* wall clock minus monotonic */
    double  now, timeout;    /* when written; collective_timeout */
    double  pause_s, pause_end;   /* the latest time the process did not run */
    json_t *root, *entries;
} dump_t;

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}
static long long jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* rank d's entry of group g with sequence s; NULL if not recorded */
static json_t *find(const dump_t *d, const char *g, long long s)
{
    size_t i;
    json_t *e;
    json_array_foreach(d->entries, i, e)
        if (jint(e, "seq") == s && !strcmp(jstr(e, "group"), g)) return e;
    return NULL;
}

/* the lowest and highest sequence number rank d recorded in group g */
static int seq_range(const dump_t *d, const char *g, long long *lo, long long *hi)
{
    size_t i;
    json_t *e;
    int any = 0;
    json_array_foreach(d->entries, i, e) {
        if (strcmp(jstr(e, "group"), g)) continue;
        long long s = jint(e, "seq");
        if (!any || s < *lo) *lo = s;
        if (!any || s > *hi) *hi = s;
        any = 1;
    }
    return any;
}

static int same_op(json_t *a, json_t *b)
{
    return !strcmp(jstr(a, "kind"), jstr(b, "kind")) && jint(a, "bytes") == jint(b, "bytes");
}

static void print_ranks(const char *label, const int *v, int n)
{
    printf("%s", label);
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", v[i]);
}

/* Operation s of group g finished on some members while others still
 * block in it: the finished ones left before their part reached the others
 * (a collective may complete on one rank first) and then stopped or got
 * stuck. 1 if so, with those ranks marked. */
static int split_done(dump_t *d, const int *mem, int nm, const char *g, long long s,
                      char *suspect)
{
    int done[nm], wait[nm], nd = 0, nw = 0;
    json_t *ref = NULL;
    for (int k = 0; k < nm; k++) {
        json_t *e = find(&d[mem[k]], g, s);
        if (!e) continue;
        ref = e;
        if (!strcmp(jstr(e, "state"), "done")) done[nd++] = d[mem[k]].rank;
        else if (!strcmp(jstr(e, "state"), "waiting")) wait[nw++] = d[mem[k]].rank;
    }
    if (!nd || !nw) return 0;
    printf("group %s seq %lld (%s, %lld bytes, step %lld, unit %lld): ", g, s,
           jstr(ref, "kind"), jint(ref, "bytes"), jint(ref, "step"), jint(ref, "unit"));
    print_ranks("done on rank ", done, nd);
    print_ranks(", still waited in on rank ", wait, nw);
    printf(": the done ones went on and then stopped or got stuck, or a waiting one stopped "
           "before its part reached the others\n");
    for (int k = 0; k < nd; k++) suspect[done[k]] = 1;
    return 1;
}

/* Analyse group g over the dumps of its members; marks suspects. 1 if it
 * found where the ranks part ways. */
static int analyse_group(dump_t *d, int nd, const char *g, char *suspect)
{
    int mem[nd], nm = 0;
    long long lo = 0, hi = 0, l, h;
    for (int i = 0; i < nd; i++) {
        if (!seq_range(&d[i], g, &l, &h)) continue;
        if (0 == nm || l > lo) lo = l;    /* every member still holds it */
        if (0 == nm || h > hi) hi = h;
        mem[nm++] = i;
    }
    if (nm < 2) return 0;
    for (long long s = lo; s <= hi; s++) {
        json_t *ref = NULL;
        int in[nd], out[nd], odd[nd], ni = 0, no = 0, nodd = 0;
        for (int k = 0; k < nm; k++) {
            json_t *e = find(&d[mem[k]], g, s);
            if (!e) { out[no++] = d[mem[k]].rank; continue; }
            if (!ref) ref = e;
            if (!same_op(ref, e)) odd[nodd++] = d[mem[k]].rank;
            else in[ni++] = d[mem[k]].rank;
        }
        if (nodd) {
            printf("group %s seq %lld: ranks disagree: ", g, s);
            print_ranks("", in, ni);
            printf(" %s %lld bytes; ", jstr(ref, "kind"), jint(ref, "bytes"));
            print_ranks("", odd, nodd);
            printf(" something else\n");
            for (int k = 0; k < (nodd <= ni ? nodd : ni); k++)
                suspect[nodd <= ni ? odd[k] : in[k]] = 1;
            return 1;
        }
        if (split_done(d, mem, nm, g, s, suspect)) return 1;
        if (no) {
            printf("group %s seq %lld (%s, %lld bytes, step %lld, unit %lld): ", g, s,
                   jstr(ref, "kind"), jint(ref, "bytes"), jint(ref, "step"), jint(ref, "unit"));
            print_ranks("entered by rank ", in, ni);
            print_ranks("; never entered by rank ", out, no);
            printf("\n");
            for (int k = 0; k < no; k++) suspect[out[k]] = 1;
            return 1;
        }
    }
    /* all entered everything: the first operation some rank did not finish */
    for (long long s = lo; s <= hi; s++) {
        int late = -1, pending = 0;
        double t_late = 0;
        for (int k = 0; k < nm; k++) {
            json_t *e = find(&d[mem[k]], g, s);
            if (strcmp(jstr(e, "state"), "done")) pending = 1;
            double t = json_number_value(json_object_get(e, "t_enqueue")) + d[mem[k]].wall;
            if (late < 0 || t > t_late) { late = d[mem[k]].rank; t_late = t; }
        }
        if (!pending) continue;
        printf("group %s seq %lld (%s): entered by every rank, not complete; rank %d "
               "entered it last\n", g, s, jstr(find(&d[mem[0]], g, s), "kind"), late);
        suspect[late] = 1;
        return 1;
    }
    return 0;
}

/* A pause that can explain this hang ended at most two timeouts (and a
 * second for the watchdog's heartbeat) before the record: the launcher resumes a stopped
 * rank when the first other rank's watchdog fires, and the resumed rank
 * may enter one more operation and write its record on that one's own
 * timeout, a full timeout later. */
static int recent_pause(const dump_t *d)
{
    double window = d->timeout > 0 ? 2 * d->timeout + 1 : 600;
    return d->pause_s >= 1.0 && d->now - d->pause_end <= window;
}

/* Every record there is was written by its own rank's watchdog on a
 * timeout: those ranks ran and waited, and a rank without one did not time
 * out, so it waited in nothing either (stopped, dead, or stuck outside
 * communication). MPICH's launcher ends the job with SIGKILL at once, so a
 * stopped rank never writes a record there. The suspects are then the
 * ranks without a record and those that waited in nothing; 1 if so. */
static int only_timeouts(const dump_t *d, int nd, int W, const char *seen, const int *idle,
                         int nidle, int nwait, char *suspect)
{
    if (nd < 1 || nd >= W) return 0;
    for (int i = 0; i < nd; i++) if (strcmp(jstr(d[i].root, "reason"), "timeout")) return 0;
    printf("every record was written on its rank's own timeout: the ranks without one did "
           "not time out (stopped, dead, or stuck outside communication)\n");
    for (int r = 0; r < W; r++) if (seen[r]) suspect[r] = 0;
    /* a rank that waited in nothing stands out only beside ranks that
     * waited: where none did (each timed out on a collective its progress
     * thread drives), every record's rank ran, and timed out */
    for (int k = 0; nwait && k < nidle; k++) suspect[idle[k]] = 1;
    return 1;
}

/* The records' notes (a straggler named, ...), each text once: every rank
 * notes the same straggler. */
static void print_notes(const dump_t *d, int nd)
{
    for (int i = 0; i < nd; i++) {
        size_t k;
        json_t *n;
        json_array_foreach(json_object_get(d[i].root, "notes"), k, n) {
            const char *t = json_string_value(n);
            int seen = !t;
            for (int j = 0; j < i && !seen; j++) {
                size_t q;
                json_t *o;
                json_array_foreach(json_object_get(d[j].root, "notes"), q, o)
                    if (json_string_value(o) && !strcmp(json_string_value(o), t)) seen = 1;
            }
            if (!seen) printf("note: %s\n", t);
        }
    }
}

/* Records from more than one host: the ranks of each, in rank order, so
 * that a split along hosts (a host unplugged, a network between them
 * down: every side waits on the other) shows beside the suspects. */
static void print_hosts(const dump_t *d, int nd)
{
    const char *host[nd];
    int nh = 0;
    for (int i = 0; i < nd; i++) {
        const char *h = jstr(d[i].root, "host");
        int k = 0;
        while (k < nh && strcmp(host[k], h)) k++;
        if (k == nh) host[nh++] = h;
    }
    if (nh < 2) return;
    printf("ranks by host:");
    for (int k = 0; k < nh; k++) {
        printf("%s %s ", k ? ";" : "", host[k][0] ? host[k] : "(none)");
        int any = 0;
        for (int r = 0; r < d[0].world; r++)
            for (int i = 0; i < nd; i++)
                if (d[i].rank == r && !strcmp(jstr(d[i].root, "host"), host[k]))
                    printf("%s%d", any++ ? "," : "", r);
    }
    printf("\n");
}

static int load(const char *path, dump_t *d)
{
    json_error_t err;
    char why[600];
    FILE *f = base_fopen_regular(path, why, sizeof why);
    if (!f) {
        fprintf(stderr, "strata flight: %s\n", why);
        return -1;
    }
    d->root = json_loadf(f, 0, &err);
    fclose(f);
    if (!d->root) {
        fprintf(stderr, "strata flight: %s: not a flight record: %s (line %d)\n", path,
                err.text, err.line);
        return -1;
    }
    d->entries = json_object_get(d->root, "entries");
    d->rank = (int)jint(d->root, "rank");
    d->world = (int)jint(d->root, "world_size");
    d->wall = json_number_value(json_object_get(d->root, "wall_minus_mono"));
    d->now = json_number_value(json_object_get(d->root, "now"));
    d->timeout = json_number_value(json_object_get(d->root, "collective_timeout"));
    /* older records have no pause fields: 0, no pause */
    d->pause_s = json_number_value(json_object_get(d->root, "pause_s"));
    d->pause_end = json_number_value(json_object_get(d->root, "pause_end"));
    if (strcmp(jstr(d->root, "format"), "strata-flight-1") || !json_is_array(d->entries) ||
        d->world < 1 || d->rank < 0 || d->rank >= d->world) {
        fprintf(stderr, "strata flight: %s: not a strata-flight-1 record (format, rank, "
                "world_size, entries)\n", path);
        json_decref(d->root);
        return -1;
    }
    return 0;
}

int cmd_flight(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc < 2 ? stderr : stdout, "usage: strata flight FILE...\n"
                "  read the flight records flight.<rank>.json of one job and name the ranks\n"
                "  where it parted ways; last line: suspect ranks: R[,R...]\n");
        return argc < 2 ? 2 : 0;
    }
    int nd = argc - 1, rc = 0;
    dump_t *d = calloc((size_t)nd, sizeof *d);
    for (int i = 0; i < nd && d; i++) if (load(argv[i + 1], &d[i])) { nd = i; rc = 2; }
    if (!d || 2 == rc) goto out;
    int W = d[0].world;
    char *suspect = calloc((size_t)W, 1), *seen = calloc((size_t)W, 1);
    for (int i = 0; i < nd; i++) {
        if (d[i].world != W) {
            fprintf(stderr, "strata flight: %s: world size %d, %s has %d: not one job\n",
                    argv[i + 1], d[i].world, argv[1], W);
            rc = 2;
        }
        if (d[i].rank < W) seen[d[i].rank] = 1;
    }
    printf("%d of %d ranks have a flight record\n", nd, W);
    if (2 != rc) print_notes(d, nd);
    for (int r = 0; r < W && 2 != rc; r++)
        if (!seen[r]) { printf("rank %d: no flight record\n", r); suspect[r] = 1; }
    json_t *groups = json_object_get(d[0].root, "groups"), *gr;
    size_t gi;
    int found = 0;
    /* every group name any rank has: shard groups differ between ranks */
    for (int i = 0; i < nd && 2 != rc; i++) {
        groups = json_object_get(d[i].root, "groups");
        json_array_foreach(groups, gi, gr) {
            const char *g = jstr(gr, "name");
            int first = 1;
            for (int j = 0; j < i && first; j++) {
                json_t *gj, *o;
                size_t k;
                gj = json_object_get(d[j].root, "groups");
                json_array_foreach(gj, k, o) if (!strcmp(jstr(o, "name"), g)) first = 0;
            }
            if (first) found |= analyse_group(d, nd, g, suspect);
        }
    }
    /* ranks that block in a wait point at the ranks that do not: a rank
     * that waits in nothing while others wait is stopped or stuck outside
     * communication, and the ranks it keeps from entering are not suspects */
    int nwait = 0, nidle = 0, *idle = calloc((size_t)nd, sizeof *idle);
    for (int i = 0; i < nd && 2 != rc; i++) {
        size_t k;
        json_t *e;
        int w = 0;
        json_array_foreach(d[i].entries, k, e) w |= !strcmp(jstr(e, "state"), "waiting");
        if (w) nwait++;
        else if (idle) idle[nidle++] = d[i].rank;
    }
    if (nwait && nidle) {
        print_ranks("rank ", idle, nidle);
        printf(" waited in no operation while %d rank(s) waited: stopped, or stuck outside "
               "communication\n", nwait);
        for (int r = 0; r < W; r++) if (seen[r]) suspect[r] = 0;
        for (int k = 0; k < nidle; k++) suspect[idle[k]] = 1;
        found = 1;
    }
    if (2 != rc && only_timeouts(d, nd, W, seen, idle, nidle, nwait, suspect)) found = 1;
    /* a process that did not run while the others waited is the cause,
     * even inside an operation every rank entered: its watchdog woke late
     * by the length of the pause. Only pauses that ended within two
     * timeouts of the record count (an old hiccup is not this hang, see
     * recent_pause), and of several, those at least half as long as the
     * longest. */
    double longest = 0;
    for (int i = 0; i < nd && 2 != rc; i++)
        if (recent_pause(&d[i]) && d[i].pause_s > longest) longest = d[i].pause_s;
    if (longest > 0) {
        for (int r = 0; r < W; r++) if (seen[r]) suspect[r] = 0;
        for (int i = 0; i < nd; i++) {
            if (!recent_pause(&d[i]) || d[i].pause_s < longest / 2) continue;
            printf("rank %d did not run for %.1f s, %.1f s before its record was written: "
                   "stopped (SIGSTOP, a debugger) or starved of CPU\n", d[i].rank,
                   d[i].pause_s, d[i].now - d[i].pause_end);
            suspect[d[i].rank] = 1;
        }
        found = 1;
    }
    if (!found && 2 != rc) printf("the records agree: every operation matches on every rank\n");
    if (2 != rc) print_hosts(d, nd);
    int any = 0;
    printf("suspect ranks: ");
    for (int r = 0; r < W; r++) if (suspect[r]) printf("%s%d", any++ ? "," : "", r);
    printf("%s\n", any ? "" : "none");
    if (!rc) rc = any ? 1 : 0;
    free(suspect);
    free(seen);
    free(idle);
out:
    for (int i = 0; i < nd; i++) json_decref(d[i].root);
    free(d);
    return rc;
}
