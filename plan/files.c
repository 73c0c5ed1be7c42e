/*
 * files.c - reading the planner's model and hardware files (JSON,
 * with jansson) and finding shipped ones by name. Every error names the
 * file, the field (dotted path) and what was expected.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/file.h"
#include "plan/plan.h"

typedef struct {
    const char *label;
    char *err;
    size_t errlen;
    int failed;
} rd_t;

static int rd_fail(rd_t *r, const char *field, const char *expected, const json_t *got)
{
    if (r->failed) return 0;
    char *txt = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s: field '%s': expected %s, %s%s", r->label, field, expected,
                 got ? "got " : "but it is missing", txt ? txt : "");
    free(txt);
    r->failed = 1;
    return 0;
}

static const json_t *field_of(const json_t *obj, const char *key)
{
    return json_is_object(obj) ? json_object_get(obj, key) : NULL;
}

/* An integer >= min; a missing optional field takes dflt. */
static long rd_long(rd_t *r, const json_t *obj, const char *path, const char *key, long min,
                    int required, long dflt)
{
    char field[96];
    snprintf(field, sizeof field, "%s%s%s", path, *path ? "." : "", key);
    const json_t *v = field_of(obj, key);
    if (!v || json_is_null(v)) {
        if (required) rd_fail(r, field, min > 0 ? "a positive integer" : "an integer >= 0", NULL);
        return dflt;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min) {
        char what[64];
        snprintf(what, sizeof what, "an integer >= %ld", min);
        rd_fail(r, field, what, v);
        return dflt;
    }
    return (long)json_integer_value(v);
}

static double rd_num(rd_t *r, const json_t *obj, const char *path, const char *key, double min,
                     double max, int required, double dflt)
{
    char field[96];
    snprintf(field, sizeof field, "%s%s%s", path, *path ? "." : "", key);
    const json_t *v = field_of(obj, key);
    if (!v || json_is_null(v)) {
        if (required) rd_fail(r, field, "a number", NULL);
        return dflt;
    }
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x >= min && x <= max)) {
        char what[96];
        snprintf(what, sizeof what, "a number in [%g, %g]", min, max);
        rd_fail(r, field, what, v);
        return dflt;
    }
    return x;
}

