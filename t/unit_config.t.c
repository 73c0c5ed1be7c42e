/* unit_config.t - the option table: defaults, sizes with units, environment
 * overrides, bad values and the printed dump. */
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "strata.h"
#include "tap.h"

static const struct { const char *text; size_t bytes; strata_status_t st; } sizes[] = {
    { "0",      0,                     STRATA_OK },
    { "4096",   4096,                  STRATA_OK },
    { "1k",     1024,                  STRATA_OK },
    { "512M",   512ull << 20,          STRATA_OK },
    { "4G",     4ull << 30,            STRATA_OK },
    { "4GiB",   4ull << 30,            STRATA_OK },
    { "1.5k",   1536,                  STRATA_OK },
    { " 2 MB",  2ull << 20,            STRATA_OK },
    { "1T",     1ull << 40,            STRATA_OK },
    { "inf",    SIZE_MAX,              STRATA_OK },
    { "",       0,                     STRATA_ERR_CONFIG },
    { "-1",     0,                     STRATA_ERR_CONFIG },
    { "12Q",    0,                     STRATA_ERR_CONFIG },
    { "M",      0,                     STRATA_ERR_CONFIG },
    { "4G junk", 0,                    STRATA_ERR_CONFIG },
    { "99999999999T", 0,               STRATA_ERR_OVERFLOW },
    { NULL, 0, 0 }
};

/* Every option with a fixed set of values: each value accepted, anything
 * else refused with a message that lists the values. */
static const struct { const char *name, *value, *list; } enums[] = {
    { "schedule",  "lhs",         NULL },
    { "schedule",  "NAIVE",       NULL },
    { "schedule",  "bogus",       "lhs or naive" },
    { "schedule",  "",            "lhs or naive" },
    { "ckpt_mpio", "independent", NULL },
    { "ckpt_mpio", "collective",  NULL },
    { "ckpt_mpio", "individual",  NULL },
    { "ckpt_mpio", "two-phase",   "independent, collective or individual" },
    { "log_level", "trace",       NULL },
    { "log_level", "loud",        "error, warn, info, debug or trace" },
    { "backend",   "host",        NULL },
    { "backend",   "gpu",         "auto, host or cuda" },
    { "reduce16",  "native",      NULL },
    { "reduce16",  "wide",        NULL },
    { "reduce16",  "bf16",        "wide or native" },
    { NULL, NULL, NULL }
};

static void test_enums(strata_config_t *cfg)
{
    char err[512];
    long long v = -1, w = -1;
    for (int i = 0; enums[i].name; i++) {
        err[0] = '\0';
        strata_status_t st = strata_config_set(cfg, enums[i].name, enums[i].value, err, sizeof err);
        if (!enums[i].list)
            ok(STRATA_OK == st, "%s=%s accepted", enums[i].name, enums[i].value);
        else
            ok(STRATA_ERR_CONFIG == st && strstr(err, enums[i].name) && strstr(err, enums[i].list),
               "%s='%s' refused with the values: %s", enums[i].name, enums[i].value, err);
    }
    setenv("STRATA_SCHEDULE", "bogus", 1);
    ok(STRATA_ERR_CONFIG == strata_config_read_env(cfg, err, sizeof err) &&
       strstr(err, "STRATA_SCHEDULE") && strstr(err, "lhs or naive"),
       "STRATA_SCHEDULE=bogus refused, naming the variable and the values: %s", err);
    setenv("STRATA_CKPT_MPIO", "collective", 1);
    setenv("STRATA_SCHEDULE", "naive", 1);
    ok(STRATA_OK == strata_config_read_env(cfg, err, sizeof err) &&
       STRATA_OK == strata_config_get_int(cfg, "ckpt_mpio", &v) &&
       STRATA_OK == strata_config_get_int(cfg, "schedule", &w) && 1 == v && 1 == w,
       "STRATA_CKPT_MPIO and STRATA_SCHEDULE go through the table");
    setenv("STRATA_CKPT_DIRECT", "perhaps", 1);
    ok(STRATA_ERR_CONFIG == strata_config_read_env(cfg, err, sizeof err) &&
       strstr(err, "STRATA_CKPT_DIRECT"), "STRATA_CKPT_DIRECT=perhaps refused: %s", err);
    unsetenv("STRATA_CKPT_DIRECT");
    unsetenv("STRATA_CKPT_MPIO");
    unsetenv("STRATA_SCHEDULE");
}

/* The handle: typed access by name, kinds checked, copies independent,
 * text that reads back to the same value. */
