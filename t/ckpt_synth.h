/*
 * ckpt_synth.h - a synthetic sharded model for the checkpoint tests, with
 * awkward sizes: parameter sizes that are not multiples of S, 1-d, 2-d,
 * 3-d tensors, shards spanning several parameters and partial rows, and a
 * unit so small that some ranks hold only padding. Values are a function
 * of (unit, tensor, element, step), so any rank can check any element.
 */
#ifndef CKPT_SYNTH_H
#define CKPT_SYNTH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

#define SY_UNITS  4
#define SY_PARAMS 4
#define SY_STATES 2

typedef struct synth {
    strata_ckpt_layout_t L;
    strata_ckpt_unit_t   units[SY_UNITS];
    strata_ckpt_param_t  params[SY_UNITS][SY_PARAMS];
    strata_ckpt_state_t  states[SY_UNITS][SY_STATES];
    strata_ckpt_scalar_t scalars[SY_UNITS][2];
    strata_ckpt_kv_t     config[2];
    unsigned char        rng[40];
    uint64_t             numel[SY_UNITS];   /* N before padding */
} synth_t;

static const struct {
    const char *unit;
    int nparams;
    struct { const char *name; int ndims; uint64_t dims[3]; } p[SY_PARAMS];
} sy_shape[SY_UNITS] = {
    { "embed",   4, { { "w", 2, { 5, 7 } }, { "b", 1, { 7 } }, { "g", 3, { 3, 2, 5 } }, { "s", 1, { 1 } } } },
    { "block.0", 2, { { "qkv", 2, { 13, 11 } }, { "bias", 1, { 3 } } } },
    { "block.1", 1, { { "t3", 3, { 17, 3, 4 } } } },
    { "head",    1, { { "v", 1, { 2 } } } },
};

/* kind 0 = parameter, 1.. = optimizer state k-1 */
static inline float sy_value(int unit, int kind, uint64_t j, uint64_t step)
{
    return (float)((unit * 7919 + kind * 104729 + (long long)j) % 65536) * 0.25f + (float)step;
}

/* Build the layout of rank `rank` of W with shard size S; dim0_delta
 * changes the first dim of embed/w (for shape-mismatch tests). */
static inline int synth_init(synth_t *s, int W, int S, int rank, uint64_t step, int dim0_delta)
{
    memset(s, 0, sizeof *s);
    s->L.nunits = SY_UNITS;
    s->L.units = s->units;
    s->L.shard_size = S;
    s->L.shard_rank = rank % S;
    s->L.replica = rank / S;
    s->L.world_size = W;
    s->L.train.step = step;
    s->L.train.data_pos = 1000 + step;
    s->L.train.rng = s->rng;
    s->L.train.rng_len = sizeof s->rng;
    for (size_t i = 0; i < sizeof s->rng; i++) s->rng[i] = (unsigned char)(i * 37 + step);
    s->config[0] = (strata_ckpt_kv_t){ "model", "synthetic" };
    s->config[1] = (strata_ckpt_kv_t){ "n_units", "4" };
    s->L.config = s->config;
    s->L.nconfig = 2;
    for (int u = 0; u < SY_UNITS; u++) {
        strata_ckpt_unit_t *U = &s->units[u];
        uint64_t off = 0;
        U->name = sy_shape[u].unit;
        U->nparams = sy_shape[u].nparams;
        U->params = s->params[u];
        for (int p = 0; p < U->nparams; p++) {
            strata_ckpt_param_t *P = &s->params[u][p];
            P->name = sy_shape[u].p[p].name;
            P->ndims = sy_shape[u].p[p].ndims;
            uint64_t n = 1;
            for (int k = 0; k < P->ndims; k++) {
                P->dims[k] = sy_shape[u].p[p].dims[k];
                if (0 == u && 0 == p && 0 == k) P->dims[k] += (uint64_t)dim0_delta;
                n *= P->dims[k];
            }
            P->offset = off;
            off += n;
        }
        s->numel[u] = off;
        U->npad = (off + (uint64_t)S - 1) / (uint64_t)S * (uint64_t)S;
        size_t len = (size_t)(U->npad / (uint64_t)S);
        U->shard = malloc(len * sizeof(float));
        U->nstates = SY_STATES;
        U->states = s->states[u];
        s->states[u][0].name = "exp_avg";
        s->states[u][1].name = "exp_avg_sq";
        for (int k = 0; k < SY_STATES; k++) s->states[u][k].shard = malloc(len * sizeof(float));
        U->nscalars = 2;
        U->scalars = s->scalars[u];
        s->scalars[u][0] = (strata_ckpt_scalar_t){ "step", (double)step };
        s->scalars[u][1] = (strata_ckpt_scalar_t){ "lr", 1e-3 * (u + 1) };
        if (!U->shard || !s->states[u][0].shard || !s->states[u][1].shard) return -1;
    }
    return 0;
}

