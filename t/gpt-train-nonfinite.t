#!/bin/sh
# gpt-train-nonfinite.t - a non-finite gradient norm stops the job without
# replacing the last good checkpoint. Two ranks, checkpoints every 2 steps
# of 6; the test fault nan_grad@5 (base/test_fault.h) puts a NaN into the
# last unit's reduced gradient at step 5. Asserted: exit 3 (the status
# docs/reliability.md gives it), one message naming step 5 and the unit
# (not one per rank), `latest` still names step 4's checkpoint, which
# `strata ckpt verify` passes, no checkpoint of step 5 or later was
# written, and --resume from it reaches an uninterrupted run's param_hash.
set -u
. "$top_srcdir/t/tap.sh"
tap_need_hooks
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-nonfinite
echo "1..7"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 6 --json --eval-n 8"

"$L" 2 "$P" $small > "$tmp/full.out" 2>&1
full=$(hash_of "$tmp/full.out")
check "setup: an uninterrupted run's param_hash" test -n "$full"

ck="$tmp/d"
t0=$(ms)
STRATA_TEST_FAULT=nan_grad@5 "$L" 2 "$P" $small --ckpt-dir "$ck" --ckpt-every 2 > "$tmp/bad.out" 2>&1
rc=$?; t1=$(ms)
grep "train_gpt\|checkpoint:" "$tmp/bad.out" | sed 's/^/# /'
echo "# NaN gradient at step 5: exit $rc after $((t1 - t0)) ms"
check "the job exits 3 (a non-finite loss or gradient norm)" test "$rc" -eq 3
check "one message, naming step 5, the gradient norm and the unit" \
    sh -c 'test "$(grep -c "is not finite" "$1")" -eq 1 &&
           grep -q "^train_gpt: step 5: the gradient norm is not finite (.*) (first in unit 3, head); stopping without a checkpoint: the last good one stays $2/step-00000004.h5$" "$1"' \
    _ "$tmp/bad.out" "$ck"
check "no step after 5 ran, and nothing was saved after step 4" \
    sh -c '! grep -q "^{\"step\":6" "$1" && test "$(ls "$2" | grep -v "^latest$" | tr "\n" " ")" = \
           "step-00000002.h5 step-00000004.h5 "' _ "$tmp/bad.out" "$ck"
check "latest still names the step-4 checkpoint" test "$(cat "$ck/latest")" = step-00000004.h5
"$S" ckpt verify "$ck" > "$tmp/verify.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/verify.out"
check "strata ckpt verify DIR passes" test "$rc" -eq 0

"$L" 2 "$P" $small --ckpt-dir "$ck" --resume > "$tmp/resume.out" 2>&1; rc=$?
grep "resumed" "$tmp/resume.out" | sed 's/^/# /'
check "--resume continues from step 4 to an uninterrupted run's param_hash" \
    sh -c 'test "$1" -eq 0 && grep -q "resumed from $2/step-00000004.h5 at step 4" "$3" &&
           test "$4" = "$5"' _ "$rc" "$ck" "$tmp/resume.out" "$(hash_of "$tmp/resume.out")" "$full"
