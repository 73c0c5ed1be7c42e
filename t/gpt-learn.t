#!/bin/sh
# gpt-learn.t - the single-process GPT reference trainer learns the addition
# task (loss falls by more than 2 nats in 60 steps of a small model), prints
# its accuracy line, trains on a text file, and refuses a bad shape.
. "$top_srcdir/t/tap.sh"
prog="${top_builddir:-.}/examples/gpt/gpt_ref_train"
tap_tmp gpt-learn
echo "1..5"

small="--threads 1 --layers 2 --dim 64 --heads 4 --seq 32 --batch 8 --lr 3e-3 --log-every 1000"
out=$("$prog" $small --steps 60 --eval-n 50 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "addition run exits 0" test "$rc" -eq 0
fell() {
    echo "$out" | awk '/^summary:/ { first = $3; last = $5 }
        END { exit !(first != "" && last + 2.0 < first) }'
}
check "loss falls by more than 2 nats" fell
check "the run ends with a held-out accuracy line" \
    sh -c 'echo "$1" | grep -Eq "^held-out accuracy: [0-9]+\.[0-9]%$"' _ "$out"

awk 'BEGIN { for (i = 0; i < 400; i++) print "the quick brown fox jumps over the lazy dog " i }' > "$tmp/text"
out=$("$prog" $small --steps 30 --data "$tmp/text" --val-batches 2 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "a text file trains and reports a validation loss" \
    sh -c 'test "$1" -eq 0 && echo "$2" | grep -Eq "^val loss: [0-9]+\.[0-9]+$"' _ "$rc" "$out"

out=$("$prog" --dim 10 --heads 4 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
check "dim not divisible by heads exits non-zero and says why" \
    sh -c 'test "$1" -ne 0 && echo "$2" | grep -q divisible' _ "$rc" "$out"
