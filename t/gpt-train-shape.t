#!/bin/sh
# gpt-train-shape.t - --resume of a checkpoint of another configuration:
# --layers, --heads or the global batch changed is refused (exit 2) naming
# each difference, before anything is written or pruned (the directory's
# files and `latest` stay as they were, with --ckpt-every 1 and the default
# ckpt_keep); --resume-any-shape names the difference and loads it where
# the tensors fit (--heads changes no tensor's shape).
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-shape
echo "1..6"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
small="--threads 1 --dim 16 --batch 4 --eval-n 8 --ckpt-dir $tmp/d"
one() { timeout 120 "$P" $small "$@"; }    # MPI singleton, 1 rank

one --layers 2 --heads 4 --steps 2 --ckpt-every 1 > "$tmp/first.out" 2>&1
state() { (cd "$tmp/d" && ls -l --time-style=+%s.%N step-* && cat latest); }
state > "$tmp/before"

one --layers 1 --heads 4 --steps 4 --ckpt-every 1 --resume > "$tmp/layers.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/layers.out" | grep -v '^# step' | head -4
check "--layers 1 on a 2-layer checkpoint is refused with exit 2, naming the layers" \
    sh -c 'test "$1" -eq 2 && grep -q "refusing .*step-00000002.h5: .*layers 2 in the file, 1 here" "$2" &&
           ! grep -q "^step " "$2"' _ "$rc" "$tmp/layers.out"
state > "$tmp/after"
check "nothing was written or pruned" cmp -s "$tmp/before" "$tmp/after"

one --layers 2 --heads 1 --steps 4 --resume > "$tmp/heads.out" 2>&1; rc=$?
check "--heads 1 on a heads-4 checkpoint is refused, naming the heads" \
    sh -c 'test "$1" -eq 2 && grep -q "heads 4 in the file, 1 here" "$2"' _ "$rc" "$tmp/heads.out"

"$L" 2 "$P" $small --layers 2 --heads 4 --steps 4 --resume > "$tmp/batch.out" 2>&1; rc=$?
check "2 ranks at the same --batch (the global batch doubled) is refused, naming it" \
    sh -c 'test "$1" -eq 2 && grep -q "global_batch 4 in the file, 8 here" "$2" &&
           test "$(grep -c "refusing" "$2")" -eq 1' _ "$rc" "$tmp/batch.out"
state > "$tmp/after2"
check "still nothing written or pruned" cmp -s "$tmp/before" "$tmp/after2"

one --layers 2 --heads 2 --steps 3 --resume-any-shape > "$tmp/any.out" 2>&1; rc=$?
check "--resume-any-shape names the difference and resumes" \
    sh -c 'test "$1" -eq 0 && grep -q "resume-any-shape: .*heads 4 in the file, 2 here" "$2" &&
           grep -q "resumed from .*step-00000002.h5 at step 2" "$2"' _ "$rc" "$tmp/any.out"
