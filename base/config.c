/*
 * config.c - the one option table. Each row gives the name, the default as
 * text, a line of documentation, the field's offset and its parser, so the
 * same table yields defaults, STRATA_* environment overrides, the CLI
 * flags that map onto it and the printed dump. The struct itself
 * (base.h) is private: callers hold a strata_config_t handle and reach the
 * options by name (strata.h), so an option added here changes no ABI.
 */
#include "config.h"
#include "base.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { OPT_INT, OPT_SIZE, OPT_DOUBLE, OPT_BOOL, OPT_STRING, OPT_ENUM } opt_kind_t;

typedef struct {
    const char  *name;
    const char  *dflt;
    const char  *doc;
    size_t       offset;
    opt_kind_t   kind;
    size_t       len;            /* OPT_STRING: buffer size */
    const char *const *names;    /* OPT_ENUM: NULL-terminated value names */
} opt_row_t;

static const char *const log_level_names[] = { "error", "warn", "info", "debug", "trace", NULL };
static const char *const backend_names[]   = { "auto", "host", "cuda", NULL };
static const char *const schedule_names[]  = { "lhs", "naive", NULL };
static const char *const optim_overlap_names[] = { "auto", "on", "off", NULL };
static const char *const state_fetch_names[] = { "plan", "next", NULL };
/* the order of comm_pick_t (comm/select.h) */
static const char *const comm_backend_names[] = { "auto", "nccl", "staged", "mpi", NULL };
static const char *const reduce16_names[] = { "wide", "native", NULL };
static const char *const ckpt_mpio_names[] = { "independent", "collective", "individual", NULL };

#define OFF(f) offsetof(strata_config_t, f)
#define STR(f) OPT_STRING, sizeof(((strata_config_t *)0)->f), NULL

