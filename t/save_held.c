/*
 * save_held.c - recompute at name granularity in the runtime, through the
 * public calls: one unit saves "a", "b", "c" and declares their work
 * (strata_save_work: 1, 3, 0 of a forward of 8). Checks:
 *  - strata_call_recompute / strata_call_save_held: 0 in an ordinary
 *    forward; in the recompute pass of "a=keep,b=host,*=recompute" the
 *    kept and the fetched-back save are held with the forward's values,
 *    the dropped one is not;
 *  - the recorded program carries the declared shares of the measured
 *    forward as the saves' producing costs, and RECOMPUTE is predicted as
 *    the sum over the recompute names (sched_recompute_seconds);
 *  - strata_save_work misuse fails the step: a name not saved yet, a call
 *    in backward.
 * Run on 1 rank by t/save-held.t.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "strata.h"
#include "tap.h"
#include "fsdp/exec_impl.h"   /* the recorded program */

#define N 8
static int misuse, rec_calls, plain_held, rec_held[3], rec_same[3];   /* misuse: 1 forward, 2 backward */

static strata_status_t fwd(strata_unit_call_t *c, void *user)
{
    static const char *const names[3] = { "a", "b", "c" };
    static const double work[3] = { 1, 3, 0 };
    const float *x;
    float *y, *s;
    size_t bytes;
    strata_status_t st;
    (void)user;
    strata_call_input(c, (const void **)&x, &bytes);
    if (STRATA_OK != (st = strata_call_output(c, bytes, (void **)&y))) return st;
    int rec = strata_call_recompute(c);
    if (!rec) for (int i = 0; i < N; i++) y[i] = 2 * x[i];
    if (1 == misuse) return strata_save_work(c, "a", 1.0);   /* before strata_save("a") */
    for (int k = 0; k < 3; k++) {
        int held = strata_call_save_held(c, names[k]);
        if (STRATA_OK != (st = strata_save(c, names[k], bytes, (void **)&s))) return st;
        if (rec) {
            rec_held[k] = held;
            rec_same[k] = 1;
            for (int i = 0; i < N; i++) rec_same[k] &= s[i] == x[i] + (float)k;
        } else {
            plain_held |= held;
        }
        if (!held) for (int i = 0; i < N; i++) s[i] = x[i] + (float)k;
        if (STRATA_OK != (st = strata_save_work(c, names[k], work[k]))) return st;
    }
    rec_calls += rec;
    return strata_save_work(c, NULL, 8);
}

static strata_status_t bwd(strata_unit_call_t *c, void *user)
{
    const float *dy;
    float *dx, *s;
    size_t bytes;
    (void)user;
    if (2 == misuse) return strata_save_work(c, "a", 1);
    strata_call_grad_output(c, (const void **)&dy, &bytes);
    strata_call_grad_input(c, (void **)&dx, NULL);
    strata_saved(c, "c", (void **)&s, NULL);
    if (dx) for (int i = 0; i < N; i++) dx[i] = 2 * dy[i] + 0 * s[i];
    return STRATA_OK;
}

static strata_status_t one_step(strata_model_t *m, const float *x)
{
    const void *out;
    size_t ob;
    strata_status_t st = strata_model_step_begin(m, 1);
    if (STRATA_OK == st) st = strata_model_forward(m, x, N * sizeof *x, NULL, &out, &ob);
    if (STRATA_OK == st) st = strata_model_backward(m, out, ob);
    if (STRATA_OK == st) st = strata_model_step_end(m);
    return st;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    tap_use_comm(MPI_COMM_WORLD);
    plan(9);
    strata_config_t *cfg = NULL;
    strata_context_t *ctx = NULL;
    strata_model_t *m = NULL;
    strata_unit_t *u;
    /* naive: b really goes to the host and back (lhs may keep it on device) */
    if (STRATA_OK != strata_config_create(&cfg) || STRATA_OK != strata_config_set(cfg, "schedule", "naive", NULL, 0) ||
        STRATA_OK != strata_init(MPI_COMM_WORLD, cfg, &ctx))
        bail_out("strata_init failed");
    size_t dims[1] = { 4 };
    strata_init_t one = { .kind = STRATA_INIT_ONES };
    if (STRATA_OK != strata_model_create(ctx, NULL, &m) ||
        STRATA_OK != strata_model_add_unit(m, "u0", fwd, bwd, NULL, &u) ||
        STRATA_OK != strata_unit_add_param(u, "w", 1, dims, STRATA_F32, one, NULL) ||
        STRATA_OK != strata_model_add_unit(m, "u1", fwd, bwd, NULL, &u) ||
        STRATA_OK != strata_unit_add_param(u, "w", 1, dims, STRATA_F32, one, NULL) ||
        STRATA_OK != strata_model_commit(m) ||
        STRATA_OK != strata_model_set_act_policy(m, "a=keep,b=host,*=recompute"))
        bail_out("model: %s", strata_last_error(ctx));
    float x[N] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    strata_status_t st = STRATA_OK;
    for (int step = 0; step < 2 && STRATA_OK == st; step++) st = one_step(m, x);
    strata_model_stats_t ms = STRATA_MODEL_STATS_INIT;
    strata_model_stats(m, &ms);
    ok(STRATA_OK == st && ms.offload_bytes >= 2 * sizeof x, "two naive steps with a=keep,b=host,*=recompute "
       "(%zu bytes offloaded): %s", ms.offload_bytes, STRATA_OK == st ? "ok" : strata_last_error(ctx));
    ok(rec_calls > 0 && 0 == plain_held, "an ordinary forward holds nothing; %d recompute passes ran", rec_calls);
    ok(rec_held[0] && rec_held[1] && !rec_held[2], "recompute pass: a (kept) and b (back from host) held, c not");
    ok(rec_same[0] && rec_same[1], "the held saves carry the forward's values");
    const sched_program_t *prog = m->exec ? m->exec->prog : NULL;
    const sched_unit_t *ru = prog ? &prog->units[0] : NULL;
    double F = ru ? ru->cost_s[SCHED_COST_FWD] : 0;
    ok(ru && F > 0 && ru->save_costs && fabs(ru->saves[0].cost_s - F / 8) <= 1e-9 * F &&
       fabs(ru->saves[1].cost_s - 3 * F / 8) <= 1e-9 * F && 0 == ru->saves[2].cost_s,
       "the program's producing costs are the declared shares of F = %.3g s: 1/8, 3/8, 0", F);
    sched_actions_t a = m->exec->acts;
    ok(fabs(sched_recompute_seconds(prog, 0, &a) - 0) < 1e-15,
       "RECOMPUTE(u0) under the policy: only c, whose work is 0");
    a.action[sched_program_name_id(prog, "b")] = SCHED_RECOMPUTE;
    ok(fabs(sched_recompute_seconds(prog, 0, &a) - 3 * F / 8) <= 1e-9 * F, "with b recomputed too: 3/8 of F");
    misuse = 1;
    st = one_step(m, x);
    ok(STRATA_ERR_NOT_FOUND == st && strstr(strata_last_error(ctx), "strata_save_work('a') before strata_save('a')"),
       "strata_save_work before strata_save of the name fails the step: %s", strata_last_error(ctx));
    misuse = 2;
    st = one_step(m, x);
    ok(STRATA_ERR_INVALID == st && strstr(strata_last_error(ctx), "needs a forward"),
       "strata_save_work in backward fails the step: %s", strata_last_error(ctx));
    strata_model_destroy(m);
    strata_finalize(ctx);
    strata_config_destroy(cfg);
    MPI_Finalize();
    return done_testing();
}
