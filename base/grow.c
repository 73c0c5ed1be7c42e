/*
 * grow.c - reading and writing the public structures that grow by size
 * (see grow.h).
 */
#include "config.h"
#include "grow.h"

#include <string.h>

int base_grow_size_ok(size_t size)
{
    return size >= 2 * sizeof(size_t) && size <= BASE_GROW_MAX_SIZE && 0 == size % 8;
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static strata_status_t bad_size(strata_context_t *ctx, const base_grow_t *g, size_t size)
{
    return base_error(ctx, STRATA_ERR_INVALID, "%s: its size field is %zu, not the size of "
                      "a %s (this library's is %zu bytes): set it up with %s before filling "
                      "in the fields", g->type, size, g->type, g->size, g->init);
}

strata_status_t base_grow_init(const base_grow_t *g, void *caller, size_t caller_size,
                               const void *defaults)
{
    if (!caller) return base_error(NULL, STRATA_ERR_INVALID, "%s: NULL pointer", g->init);
    if (!base_grow_size_ok(caller_size)) return bad_size(NULL, g, caller_size);
    memset(caller, 0, caller_size);
    memcpy(caller, defaults, min_size(caller_size, g->size));
    memcpy(caller, &caller_size, sizeof caller_size);
    return STRATA_OK;
}

strata_status_t base_grow_in(strata_context_t *ctx, const base_grow_t *g, void *lib,
                             const void *caller)
{
    size_t size;
    memcpy(&size, caller, sizeof size);
    if (!base_grow_size_ok(size)) return bad_size(ctx, g, size);
    const unsigned char *c = caller;
    for (size_t i = g->size; i < size; i++)
        if (c[i])
            return base_error(ctx, STRATA_ERR_INVALID, "%s: byte %zu is set, beyond the %zu "
                              "bytes this library (strata %s) knows: the program was built "
                              "against a newer strata.h and asks for an option this "
                              "library does not have; run it with the libstrata it was "
                              "built for", g->type, i, g->size, strata_version_string());
    const size_t head = sizeof size;
    memcpy((char *)lib + head, c + head, min_size(size, g->size) - head);
    return STRATA_OK;
}

strata_status_t base_grow_out(strata_context_t *ctx, const base_grow_t *g, void *caller,
                              const void *lib)
{
    size_t size;
    memcpy(&size, caller, sizeof size);
    if (!base_grow_size_ok(size)) return bad_size(ctx, g, size);
    const size_t head = sizeof size;
    memcpy((char *)caller + head, (const char *)lib + head, min_size(size, g->size) - head);
    return STRATA_OK;
}