static const opt_row_t opt_table[] = {
    { "log_level",  "warn", "log verbosity: error, warn, info, debug, trace",
      OFF(log_level), OPT_ENUM, 0, log_level_names },
    { "backend",    "auto", "memory/engine backend: auto (cuda if a GPU answers, else host), host, cuda",
      OFF(backend), OPT_ENUM, 0, backend_names },
    { "shard_size", "0",    "FSDP shard group size S (must divide the world size); 0 = world size",
      OFF(shard_size), OPT_INT, 0, NULL },
    { "device_mem", "4G",   "device tier (HBM) budget per rank",
      OFF(device_mem), OPT_SIZE, 0, NULL },
    { "host_mem",   "auto", "pinned-host tier budget per rank; auto: pinned as the run's "
                            "blocks first need it, up to half of the node's memory (the least of "
                            "MemTotal, the cgroup limit, RLIMIT_MEMLOCK on a GPU) shared by the "
                            "node's ranks",
      OFF(host_mem), OPT_SIZE, 0, NULL },
    { "storage_mem", "64G", "storage (HDF5 spill) tier budget per rank",
      OFF(storage_mem), OPT_SIZE, 0, NULL },
    { "spill_dir",  "/tmp", "root directory under which each run makes its private spill directory",
      OFF(spill_dir), STR(spill_dir) },
    { "chunk_size", "4M",   "copy engines split transfers into chunks of this size",
      OFF(chunk_size), OPT_SIZE, 0, NULL },
    { "link_d2h_bw", "0",   "link model: device->host bandwidth in bytes/s (e.g. 2G); 0 = unpaced",
      OFF(link_d2h_bw), OPT_DOUBLE, 0, NULL },
    { "link_h2d_bw", "0",   "link model: host->device bandwidth in bytes/s; 0 = unpaced",
      OFF(link_h2d_bw), OPT_DOUBLE, 0, NULL },
    { "link_storage_bw", "0", "link model: host<->storage bandwidth in bytes/s; 0 = unpaced",
      OFF(link_storage_bw), OPT_DOUBLE, 0, NULL },
    { "link_latency", "0",  "link model: seconds added to every paced copy",
      OFF(link_latency), OPT_DOUBLE, 0, NULL },
    { "spin_time",  "0", "seconds a copy engine polls for work, and a thread waiting on an event "
                            "polls it, before sleeping (a wake-up costs tens of microseconds); 0 = sleep at once",
      OFF(spin_time), OPT_DOUBLE, 0, NULL },
    { "wait_copies", "on",  "strata_event_wait on a copy that its engine has not started runs it on the "
                            "waiting thread (FIFO kept; saves two thread hand-offs): device<->host copies on "
                            "the host backend, storage ops that need no HDF5 call on any backend",
      OFF(wait_copies), OPT_BOOL, 0, NULL },
    { "checksums",  "on",   "storage tier: checksum spilled blocks and verify them on read-back",
      OFF(checksums), OPT_BOOL, 0, NULL },
    { "verify_transfers", "off", "checksum every saved activation as it leaves the device and "
                            "again when it is back, on every tier; a mismatch fails the step naming "
                            "the save, unit, step and rank (costs a hash of the bytes each way)",
      OFF(verify_transfers), OPT_BOOL, 0, NULL },
    { "mem_plan",   "on",   "lay out the device buffers of a step at offsets fixed once per step "
                            "program (recorded by its first step, placed by the next ones), so a "
                            "step cannot fail on a fragmented device tier; off: each buffer goes "
                            "where the allocator finds room",
      OFF(mem_plan), OPT_BOOL, 0, NULL },
    { "prefetch",   "1",    "all-gather lookahead in units (0 = gather each unit when it runs)",
      OFF(prefetch), OPT_INT, 0, NULL },
    { "act_policy", "*=keep", "activation policy per saved name, e.g. qkv=host,mlp_up=storage,*=keep; or auto",
      OFF(act_policy), STR(act_policy) },
    { "state_place", "*=device", "where each class of training state lives: master (the fp32 "
                            "parameter shard), grad (the reduced gradient shard), optim (the "
                            "optimizer's moments) = device, host or storage; CLASS=TIER:F puts the "
                            "first fraction F of the units there and the rest on the device "
                            "(CLASS=TIER:F:TIER2 on TIER2), e.g. optim=storage,master=host:0.5; or auto: "
                            "on the device until a step's plan lacks room, then moments, gradients "
                            "and masters leave it (from the first unit; to the host while it has "
                            "room, else storage) for just that room",
      OFF(state_place), STR(state_place) },
    { "state_fetch", "plan", "when training state on storage is read up for a use: plan (as late as "
                            "the step's recorded costs and the storage bandwidth let the read end "
                            "before its use, within half the host tier's free room, at most 1G "
                            "waiting) or next (one compute position before its use, as before)",
      OFF(state_fetch), OPT_ENUM, 0, state_fetch_names },
    { "optim_overlap", "auto", "host backend, no clipping: each unit's optimizer update runs on a "
                            "thread beside the backward as soon as its gradient has arrived: on, "
                            "off (inline, between the backward's units), or auto (where the node has "
                            "a core the ranks' compute threads leave free, or training state lives "
                            "on storage)",
      OFF(optim_overlap), OPT_ENUM, 0, optim_overlap_names },
    { "schedule",   "lhs",  "transfer schedule: lhs (latency-hiding) or naive",
      OFF(schedule), OPT_ENUM, 0, schedule_names },
    { "trace",      "",     "write a Chrome trace-event file per rank, <trace>.<rank>.json, when a model is "
                            "destroyed (read with strata trace); empty = none",
      OFF(trace), STR(trace) },
    { "threads",    "0",    "compute threads per rank; 0 = the cores this rank may run on",
      OFF(threads), OPT_INT, 0, NULL },
    { "comm_backend", "auto", "collectives: auto (backend cuda: nccl where each rank on a node has "
                            "a CUDA device of its own and NCCL is built and starts, else staged; "
                            "backend host: mpi), nccl, staged (device buffers copied through pinned "
                            "host memory to MPI and back; on the host backend plain copies) or mpi "
                            "(host memory only)",
      OFF(comm_backend), OPT_ENUM, 0, comm_backend_names },
    { "comm_check", "on",   "before each collective, check that all ranks pass the same operation, dtype, "
                            "count and root (one small blocking allreduce, where a rank also waits for the "
                            "slowest: 0.1-0.3 ms a call on a loaded 2-core node); off saves that. A "
                            "model's own gathers and reduce-scatters skip it once its step program and "
                            "plan passed their cross-rank check",
      OFF(comm_check), OPT_BOOL, 0, NULL },
    { "reduce16",   "wide", "16-bit (bf16, f16) reductions: wide (widened to f32, reduced in f32, "
                            "rounded once into the result: every backend) or native (the nccl "
                            "backend reduces in the 16-bit type itself: half the bytes on the wire, "
                            "no f32 staging, each partial sum rounded to 16 bits; the mpi and "
                            "staged backends stay wide and say so at init)",
      OFF(reduce16), OPT_ENUM, 0, reduce16_names },
    { "ckpt_keep",  "3",    "checkpoints kept in the checkpoint directory (the newest K; older ones are "
                            "deleted once a new one is complete); 0 keeps all",
      OFF(ckpt_keep), OPT_INT, 0, NULL },
    { "ckpt_dir",   "checkpoints", "directory for step-<8 digits>.h5 checkpoints and the latest pointer",
      OFF(ckpt_dir), STR(ckpt_dir) },
    { "ckpt_direct", "on",  "checkpoints move tensor bytes with pwrite/pread at the datasets' file offsets; "
                            "off uses H5Dwrite/H5Dread (for file systems where MPI-IO does better)",
      OFF(ckpt_direct), OPT_BOOL, 0, NULL },
    { "ckpt_mpio",  "independent", "checkpoint data transfers through HDF5: independent, collective "
                            "(MPI-IO two-phase aggregation) or individual (a collective call doing per-rank I/O)",
      OFF(ckpt_mpio), OPT_ENUM, 0, ckpt_mpio_names },
    { "collective_timeout", "600", "seconds any collective, transfer wait or blocking MPI call may "
                            "take before the watchdog writes the flight records and aborts the job; 0 = none",
      OFF(collective_timeout), OPT_DOUBLE, 0, NULL },
    { "ckpt_timeout", "1800", "seconds a whole checkpoint save or load (with the collectives inside it) "
                            "may take before the watchdog aborts the job; 0 = none",
      OFF(ckpt_timeout), OPT_DOUBLE, 0, NULL },
    { "ckpt_async", "off", "strata_model_save returns at once; a thread of its own (its own "
                            "communicator) copies the shards into host memory taken from the host tier "
                            "(the next step's optimizer waits for a unit's copy) and writes the file. One "
                            "save in flight: the next waits for it. Its failure is returned by the next "
                            "step_begin, save or save_wait on every rank",
      OFF(ckpt_async), OPT_BOOL, 0, NULL },
    { "flight_entries", "2048", "operations the flight recorder keeps per rank; 0 turns the recorder "
                            "and its watchdog off",
      OFF(flight_entries), OPT_INT, 0, NULL },
    { "flight_dir", "",     "directory for the flight records flight.<rank>.json (on a timeout, a fatal "
                            "error, SIGTERM, SIGUSR2); empty = ckpt_dir if it exists, else the working directory",
      OFF(flight_dir), STR(flight_dir) },
    { "straggler_every", "50", "every N steps the ranks compare their busy time (step minus waits "
                            "for collectives, plus time between steps); a rank persistently slower "
                            "than the others is named once, on rank 0 and in the flight records; 0 = off",
      OFF(straggler_every), OPT_INT, 0, NULL },
    { "straggler_ratio", "1.5", "a rank whose busy time over straggler_every steps and in its median "
                            "step is above this times the other ranks' median is a straggler (at least 1)",
      OFF(straggler_ratio), OPT_DOUBLE, 0, NULL },
    { NULL, NULL, NULL, 0, 0, 0, NULL }
};

