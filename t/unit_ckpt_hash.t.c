/*
 * unit_ckpt_hash.t.c - the checkpoint hash (io/ckpt_hash.c) gives
 * libxxhash's XXH3_64bits values whichever build it runs (AVX2 or
 * generic; STRATA_TEST_CKPT_HASH=generic (a test hook) forces the latter): one-shot on many
 * lengths and misalignments, and streamed in uneven pieces.
 */
#include "config.h"
#include "io/io.h"
#include "t/tap.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int main(void)
{
    plan(5);
    size_t n = 3000017;
    unsigned char *b = malloc(n + 64);
    if (!b) bail_out("no memory");
    for (size_t i = 0; i < n + 64; i++) b[i] = (unsigned char)((i * 2654435761u) >> 13);

    int bad = 0;
    for (size_t len = 0; len <= 4200; len++)          /* every XXH3 size class */
        if (ckpt_hash64(b + len % 61, len) != XXH3_64bits(b + len % 61, len)) bad++;
    is_int(bad, 0, "one-shot: lengths 0..4200 at odd offsets match XXH3_64bits");
    ok(ckpt_hash64(b, n) == XXH3_64bits(b, n), "one-shot: %zu bytes match", n);

    ckpt_hash_t *h = ckpt_hash_new();
    if (!h) bail_out("no memory");
    ckpt_hash_reset(h);
    for (size_t at = 0, k = 1; at < n; at += k, k = (k * 7 + 1) % 70001 + 1) {
        if (k > n - at) k = n - at;
        ckpt_hash_update(h, b + at, k);
    }
    ok(ckpt_hash_digest(h) == XXH3_64bits(b, n), "streamed in uneven pieces: matches the one-shot value");
    ckpt_hash_reset(h);
    ok(ckpt_hash_digest(h) == XXH3_64bits(b, 0), "a reset state digests as the empty input");
    uint64_t before = ckpt_hash64(b, n);
    b[n / 2] ^= 1;
    ok(ckpt_hash64(b, n) != before, "one flipped bit changes the value");
    ckpt_hash_free(h);
    ckpt_hash_free(NULL);
    free(b);
    return done_testing();
}