static void test_typed(void)
{
    strata_config_t *cfg = NULL, *copy = NULL;
    char err[512], text[64];
    long long v = -1;
    size_t z = 0;
    double d = -1;
    ok(STRATA_OK == strata_config_create(&cfg) && cfg, "create");
    ok(STRATA_OK == strata_config_set_size(cfg, "device_mem", 3ull << 20, err, sizeof err) &&
       STRATA_OK == strata_config_get_size(cfg, "device-mem", &z) && z == 3ull << 20,
       "set_size / get_size");
    ok(STRATA_OK == strata_config_set_int(cfg, "schedule", 1, err, sizeof err) &&
       STRATA_OK == strata_config_get(cfg, "schedule", text, sizeof text) &&
       0 == strcmp(text, "naive"), "set_int on a fixed set takes the index; get gives the name");
    ok(STRATA_ERR_CONFIG == strata_config_set_int(cfg, "schedule", 2, err, sizeof err) &&
       strstr(err, "lhs or naive") && STRATA_OK == strata_config_get_int(cfg, "schedule", &v) &&
       1 == v, "an index out of the set is refused, value kept: %s", err);
    ok(STRATA_ERR_CONFIG == strata_config_set_int(cfg, "checksums", 2, err, sizeof err) &&
       STRATA_ERR_CONFIG == strata_config_set_int(cfg, "prefetch", -1, err, sizeof err),
       "set_int checks as the parser does (boolean 2, negative count)");
    ok(STRATA_OK == strata_config_set_double(cfg, "link_latency", 1e-5, err, sizeof err) &&
       STRATA_OK == strata_config_get_double(cfg, "link_latency", &d) && 1e-5 == d,
       "set_double / get_double");
    ok(STRATA_ERR_MISMATCH == strata_config_get_int(cfg, "device_mem", &v) &&
       STRATA_ERR_MISMATCH == strata_config_set_double(cfg, "spill_dir", 1, err, sizeof err) &&
       STRATA_ERR_MISMATCH == strata_config_get_size(cfg, "link_latency", &z),
       "typed access to an option of another type: MISMATCH");
    ok(STRATA_ERR_NOT_FOUND == strata_config_get_int(cfg, "no_such", &v) &&
       STRATA_ERR_NOT_FOUND == strata_config_set_int(cfg, "no_such", 1, err, sizeof err) &&
       strstr(err, "unknown option 'no_such'"), "unknown names: NOT_FOUND");
    ok(STRATA_OK == strata_config_set(cfg, "host_mem", "inf", err, sizeof err) &&
       STRATA_OK == strata_config_get(cfg, "host_mem", text, sizeof text) &&
       0 == strcmp(text, "inf") && STRATA_OK == strata_config_set(cfg, "chunk_size", "1.5k", err, sizeof err) &&
       STRATA_OK == strata_config_get(cfg, "chunk_size", text, sizeof text) && 0 == strcmp(text, "1536"),
       "get gives exact text (inf, bytes)");
    ok(STRATA_ERR_CONFIG == strata_config_set(cfg, "chunk_size", "0", err, sizeof err) &&
       strstr(err, "option chunk_size: '0' is less than its minimum, 1 byte") &&
       STRATA_ERR_CONFIG == strata_config_set_size(cfg, "chunk_size", 0, err, sizeof err) &&
       strstr(err, "chunk_size: 0 is less than its minimum") &&
       STRATA_OK == strata_config_get(cfg, "chunk_size", text, sizeof text) && 0 == strcmp(text, "1536"),
       "chunk_size 0 refused with a message naming the minimum; the value stays");
    ok(STRATA_ERR_OVERFLOW == strata_config_get(cfg, "chunk_size", text, 3) &&
       STRATA_ERR_INVALID == strata_config_get_int(cfg, "prefetch", NULL),
       "get into a short buffer: OVERFLOW; NULL out-param: INVALID");
    ok(STRATA_OK == strata_config_dup(cfg, &copy) &&
       STRATA_OK == strata_config_set(copy, "schedule", "lhs", err, sizeof err) &&
       STRATA_OK == strata_config_get_int(cfg, "schedule", &v) && 1 == v,
       "a copy changes without touching the original");
    ok(STRATA_ERR_INVALID == strata_config_create(NULL) &&
       STRATA_ERR_INVALID == strata_config_dup(NULL, &copy) &&
       STRATA_ERR_INVALID == strata_config_read_env(NULL, err, sizeof err),
       "NULL arguments: INVALID");
    strata_config_destroy(copy);
    strata_config_destroy(cfg);
    strata_config_destroy(NULL);
}