/* true or false; a missing field is false. */
static int rd_bool(rd_t *r, const json_t *obj, const char *path, const char *key)
{
    char field[96];
    snprintf(field, sizeof field, "%s%s%s", path, *path ? "." : "", key);
    const json_t *v = field_of(obj, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return rd_fail(r, field, "true or false", v);
    return json_is_true(v);
}

/* "fp32"/"bf16"/... -> bytes; null allowed (0) when nullable. */
static int rd_dtype(rd_t *r, const json_t *obj, const char *key, int nullable, int dflt)
{
    static const struct { const char *name; int bytes; } t[] = {
        { "fp32", 4 }, { "f32", 4 }, { "float32", 4 }, { "bf16", 2 }, { "bfloat16", 2 },
        { "fp16", 2 }, { "f16", 2 }, { "fp8", 1 }, { NULL, 0 }
    };
    char field[96];
    snprintf(field, sizeof field, "dtypes.%s", key);
    const json_t *v = field_of(obj, key);
    if (!v) return dflt;
    if (json_is_null(v) && nullable) return 0;
    for (int i = 0; json_is_string(v) && t[i].name; i++)
        if (!strcmp(t[i].name, json_string_value(v))) return t[i].bytes;
    rd_fail(r, field, nullable ? "fp32, bf16, fp16, fp8 or null" : "fp32, bf16, fp16 or fp8", v);
    return dflt;
}

static void rd_name(rd_t *r, const json_t *root, char *out, size_t len)
{
    const json_t *v = field_of(root, "name");
    if (!json_is_string(v) || !*json_string_value(v)) {
        rd_fail(r, "name", "a non-empty string", v);
        return;
    }
    snprintf(out, len, "%s", json_string_value(v));
}

static json_t *load_text(const char *text, const char *label, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root) {
        sched_fail(err, errlen, STRATA_ERR_FORMAT, "%s: not JSON: line %d column %d: %s", label,
                   je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        sched_fail(err, errlen, STRATA_ERR_FORMAT, "%s: expected a JSON object at the top", label);
        return NULL;
    }
    return root;
}

typedef void (*reader_t)(rd_t *r, const json_t *root, void *out);

static strata_status_t parse_with(const char *text, const char *label, reader_t read, void *out,
                                  char *err, size_t errlen)
{
    json_t *root = load_text(text, label, err, errlen);
    if (!root) return STRATA_ERR_FORMAT;
    rd_t r = { label, err, errlen, 0 };
    read(&r, root, out);
    json_decref(root);
    return r.failed ? STRATA_ERR_FORMAT : STRATA_OK;
}

/* ---------------------------------------------------------------- models */

static void read_model(rd_t *r, const json_t *root, void *out)
{
    plan_model_t *m = out;
    rd_name(r, root, m->name, sizeof m->name);
    const json_t *fam = field_of(root, "family");
    const char *f = json_is_string(fam) ? json_string_value(fam) : "";
    if (!strcmp(f, "gpt")) m->family = PLAN_GPT;
    else if (!strcmp(f, "llama")) m->family = PLAN_LLAMA;
    else if (!strcmp(f, "deepseek_v3")) m->family = PLAN_DEEPSEEK_V3;
    else rd_fail(r, "family", "\"gpt\", \"llama\" or \"deepseek_v3\"", fam);
    m->layers = rd_long(r, root, "", "layers", 1, 1, 1);
    m->hidden = rd_long(r, root, "", "hidden", 1, 1, 1);
    m->heads = rd_long(r, root, "", "heads", 1, 1, 1);
    m->kv_heads = rd_long(r, root, "", "kv_heads", 1, 0, m->heads);
    m->head_dim = rd_long(r, root, "", "head_dim", 1, 0, m->hidden / m->heads);
    m->ffn = rd_long(r, root, "", "ffn", 1, 0, 4 * m->hidden);
    m->vocab = rd_long(r, root, "", "vocab", 1, 1, 1);
    m->max_seq = rd_long(r, root, "", "max_seq", 1, PLAN_GPT == m->family, 0);
    const json_t *tied = field_of(root, "tied_embeddings");
    if (tied && !json_is_boolean(tied)) rd_fail(r, "tied_embeddings", "true or false", tied);
    m->tied = json_is_true(tied);
    if (m->heads > 0 && m->kv_heads > 0 && m->heads % m->kv_heads)
        rd_fail(r, "kv_heads", "a divisor of heads", field_of(root, "kv_heads"));
    if (PLAN_GPT == m->family && m->hidden % m->heads)
        rd_fail(r, "heads", "a divisor of hidden", field_of(root, "heads"));

    const json_t *moe = field_of(root, "moe");
    if (moe && !json_is_null(moe)) {
        if (!json_is_object(moe)) rd_fail(r, "moe", "an object or null", moe);
        m->moe = 1;
        m->experts = rd_long(r, moe, "moe", "routed_experts", 1, 1, 1);
        m->experts_per_token = rd_long(r, moe, "moe", "active_per_token", 1, 1, 1);
        m->shared_experts = rd_long(r, moe, "moe", "shared_experts", 0, 0, 0);
        m->expert_ffn = rd_long(r, moe, "moe", "expert_ffn", 1, 1, 1);
        m->dense_layers = rd_long(r, moe, "moe", "dense_layers", 0, 0, 0);
        if (m->experts_per_token > m->experts)
            rd_fail(r, "moe.active_per_token", "at most moe.routed_experts", field_of(moe, "active_per_token"));
        if (m->dense_layers > m->layers)
            rd_fail(r, "moe.dense_layers", "at most layers", field_of(moe, "dense_layers"));
    }
    const json_t *mla = field_of(root, "mla");
    if (PLAN_DEEPSEEK_V3 == m->family) {
        if (!json_is_object(mla)) rd_fail(r, "mla", "an object (deepseek_v3 attention is MLA)", mla);
        m->q_lora_rank = rd_long(r, mla, "mla", "q_lora_rank", 1, 1, 1);
        m->kv_lora_rank = rd_long(r, mla, "mla", "kv_lora_rank", 1, 1, 1);
        m->qk_nope_head_dim = rd_long(r, mla, "mla", "qk_nope_head_dim", 1, 1, 1);
        m->qk_rope_head_dim = rd_long(r, mla, "mla", "qk_rope_head_dim", 1, 1, 1);
        m->v_head_dim = rd_long(r, mla, "mla", "v_head_dim", 1, 1, 1);
    }
    const json_t *mtp = field_of(root, "mtp");
    if (mtp && !json_is_null(mtp)) {
        m->mtp_modules = rd_long(r, mtp, "mtp", "modules", 0, 1, 0);
        const json_t *c = field_of(mtp, "counted");
        if (!json_is_boolean(c)) rd_fail(r, "mtp.counted", "true or false", c);
        m->mtp_counted = json_is_true(c);
    }
    const json_t *dt = field_of(root, "dtypes");
    if (dt && !json_is_object(dt)) rd_fail(r, "dtypes", "an object", dt);
    m->param_b = rd_dtype(r, dt, "params", 0, 4);
    m->compute_b = rd_dtype(r, dt, "compute", 0, m->param_b);
    m->grad_b = rd_dtype(r, dt, "grads", 0, 4);
    m->master_b = rd_dtype(r, dt, "master", 1, 0);
    m->optim_b = rd_dtype(r, dt, "optimizer", 0, 4);
    m->optim_states = (int)rd_long(r, root, "", "optimizer_states", 0, 0, 2);
    /* what frameworks store for the backward (bf16, or fp8 as a recipe
     * that quantizes its saves) and what their reduce puts on the wire
     * (train_gpt's --reduce-dtype; reduce16=native on NCCL) */
    m->act_b = rd_dtype(r, dt, "activations", 0, m->compute_b);
    m->reduce_b = rd_dtype(r, dt, "reduce", 0, m->grad_b);
    if (PLAN_GPT == m->family && 4 != m->act_b)
        rd_fail(r, "dtypes.activations", "fp32 for family gpt (train_gpt saves fp32)", field_of(dt, "activations"));
}

strata_status_t plan_model_parse(const char *text, const char *label, plan_model_t *m_p,
                                 char *err, size_t errlen)
{
    plan_model_t m = { 0 };
    strata_status_t st = parse_with(text, label, read_model, &m, err, errlen);
    if (STRATA_OK != st) return st;
    snprintf(m.path, sizeof m.path, "%s", label);
    *m_p = m;
    return STRATA_OK;
}

/* ------------------------------------------------------------- hardware */

static void read_table(rd_t *r, const json_t *arr, const char *field, plan_bw_table_t *t)
{
    if (!json_is_array(arr) || 0 == json_array_size(arr) || json_array_size(arr) > 32) {
        rd_fail(r, field, "an array of 1..32 {\"ranks\",\"bytes\",\"busbw\"} points", arr);
        return;
    }
    t->n = (int)json_array_size(arr);
    for (int i = 0; i < t->n; i++) {
        char f[96];
        snprintf(f, sizeof f, "%s[%d]", field, i);
        const json_t *pt = json_array_get(arr, (size_t)i);
        t->p[i].ranks = rd_long(r, pt, f, "ranks", 2, 1, 2);
        t->p[i].bytes = rd_num(r, pt, f, "bytes", 1, 1e15, 1, 1);
        t->p[i].busbw = rd_num(r, pt, f, "busbw", 1e3, 1e15, 1, 1e9);
    }
}

static void read_colls(rd_t *r, const json_t *c, plan_hw_t *hw)
{
    static const char *const names[PLAN_COLL_COUNT] = { "all_gather", "reduce_scatter", "all_to_all", "all_reduce" };
    hw->domain = rd_long(r, c, "collectives", "domain_size", 1, 1, 1);
    hw->coll_latency = rd_num(r, c, "collectives", "latency_s", 0, 1, 0, 0);
    /* no upper bound but garbage's: ranks sharing busy cores measure
     * collectives costing the compute hundreds of times their table time */
    hw->coll_compute = rd_num(r, c, "collectives", "compute_cost", 0, 1e6, 0, 0);
    hw->coll_sync = rd_num(r, c, "collectives", "sync_s", 0, 1, 0, 0);
    hw->coll_on_ce = rd_bool(r, c, "collectives", "on_copy_engines");
    hw->nic_bw = rd_num(r, c, "collectives", "nic_bw", 1e3, 1e15, 0, 0);
    for (int k = 0; k < PLAN_COLL_COUNT; k++) {
        char f[96];
        const json_t *o = field_of(c, names[k]);
        snprintf(f, sizeof f, "collectives.%s", names[k]);
        if (!json_is_object(o)) {
            rd_fail(r, f, "an object with \"intra\" and \"inter\" tables", o);
            return;
        }
        snprintf(f, sizeof f, "collectives.%s.intra", names[k]);
        read_table(r, field_of(o, "intra"), f, &hw->coll[k][0]);
        snprintf(f, sizeof f, "collectives.%s.inter", names[k]);
        read_table(r, field_of(o, "inter"), f, &hw->coll[k][1]);
    }
}

static void read_hw_any(rd_t *r, const json_t *root, void *out)
{
    plan_hw_t *hw = out;
    rd_name(r, root, hw->name, sizeof hw->name);
    const json_t *hbm = field_of(root, "hbm");
    if (!json_is_object(hbm)) rd_fail(r, "hbm", "an object", hbm);
    double usable = rd_num(r, hbm, "hbm", "usable_bytes", 1, 1e15, 0, 0);
    double cap = rd_num(r, hbm, "hbm", "capacity_bytes", 1, 1e15, 0 == usable, 0);
    hw->hbm_derived = 0 == usable;
    hw->hbm_bytes = usable > 0 ? usable : cap - 2.0 * 1024 * 1024 * 1024;
    if (!r->failed && hw->hbm_bytes <= 0) rd_fail(r, "hbm.capacity_bytes", "more than 2 GiB", field_of(hbm, "capacity_bytes"));
    hw->hbm_bw = rd_num(r, hbm, "hbm", "bandwidth", 1e6, 1e15, 1, 1);
    hw->hbm_shared = rd_bool(r, hbm, "hbm", "shared_with_copies");
    const json_t *cp = field_of(root, "compute");
    hw->flops = rd_num(r, cp, "compute", "dense_flops", 1e6, 1e20, 1, 1);
    hw->mfu = rd_num(r, cp, "compute", "mfu", 0.01, 1, 1, 0.5);
    const json_t *hl = field_of(root, "host_link");
    hw->d2h_bw = rd_num(r, hl, "host_link", "d2h_bw", 1e3, 1e15, 1, 1);
    hw->h2d_bw = rd_num(r, hl, "host_link", "h2d_bw", 1e3, 1e15, 1, 1);
    hw->both_bw = rd_num(r, hl, "host_link", "both_bw", 1e3, 1e15, 0, hw->d2h_bw + hw->h2d_bw);
    hw->link_latency = rd_num(r, hl, "host_link", "latency_s", 0, 1, 0, 0);
    hw->chunk = (size_t)rd_num(r, hl, "host_link", "chunk_bytes", 0, 1e12, 0, 0);
    hw->link_compute = rd_num(r, hl, "host_link", "compute_cost", 0, 1e6, 0, 0);
    hw->ce_bw = rd_num(r, hl, "host_link", "copy_engine_bw", 1e3, 1e15, 0, 0);
    hw->host_bytes = rd_num(r, root, "", "host_bytes", 0, 1e16, 1, 0);
    hw->storage_bw = rd_num(r, root, "", "storage_bw", 0, 1e15, 0, 0);
    hw->host_bw = rd_num(r, root, "", "host_bw", 0, 1e15, 0, 0);
    /* a CPU node's device tier is its host memory: no host link between
     * them (strata calibrate writes "cpu"; its files from before the
     * field carry compute.sgemm) */
    const json_t *dev = field_of(root, "device");
    const char *kind = json_is_string(dev) ? json_string_value(dev) : "";
    if (dev && strcmp(kind, "gpu") && strcmp(kind, "cpu")) rd_fail(r, "device", "\"gpu\" or \"cpu\"", dev);
    hw->cpu = dev ? !strcmp(kind, "cpu") : NULL != field_of(cp, "sgemm");
    const json_t *c = field_of(root, "collectives");
    if (!json_is_object(c)) rd_fail(r, "collectives", "an object", c);
    else read_colls(r, c, hw);
}

strata_status_t plan_hw_parse(const char *text, const char *label, plan_hw_t *hw_p,
                              char *err, size_t errlen)
{
    plan_hw_t hw = { 0 };
    strata_status_t st = parse_with(text, label, read_hw_any, &hw, err, errlen);
    if (STRATA_OK != st) return st;
    snprintf(hw.path, sizeof hw.path, "%s", label);
    *hw_p = hw;
    return STRATA_OK;
}

double plan_coll_time(const plan_hw_t *hw, plan_coll_t c, long n, long span, double bytes)
{
    if (n <= 1 || bytes <= 0) return 0;
    const plan_bw_table_t *t = &hw->coll[c][span > hw->domain ? 1 : 0];
    /* the points of the rank count nearest n (in log ratio) */
    double best = INFINITY;
    long ranks = 0;
    for (int i = 0; i < t->n; i++) {
        double d = fabs(log((double)t->p[i].ranks / (double)n));
        if (d < best) { best = d; ranks = t->p[i].ranks; }
    }
    double lo_b = 0, lo_bw = 0, hi_b = INFINITY, hi_bw = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->p[i].ranks != ranks) continue;
        if (t->p[i].bytes <= bytes && t->p[i].bytes > lo_b) { lo_b = t->p[i].bytes; lo_bw = t->p[i].busbw; }
        if (t->p[i].bytes >= bytes && t->p[i].bytes < hi_b) { hi_b = t->p[i].bytes; hi_bw = t->p[i].busbw; }
    }
    double bw;
    if (0 == lo_b) bw = hi_bw;
    else if (isinf(hi_b) || hi_b == lo_b) bw = lo_bw;
    else bw = lo_bw + (hi_bw - lo_bw) * log(bytes / lo_b) / log(hi_b / lo_b);
    double f = (double)(n - 1) / (double)n * (PLAN_AR == c ? 2.0 : 1.0);
    return hw->coll_latency + bytes * f / bw;
}

