#!/bin/sh
# gpt-train-regen.t - a unit's input recomputed (unit_input=recompute): the
# odd units' inputs are dropped after their forward and made again before
# their backward by the unit before, run once more from its kept input.
# With every placement of the other saves and on both schedules it trains
# to the keep run's param_hash; on a deeper model with the state off the
# device it needs a smaller device budget than "*=recompute" (the inputs
# kept), trains at exactly that budget and peaks lower; with hybrid sharding, bf16
# compute and two micro-batches the same holds, and a run stopped at step
# 2 resumes on 2 ranks and on 1 to the param_hash of a keep run resumed
# the same way.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-regen
small="--threads 1 --layers 3 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
need_of() { sed -n 's/^{"refused":true,"needs_device_bytes":\([0-9]*\),.*/\1/p' "$1"; }
echo "1..10"
"$L" 2 "$P" $small > "$tmp/keep" 2>&1
ref=$(hash_of "$tmp/keep")
n=0
for run in "unit_input=recompute,*=recompute lhs" "unit_input=recompute,*=host naive" \
           "unit_input=recompute,*=storage lhs" "unit_input=recompute,*=keep lhs"; do
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

# deeper, the state on the host: the inputs are a larger part of the device
deep="--threads 1 --layers 8 --dim 32 --heads 4 --batch 8 --seq 32 --steps 2 --json
      --eval-n 8 --spill-dir $tmp --state-place *=host"
"$L" 2 "$P" $deep > "$tmp/dkeep" 2>&1
dref=$(hash_of "$tmp/dkeep")
"$L" 2 "$P" $deep --act-policy "*=recompute" --device-mem 100K > "$tmp/r" 2>&1
"$L" 2 "$P" $deep --act-policy "unit_input=recompute,*=recompute" --device-mem 100K > "$tmp/g" 2>&1
r=$(need_of "$tmp/r"); g=$(need_of "$tmp/g")
n=$((n + 1))
if [ -n "$r" ] && [ -n "$g" ] && [ "$g" -lt "$r" ]; then
    echo "ok $n - 8 layers: unit_input=recompute,*=recompute needs $g bytes, *=recompute $r"
else
    echo "not ok $n - 8 layers: unit_input=recompute,*=recompute needs less than *=recompute ($g, $r)"
    grep -v '^{"step' "$tmp/g" | tail -2 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 2 "$P" $deep --act-policy "unit_input=recompute,*=recompute" --device-mem "${g:-1}" > "$tmp/at" 2>&1
if [ -n "$dref" ] && [ "$(hash_of "$tmp/at")" = "$dref" ]; then
    echo "ok $n - and trains at exactly $g bytes to that model's keep param_hash"
else
    echo "not ok $n - and trains at exactly ${g:-?} bytes to the keep param_hash ($(hash_of "$tmp/at"), $dref)"
    grep -v '^{' "$tmp/at" | tail -3 | sed 's/^/#   /'
fi
peak_of() { grep '^{"step"' "$1" | tail -1 | sed -n 's/.*"peak_device_bytes":\([0-9]*\).*/\1/p'; }
"$L" 2 "$P" $deep --act-policy "*=recompute" --device-mem "${r:-1}" > "$tmp/atr" 2>&1
pg=$(peak_of "$tmp/at"); pr=$(peak_of "$tmp/atr")
n=$((n + 1))
if [ -n "$pg" ] && [ -n "$pr" ] && [ "$pg" -lt "$pr" ]; then
    echo "ok $n - its measured device peak is lower too: $pg bytes against $pr"
else
    echo "not ok $n - its measured device peak is lower too ($pg, $pr)"
fi

same_as_keep() {   # NP POLICY ARGS...: the param_hash of keep and of POLICY, equal
    np=$1; pol=$2; shift 2
    "$L" $np "$P" $small "$@" > "$tmp/k" 2>&1
    "$L" $np "$P" $small "$@" --act-policy "$pol" > "$tmp/p" 2>&1
    hk=$(hash_of "$tmp/k"); hp=$(hash_of "$tmp/p")
    test -n "$hk" && test "$hk" = "$hp"
}
n=$((n + 1))
if same_as_keep 4 "unit_input=recompute,*=recompute" --shard 2; then
    echo "ok $n - hybrid sharding (4 ranks, 2 shard groups): keep's param_hash"
else echo "not ok $n - hybrid sharding: keep's param_hash ($hp, $hk)"; fi
n=$((n + 1))
if same_as_keep 2 "unit_input=recompute,qkv=host,*=recompute" --dtype bf16 --accum 2; then
    echo "ok $n - bf16 compute, two micro-batches: keep's param_hash"
else echo "not ok $n - bf16 compute, two micro-batches: keep's param_hash ($hp, $hk)"; fi

# stop at step 2, resume on 2 ranks and on 1: as keep does
gb="--global-batch 8"
stop_resume() {   # POLICY NP: the param_hash after a stop at 2 and a resume on NP ranks
    rm -rf "$tmp/ck"
    "$L" 2 "$P" $small $gb --act-policy "$1" --stop-at 2 --ckpt-dir "$tmp/ck" --ckpt-every 2 \
        > "$tmp/stop" 2>&1
    "$L" $2 "$P" $small $gb --act-policy "$1" --ckpt-dir "$tmp/ck" --resume > "$tmp/res" 2>&1
    grep -q "resumed from .*step-00000002.h5" "$tmp/res" && hash_of "$tmp/res"
}
n=$((n + 1))
k2=$(stop_resume "*=keep" 2); g2=$(stop_resume "unit_input=recompute,*=recompute" 2)
k1=$(stop_resume "*=keep" 1); g1=$(stop_resume "unit_input=recompute,*=recompute" 1)
if [ -n "$k2" ] && [ "$k2" = "$g2" ] && [ -n "$k1" ] && [ "$k1" = "$g1" ]; then
    echo "ok $n - stopped at step 2, resumed on 2 ranks and on 1: keep's param_hash each ($k2, $k1)"
else
    echo "not ok $n - stop and resume on 2 and 1 ranks: keep's param_hash ($g2 vs $k2, $g1 vs $k1)"
    grep -v '^{' "$tmp/res" | tail -3 | sed 's/^/#   /'
fi