strata_status_t strata_parse_size(const char *text, size_t *bytes_p)
{
    if (!text || !bytes_p) return STRATA_ERR_INVALID;
    while (isspace((unsigned char)*text)) text++;
    if (!strcasecmp(text, "inf") || !strcasecmp(text, "unlimited")) {
        *bytes_p = SIZE_MAX;
        return STRATA_OK;
    }
    if ('-' == *text || '\0' == *text) return STRATA_ERR_CONFIG;
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v) || v < 0) return STRATA_ERR_CONFIG;
    while (isspace((unsigned char)*end)) end++;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'B': mult = 1; end++; break;
    case 'K': mult = 1024.0; end++; break;
    case 'M': mult = 1024.0 * 1024; end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return STRATA_ERR_CONFIG;
    }
    /* accept "K", "KB", "KiB", "Mi", ... */
    if ('i' == *end || 'I' == *end) end++;
    if ('b' == *end || 'B' == *end) end++;
    while (isspace((unsigned char)*end)) end++;
    if ('\0' != *end) return STRATA_ERR_CONFIG;
    double bytes = v * mult;
    if (bytes >= 18446744073709551616.0) return STRATA_ERR_OVERFLOW;
    *bytes_p = (size_t)bytes;
    return STRATA_OK;
}

const char *strata_format_size(size_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    if (SIZE_MAX == bytes) { snprintf(buf, len, "inf"); return buf; }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) { v /= 1024.0; u++; }
    if (0 == u) snprintf(buf, len, "%zu B", bytes);
    else if (v == floor(v)) snprintf(buf, len, "%.0f %s", v, unit[u]);
    else snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "yes", "on", "true", NULL };
    static const char *const no[]  = { "0", "no", "off", "false", NULL };
    for (int i = 0; yes[i]; i++) if (!strcasecmp(s, yes[i])) { *out = 1; return 0; }
    for (int i = 0; no[i]; i++)  if (!strcasecmp(s, no[i]))  { *out = 0; return 0; }
    return -1;
}

