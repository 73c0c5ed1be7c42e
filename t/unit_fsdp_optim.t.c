/*
 * unit_fsdp_optim.t.c - the optimizer loops of fsdp/optim.c (vectorised,
 * one clone per x86-64 level) give bitwise the plain element-by-element
 * result of strata/elem.h for any length, offset and thread count; and the
 * norm's fixed chunks make it independent of the threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/fsdp.h"
#include "strata/elem.h"
#include "tap.h"

/* The reference: one element at a time, as this test's flags compile it. */
static void adamw_ref(const strata_model_opts_t *o, int t, float *p, const float *g, float *m,
                      float *v, size_t n)
{
    const float b1 = o->beta1, b2 = o->beta2;
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    const float step = o->lr / bc1, rbc2 = 1.0f / sqrtf(bc2), decay = 1.0f - o->lr * o->weight_decay;
    for (size_t i = 0; i < n; i++)
        strata_elem_adamw(p + i, g[i], m + i, v + i, b1, b2, step, rbc2, o->eps, decay);
}

static float val(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((int)(*s >> 8) - (1 << 23)) / (float)(1 << 20);   /* [-8, 8) */
}

int main(void)
{
    static const size_t lens[] = { 1, 7, 15, 16, 17, 4097, (1u << 17) + 3, (1u << 19) + 13 };
    const int nl = (int)(sizeof lens / sizeof lens[0]);
    plan(2 * nl + 2);
    strata_model_opts_t o;
    strata_model_opts_default(&o);
    o.weight_decay = 0.1f;
    size_t nmax = lens[nl - 1] + 1;
    float *p = malloc(nmax * 4), *g = malloc(nmax * 4), *m = malloc(nmax * 4), *v = malloc(nmax * 4);
    float *rp = malloc(nmax * 4), *rm = malloc(nmax * 4), *rv = malloc(nmax * 4);
    if (!p || !g || !m || !v || !rp || !rm || !rv) bail_out("out of memory");
    for (int li = 0; li < nl; li++) {
        size_t n = lens[li];
        for (int threads = 1; threads <= 3; threads += 2) {
            unsigned s = 7u + (unsigned)li;
            /* offset by one element: the vector loop starts unaligned */
            for (size_t i = 0; i < n + 1; i++) {
                p[i] = rp[i] = val(&s);
                g[i] = val(&s);
                m[i] = rm[i] = 0.1f * val(&s);
                v[i] = rv[i] = fabsf(val(&s));
            }
            for (int t = 1; t <= 3; t++) {
                fsdp_optim_step(&o, t, p + 1, g + 1, m + 1, v + 1, n, threads);
                adamw_ref(&o, t, rp + 1, g + 1, rm + 1, rv + 1, n);
            }
            int same = !memcmp(p, rp, (n + 1) * 4) && !memcmp(m, rm, (n + 1) * 4) &&
                       !memcmp(v, rv, (n + 1) * 4);
            ok(same, "adamw, %zu elements, %d thread%s, 3 steps: bitwise the element-by-element loop",
               n, threads, threads > 1 ? "s" : "");
        }
    }
    size_t n = lens[nl - 1];
    double s1 = fsdp_sqnorm(g, n, 1), s3 = fsdp_sqnorm(g, n, 3), ref = 0;
    for (size_t i = 0; i < n; i++) ref += (double)g[i] * g[i];
    ok(s1 == s3, "sum of squares: 1 and 3 threads bitwise equal (%.17g)", s1);
    ok(fabs(s1 - ref) <= 1e-6 * ref, "sum of squares within 1e-6 of a double-precision sum");
    free(p); free(g); free(m); free(v); free(rp); free(rm); free(rv);
    return done_testing();
}
