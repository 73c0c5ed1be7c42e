#!/bin/sh
# ckpt-stage.t - checkpoints staged through host copies, as the cuda
# backend saves and loads its device shards, run on the host backend (test
# fault STRATA_TEST_FAULT=ckpt_stage@1, base/test_fault.h: the staging's
# copies are memcpy there), 2 ranks, AdamW (master and two state shards):
#  - a staged save holds the same tensors as a save in place (strata ckpt diff);
#  - a staged load restores the parameters as a load in place does (the
#    param_hash of a 0-step resume);
#  - staged and in-place resumes continue to the uninterrupted run's
#    param_hash (optimizer state restored too), either way round.
set -u
. "$top_srcdir/t/tap.sh"
tap_need_hooks
P="$top_builddir/examples/gpt/train_gpt"
[ -x "$P" ] || tap_skip_all "train_gpt is not built (configure found no CBLAS)"
tap_tmp ckpt-stage
echo "1..5"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --json --eval-n 8 --device host"
staged() { STRATA_TEST_FAULT=ckpt_stage@1 "$@"; }

"$L" 2 "$P" $small --steps 8 > "$tmp/full" 2>&1
"$L" 2 "$P" $small --steps 8 --stop-at 4 --ckpt-dir "$tmp/plain" > "$tmp/plain4" 2>&1
staged "$L" 2 "$P" $small --steps 8 --stop-at 4 --ckpt-dir "$tmp/staged" > "$tmp/staged4" 2>&1
cp -r "$tmp/plain" "$tmp/plain2"; cp -r "$tmp/staged" "$tmp/staged2"
f=step-00000004.h5
"$S" ckpt diff "$tmp/plain/$f" "$tmp/staged/$f" > "$tmp/diff" 2>&1; rc=$?
sed 's/^/# /' "$tmp/diff" | head -20
check "a staged save holds the same tensors as one in place" \
    sh -c 'test "$1" = 0 && test -f "$2" && test -f "$3"' _ "$rc" "$tmp/plain/$f" "$tmp/staged/$f"
# 0-step resumes (--steps 4 from step 4): the hash of what was loaded
staged "$L" 2 "$P" $small --steps 4 --ckpt-dir "$tmp/plain" --resume > "$tmp/load0" 2>&1
"$L" 2 "$P" $small --steps 4 --ckpt-dir "$tmp/plain" --resume > "$tmp/load0p" 2>&1
grep -v '^{"step"' "$tmp/load0" | sed 's/^/# /'
check "a staged load restores what a load in place does (param_hash after 0 steps)" \
    sh -c 'test -n "$1" && test "$1" = "$2" && grep -q "resumed from .*$3 at step 4" "$4"' \
    _ "$(hash_of "$tmp/load0p")" "$(hash_of "$tmp/load0")" "$f" "$tmp/load0"
staged "$L" 2 "$P" $small --steps 8 --ckpt-dir "$tmp/staged" --resume > "$tmp/ss" 2>&1
"$L" 2 "$P" $small --steps 8 --ckpt-dir "$tmp/staged2" --resume > "$tmp/sp" 2>&1
staged "$L" 2 "$P" $small --steps 8 --ckpt-dir "$tmp/plain2" --resume > "$tmp/ps" 2>&1
echo "# param_hash: uninterrupted $(hash_of "$tmp/full"), staged->staged $(hash_of "$tmp/ss")," \
     "staged->in place $(hash_of "$tmp/sp"), in place->staged $(hash_of "$tmp/ps")"
for c in "ss:staged save, staged resume" "sp:staged save, resume in place" \
         "ps:save in place, staged resume"; do
    check "${c#*:}: the uninterrupted run's param_hash" \
        sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(hash_of "$tmp/full")" "$(hash_of "$tmp/${c%%:*}")"
done