int main(void)
{
    plan(34 + 12 + 3 + 12 + 4);
    for (int i = 0; sizes[i].text; i++) {
        size_t b = 12345;
        strata_status_t st = strata_parse_size(sizes[i].text, &b);
        ok(st == sizes[i].st && (STRATA_OK != st ? b == 12345 : b == sizes[i].bytes),
           "parse_size('%s') -> %s", sizes[i].text, strata_strerror(sizes[i].st));
    }
    ok(STRATA_ERR_INVALID == strata_parse_size(NULL, NULL), "parse_size(NULL) is invalid");

    strata_config_t *cfg = NULL;
    if (STRATA_OK != strata_config_create(&cfg)) bail_out("strata_config_create");
    char err[512] = "", text[64] = "";
    size_t z = 0;
    long long a = 0, b = 0, c = 0;
    double d = 0;
    ok(STRATA_OK == strata_config_get_size(cfg, "device_mem", &z) && z == 4ull << 30,
       "default device_mem is 4G");
    ok(STRATA_OK == strata_config_get(cfg, "schedule", text, sizeof text) && !strcmp(text, "lhs") &&
       STRATA_OK == strata_config_get(cfg, "ckpt_direct", text, sizeof text) && !strcmp(text, "on") &&
       STRATA_OK == strata_config_get(cfg, "ckpt_mpio", text, sizeof text) && !strcmp(text, "independent"),
       "default schedule lhs, ckpt_direct on, ckpt_mpio independent");
    ok(STRATA_OK == strata_config_get_int(cfg, "comm_check", &a) &&
       STRATA_OK == strata_config_get_int(cfg, "checksums", &b) && 1 == a && 1 == b,
       "default booleans on");
    ok(STRATA_OK == strata_config_get(cfg, "reduce16", text, sizeof text) && !strcmp(text, "wide"),
       "default reduce16 wide (16-bit reductions in f32, rounded once)");

    ok(STRATA_OK == strata_config_set(cfg, "device-mem", "512M", err, sizeof err) &&
       STRATA_OK == strata_config_get_size(cfg, "device_mem", &z) && z == 512ull << 20,
       "set device-mem=512M (dash spelling)");
    ok(STRATA_OK == strata_config_set(cfg, "LINK_D2H_BW", "2G", err, sizeof err) &&
       STRATA_OK == strata_config_get_double(cfg, "link_d2h_bw", &d) && d == (double)(2ull << 30),
       "bandwidth with a unit");
    ok(STRATA_OK == strata_config_set(cfg, "link_latency", "0.00001", err, sizeof err) &&
       STRATA_OK == strata_config_get_double(cfg, "link_latency", &d) && d == 0.00001,
       "latency in seconds");
    ok(STRATA_ERR_CONFIG == strata_config_set(cfg, "devise_mem", "1G", err, sizeof err) &&
       strstr(err, "unknown option 'devise_mem'"), "unknown option named in the message");
    ok(STRATA_ERR_CONFIG == strata_config_set(cfg, "device_mem", "lots", err, sizeof err) &&
       strstr(err, "device_mem") && strstr(err, "512M") &&
       STRATA_OK == strata_config_get_size(cfg, "device_mem", &z) && z == 512ull << 20,
       "bad size rejected, message shows the form, value unchanged: %s", err);
    ok(STRATA_ERR_CONFIG == strata_config_set(cfg, "checksums", "maybe", err, sizeof err),
       "bad boolean rejected");
    ok(STRATA_ERR_CONFIG == strata_config_set(cfg, "log_level", "loud", err, sizeof err),
       "bad enum rejected");
    ok(STRATA_ERR_INVALID == strata_config_set(NULL, "x", "y", err, sizeof err), "NULL config");

    setenv("STRATA_HOST_MEM", "3G", 1);
    setenv("STRATA_SCHEDULE", "naive", 1);
    ok(STRATA_OK == strata_config_read_env(cfg, err, sizeof err) &&
       STRATA_OK == strata_config_get_size(cfg, "host_mem", &z) && z == 3ull << 30 &&
       STRATA_OK == strata_config_get_int(cfg, "schedule", &c) && 1 == c,
       "STRATA_* environment overrides");
    setenv("STRATA_DEVICE_MEM", "12X", 1);
    setenv("STRATA_HOST_MEM", "5G", 1);
    ok(STRATA_ERR_CONFIG == strata_config_read_env(cfg, err, sizeof err) &&
       strstr(err, "STRATA_DEVICE_MEM") && STRATA_OK == strata_config_get_size(cfg, "host_mem", &z) &&
       z == 5ull << 30, "bad environment value names the variable; other overrides kept");
    unsetenv("STRATA_DEVICE_MEM");
    unsetenv("STRATA_HOST_MEM");
    test_enums(cfg);
    strata_config_set(cfg, "host_mem", "3G", NULL, 0);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    strata_config_print(cfg, f, 1);
    fclose(f);
    ok(buf && strstr(buf, "host_mem         = 3 GiB") && strstr(buf, "STRATA_HOST_MEM"),
       "printed dump shows values and variables");
    free(buf);
    strata_config_destroy(cfg);
    test_typed();

    char sz[32];
    is_string(strata_format_size(512ull << 20, sz, sizeof sz), "512 MiB", "format 512 MiB");
    is_string(strata_format_size(1536, sz, sizeof sz), "1.5 KiB", "format 1.5 KiB");
    return done_testing();
}
