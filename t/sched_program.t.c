/* sched_program.t - the step program: recording, every kind of deviation a
 * later step can show (and its message), the text description, bad calls. */
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "sched/sched.h"
#include "tap.h"

/* Two units: "a" saves x (1k) and y (2k); "b" saves x (1k). */
static sched_program_t *make(void)
{
    sched_program_t *p;
    char err[256];
    int u;
    if (STRATA_OK != sched_program_create(&p)) bail_out("create");
    sched_record_begin(p);
    if (STRATA_OK != sched_record_unit(p, "a", 4096, &u, err, sizeof err)) bail_out("%s", err);
    sched_record_save(p, "x", 1024, err, sizeof err);
    sched_record_save(p, "y", 2048, err, sizeof err);
    sched_record_cost(p, u, SCHED_COST_FWD, 0.5, err, sizeof err);
    if (STRATA_OK != sched_record_unit(p, "b", 4096, &u, err, sizeof err)) bail_out("%s", err);
    sched_record_save(p, "x", 1024, err, sizeof err);
    if (STRATA_OK != sched_record_end(p, 100, 0.1, err, sizeof err)) bail_out("%s", err);
    return p;
}

/* a recorded program: units, names, bytes and costs */
static void test_recorded(sched_program_t *ref)
{
    char err[512] = "";
    is_int(ref->nunits, 2, "two units recorded");
    is_int(ref->nnames, 2, "two distinct names (x repeats across units)");
    is_int(sched_program_name_id(ref, "y"), 1, "names keep first-seen order");
    is_int((long long)sched_program_name_bytes(ref, 0), 2048, "bytes per step of x = both units' saves");
    is_double(ref->units[0].cost_s[SCHED_COST_FWD], 0.5, 0, "cost recorded");
    ok(!strcmp(sched_program_name_list(ref, err, sizeof err), "x, y"), "name list: %s", err);
}

/* identical recording compares equal; costs may differ */
static void test_compare(sched_program_t *ref)
{
    char err[512] = "";
    sched_program_t *now = make();
    now->units[1].cost_s[SCHED_COST_BWD] = 7;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_OK, "same structure, other costs: equal");

    /* each kind of deviation, through the whole-program compare */
    now->units[0].saves[1].bytes = 4096;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "size change detected");
    ok(strstr(err, "unit 0 (a)") && strstr(err, "'y'") && strstr(err, "4096") && strstr(err, "2048"),
       "message names unit, save and both sizes: %s", err);
    now->units[0].saves[1].bytes = 2048;

    snprintf(now->units[0].saves[1].name, SCHED_NAME_MAX, "z");
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "name change detected");
    ok(strstr(err, "save #1 is 'z', recorded 'y'") != NULL, "message: %s", err);
    snprintf(now->units[0].saves[1].name, SCHED_NAME_MAX, "y");

    /* order: swap the two saves of unit 0 */
    sched_save_t t = now->units[0].saves[0];
    now->units[0].saves[0] = now->units[0].saves[1];
    now->units[0].saves[1] = t;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "order change detected");
    ok(strstr(err, "save #0 is 'y', recorded 'x'") != NULL, "message: %s", err);
    now->units[0].saves[1] = now->units[0].saves[0];
    now->units[0].saves[0] = t;

    now->units[1].nsaves = 0;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "missing save detected");
    ok(strstr(err, "unit 1 (b): 0 saves, recorded 1") && strstr(err, "first missing: 'x'"), "message: %s", err);
    now->units[1].nsaves = 1;

    now->units[1].ag_bytes = 8192;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "parameter size change detected");
    ok(strstr(err, "gathered parameters") != NULL, "message: %s", err);
    now->units[1].ag_bytes = 4096;

    now->nunits = 1;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "missing unit detected");
    ok(strstr(err, "ran 1 units, recorded 2") != NULL, "message: %s", err);
    now->nunits = 2;

    now->resident_bytes = 5;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_ERR_MISMATCH, "resident bytes change detected");
    now->resident_bytes = 100;
    is_int(sched_program_compare(ref, now, err, sizeof err), STRATA_OK, "restored: equal again");
    sched_program_destroy(now);
}