/* Names compare case-insensitively with '-' and '_' alike, so --device-mem,
 * device_mem and DEVICE_MEM all find the same row. */
static int name_eq(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = ('-' == *a) ? '_' : tolower((unsigned char)*a);
        int cb = ('-' == *b) ? '_' : tolower((unsigned char)*b);
        if (ca != cb) return 0;
        if (!ca) return 1;
    }
}

static const opt_row_t *find_row(const char *name)
{
    for (const opt_row_t *r = opt_table; r->name; r++)
        if (name_eq(r->name, name)) return r;
    return NULL;
}

/* "a, b or c": the values an enum row accepts. */
static void enum_list(const opt_row_t *r, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; r->names[i] && n < len; i++) {
        const char *sep = !i ? "" : r->names[i + 1] ? ", " : " or ";
        n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, r->names[i]);
    }
}

/* The smallest value of an OPT_SIZE option: the copy engines cannot move
 * transfers in chunks of 0 bytes. */
static size_t size_min(const opt_row_t *r)
{
    return OFF(chunk_size) == r->offset ? 1 : 0;
}

/* Whether an OPT_SIZE option takes "auto" (STRATA_SIZE_AUTO): host_mem,
 * whose right size depends on the run (tiers/limits.c resolves it). */
static int size_auto(const opt_row_t *r)
{
    return OFF(host_mem) == r->offset;
}

/* The smallest value of an OPT_DOUBLE option: a straggler is slower than
 * the median, so a ratio below 1 would name ranks that are not. */
static double double_min(const opt_row_t *r)
{
    return OFF(straggler_ratio) == r->offset ? 1.0 : 0.0;
}

static strata_status_t set_row(strata_config_t *cfg, const opt_row_t *r,
                               const char *value, char *errbuf, size_t errlen)
{
    char *field = (char *)cfg + r->offset;
    char *end = NULL;
    switch (r->kind) {
    case OPT_INT: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < 0 || v > 1L << 30) goto bad;
        *(int *)field = (int)v;
        return STRATA_OK;
    }
    case OPT_SIZE: {
        size_t v;
        while (isspace((unsigned char)*value)) value++;
        if (size_auto(r) && !strcasecmp(value, "auto")) {
            *(size_t *)field = STRATA_SIZE_AUTO;
            return STRATA_OK;
        }
        if (STRATA_OK != strata_parse_size(value, &v)) goto bad;
        if (v < size_min(r)) {
            if (errbuf)
                snprintf(errbuf, errlen, "option %s: '%s' is less than its minimum, %zu byte%s (%s)",
                         r->name, value, size_min(r), 1 == size_min(r) ? "" : "s", r->doc);
            return STRATA_ERR_CONFIG;
        }
        *(size_t *)field = v;
        return STRATA_OK;
    }
    case OPT_DOUBLE: {
        /* bandwidths read naturally with size units: "2G" = 2 GiB/s */
        size_t v;
        errno = 0;
        double d = strtod(value, &end);
        if (!errno && end != value && !*end && isfinite(d) && d >= 0) {
            if (d < double_min(r)) {
                if (errbuf)
                    snprintf(errbuf, errlen, "option %s: '%s' is less than its minimum, %g (%s)",
                             r->name, value, double_min(r), r->doc);
                return STRATA_ERR_CONFIG;
            }
            *(double *)field = d;
            return STRATA_OK;
        }
        if (STRATA_OK != strata_parse_size(value, &v) || SIZE_MAX == v) goto bad;
        *(double *)field = (double)v;
        return STRATA_OK;
    }
    case OPT_BOOL:
        if (parse_bool(value, (int *)field)) goto bad;
        return STRATA_OK;
    case OPT_STRING:
        if (strlen(value) >= r->len) {
            if (errbuf) snprintf(errbuf, errlen, "option %s: value longer than %zu characters",
                                 r->name, r->len - 1);
            return STRATA_ERR_CONFIG;
        }
        memcpy(field, value, strlen(value) + 1);
        return STRATA_OK;
    case OPT_ENUM:
        for (int i = 0; r->names[i]; i++) {
            if (!strcasecmp(value, r->names[i])) { *(int *)field = i; return STRATA_OK; }
        }
        if (errbuf) {
            char list[256];
            enum_list(r, list, sizeof list);
            snprintf(errbuf, errlen, "option %s: '%s' is not one of %s", r->name, value, list);
        }
        return STRATA_ERR_CONFIG;
    }
