/*
 * grow.h - the public structures that grow (strata_model_opts_t,
 * strata_model_stats_t, strata_ckpt_save_opts_t). Each starts with
 * `size_t size`, the sizeof the caller was compiled with; later versions
 * only append fields and keep the size a multiple of 8, so any caller's
 * size falls on a field boundary of every later layout. The library reads
 * (or, for statistics, writes) only the bytes the caller's size covers:
 * an older caller's missing fields take their defaults, a newer caller's
 * extra fields must be zero (a value there asks for something this library
 * cannot do). Internal.
 */
#ifndef STRATA_BASE_GROW_H
#define STRATA_BASE_GROW_H

#include "base.h"

/* Sizes above this are taken for garbage (an unset size field). */
#define BASE_GROW_MAX_SIZE 4096

/* What the messages name: the type and the call that sets its size. */
typedef struct base_grow {
    const char *type;      /* "strata_model_opts_t" */
    const char *init;      /* "strata_model_opts_default(&opts)" */
    size_t      size;      /* this library's sizeof */
} base_grow_t;

/* Whether a caller's size can be a growable struct's: a multiple of 8 of
 * at least 16 bytes (the size and one word of fields), at most
 * BASE_GROW_MAX_SIZE. */
int base_grow_size_ok(size_t size);

/* Set up a caller's struct of caller_size bytes: zero it, copy the
 * library's defaults (g->size bytes) into the part that fits, store
 * caller_size in its size field. STRATA_ERR_INVALID for a size that
 * base_grow_size_ok refuses (nothing written). */
strata_status_t base_grow_init(const base_grow_t *g, void *caller, size_t caller_size,
                               const void *defaults);

/* Read a caller's struct into lib (g->size bytes, holding the defaults):
 * the fields within the caller's size replace the defaults. On a bad size
 * or a non-zero byte beyond g->size, STRATA_ERR_INVALID with a message on
 * ctx (may be NULL) and lib untouched. */
strata_status_t base_grow_in(strata_context_t *ctx, const base_grow_t *g, void *lib,
                             const void *caller);

/* Write lib (g->size bytes) into a caller's struct, only as far as the
 * caller's size reaches; its size field and any bytes beyond g->size stay.
 * On a bad size STRATA_ERR_INVALID with a message, nothing written. */
strata_status_t base_grow_out(strata_context_t *ctx, const base_grow_t *g, void *caller,
                              const void *lib);

#endif