/* the incremental checks a running step makes */
static void test_incremental(sched_program_t *ref)
{
    char err[512] = "";
    is_int(sched_check_save(ref, 0, 0, "x", 1024, err, sizeof err), STRATA_OK, "check_save: matching save");
    is_int(sched_check_save(ref, 0, 2, "w", 8, err, sizeof err), STRATA_ERR_MISMATCH, "check_save: extra save");
    ok(strstr(err, "is extra") && strstr(err, "saved 2"), "message: %s", err);
    is_int(sched_check_save(ref, 2, 0, "x", 1024, err, sizeof err), STRATA_ERR_MISMATCH, "check_save: extra unit");
    ok(strstr(err, "unit 2 ran") != NULL, "message: %s", err);
    is_int(sched_check_unit(ref, 0, 2, 4096, err, sizeof err), STRATA_OK, "check_unit: matching");
    is_int(sched_check_end(ref, 2, err, sizeof err), STRATA_OK, "check_end: matching");
    is_int(sched_check_end(ref, 3, err, sizeof err), STRATA_ERR_MISMATCH, "check_end: one unit too many");
}

/* bad recording calls */
static void test_bad_recording(void)
{
    char err[512] = "";
    sched_program_t *p;
    sched_program_create(&p);
    is_int(sched_record_save(p, "x", 1, err, sizeof err), STRATA_ERR_STATE, "save before begin");
    sched_record_begin(p);
    is_int(sched_record_save(p, "x", 1, err, sizeof err), STRATA_ERR_STATE, "save before any unit");
    is_int(sched_record_end(p, 0, 0, err, sizeof err), STRATA_ERR_INVALID, "a step with no units");
    sched_record_unit(p, NULL, 0, NULL, err, sizeof err);
    is_int(sched_record_save(p, "bad name", 1, err, sizeof err), STRATA_ERR_INVALID, "name with a space");
    sched_record_save(p, "x", 1, err, sizeof err);
    is_int(sched_record_save(p, "x", 1, err, sizeof err), STRATA_ERR_INVALID, "same name twice in one unit");
    is_int(sched_record_cost(p, 5, SCHED_COST_FWD, 1, err, sizeof err), STRATA_ERR_INVALID, "cost of a unit not recorded");
    is_int(sched_record_cost(p, 0, SCHED_COST_FWD, -1, err, sizeof err), STRATA_ERR_INVALID, "negative cost");
    is_string(p->units[0].name, "u0", "unnamed unit gets u<index>");
    sched_program_destroy(p);
    sched_program_destroy(NULL);
}

/* text description */
static void test_text(void)
{
    char err[512] = "";
    sched_program_t *p;
    const char *text = "# comment\nresident 1M\noptim 0.5\n\nunit blk fwd=1 bwd=2 ag_bytes=2k repeat=3\n"
                       "save qkv 4k  # trailing\nsave mlp 8k\nunit head fwd=1\nsave logits 1k\n";
    is_int(sched_program_parse(text, &p, err, sizeof err), STRATA_OK, "parse a program");
    is_int(p->nunits, 4, "repeat=3 gives 3 units + head");
    ok(!strcmp(p->units[2].name, "blk2") && 2048 == p->units[2].ag_bytes && 2 == p->units[2].nsaves &&
       8192 == p->units[2].saves[1].bytes && 2.0 == p->units[2].cost_s[SCHED_COST_BWD],
       "repeated unit carries its saves and costs");
    ok(1048576 == p->resident_bytes && 0.5 == p->optim_s && 3 == p->nnames, "resident, optim, names");
    sched_program_destroy(p);
    static const struct { const char *text, *needle; } bad[] = {
        { "unit a\nsave x\n", "line 2: save takes NAME SIZE" },
        { "save x 1k\n", "line 1: save before any unit" },
        { "unit a fwd=-1\n", "bad seconds" },
        { "unit a\n\n\nbogus 1\n", "line 4: unknown directive 'bogus'" },
        { "unit a speed=3\n", "unknown key 'speed'" },
        { NULL, NULL }
    };
    for (int i = 0; bad[i].text; i++) {
        strata_status_t st = sched_program_parse(bad[i].text, &p, err, sizeof err);
        ok(STRATA_ERR_FORMAT == st && strstr(err, bad[i].needle), "bad program %d rejected: %s", i, err);
    }
}

int main(void)
{
    plan(46);

    sched_program_t *ref = make();
    test_recorded(ref);
    test_compare(ref);
    test_incremental(ref);
    test_bad_recording();
    test_text();

    sched_program_destroy(ref);
    return done_testing();
}
