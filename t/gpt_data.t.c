/* gpt_data.t - the GPT example's data: the addition task (format, held-out
 * pairs never in training rows, loss only on answers), text files (the
 * split, rows from the right part), determinism for a seed, and the rank
 * slicing rule (1 rank x 8 rows == 4 ranks x 2 rows). Bad input too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "examples/gpt/gpt.h"
#include "tap.h"

enum { T = 64, ROWS = 8 };

static void test_format(void)
{
    char ex[GPT_ADD_LEN];
    gpt_add_format(123, 456, ex);
    ok(0 == memcmp(ex, "123+456=6957450\n", GPT_ADD_LEN),
       "123+456 is written \"123+456=6957450\\n\" (b's digit, then the sum's, least significant first)");
    gpt_add_format(999, 7, ex);
    ok(0 == memcmp(ex, "999+007=7600001\n", GPT_ADD_LEN), "999+007 is written \"999+007=7600001\\n\"");
    int32_t ans[GPT_ADD_ANSWER] = { '7', '6', '0', '0', '0', '0', '1' };
    is_int(gpt_add_decode(ans), 1006, "the answer bytes decode to 1006");
    ok(gpt_add_correct(999, 7, ans) && !gpt_add_correct(998, 8, ans),
       "the answer is correct for 999+007, not for 998+008 (same sum, other copied digits)");
    ans[2] = '+';
    is_int(gpt_add_decode(ans), -1, "a non-digit answer decodes to -1");
    ok(!gpt_add_correct(999, 7, ans), "and is not correct");
}

static void test_split(void)
{
    long held = 0, asym = 0;
    for (int a = 0; a < 1000; a++)
        for (int b = 0; b < 1000; b++) {
            held += gpt_add_is_heldout(a, b);
            asym += gpt_add_is_heldout(a, b) != gpt_add_is_heldout(b, a);
        }
    ok(80000 < held && held < 120000, "about 10%% of pairs are held out (%ld)", held);
    is_int(asym, 0, "the split is symmetric: b+a is held out exactly when a+b is");

    enum { N = 2000 };
    static int a[N], b[N];
    int64_t got = gpt_add_heldout_pairs(N, a, b);
    int all = 1, lo = 999, hi = 0, dup = 0;
    static char seen[1000000];
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < got; i++) {
        all &= gpt_add_is_heldout(a[i], b[i]);
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
        dup += seen[a[i] * 1000 + b[i]]++;
    }
    ok(N == got && all && 0 == dup, "2000 distinct held-out pairs listed");
    ok(lo < 50 && hi > 950, "they span all magnitudes (first operand %d..%d)", lo, hi);
}

/* Walks the examples of rows: every complete example must be well formed,
 * its sum right, its pair in the wanted split; targets must be the next
 * byte at answer positions and -1 elsewhere. Returns examples seen or -1. */
static long scan_rows(const int32_t *in, const int32_t *tg, int nrows, int want_heldout)
{
    long n = 0;
    for (int r = 0; r < nrows; r++) {
        const int32_t *x = in + (size_t)r * T, *y = tg + (size_t)r * T;
        for (int t = 0; t < T; t++) {
            int j = t % GPT_ADD_LEN;       /* rows start at an example boundary */
            int next_j = (t + 1) % GPT_ADD_LEN;
            int expect = next_j >= GPT_ADD_PROMPT;
            if (expect && (t + 1 < T ? y[t] != x[t + 1] : 0 > y[t]))
                return -1;
            if (!expect && -1 != y[t])
                return -1;
            if (0 != j || t + GPT_ADD_LEN > T)
                continue;
            char ex[GPT_ADD_LEN + 1];           /* a string: atoi reads up to a NUL */
            for (int k = 0; k < GPT_ADD_LEN; k++) ex[k] = (char)x[t + k];
            ex[GPT_ADD_LEN] = '\0';
            int a = atoi(ex), b = atoi(ex + 4);
            char want[GPT_ADD_LEN];
            gpt_add_format(a, b, want);
            if (0 != memcmp(ex, want, GPT_ADD_LEN) || gpt_add_is_heldout(a, b) != want_heldout)
                return -1;
            n++;
        }
    }
    return n;
}

