#!/bin/sh
# gpt-train-recompute.t - recompute at name granularity in train_gpt: a
# block's recompute pass makes only the saves the runtime dropped, so
# qkv=host,*=recompute runs the q/k/v projection fewer times than
# *=recompute (exactly 2 N C 3C FLOPs per block and step fewer, N = batch
# x seq tokens, C = dim), with attention's saves held too it skips
# attention, and every policy still gives the keep run's param_hash. The
# counts are train_gpt's --json recompute_products and recompute_flops.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-recompute
layers=2 dim=32 batch=4 seq=16 steps=3
small="--threads 1 --layers $layers --dim $dim --heads 4 --batch $batch --seq $seq --steps $steps
       --json --eval-n 8 --spill-dir $tmp"
field() { sed -n "s/^{\"final\":true.*\"$2\":\"\\{0,1\\}\\([0-9a-f.e+]*\\)\"\\{0,1\\}[,}].*/\\1/p" "$tmp/$1"; }
run() {     # run NAME ARGS...: a 2-rank run's output in $tmp/NAME
    out="$tmp/$1"; shift
    "$L" 2 "$P" $small "$@" > "$out" 2>&1 || echo "# $out: exit $?"
}
echo "1..8"
run keep
run all --act-policy '*=recompute'
run qkv --act-policy 'qkv=host,*=recompute'
run qkvs --act-policy 'qkv=storage,attn_probs=host,attn_out=storage,*=recompute' --schedule naive
ref=$(field keep param_hash)
echo "# keep: $ref"
for r in all qkv qkvs; do
    n=$((n + 1))
    h=$(field $r param_hash)
    echo "# $r: param_hash $h, $(field $r recompute_products) products, $(field $r recompute_flops) FLOPs, $(field $r offload_bytes) bytes offloaded"
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then echo "ok $n - $r gives the keep run's param_hash"
    else echo "not ok $n - $r gives the keep run's param_hash"; tail -5 "$tmp/$r" | sed 's/^/#   /'; fi
done
pk=$(field keep recompute_products); pa=$(field all recompute_products)
pq=$(field qkv recompute_products); ps=$(field qkvs recompute_products)
fa=$(field all recompute_flops); fq=$(field qkv recompute_flops)
# per step: each block 4 products (qkv, attention, its projection, the MLP's
# first layer; never the MLP's output projection), the head's fused 3
[ "$pk" = 0 ] && echo "ok 4 - keep recomputes nothing" || echo "not ok 4 - keep recomputes nothing ($pk)"
want=$((steps * (layers * 4 + 3)))
[ "$pa" = "$want" ] && echo "ok 5 - *=recompute: $want products" || echo "not ok 5 - *=recompute: $want products, got $pa"
want=$((steps * (layers * 3 + 3)))
[ "$pq" = "$want" ] && echo "ok 6 - qkv=host: $want products (no q/k/v projection)" ||
    echo "not ok 6 - qkv=host: $want products (no q/k/v projection), got $pq"
want=$((steps * (layers * 2 + 3)))
[ "$ps" = "$want" ] && echo "ok 7 - q/k/v and attention held: $want products (neither the projection nor attention)" ||
    echo "not ok 7 - q/k/v and attention held: $want products, got $ps"
d=$(awk -v a="$fa" -v q="$fq" 'BEGIN { printf "%.0f", a - q }')
want=$((steps * layers * 2 * batch * seq * dim * 3 * dim))
[ "$d" = "$want" ] && echo "ok 8 - the FLOPs differ by the q/k/v projections' $want" ||
    echo "not ok 8 - the FLOPs differ by the q/k/v projections' $want, got $d ($fa - $fq)"