/* ---------------------------------------------------------------- finding */

static int readable(const char *p) { return 0 == access(p, R_OK); }

static int in_build_tree(void)
{
    char exe[PLAN_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    size_t k = strlen(STRATA_BUILDDIR);
    return !strncmp(exe, STRATA_BUILDDIR, k) && '/' == exe[k];
}

strata_status_t plan_find_file(const char *kind, const char *name, char *path, size_t len,
                               char *err, size_t errlen)
{
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".json"))) {
        if (!readable(name))
            return sched_fail(err, errlen, STRATA_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
        snprintf(path, len, "%s", name);
        return STRATA_OK;
    }
    const char *env = getenv("STRATA_DATADIR");
    const char *dirs[3] = { env && *env ? env : NULL, in_build_tree() ? STRATA_SRCDIR "/share" : NULL,
                            STRATA_PKGDATADIR };
    char tried[3 * PLAN_PATH_MAX] = "";
    for (int i = 0; i < 3; i++) {
        if (!dirs[i]) continue;
        snprintf(path, len, "%s/%s/%s.json", dirs[i], kind, name);
        if (readable(path)) return STRATA_OK;
        size_t at = strlen(tried);
        snprintf(tried + at, sizeof tried - at, "%s%s", at ? ", " : "", path);
    }
    return sched_fail(err, errlen, STRATA_ERR_IO, "no %s file named '%s' (looked for %s; set "
                      "STRATA_DATADIR or give a path)", strcmp(kind, "models") ? "hardware" : "model",
                      name, tried);
}

