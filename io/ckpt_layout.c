/*
 * ckpt_layout.c - checks of a caller's checkpoint layout before any file
 * is touched: a wrong layout must fail with a message on every rank, never
 * deadlock a collective HDF5 call or write out of bounds.
 */
#include "config.h"
#include "base/base.h"
#include "io/io.h"

#include <string.h>
#include <xxhash.h>

int ckpt_name_ok(const char *name)
{
    if (!name || !name[0] || !strcmp(name, ".") || !strcmp(name, "..")) return 0;
    size_t n = strlen(name);
    if (n >= STRATA_CKPT_MAX_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if ('/' == c || c < 0x20 || 0x7f == c) return 0;
    }
    return 1;
}

static int dup_name(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++) if (!strcmp(names[i], name)) return 1;
    return 0;
}

/* The layout's own fields: world and shard geometry, training state,
 * configuration. */
static strata_status_t check_header(strata_context_t *ctx, int W, const strata_ckpt_layout_t *L,
                                    const char *what)
{
    if (L->world_size != W)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: layout world_size %d but the communicator has %d ranks",
                          what, L->world_size, W);
    if (L->shard_size < 1 || W % L->shard_size)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: shard_size %d must be >= 1 and divide the world size %d",
                          what, L->shard_size, W);
    if (L->shard_rank < 0 || L->shard_rank >= L->shard_size || L->replica < 0 ||
        L->replica >= W / L->shard_size)
        return base_error(ctx, STRATA_ERR_INVALID,
                          "%s: shard_rank %d / replica %d out of range for S=%d, W=%d",
                          what, L->shard_rank, L->replica, L->shard_size, W);
    if (L->nunits < 1 || !L->units)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: layout has no units", what);
    if (L->train.rng_len && !L->train.rng)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: train.rng is NULL with rng_len %zu", what,
                          L->train.rng_len);
    if (L->train.rng_len > ((size_t)1 << 24))
        return base_error(ctx, STRATA_ERR_INVALID, "%s: train.rng_len %zu exceeds 16 MiB", what,
                          L->train.rng_len);
    if (L->nconfig < 0 || (L->nconfig && !L->config))
        return base_error(ctx, STRATA_ERR_INVALID, "%s: config has %d entries but no array", what, L->nconfig);
    for (int i = 0; i < L->nconfig; i++) {
        if (!ckpt_name_ok(L->config[i].key) || !L->config[i].value || strlen(L->config[i].value) > 4096)
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: config entry %d: key must be a name without '/' and value a string of at most 4096 bytes",
                              what, i);
    }
    return STRATA_OK;
}

/* A unit's parameters: distinct names, valid shapes, inside the unit's
 * padded elements and not overlapping one another. */
static strata_status_t check_params(strata_context_t *ctx, const strata_ckpt_unit_t *U, const char *what)
{
    const char *pn[U->nparams];
    for (int p = 0; p < U->nparams; p++) {
        const strata_ckpt_param_t *P = &U->params[p];
        uint64_t numel, end;
        if (!ckpt_name_ok(P->name) || dup_name(pn, p, P->name))
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: unit %s: parameter %d has a bad or repeated name", what, U->name, p);
        pn[p] = P->name;
        if (ckpt_numel(P->ndims, P->dims, &numel) || 0 == numel)
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: %s/%s: ndims %d must be 1..%d and every dim positive",
                              what, U->name, P->name, P->ndims, STRATA_CKPT_MAX_DIMS);
        if (__builtin_add_overflow(P->offset, numel, &end) || end > U->npad)
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: %s/%s: elements [%llu, +%llu) lie outside the unit's %llu padded elements",
                              what, U->name, P->name, (unsigned long long)P->offset,
                              (unsigned long long)numel, (unsigned long long)U->npad);
        for (int q = 0; q < p; q++) {
            const strata_ckpt_param_t *Q = &U->params[q];
            uint64_t qn, lo, hi;
            ckpt_numel(Q->ndims, Q->dims, &qn);
            if (ckpt_overlap(P->offset, end, Q->offset, Q->offset + qn, &lo, &hi))
                return base_error(ctx, STRATA_ERR_INVALID, "%s: %s: parameters %s and %s overlap in the flat vector",
                                  what, U->name, Q->name, P->name);
        }
    }
    return STRATA_OK;
}

/* A unit's optimizer states (each with a shard) and scalars: distinct names. */
static strata_status_t check_optimizer(strata_context_t *ctx, const strata_ckpt_unit_t *U, const char *what)
{
    const char *sn[U->nstates > 0 ? U->nstates : 1];
    for (int k = 0; k < U->nstates; k++) {
        if (!ckpt_name_ok(U->states[k].name) || dup_name(sn, k, U->states[k].name) || !U->states[k].shard)
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: unit %s: optimizer state %d has a bad or repeated name or no shard",
                              what, U->name, k);
        sn[k] = U->states[k].name;
    }
    const char *cn[U->nscalars > 0 ? U->nscalars : 1];
    for (int k = 0; k < U->nscalars; k++) {
        if (!ckpt_name_ok(U->scalars[k].name) || dup_name(cn, k, U->scalars[k].name))
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: unit %s: optimizer scalar %d has a bad or repeated name", what, U->name, k);
        cn[k] = U->scalars[k].name;
    }
    return STRATA_OK;
}