bad:
    if (errbuf) {
        const char *expect = "";
        switch (r->kind) {
        case OPT_INT:    expect = "a non-negative integer"; break;
        case OPT_SIZE:   expect = size_auto(r) ? "auto or a size such as 4096, 512M, 4G or inf"
                                              : "a size such as 4096, 512M, 4G or inf"; break;
        case OPT_DOUBLE: expect = "a non-negative number such as 0.5 or 2G"; break;
        case OPT_BOOL:   expect = "on/off, yes/no, true/false or 1/0"; break;
        case OPT_ENUM:   /* reported above */
        case OPT_STRING: break;
        }
        snprintf(errbuf, errlen, "option %s: cannot parse '%s'; expected %s (%s)",
                 r->name, value, expect, r->doc);
    }
    return STRATA_ERR_CONFIG;
}

/* STRATA_ + the option name in capitals: device_mem -> STRATA_DEVICE_MEM */
static void env_name(const char *name, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "STRATA_");
    for (; *name && n + 1 < len; name++) buf[n++] = (char)toupper((unsigned char)*name);
    buf[n] = '\0';
}

void config_defaults(strata_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (const opt_row_t *r = opt_table; r->name; r++) {
        strata_status_t st = set_row(cfg, r, r->dflt, NULL, 0);
        (void)st;  /* defaults are constants; t/unit_config checks they parse */
    }
}

strata_status_t strata_config_set(strata_config_t *cfg, const char *name,
                                  const char *value, char *errbuf, size_t errlen)
{
    if (!cfg || !name || !value) {
        if (errbuf) snprintf(errbuf, errlen, "strata_config_set: NULL argument");
        return STRATA_ERR_INVALID;
    }
    const opt_row_t *r = find_row(name);
    if (!r) {
        if (errbuf) snprintf(errbuf, errlen,
                             "unknown option '%s' (run 'strata config' for the list)", name);
        return STRATA_ERR_CONFIG;
    }
    return set_row(cfg, r, value, errbuf, errlen);
}

strata_status_t strata_config_read_env(strata_config_t *cfg, char *errbuf, size_t errlen)
{
    if (!cfg) {
        if (errbuf) snprintf(errbuf, errlen, "strata_config_read_env: NULL configuration");
        return STRATA_ERR_INVALID;
    }
    strata_status_t first = STRATA_OK;
    for (const opt_row_t *r = opt_table; r->name; r++) {
        char env[96];
        env_name(r->name, env, sizeof env);
        const char *v = getenv(env);
        if (!v) continue;
        char msg[512];
        strata_status_t st = set_row(cfg, r, v, msg, sizeof msg);
        if (STRATA_OK != st && STRATA_OK == first) {
            first = st;
            if (errbuf) snprintf(errbuf, errlen, "environment %s: %s", env, msg);
        }
    }
    return first;
}