static char *slurp_file(const char *path, char *why, size_t len)
{
    FILE *f = base_fopen_regular(path, why, len);   /* a FIFO would block */
    if (!f) return NULL;
    char *buf = NULL;
    if (0 == fseek(f, 0, SEEK_END)) {
        long n = ftell(f);
        if (n >= 0 && 0 == fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)n + 1))) {
            if ((size_t)n != fread(buf, 1, (size_t)n, f)) { free(buf); buf = NULL; }
            else buf[n] = '\0';
        }
    }
    fclose(f);
    return buf;
}

static strata_status_t load(const char *kind, const char *name, void *out, char *err, size_t errlen)
{
    char path[PLAN_PATH_MAX];
    strata_status_t st = plan_find_file(kind, name, path, sizeof path, err, errlen);
    if (STRATA_OK != st) return st;
    char why[600] = "";
    char *text = slurp_file(path, why, sizeof why);
    if (!text) return sched_fail(err, errlen, STRATA_ERR_IO, "%s: cannot read: %s", path,
                                 why[0] ? why : strerror(errno));
    st = !strcmp(kind, "models") ? plan_model_parse(text, path, out, err, errlen)
                                 : plan_hw_parse(text, path, out, err, errlen);
    free(text);
    return st;
}

strata_status_t plan_model_load(const char *name_or_path, plan_model_t *m_p, char *err, size_t errlen)
{
    return load("models", name_or_path, m_p, err, errlen);
}

strata_status_t plan_hw_load(const char *name_or_path, plan_hw_t *hw_p, char *err, size_t errlen)
{
    return load("hw", name_or_path, hw_p, err, errlen);
}
