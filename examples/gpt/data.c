/*
 * data.c - what the GPT example trains on: the generated addition task (no
 * file) or any text file at byte level.
 *
 * Every batch row is a pure function of (seed, split, step, global row): a
 * counter-based generator, not a stream, so rank r of any rank count can
 * produce exactly its rows r*B .. r*B+B-1 of the global batch and the run
 * sees the same data on 1 rank or on 8.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "examples/gpt/gpt.h"

struct gpt_data {
    int      addition;     /* 1: the generated task; text fields unused */
    uint8_t *text;
    size_t   n;            /* bytes in text */
    size_t   n_train;      /* text[0..n_train) trains, the rest validates */
};

static uint64_t mix64(uint64_t z)    /* splitmix64's finaliser */
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A row's private generator: splitmix64 over a key of (seed, split, step, row). */
typedef struct { uint64_t s; } row_rng;

static row_rng row_rng_init(uint64_t seed, gpt_split split, int64_t step, int64_t row)
{
    row_rng r;
    r.s = mix64(mix64(mix64(mix64(seed) ^ (uint64_t)split) ^ (uint64_t)step) ^ (uint64_t)row);
    return r;
}

static uint64_t row_next(row_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return mix64(r->s);
}

/* Uniform in [0, n) without modulo bias worth mentioning: n is far below 2^64. */
static uint64_t row_below(row_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)row_next(r) * n) >> 64);
}

/* ---------------------------------------------------------- addition --- */

int gpt_add_is_heldout(int a, int b)
{
    /* unordered, so the held-out set is closed under commuting the sum */
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return 0 == mix64(0x616464ULL ^ (uint64_t)(lo * 1000 + hi)) % 10;
}

int64_t gpt_add_heldout_pairs(int64_t n, int *a, int *b)
{
    /* visit all 10^6 pairs in a fixed shuffled order (multiplication by a
     * number coprime to 10^6 is a permutation), so the first n held-out pairs
     * are spread over all magnitudes instead of starting at 000+000 */
    int64_t got = 0;
    for (int64_t k = 0; k < 1000000 && got < n; k++) {
        int64_t p = (k * 619471 + 4321) % 1000000;   /* 619471: odd, not a multiple of 5 */
        int x = (int)(p / 1000), y = (int)(p % 1000);
        if (gpt_add_is_heldout(x, y)) {
            a[got] = x;
            b[got] = y;
            got++;
        }
    }
    return got;
}

void gpt_add_format(int a, int b, char out[GPT_ADD_LEN])
{
    int s = a + b;
    out[0] = '0' + a / 100;
    out[1] = '0' + a / 10 % 10;
    out[2] = '0' + a % 10;
    out[3] = '+';
    out[4] = '0' + b / 100;
    out[5] = '0' + b / 10 % 10;
    out[6] = '0' + b % 10;
    out[7] = '=';
    /* least significant first, each sum digit after the digit of b it adds
     * (a copy: the answer digit then depends on the byte before it and one
     * digit of a at a fixed place), the carry out last */
    for (int i = 0; i < 3; i++, s /= 10, b /= 10) {
        out[8 + 2 * i] = '0' + b % 10;
        out[9 + 2 * i] = '0' + s % 10;
    }
    out[14] = '0' + s % 10;
    out[15] = '\n';
}

int gpt_add_decode(const int32_t answer[GPT_ADD_ANSWER])
{
    for (int i = 0; i < GPT_ADD_ANSWER; i++)
        if ('0' > answer[i] || '9' < answer[i])
            return -1;
    int s = answer[6] - '0';
    for (int i = 2; i >= 0; i--)
        s = s * 10 + (answer[2 * i + 1] - '0');
    return s;
}

int gpt_add_correct(int a, int b, const int32_t answer[GPT_ADD_ANSWER])
{
    char ex[GPT_ADD_LEN];
    gpt_add_format(a, b, ex);
    for (int i = 0; i < GPT_ADD_ANSWER; i++)
        if (answer[i] != (unsigned char)ex[GPT_ADD_PROMPT + i])
            return 0;
    return 1;
}

static void addition_row(row_rng *r, gpt_split split, int T, int32_t *in, int32_t *tg)
{
    char ex[GPT_ADD_LEN];
    int pos = 0;     /* byte index in the row's stream of examples */
    int need = T + 1;
    while (pos < need) {
        int a, b;
        do {       /* rejection keeps each split's pairs uniform over the split */
            a = (int)row_below(r, 1000);
            b = (int)row_below(r, 1000);
        } while (gpt_add_is_heldout(a, b) != (GPT_SPLIT_VAL == split));
        gpt_add_format(a, b, ex);
        for (int j = 0; j < GPT_ADD_LEN && pos < need; j++, pos++) {
            int byte = (unsigned char)ex[j];
            if (0 < pos) {
                /* target of position pos-1 is this byte: only the answer and
                 * the newline carry loss, the operands are random */
                tg[pos - 1] = j >= GPT_ADD_PROMPT ? byte : -1;
            }
            if (pos < T)
                in[pos] = byte;
        }
    }
}