/* One unit (its name already checked distinct from those before it). */
static strata_status_t check_unit(strata_context_t *ctx, const strata_ckpt_layout_t *L,
                                  const strata_ckpt_unit_t *U, const char *what)
{
    if (0 == U->npad || U->npad % (uint64_t)L->shard_size)
        return base_error(ctx, STRATA_ERR_INVALID,
                          "%s: unit %s: npad %llu must be a positive multiple of the shard size %d",
                          what, U->name, (unsigned long long)U->npad, L->shard_size);
    if (!U->shard)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: unit %s: shard is NULL", what, U->name);
    if (U->nparams < 1 || !U->params)
        return base_error(ctx, STRATA_ERR_INVALID, "%s: unit %s has no parameters", what, U->name);
    if (U->nstates < 0 || (U->nstates && !U->states) || U->nscalars < 0 || (U->nscalars && !U->scalars))
        return base_error(ctx, STRATA_ERR_INVALID, "%s: unit %s: states or scalars array missing",
                          what, U->name);
    strata_status_t st = check_params(ctx, U, what);
    return STRATA_OK == st ? check_optimizer(ctx, U, what) : st;
}

/* The local checks; the message says which field is wrong. */
static strata_status_t check_local(strata_context_t *ctx, int W, const strata_ckpt_layout_t *L,
                                   const char *what)
{
    if (!L) return base_error(ctx, STRATA_ERR_INVALID, "%s: layout is NULL", what);
    strata_status_t st = check_header(ctx, W, L, what);
    if (STRATA_OK != st) return st;
    const char *unames[L->nunits];
    for (int u = 0; u < L->nunits; u++) {
        const strata_ckpt_unit_t *U = &L->units[u];
        if (!ckpt_name_ok(U->name))
            return base_error(ctx, STRATA_ERR_INVALID,
                              "%s: unit %d: name must be 1..%d bytes, printable, without '/'",
                              what, u, STRATA_CKPT_MAX_NAME - 1);
        if (dup_name(unames, u, U->name))
            return base_error(ctx, STRATA_ERR_INVALID, "%s: unit name %s appears twice", what, U->name);
        unames[u] = U->name;
        st = check_unit(ctx, L, U, what);
        if (STRATA_OK != st) return st;
    }
    return STRATA_OK;
}

/* A hash of everything that must be equal on all ranks. */
static uint64_t fingerprint(const strata_ckpt_layout_t *L)
{
    XXH3_state_t *s = XXH3_createState();
    if (!s) return 0;
    XXH3_64bits_reset(s);
#define MIX(p, n) XXH3_64bits_update(s, (p), (n))
#define MIXS(str) MIX((str), strlen(str) + 1)
    MIX(&L->nunits, sizeof L->nunits);
    MIX(&L->shard_size, sizeof L->shard_size);
    MIX(&L->world_size, sizeof L->world_size);
    MIX(&L->train.rng_len, sizeof L->train.rng_len);
    for (int u = 0; u < L->nunits; u++) {
        const strata_ckpt_unit_t *U = &L->units[u];
        MIXS(U->name);
        MIX(&U->npad, sizeof U->npad);
        for (int p = 0; p < U->nparams; p++) {
            MIXS(U->params[p].name);
            MIX(&U->params[p].ndims, sizeof(int));
            MIX(U->params[p].dims, sizeof(uint64_t) * (size_t)U->params[p].ndims);
            MIX(&U->params[p].offset, sizeof(uint64_t));
        }
        for (int k = 0; k < U->nstates; k++) MIXS(U->states[k].name);
        for (int k = 0; k < U->nscalars; k++) MIXS(U->scalars[k].name);
    }
#undef MIX
#undef MIXS
    uint64_t h = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return h;
}

strata_status_t ckpt_layout_check(strata_context_t *ctx, MPI_Comm comm,
                                  const strata_ckpt_layout_t *layout, const char *what)
{
    int W, rank;
    MPI_Comm_size(comm, &W);
    MPI_Comm_rank(comm, &rank);
    strata_status_t st = check_local(ctx, W, layout, what);
    st = base_agree(ctx, comm, st);
    if (STRATA_OK != st) return st;

    /* same structure everywhere, and each (replica, shard rank) exactly once */
    uint64_t fp = fingerprint(layout), lo, hi;
    MPI_Allreduce(&fp, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
    MPI_Allreduce(&fp, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
    if (lo != hi)
        return base_error(ctx, STRATA_ERR_INVALID,
                          "%s: the ranks pass different layouts (units, parameters, shapes, states, "
                          "scalars, S, W or rng_len differ)", what);
    int mine = layout->replica * layout->shard_size + layout->shard_rank, all_ok = 1;
    int seen[W];
    MPI_Allgather(&mine, 1, MPI_INT, seen, 1, MPI_INT, comm);
    char used[W];
    memset(used, 0, sizeof used);
    for (int i = 0; i < W; i++) {
        if (seen[i] < 0 || seen[i] >= W || used[seen[i]]) all_ok = 0;
        else used[seen[i]] = 1;
    }
    if (!all_ok)
        return base_error(ctx, STRATA_ERR_INVALID,
                          "%s: two ranks claim the same (replica, shard rank) place", what);
    return STRATA_OK;
}
