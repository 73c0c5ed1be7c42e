#!/bin/sh
# verify-transfers.t - the option verify_transfers on train_gpt (2 ranks):
# with it on, host and storage round trips under both schedules train to
# the same param_hash as with it off; a reload made stale by the test fault
# stale_reload goes unnoticed without it (the job trains on) and with it
# fails the step naming the save, the unit, the step and the rank.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp verify-xfer
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
echo "1..6"
"$L" 2 "$P" $small > "$tmp/ref" 2>&1
ref=$(hash_of "$tmp/ref")
n=0
for run in "*=host naive" "*=storage lhs" "qkv=host,mlp_up=storage,*=keep lhs"; do
    set -- $run
    n=$((n + 1))
    "$L" 2 "$P" $small --act-policy "$1" --schedule "$2" --set verify_transfers=on > "$tmp/v$n" 2>&1
    h=$(hash_of "$tmp/v$n")
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then echo "ok $n - '$1' $2 with verify_transfers: the keep run's param_hash"
    else echo "not ok $n - '$1' $2 with verify_transfers: the keep run's param_hash ($h, keep $ref)"
         grep -v '^{' "$tmp/v$n" | tail -3 | sed 's/^/#   /'; fi
done
STRATA_TEST_FAULT=stale_reload@3 "$L" 2 "$P" $small --act-policy "*=host" --schedule naive \
    > "$tmp/quiet" 2>&1; rc=$?
n=$((n + 1))
if [ $rc -eq 0 ] && [ -n "$(hash_of "$tmp/quiet")" ]; then
    echo "ok $n - a stale reload without verify_transfers trains on unnoticed (why the option exists)"
else echo "not ok $n - a stale reload without verify_transfers trains on (exit $rc)"; fi
STRATA_TEST_FAULT=stale_reload@3 "$L" 2 "$P" $small --act-policy "*=host" --schedule naive \
    --set verify_transfers=on > "$tmp/caught" 2>&1; rc=$?
n=$((n + 1))
if [ $rc -ne 0 ] && [ -z "$(hash_of "$tmp/caught")" ] && grep -q "checksum mismatch" "$tmp/caught"; then
    echo "ok $n - with verify_transfers the stale reload fails the job (exit $rc)"
else echo "not ok $n - with verify_transfers the stale reload fails the job (exit $rc)"; tail -3 "$tmp/caught" | sed 's/^/#   /'; fi
n=$((n + 1))
if grep -q "save '[a-z_0-9]*' of unit '[a-z0-9]*' came back to the device changed (step 1, micro-batch 0, rank [01])" "$tmp/caught"; then
    echo "ok $n - naming the save, the unit, the step and the rank"
else echo "not ok $n - naming the save, the unit, the step and the rank"; grep verify "$tmp/caught" | head -2 | sed 's/^/#   /'; fi