static void test_addition_rows(void)
{
    gpt_data *d = NULL;
    is_int(gpt_data_addition(&d), STRATA_OK, "addition data created");
    is_int(gpt_data_seq_hint(d), 16, "addition is made for rows of 16 tokens");
    int32_t in[ROWS * T], tg[ROWS * T], in2[ROWS * T], tg2[ROWS * T];
    long seen = 0, bad = 0;
    for (int step = 0; step < 200; step++) {
        gpt_data_rows(d, GPT_SPLIT_TRAIN, 1, step, 0, ROWS, T, in, tg);
        long n = scan_rows(in, tg, ROWS, 0);
        if (0 > n) bad++; else seen += n;
    }
    ok(0 == bad && 6000 <= seen, "%ld training examples well formed, targets on answers only, "
       "none held out", seen);
    bad = 0;
    for (int step = 0; step < 20; step++) {
        gpt_data_rows(d, GPT_SPLIT_VAL, 1, step, 0, ROWS, T, in, tg);
        bad += 0 > scan_rows(in, tg, ROWS, 1);
    }
    is_int(bad, 0, "validation rows hold only held-out pairs");

    gpt_data_rows(d, GPT_SPLIT_TRAIN, 5, 3, 0, ROWS, T, in, tg);
    gpt_data_rows(d, GPT_SPLIT_TRAIN, 5, 3, 0, ROWS, T, in2, tg2);
    ok(0 == memcmp(in, in2, sizeof(in)) && 0 == memcmp(tg, tg2, sizeof(tg)),
       "same seed and step give the same batch");
    gpt_data_rows(d, GPT_SPLIT_TRAIN, 6, 3, 0, ROWS, T, in2, tg2);
    ok(0 != memcmp(in, in2, sizeof(in)), "another seed gives another batch");
    gpt_data_rows(d, GPT_SPLIT_TRAIN, 5, 4, 0, ROWS, T, in2, tg2);
    ok(0 != memcmp(in, in2, sizeof(in)), "another step gives another batch");
    ok(0 != memcmp(in, in + T, sizeof(int32_t) * T), "rows of a batch differ");

    /* 4 ranks x 2 rows: rank r asks for rows r*2 .. r*2+1 */
    int same = 1;
    for (int r = 0; r < 4; r++) {
        gpt_data_rows(d, GPT_SPLIT_TRAIN, 5, 3, r * 2, 2, T, in2, tg2);
        same &= 0 == memcmp(in + r * 2 * T, in2, sizeof(int32_t) * 2 * T) &&
                0 == memcmp(tg + r * 2 * T, tg2, sizeof(int32_t) * 2 * T);
    }
    ok(same, "addition: 4 ranks x 2 rows equal 1 rank x 8 rows");

    /* known answers, shared with t/py_rows.py (python/strata_gpt.py's port) */
    static const struct { gpt_split split; int64_t step, row; const char *bytes; } ka[] = {
        { GPT_SPLIT_TRAIN, 0, 0, "907+911=1811981\n279+551=10" },
        { GPT_SPLIT_VAL, 3, 5, "915+207=7202211\n871+895=56" } };
    for (int k = 0; k < 2; k++) {
        gpt_data_rows(d, ka[k].split, 1, ka[k].step, ka[k].row, 1, 26, in2, tg2);
        int eq = 1;
        for (int t = 0; t < 26; t++) eq &= in2[t] == (unsigned char)ka[k].bytes[t];
        ok(eq, "seed 1, split %d, step %ld, row %ld: the row starts \"%.12s\"", (int)ka[k].split,
           (long)ka[k].step, (long)ka[k].row, ka[k].bytes);
    }
    is_int(gpt_data_rows(d, GPT_SPLIT_TRAIN, 5, 3, 0, ROWS, T, NULL, tg), STRATA_ERR_INVALID,
           "NULL inputs refused");
    is_int(gpt_data_rows(d, (gpt_split)7, 5, 3, 0, ROWS, T, in, tg), STRATA_ERR_INVALID,
           "an unknown split refused");
    gpt_data_destroy(d);
}

/* A row of text data is some window of its split: find it. */
static int in_region(const uint8_t *text, size_t lo, size_t hi, const int32_t *x, const int32_t *y)
{
    for (size_t off = lo; off + T + 1 <= hi; off++) {
        int t = 0;
        while (t < T && x[t] == text[off + t] && y[t] == text[off + t + 1]) t++;
        if (T == t) return 1;
    }
    return 0;
}