static inline void synth_free(synth_t *s)
{
    for (int u = 0; u < SY_UNITS; u++) {
        free(s->units[u].shard);
        for (int k = 0; k < SY_STATES; k++) free(s->states[u][k].shard);
    }
}

/* Fill the shards with the values of `step`; padding gets junk that a
 * save must not write. */
static inline void synth_fill(synth_t *s)
{
    int S = s->L.shard_size;
    for (int u = 0; u < SY_UNITS; u++) {
        uint64_t len = s->units[u].npad / (uint64_t)S, a = len * (uint64_t)s->L.shard_rank;
        for (uint64_t i = 0; i < len; i++) {
            uint64_t j = a + i;
            int real = j < s->numel[u];
            s->units[u].shard[i] = real ? sy_value(u, 0, j, s->L.train.step) : 12345.0f;
            for (int k = 0; k < SY_STATES; k++)
                s->states[u][k].shard[i] = real ? sy_value(u, k + 1, j, s->L.train.step) : -777.0f;
        }
    }
}

/* Scribble over everything a load must overwrite. */
static inline void synth_scribble(synth_t *s)
{
    int S = s->L.shard_size;
    for (int u = 0; u < SY_UNITS; u++) {
        uint64_t len = s->units[u].npad / (uint64_t)S;
        for (uint64_t i = 0; i < len; i++) {
            s->units[u].shard[i] = NAN;
            for (int k = 0; k < SY_STATES; k++) s->states[u][k].shard[i] = NAN;
        }
        s->scalars[u][0].value = -1;
        s->scalars[u][1].value = -1;
    }
    memset(s->rng, 0xee, sizeof s->rng);
    s->L.train.step = 999999;
    s->L.train.data_pos = 0;
}

/* Element-by-element check against `step`; the first difference goes to
 * why. Returns the number of wrong elements/fields. */
static inline long synth_check(const synth_t *s, uint64_t step, char *why, size_t len)
{
    long bad = 0;
    int S = s->L.shard_size;
    why[0] = '\0';
#define SY_BAD(...) do { if (!bad) snprintf(why, len, __VA_ARGS__); bad++; } while (0)
    for (int u = 0; u < SY_UNITS; u++) {
        uint64_t n = s->units[u].npad / (uint64_t)S, a = n * (uint64_t)s->L.shard_rank;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t j = a + i;
            int real = j < s->numel[u];
            float want = real ? sy_value(u, 0, j, step) : 0.0f;
            if (memcmp(&want, &s->units[u].shard[i], sizeof want))
                SY_BAD("%s param element %llu: got %g want %g", s->units[u].name, (unsigned long long)j,
                       s->units[u].shard[i], want);
            for (int k = 0; k < SY_STATES; k++) {
                want = real ? sy_value(u, k + 1, j, step) : 0.0f;
                if (memcmp(&want, &s->states[u][k].shard[i], sizeof want))
                    SY_BAD("%s state %d element %llu: got %g want %g", s->units[u].name, k,
                           (unsigned long long)j, s->states[u][k].shard[i], want);
            }
        }
        if (s->scalars[u][0].value != (double)step || s->scalars[u][1].value != 1e-3 * (u + 1))
            SY_BAD("%s scalars %g %g", s->units[u].name, s->scalars[u][0].value, s->scalars[u][1].value);
    }
    for (size_t i = 0; i < sizeof s->rng; i++)
        if (s->rng[i] != (unsigned char)(i * 37 + step)) { SY_BAD("rng byte %zu", i); break; }
    if (s->L.train.step != step || s->L.train.data_pos != 1000 + step)
        SY_BAD("train step %llu data_pos %llu", (unsigned long long)s->L.train.step,
               (unsigned long long)s->L.train.data_pos);
#undef SY_BAD
    return bad;
}

#endif