void config_option_from_env(strata_config_t *cfg, const char *name)
{
    const opt_row_t *r = find_row(name);
    if (!r) return;
    char env[96];
    env_name(r->name, env, sizeof env);
    const char *v = getenv(env);
    if (!v || STRATA_OK != set_row(cfg, r, v, NULL, 0)) {
        strata_status_t st = set_row(cfg, r, r->dflt, NULL, 0);
        (void)st;  /* defaults are constants */
    }
}

static void format_value(const strata_config_t *cfg, const opt_row_t *r, char *buf, size_t len)
{
    const char *field = (const char *)cfg + r->offset;
    switch (r->kind) {
    case OPT_INT:    snprintf(buf, len, "%d", *(const int *)field); break;
    case OPT_SIZE:
        if (size_auto(r) && STRATA_SIZE_AUTO == *(const size_t *)field) snprintf(buf, len, "auto");
        else strata_format_size(*(const size_t *)field, buf, len);
        break;
    case OPT_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
    case OPT_BOOL:   snprintf(buf, len, "%s", *(const int *)field ? "on" : "off"); break;
    case OPT_STRING: snprintf(buf, len, "%s", field); break;
    case OPT_ENUM:   snprintf(buf, len, "%s", r->names[*(const int *)field]); break;
    }
}

/* ---- the handle: create, copy, destroy; typed access by name ---------- */

strata_status_t strata_config_create(strata_config_t **cfg_p)
{
    if (!cfg_p) return STRATA_ERR_INVALID;
    strata_config_t *cfg = malloc(sizeof *cfg);
    if (!cfg) return STRATA_ERR_NOMEM;
    config_defaults(cfg);
    *cfg_p = cfg;
    return STRATA_OK;
}

strata_status_t strata_config_dup(const strata_config_t *cfg, strata_config_t **copy_p)
{
    if (!cfg || !copy_p) return STRATA_ERR_INVALID;
    strata_config_t *c = malloc(sizeof *c);
    if (!c) return STRATA_ERR_NOMEM;
    *c = *cfg;
    *copy_p = c;
    return STRATA_OK;
}

void strata_config_destroy(strata_config_t *cfg)
{
    free(cfg);
}

/* The row of name, or a status (and message) saying why there is none or
 * why it does not hold a value of the kind asked for. */
static strata_status_t typed_row(const strata_config_t *cfg, const char *name, unsigned kinds,
                                 const opt_row_t **row_p, char *errbuf, size_t errlen)
{
    if (!cfg || !name) {
        if (errbuf) snprintf(errbuf, errlen, "strata_config: NULL argument");
        return STRATA_ERR_INVALID;
    }
    const opt_row_t *r = find_row(name);
    if (!r) {
        if (errbuf) snprintf(errbuf, errlen,
                             "unknown option '%s' (run 'strata config' for the list)", name);
        return STRATA_ERR_NOT_FOUND;
    }
    if (!(kinds & (1u << r->kind))) {
        if (errbuf) snprintf(errbuf, errlen, "option %s does not hold a value of this type", r->name);
        return STRATA_ERR_MISMATCH;
    }
    *row_p = r;
    return STRATA_OK;
}

#define K(k) (1u << (k))

strata_status_t strata_config_set_int(strata_config_t *cfg, const char *name, long long value,
                                      char *errbuf, size_t errlen)
{
    const opt_row_t *r;
    strata_status_t st = typed_row(cfg, name, K(OPT_INT) | K(OPT_BOOL) | K(OPT_ENUM), &r,
                                   errbuf, errlen);
    if (STRATA_OK != st) return st;
    char text[32];
    int n = 0;
    if (OPT_ENUM == r->kind) while (r->names[n]) n++;
    if (OPT_ENUM == r->kind && value >= 0 && value < n)
        snprintf(text, sizeof text, "%s", r->names[value]);
    else
        snprintf(text, sizeof text, "%lld", value);
    return set_row(cfg, r, text, errbuf, errlen);     /* one parser checks every value */
}

