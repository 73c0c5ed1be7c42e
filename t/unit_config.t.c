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
    { NULL, NULL, NULL }
};

static void test_enums(strata_config_t *cfg)
{
    char err[512];
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
    ok(STRATA_ERR_CONFIG == strata_config_init(cfg, err, sizeof err) &&
       strstr(err, "STRATA_SCHEDULE") && strstr(err, "lhs or naive"),
       "STRATA_SCHEDULE=bogus refused, naming the variable and the values: %s", err);
    setenv("STRATA_CKPT_MPIO", "collective", 1);
    setenv("STRATA_SCHEDULE", "naive", 1);
    ok(STRATA_OK == strata_config_init(cfg, err, sizeof err) && 1 == cfg->ckpt_mpio &&
       1 == cfg->schedule, "STRATA_CKPT_MPIO and STRATA_SCHEDULE go through the table");
    setenv("STRATA_CKPT_DIRECT", "perhaps", 1);
    ok(STRATA_ERR_CONFIG == strata_config_init(cfg, err, sizeof err) &&
       strstr(err, "STRATA_CKPT_DIRECT"), "STRATA_CKPT_DIRECT=perhaps refused: %s", err);
    unsetenv("STRATA_CKPT_DIRECT");
    unsetenv("STRATA_CKPT_MPIO");
    unsetenv("STRATA_SCHEDULE");
}

int main(void)
{
    plan(33 + 12 + 3);
    for (int i = 0; sizes[i].text; i++) {
        size_t b = 12345;
        strata_status_t st = strata_parse_size(sizes[i].text, &b);
        ok(st == sizes[i].st && (STRATA_OK != st ? b == 12345 : b == sizes[i].bytes),
           "parse_size('%s') -> %s", sizes[i].text, strata_strerror(sizes[i].st));
    }
    ok(STRATA_ERR_INVALID == strata_parse_size(NULL, NULL), "parse_size(NULL) is invalid");

    strata_config_t cfg;
    strata_config_defaults(&cfg);
    is_int((long long)cfg.device_mem, 4ll << 30, "default device_mem is 4G");
    ok(0 == cfg.schedule && 1 == cfg.ckpt_direct && 0 == cfg.ckpt_mpio,
       "default schedule lhs, ckpt_direct on, ckpt_mpio independent");
    ok(cfg.comm_check == 1 && cfg.checksums == 1, "default booleans on");

    char err[512] = "";
    ok(STRATA_OK == strata_config_set(&cfg, "device-mem", "512M", err, sizeof err) &&
       cfg.device_mem == 512ull << 20, "set device-mem=512M (dash spelling)");
    ok(STRATA_OK == strata_config_set(&cfg, "LINK_D2H_BW", "2G", err, sizeof err) &&
       cfg.link_d2h_bw == (double)(2ull << 30), "bandwidth with a unit");
    ok(STRATA_OK == strata_config_set(&cfg, "link_latency", "0.00001", err, sizeof err) &&
       cfg.link_latency == 0.00001, "latency in seconds");
    ok(STRATA_ERR_CONFIG == strata_config_set(&cfg, "devise_mem", "1G", err, sizeof err) &&
       strstr(err, "unknown option 'devise_mem'"), "unknown option named in the message");
    ok(STRATA_ERR_CONFIG == strata_config_set(&cfg, "device_mem", "lots", err, sizeof err) &&
       strstr(err, "device_mem") && strstr(err, "512M") && cfg.device_mem == 512ull << 20,
       "bad size rejected, message shows the form, value unchanged: %s", err);
    ok(STRATA_ERR_CONFIG == strata_config_set(&cfg, "checksums", "maybe", err, sizeof err),
       "bad boolean rejected");
    ok(STRATA_ERR_CONFIG == strata_config_set(&cfg, "log_level", "loud", err, sizeof err),
       "bad enum rejected");
    ok(STRATA_ERR_INVALID == strata_config_set(NULL, "x", "y", err, sizeof err), "NULL config");

    setenv("STRATA_HOST_MEM", "3G", 1);
    setenv("STRATA_SCHEDULE", "naive", 1);
    ok(STRATA_OK == strata_config_init(&cfg, err, sizeof err) && cfg.host_mem == 3ull << 30 &&
       1 == cfg.schedule, "STRATA_* environment overrides");
    setenv("STRATA_DEVICE_MEM", "12X", 1);
    ok(STRATA_ERR_CONFIG == strata_config_init(&cfg, err, sizeof err) &&
       strstr(err, "STRATA_DEVICE_MEM") && cfg.host_mem == 3ull << 30,
       "bad environment value names the variable; other overrides kept");
    unsetenv("STRATA_DEVICE_MEM");
    unsetenv("STRATA_HOST_MEM");
    test_enums(&cfg);
    setenv("STRATA_HOST_MEM", "3G", 1);
    strata_config_init(&cfg, err, sizeof err);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    strata_config_print(&cfg, f, 1);
    fclose(f);
    ok(buf && strstr(buf, "host_mem         = 3 GiB") && strstr(buf, "STRATA_HOST_MEM"),
       "printed dump shows values and variables");
    free(buf);

    char sz[32];
    is_string(strata_format_size(512ull << 20, sz, sizeof sz), "512 MiB", "format 512 MiB");
    is_string(strata_format_size(1536, sz, sizeof sz), "1.5 KiB", "format 1.5 KiB");
    return done_testing();
}
