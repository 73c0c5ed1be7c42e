/* fuzz/config.c - the option parser (strata_config_set, what the
 * STRATA_* variables and `strata config` go through) on arbitrary
 * "NAME=VALUE" text. A value that is accepted reads back through
 * strata_config_get as text that strata_config_set accepts again and that
 * reads back the same; a refused one says why and leaves the option as it
 * was. strata_parse_size gets the value too. */
#include "fuzz.h"
#include "strata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    char *eq = strchr(text, '=');
    const char *name = text, *value = eq ? eq + 1 : "";
    if (eq) *eq = '\0';
    size_t bytes;
    (void)strata_parse_size(value, &bytes);
    strata_config_t *cfg = NULL;
    if (strata_config_create(&cfg) != STRATA_OK) { free(text); return 0; }
    char err[256] = "", before[256], after[256], again[256];
    int known = strata_config_get(cfg, name, before, sizeof before) == STRATA_OK;
    if (strata_config_set(cfg, name, value, err, sizeof err) == STRATA_OK) {
        FUZZ_ASSERT(known);
        FUZZ_ASSERT(strata_config_get(cfg, name, after, sizeof after) == STRATA_OK);
        FUZZ_ASSERT(strata_config_set(cfg, name, after, err, sizeof err) == STRATA_OK);
        FUZZ_ASSERT(strata_config_get(cfg, name, again, sizeof again) == STRATA_OK);
        FUZZ_ASSERT(!strcmp(after, again));
    } else {
        FUZZ_ASSERT(err[0]);
        if (known) {
            FUZZ_ASSERT(strata_config_get(cfg, name, after, sizeof after) == STRATA_OK);
            FUZZ_ASSERT(!strcmp(before, after));
        }
    }
    strata_config_destroy(cfg);
    free(text);
    return 0;
}
