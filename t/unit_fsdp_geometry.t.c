/*
 * unit_fsdp_geometry.t.c - the pure parts of the FSDP runtime, without MPI:
 * shard geometry (the layout checkpoints depend on), parameter/shard
 * intersection, counter-based init noise, optimizer kernels and norms.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/fsdp.h"
#include "tap.h"

static void test_ranges(void)
{
    /* a table of (N, S) including N < S, N = 0 and exact multiples */
    static const struct { size_t n; int s; size_t npad; } tab[] = {
        { 10, 4, 12 }, { 12, 4, 12 }, { 1, 8, 8 }, { 0, 3, 0 }, { 7, 1, 7 },
        { 90, 128, 128 }, { 1000003, 7, 1000006 }, { 0, 0, 0 }
    };
    for (int t = 0; tab[t].s; t++) {
        size_t npad = 0, covered = 0, prev_end = 0;
        int good = 0 == base_shard_padded(tab[t].n, tab[t].s, &npad) && npad == tab[t].npad;
        for (int s = 0; s < tab[t].s; s++) {
            size_t off, len;
            if (base_shard_range(npad, tab[t].s, s, &off, &len)) { good = 0; break; }
            /* the formula the checkpoint code relies on */
            good &= off == (size_t)s * npad / tab[t].s && off + len == (size_t)(s + 1) * npad / tab[t].s;
            good &= off == prev_end;
            prev_end = off + len;
            covered += len;
        }
        ok(good && covered == npad, "N %zu over S %d: padded to %zu, shards tile [0, Npad)",
           tab[t].n, tab[t].s, tab[t].npad);
    }
    size_t off, len;
    ok(-1 == base_shard_range(12, 4, 4, &off, &len), "shard rank S is out of range");
    ok(-1 == base_shard_range(12, 4, -1, &off, &len), "negative shard rank is refused");
    ok(-1 == base_shard_range(10, 0, 0, &off, &len), "S = 0 is refused");
    ok(-1 == base_shard_padded(SIZE_MAX, 2, &off), "padding that overflows size_t is refused");
}

static void test_intersect(void)
{
    size_t lo, hi;
    base_shard_intersect(5, 10, 0, 8, &lo, &hi);
    ok(5 == lo && 8 == hi, "param [5,15) in shard [0,8) -> [5,8)");
    base_shard_intersect(5, 10, 12, 8, &lo, &hi);
    ok(12 == lo && 15 == hi, "param [5,15) in shard [12,20) -> [12,15)");
    base_shard_intersect(5, 2, 8, 8, &lo, &hi);
    ok(lo == hi, "disjoint param and shard intersect empty");
}

static void test_normal(void)
{
    double sum = 0, sq = 0;
    int n = 100000, same = 1;
    for (int i = 0; i < n; i++) {
        float v = fsdp_normal(42, 3, (uint64_t)i);
        same &= v == fsdp_normal(42, 3, (uint64_t)i);
        sum += v;
        sq += (double)v * v;
    }
    ok(same, "init noise is a pure function of (seed, stream, index)");
    ok(fabs(sum / n) < 0.02 && fabs(sq / n - 1.0) < 0.03, "init noise has mean 0 and variance 1 "
       "(mean %.4f, var %.4f)", sum / n, sq / n);
    ok(fsdp_normal(42, 3, 0) != fsdp_normal(43, 3, 0) && fsdp_normal(42, 3, 0) != fsdp_normal(42, 4, 0),
       "seed and stream change the values");
}

static void test_optim(void)
{
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    /* SGD with momentum, two steps by hand: buf = g, then mu*buf + g */
    o.optimizer = STRATA_OPTIM_SGD;
    o.lr = 0.1f; o.momentum = 0.5f; o.weight_decay = 0.0f;
    float p[3] = { 1, 2, 3 }, g[3] = { 1, -1, 0.5f }, buf[3] = { 0 };
    fsdp_optim_step(&o, 1, p, g, buf, NULL, 3, 1);
    fsdp_optim_step(&o, 2, p, g, buf, NULL, 3, 1);
    ok(fabsf(p[0] - (1 - 0.1f - 0.15f)) < 1e-6f && fabsf(p[1] - (2 + 0.25f)) < 1e-6f,
       "SGD with momentum matches two steps by hand (%g %g)", p[0], p[1]);
    is_int(fsdp_optim_nstate(&o), 1, "SGD with momentum keeps one state: %s",
           fsdp_optim_state_name(&o, 0));

    /* AdamW's first step moves each weight by lr * sign(g) (plus decay) */
    strata_model_opts_default(&o);
    o.lr = 0.01f; o.weight_decay = 0.1f;
    float q[2] = { 1, -2 }, h[2] = { 3, -0.001f }, m[2] = { 0 }, v[2] = { 0 };
    fsdp_optim_step(&o, 1, q, h, m, v, 2, 1);
    ok(fabsf(q[0] - (1 * (1 - 0.001f) - 0.01f)) < 1e-5f &&
       fabsf(q[1] - (-2 * (1 - 0.001f) + 0.01f)) < 1e-5f, "AdamW step 1 = decay + lr*sign(g)");
    ok(!strcmp(fsdp_optim_state_name(&o, 0), "exp_avg") &&
       !strcmp(fsdp_optim_state_name(&o, 1), "exp_avg_sq") && !fsdp_optim_state_name(&o, 2),
       "AdamW state names are exp_avg, exp_avg_sq");

    /* threads change nothing, bit for bit */
    size_t n = (1u << 21) + 77;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *gg = malloc(n * sizeof *gg);
    float *s0 = calloc(n, sizeof *s0), *s1 = calloc(n, sizeof *s1);
    float *t0 = calloc(n, sizeof *t0), *t1 = calloc(n, sizeof *t1);
    for (size_t i = 0; i < n; i++) {
        a[i] = b[i] = fsdp_normal(1, 1, i);
        gg[i] = fsdp_normal(1, 2, i);
    }
    fsdp_optim_step(&o, 1, a, gg, s0, s1, n, 1);
    fsdp_optim_step(&o, 1, b, gg, t0, t1, n, 4);
    ok(!memcmp(a, b, n * sizeof *a) && !memcmp(s1, t1, n * sizeof *a),
       "the optimizer on 4 threads is bitwise the 1-thread result");
    double n1 = fsdp_sqnorm(gg, n, 1), n4 = fsdp_sqnorm(gg, n, 3);
    double exact = 0;
    for (size_t i = 0; i < n; i++) exact += (double)gg[i] * gg[i];
    ok(n1 == n4 && fabs(n1 - exact) / exact < 1e-5, "squared norm: threads agree bitwise and "
       "match a double sum (%.6g vs %.6g)", n1, exact);
    fsdp_scale(gg, n, 0.5f, 2);
    ok(gg[n - 1] == 0.5f * fsdp_normal(1, 2, n - 1), "scale reaches the last element");
    free(a); free(b); free(gg); free(s0); free(s1); free(t0); free(t1);
}

int main(void)
{
    plan(24);
    test_ranges();
    test_intersect();
    test_normal();
    test_optim();
    return done_testing();
}
