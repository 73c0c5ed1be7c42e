#!/bin/sh
# gpt-train-policy.t - every --act-policy (keep, host, storage, recompute,
# auto, a mix) and both --schedule modes give the same param_hash as plain
# keep after a few steps on 2 ranks: where an activation lives must never
# change the numbers.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-policy
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 4 --json --eval-n 8
       --spill-dir $tmp"
run() {     # run NAME ARGS...: the param_hash of a 2-rank run, or "failed"
    out="$tmp/$1"; shift
    if "$L" 2 "$P" $small "$@" > "$out" 2>&1; then hash_of "$out"; else echo failed; fi
}
set -- "*=keep" "mlp_up=host,mlp_act=host,*=keep" "*=host" "*=storage" "*=recompute" \
       "auto" "qkv=host,attn_probs=storage,mlp_up=recompute,head_dx=host,*=keep"
echo "1..$(($# + 2))"
ref=$(run ref)
echo "# keep (default): $ref"
for pol in "$@"; do
    n=$((n + 1))
    h=$(run "p$n" --act-policy "$pol")
    echo "# --act-policy '$pol': $h"
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then echo "ok $n - --act-policy '$pol' gives the keep run's param_hash"
    else echo "not ok $n - --act-policy '$pol' gives the keep run's param_hash"; sed 's/^/#   /' "$tmp/p$n" | tail -5; fi
done
for sched in naive lhs; do
    n=$((n + 1))
    h=$(run "s$n" --act-policy "mlp_up=host,*=storage" --schedule "$sched")
    echo "# --schedule $sched: $h"
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then echo "ok $n - --schedule $sched gives the same param_hash"
    else echo "not ok $n - --schedule $sched gives the same param_hash"; fi
done