static void test_text(void)
{
    char path[] = "/tmp/gpt_data_t_XXXXXX";
    int fd = mkstemp(path);
    if (0 > fd) bail_out("mkstemp: cannot make a temporary file");
    /* bytes that make every 65-byte window unique */
    enum { NB = 3000 };
    static uint8_t text[NB];
    uint64_t s = 12345;
    for (int i = 0; i < NB; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        text[i] = (uint8_t)(32 + (s >> 33) % 90);
    }
    if (NB != write(fd, text, NB)) bail_out("cannot write %s", path);
    close(fd);

    gpt_data *d = NULL;
    char why[256];
    is_int(gpt_data_text(path, 0.1, T, &d, why, sizeof(why)), STRATA_OK, "text data loaded");
    size_t ntr = gpt_data_split_bytes(d, GPT_SPLIT_TRAIN), nva = gpt_data_split_bytes(d, GPT_SPLIT_VAL);
    ok(NB == ntr + nva && 300 == nva, "split: %zu train + %zu validation bytes (last 10%%)", ntr, nva);
    int32_t in[ROWS * T], tg[ROWS * T], in2[ROWS * T], tg2[ROWS * T];
    int good = 1;
    for (int step = 0; step < 5; step++) {
        gpt_data_rows(d, GPT_SPLIT_TRAIN, 9, step, 0, ROWS, T, in, tg);
        for (int r = 0; r < ROWS; r++)
            good &= in_region(text, 0, ntr, in + r * T, tg + r * T);
    }
    ok(good, "training rows are windows of the training part, targets the next bytes");
    good = 1;
    for (int step = 0; step < 5; step++) {
        gpt_data_rows(d, GPT_SPLIT_VAL, 9, step, 0, ROWS, T, in, tg);
        for (int r = 0; r < ROWS; r++)
            good &= in_region(text, ntr, NB, in + r * T, tg + r * T);
    }
    ok(good, "validation rows are windows of the validation part");
    gpt_data_rows(d, GPT_SPLIT_TRAIN, 9, 2, 0, ROWS, T, in, tg);
    int same = 1;
    for (int r = 0; r < 4; r++) {
        gpt_data_rows(d, GPT_SPLIT_TRAIN, 9, 2, r * 2, 2, T, in2, tg2);
        same &= 0 == memcmp(in + r * 2 * T, in2, sizeof(int32_t) * 2 * T);
    }
    ok(same, "text: 4 ranks x 2 rows equal 1 rank x 8 rows");
    gpt_data_destroy(d);

    d = NULL;
    is_int(gpt_data_text(path, 0.1, 400, &d, why, sizeof(why)), STRATA_ERR_INVALID,
           "rows longer than the validation part refused (%s)", why);
    is_int(gpt_data_text(path, 0.0, T, &d, why, sizeof(why)), STRATA_ERR_INVALID,
           "validation fraction 0 refused");
    unlink(path);
    strata_status_t st = gpt_data_text(path, 0.1, T, &d, why, sizeof(why));
    ok(STRATA_ERR_IO == st && NULL != strstr(why, path) && NULL == d,
       "a missing file is refused with its name (%s)", why);
}

static void test_shakespeare(void)
{
    const char *path = "../shared/data/tinyshakespeare.txt";
    char alt[512];
    const char *top = getenv("top_srcdir");
    if (0 != access(path, R_OK) && NULL != top) {
        snprintf(alt, sizeof(alt), "%s/../shared/data/tinyshakespeare.txt", top);
        path = alt;
    }
    if (0 != access(path, R_OK)) {
        skip(2, "tinyshakespeare.txt not found beside the project");
        return;
    }
    gpt_data *d = NULL;
    char why[256];
    is_int(gpt_data_text(path, 0.1, T, &d, why, sizeof(why)), STRATA_OK, "tinyshakespeare loads");
    int32_t in[ROWS * T], tg[ROWS * T];
    gpt_data_rows(d, GPT_SPLIT_TRAIN, 1, 0, 0, ROWS, T, in, tg);
    int ascii = 1;
    for (int i = 0; i < ROWS * T; i++) ascii &= 0 < in[i] && in[i] < 128 && 0 <= tg[i];
    ok(ascii && gpt_data_split_bytes(d, GPT_SPLIT_VAL) > 100000,
       "its rows are text, all positions carry a target");
    gpt_data_destroy(d);
}

int main(void)
{
    plan(6 + 4 + 13 + 8 + 2);
    test_format();
    test_split();
    test_addition_rows();
    test_text();
    test_shakespeare();
    return done_testing();
}
