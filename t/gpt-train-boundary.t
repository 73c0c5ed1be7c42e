#!/bin/sh
# gpt-train-boundary.t - the tensors between units as saves (unit_input):
# moved to host or storage they train to the keep run's param_hash, on
# both schedules; "unit_input=host,*=recompute" (the classic checkpoint at
# every unit, the checkpoints off the device) needs a smaller device budget
# than "*=recompute" and trains at exactly that budget; an unknown action
# for the inputs is refused before anything runs; with hybrid sharding, bf16
# compute, two micro-batches and a stop and resume, moving the inputs
# trains to the keep run's param_hash of the same configuration.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-boundary
small="--threads 1 --layers 3 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
need_of() { sed -n 's/^{"refused":true,"needs_device_bytes":\([0-9]*\),.*/\1/p' "$1"; }
echo "1..10"
"$L" 2 "$P" $small > "$tmp/keep" 2>&1
ref=$(hash_of "$tmp/keep")
n=0
for run in "unit_input=host,*=keep lhs" "unit_input=storage,*=recompute naive" "*=host lhs"; do
    set -- $run
    n=$((n + 1))
    "$L" 2 "$P" $small --act-policy "$1" --schedule "$2" > "$tmp/b$n" 2>&1
    h=$(hash_of "$tmp/b$n")
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then
        echo "ok $n - '$1' $2: the keep run's param_hash ($h)"
    else
        echo "not ok $n - '$1' $2: the keep run's param_hash ($h, keep $ref)"
        grep -v '^{' "$tmp/b$n" | tail -3 | sed 's/^/#   /'
    fi
done
"$L" 2 "$P" $small --act-policy "*=recompute" --device-mem 500K > "$tmp/r" 2>&1
"$L" 2 "$P" $small --act-policy "unit_input=host,*=recompute" --device-mem 500K > "$tmp/h" 2>&1
r=$(need_of "$tmp/r"); h=$(need_of "$tmp/h")
n=$((n + 1))
if [ -n "$r" ] && [ -n "$h" ] && [ "$h" -lt "$r" ]; then
    echo "ok $n - unit_input=host,*=recompute needs $h bytes, *=recompute $r"
else
    echo "not ok $n - unit_input=host,*=recompute needs less than *=recompute ($h, $r)"
    grep -v '^{"step' "$tmp/h" | tail -2 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 2 "$P" $small --act-policy "unit_input=host,*=recompute" --device-mem "${h:-1}" > "$tmp/at" 2>&1
if [ "$(hash_of "$tmp/at")" = "$ref" ]; then
    echo "ok $n - and trains at exactly $h bytes to the keep run's param_hash"
else
    echo "not ok $n - and trains at exactly ${h:-?} bytes to the keep run's param_hash"
    grep -v '^{' "$tmp/at" | tail -3 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 1 "$P" $small --act-policy "unit_input=elsewhere" > "$tmp/bad" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "unit_input=elsewhere': the action must be keep, host, storage or recompute" "$tmp/bad" &&
   ! grep -q '^{"step"' "$tmp/bad"; then
    echo "ok $n - an unknown action for unit_input is refused before a step (exit 2), saying which exist"
else
    echo "not ok $n - an unknown action for unit_input is refused before a step (exit $rc)"
    tail -2 "$tmp/bad" | sed 's/^/#   /'
fi

# the same configurations with and without the inputs moved
same_as_keep() {   # NP POLICY ARGS...: the param_hash of keep and of POLICY, equal
    np=$1; pol=$2; shift 2
    "$L" $np "$P" $small "$@" > "$tmp/k" 2>&1
    "$L" $np "$P" $small "$@" --act-policy "$pol" > "$tmp/p" 2>&1
    hk=$(hash_of "$tmp/k"); hp=$(hash_of "$tmp/p")
    test -n "$hk" && test "$hk" = "$hp"
}
n=$((n + 1))
if same_as_keep 4 "unit_input=host,*=keep" --shard 2; then
    echo "ok $n - hybrid sharding (4 ranks, 2 shard groups): unit_input=host gives keep's param_hash"
else echo "not ok $n - hybrid sharding: unit_input=host gives keep's param_hash"; fi
n=$((n + 1))
if same_as_keep 2 "unit_input=storage,*=recompute" --dtype bf16; then
    echo "ok $n - bf16 compute: unit_input=storage,*=recompute gives keep's param_hash"
else echo "not ok $n - bf16 compute: unit_input=storage,*=recompute gives keep's param_hash"; fi
n=$((n + 1))
if same_as_keep 2 "unit_input=host,*=keep" --accum 2; then
    echo "ok $n - two micro-batches: unit_input=host gives keep's param_hash"
else echo "not ok $n - two micro-batches: unit_input=host gives keep's param_hash"; fi
n=$((n + 1))
"$L" 2 "$P" $small --act-policy "unit_input=host,*=keep" --ckpt-dir "$tmp/ck" --stop-at 2 > "$tmp/s1" 2>&1
"$L" 2 "$P" $small --act-policy "unit_input=host,*=keep" --ckpt-dir "$tmp/ck" --resume > "$tmp/s2" 2>&1
if [ "$(hash_of "$tmp/s2")" = "$ref" ] && grep -q "resumed from .*step-00000002.h5" "$tmp/s2"; then
    echo "ok $n - stopped at step 2 and resumed with unit_input=host: keep's uninterrupted param_hash"
else
    echo "not ok $n - stopped at step 2 and resumed with unit_input=host: keep's param_hash ($(hash_of "$tmp/s2"), keep $ref)"
    grep -v '^{' "$tmp/s2" | tail -3 | sed 's/^/#   /'
fi