/* ------------------------------------------------------------ common --- */

strata_status_t gpt_data_addition(gpt_data **data_p)
{
    if (NULL == data_p)
        return STRATA_ERR_INVALID;
    gpt_data *d = calloc(1, sizeof(*d));
    if (NULL == d)
        return STRATA_ERR_NOMEM;
    d->addition = 1;
    *data_p = d;
    return STRATA_OK;
}

strata_status_t gpt_data_text(const char *path, double val_frac, int T,
                              gpt_data **data_p, char *why, size_t why_len)
{
    if (NULL == path || NULL == data_p)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len, "no data file given");
    if (!(0.0 < val_frac && val_frac < 1.0))
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                            "validation fraction %g is outside (0, 1)", val_frac);
    if (1 > T)
        return gpt_why_fail(STRATA_ERR_INVALID, why, why_len, "sequence length %d < 1", T);
    strata_status_t st;
    gpt_data *d = NULL;
    struct stat sb;
    if (0 == stat(path, &sb) && !S_ISREG(sb.st_mode))
        return gpt_why_fail(STRATA_ERR_IO, why, why_len, "data file %s is %s, not a regular "
                            "file (--data takes a text file)", path,
                            S_ISDIR(sb.st_mode) ? "a directory" : "a special file");
    FILE *f = fopen(path, "rb");
    if (NULL == f)
        return gpt_why_fail(STRATA_ERR_IO, why, why_len, "cannot open data file %s: %s",
                            path, strerror(errno));
    if (0 != fseek(f, 0, SEEK_END)) {
        st = gpt_why_fail(STRATA_ERR_IO, why, why_len, "cannot seek in %s: %s",
                          path, strerror(errno));
        goto err_close;
    }
    long len = ftell(f);
    rewind(f);
    if (0 > len) {
        st = gpt_why_fail(STRATA_ERR_IO, why, why_len, "cannot size %s: %s",
                          path, strerror(errno));
        goto err_close;
    }
    d = calloc(1, sizeof(*d));
    if (NULL == d || NULL == (d->text = malloc((size_t)len + 1))) {
        st = gpt_why_fail(STRATA_ERR_NOMEM, why, why_len, "no memory for %ld bytes of %s",
                          len, path);
        goto err_free;
    }
    if ((size_t)len != fread(d->text, 1, (size_t)len, f)) {
        st = gpt_why_fail(STRATA_ERR_IO, why, why_len, "short read from %s", path);
        goto err_free;
    }
    d->n = (size_t)len;
    d->n_train = d->n - (size_t)(val_frac * (double)d->n);
    if (d->n_train < (size_t)T + 1 || d->n - d->n_train < (size_t)T + 1) {
        st = gpt_why_fail(STRATA_ERR_INVALID, why, why_len,
                          "%s has %zu bytes: too short for rows of %d bytes in both the "
                          "training (%zu) and validation (%zu) parts",
                          path, d->n, T + 1, d->n_train, d->n - d->n_train);
        goto err_free;
    }
    fclose(f);
    *data_p = d;
    return STRATA_OK;

err_free:
    gpt_data_destroy(d);
err_close:
    fclose(f);
    return st;
}

void gpt_data_destroy(gpt_data *data)
{
    if (NULL == data)
        return;
    free(data->text);
    free(data);
}

int gpt_data_is_addition(const gpt_data *data)
{
    return data->addition;
}

int gpt_data_seq_hint(const gpt_data *data)
{
    return data->addition ? GPT_ADD_LEN : 0;
}

size_t gpt_data_split_bytes(const gpt_data *data, gpt_split split)
{
    if (data->addition)
        return 0;
    return GPT_SPLIT_VAL == split ? data->n - data->n_train : data->n_train;
}

strata_status_t gpt_data_rows(const gpt_data *data, gpt_split split, uint64_t seed,
                              int64_t step, int64_t row0, int nrows, int T,
                              int32_t *inputs, int32_t *targets)
{
    if (NULL == data || NULL == inputs || NULL == targets || 0 > nrows || 1 > T || 0 > row0 ||
        (GPT_SPLIT_TRAIN != split && GPT_SPLIT_VAL != split))
        return STRATA_ERR_INVALID;
    size_t base = 0, len = 0;
    if (!data->addition) {
        base = GPT_SPLIT_VAL == split ? data->n_train : 0;
        len = gpt_data_split_bytes(data, split);
        if (len < (size_t)T + 1)
            return STRATA_ERR_INVALID;
    }
    for (int i = 0; i < nrows; i++) {
        row_rng r = row_rng_init(seed, split, step, row0 + i);
        int32_t *in = inputs + (size_t)i * T, *tg = targets + (size_t)i * T;
        if (data->addition) {
            addition_row(&r, split, T, in, tg);
            continue;
        }
        const uint8_t *src = data->text + base + row_below(&r, len - (size_t)T);
        for (int t = 0; t < T; t++) {
            in[t] = src[t];
            tg[t] = src[t + 1];
        }
    }
    return STRATA_OK;
}