strata_status_t strata_config_set_size(strata_config_t *cfg, const char *name, size_t value,
                                       char *errbuf, size_t errlen)
{
    const opt_row_t *r;
    strata_status_t st = typed_row(cfg, name, K(OPT_SIZE), &r, errbuf, errlen);
    if (STRATA_OK != st) return st;
    if (STRATA_SIZE_AUTO == value && !size_auto(r)) {
        if (errbuf)
            snprintf(errbuf, errlen, "option %s: STRATA_SIZE_AUTO is for host_mem only (%s)",
                     r->name, r->doc);
        return STRATA_ERR_CONFIG;
    }
    if (value < size_min(r)) {
        if (errbuf)
            snprintf(errbuf, errlen, "option %s: %zu is less than its minimum, %zu byte%s (%s)",
                     r->name, value, size_min(r), 1 == size_min(r) ? "" : "s", r->doc);
        return STRATA_ERR_CONFIG;
    }
    *(size_t *)((char *)cfg + r->offset) = value;
    return STRATA_OK;
}

strata_status_t strata_config_set_double(strata_config_t *cfg, const char *name, double value,
                                         char *errbuf, size_t errlen)
{
    const opt_row_t *r;
    strata_status_t st = typed_row(cfg, name, K(OPT_DOUBLE), &r, errbuf, errlen);
    if (STRATA_OK != st) return st;
    char text[40];
    snprintf(text, sizeof text, "%.17g", value);
    return set_row(cfg, r, text, errbuf, errlen);
}

/* Copy the field of an option of one of `kinds` into out (size bytes). */
static strata_status_t get_field(const strata_config_t *cfg, const char *name, unsigned kinds,
                                 void *out, size_t size)
{
    const opt_row_t *r;
    strata_status_t st = typed_row(cfg, name, kinds, &r, NULL, 0);
    if (STRATA_OK != st) return st;
    if (!out) return STRATA_ERR_INVALID;
    memcpy(out, (const char *)cfg + r->offset, size);
    return STRATA_OK;
}

strata_status_t strata_config_get_int(const strata_config_t *cfg, const char *name, long long *value_p)
{
    int v;
    strata_status_t st = get_field(cfg, name, K(OPT_INT) | K(OPT_BOOL) | K(OPT_ENUM),
                                   value_p ? &v : NULL, sizeof v);
    if (STRATA_OK == st) *value_p = v;
    return st;
}

strata_status_t strata_config_get_size(const strata_config_t *cfg, const char *name, size_t *value_p)
{
    return get_field(cfg, name, K(OPT_SIZE), value_p, sizeof *value_p);
}

strata_status_t strata_config_get_double(const strata_config_t *cfg, const char *name, double *value_p)
{
    return get_field(cfg, name, K(OPT_DOUBLE), value_p, sizeof *value_p);
}

strata_status_t strata_config_get(const strata_config_t *cfg, const char *name, char *buf, size_t len)
{
    const opt_row_t *r;
    strata_status_t st = typed_row(cfg, name, ~0u, &r, NULL, 0);
    if (STRATA_OK != st) return st;
    if (!buf || !len) return STRATA_ERR_INVALID;
    const char *field = (const char *)cfg + r->offset;
    char tmp[600];
    switch (r->kind) {      /* exact forms, so that strata_config_set reads them back */
    case OPT_SIZE:
        if (SIZE_MAX == *(const size_t *)field) snprintf(tmp, sizeof tmp, "inf");
        else if (size_auto(r) && STRATA_SIZE_AUTO == *(const size_t *)field)
            snprintf(tmp, sizeof tmp, "auto");
        else snprintf(tmp, sizeof tmp, "%zu", *(const size_t *)field);
        break;
    case OPT_DOUBLE: snprintf(tmp, sizeof tmp, "%.17g", *(const double *)field); break;
    default:         format_value(cfg, r, tmp, sizeof tmp); break;
    }
    if (strlen(tmp) >= len) return STRATA_ERR_OVERFLOW;
    memcpy(buf, tmp, strlen(tmp) + 1);
    return STRATA_OK;
}

void strata_config_print(const strata_config_t *cfg, FILE *out, int verbose)
{
    if (!cfg || !out) return;
    for (const opt_row_t *r = opt_table; r->name; r++) {
        char val[600];
        format_value(cfg, r, val, sizeof val);
        if (verbose) {
            char env[96];
            env_name(r->name, env, sizeof env);
            fprintf(out, "# %s [default %s, env %s]\n", r->doc, r->dflt, env);
        }
        fprintf(out, "%-16s = %s\n", r->name, val);
    }
}
