#!/bin/sh
# gpt-threads.t - train_gpt's results do not depend on --threads: one rank
# with 1, 2 and 3 threads (the kernels split rows and attention heads
# between them, the BLAS its products) ends with the same param_hash and
# loss; and --threads 0 on a rank bound to one core of several says so,
# once.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-threads
echo "1..4"
# big enough that every kernel's loop is split (rows x width >= 16384)
cfg="--layers 2 --dim 64 --heads 4 --seq 32 --batch 8 --steps 3 --eval-n 8 --json"
hash() { sed -n 's/.*"param_hash":"\([0-9a-f]*\)".*/\1/p' "$tmp/$1"; }
for t in 1 2 3; do "$L" 1 "$P" $cfg --threads $t > "$tmp/t$t" 2>&1; done
echo "# param_hash with 1, 2, 3 threads: $(hash t1) $(hash t2) $(hash t3)"
check "1 thread trains" test -n "$(hash t1)"
same() { [ "$(hash t1)" = "$(hash "$1")" ] && [ "$(grep '"final"' "$tmp/t1" | sed 's/"tokens_per_s.*//')" = \
    "$(grep '"final"' "$tmp/$1" | sed 's/"tokens_per_s.*//')" ]; }
check "2 threads: the same parameters and loss" same t2
check "3 threads: the same parameters and loss" same t3
if [ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] || ! command -v taskset > /dev/null; then
    echo "ok 4 # SKIP one core here (or no taskset): no binding of one core of several"
else
    taskset -c 0 "$L" 1 "$P" $cfg --steps 1 --threads 0 > "$tmp/t0" 2>&1
    sed 's/^/# /' "$tmp/t0" | grep -- '--threads 0'
    check "--threads 0 on one core of several says so once" \
        test "$(grep -c -- '--threads 0: this rank may run on 1 of' "$tmp/t0")" = 1
fi
