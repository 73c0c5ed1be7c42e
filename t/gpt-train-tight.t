#!/bin/sh
# gpt-train-tight.t - at the smallest device budget a policy's plan accepts
# (the number the refusal names), train_gpt still trains on 2 ranks: no
# tier-full or fragmentation failure (allocations wait for offloads in
# flight), the peak stays within the budget, and the param_hash is the one
# of an unconstrained keep run. Also auto at the smallest budget of any plan.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-tight
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 4 --json --eval-n 8
       --spill-dir $tmp"
peak_of() { sed -n 's/^{"final":true.*"peak_device_bytes":\([0-9]*\),.*/\1/p' "$1"; }
set -- "*=host" "*=storage" "mlp_up=host,mlp_act=storage,qkv=recompute,*=keep" auto
echo "1..$(($# + 1))"
"$L" 2 "$P" $small > "$tmp/ref" 2>&1
ref=$(hash_of "$tmp/ref")
[ -n "$ref" ] && echo "ok 1 - the keep run trains ($ref)" || { echo "not ok 1 - the keep run trains"; tail -3 "$tmp/ref" | sed 's/^/#   /'; }
n=1
for pol in "$@"; do
    n=$((n + 1))
    # the refusal at a budget far too small names what this policy needs
    "$L" 2 "$P" $small --device-mem 600K --act-policy "$pol" > "$tmp/r$n" 2>&1
    need=$(sed -n 's/^{"refused":true,"needs_device_bytes":\([0-9]*\),.*/\1/p' "$tmp/r$n")
    if [ -z "$need" ]; then
        echo "not ok $n - '$pol': the refusal names the budget it needs"; tail -3 "$tmp/r$n" | sed 's/^/#   /'
        continue
    fi
    "$L" 2 "$P" $small --device-mem "$need" --act-policy "$pol" > "$tmp/p$n" 2>&1
    h=$(hash_of "$tmp/p$n"); pk=$(peak_of "$tmp/p$n")
    echo "# '$pol' at device_mem=$need: param_hash $h, peak ${pk:-?}"
    if [ -n "$ref" ] && [ "$h" = "$ref" ] && [ -n "$pk" ] && [ "$pk" -le "$need" ]; then
        echo "ok $n - '$pol' trains at exactly the budget it names, within it, same param_hash"
    else
        echo "not ok $n - '$pol' trains at exactly the budget it names, within it, same param_hash"
        grep -v '^{' "$tmp/p$n" | tail -3 | sed 's/^/#   /'
    fi
done
