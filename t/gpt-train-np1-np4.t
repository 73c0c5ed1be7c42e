#!/bin/sh
# gpt-train-np1-np4.t - train_gpt on 1 rank and on 4 ranks (and on 2 ranks
# with 2 micro-batches, and 4 ranks in 2 shard groups) with the same global
# batch reaches the same loss within 1e-4 after 20 steps; the loss falls;
# the JSON lines have their fields; bf16 compute trains too; a text file
# (--data) trains with periodic and final validation losses.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-train
echo "1..8"
small="--threads 1 --layers 2 --dim 32 --heads 4 --steps 20 --lr 3e-3 --json --eval-n 20"
run() { out=$1; shift; "$L" "$@" > "$tmp/$out" 2>&1; rc=$?; sed 's/^/# /' "$tmp/$out" | tail -4; return $rc; }
last_loss() { awk -F'"loss":' '/^\{"step"/ { split($2, a, ","); l = a[1] } END { print l }' "$tmp/$1"; }
first_loss() { awk -F'"loss":' '/^\{"step":1,/ { split($2, a, ","); print a[1] }' "$tmp/$1"; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d < 1e-4) }'; }

check "1 rank, batch 8 runs" run np1 1 "$P" $small --batch 8
check "4 ranks, batch 2 runs" run np4 4 "$P" $small --batch 2
echo "# losses after 20 steps: np1 $(last_loss np1), np4 $(last_loss np4)"
check "1 and 4 ranks reach the same loss within 1e-4" close "$(last_loss np1)" "$(last_loss np4)"
run np2a 2 "$P" $small --batch 2 --accum 2
run np4s 4 "$P" $small --batch 2 --shard 2
echo "# 2 ranks x 2 micro-batches: $(last_loss np2a); 4 ranks in 2 shard groups: $(last_loss np4s)"
both_close() { close "$(last_loss np1)" "$(last_loss np2a)" && close "$(last_loss np1)" "$(last_loss np4s)"; }
check "2 ranks x 2 micro-batches and hybrid sharding match too" both_close
check "the loss falls by more than 1 nat in 20 steps" \
    awk -v a="$(first_loss np4)" -v b="$(last_loss np4)" 'BEGIN { exit !(a != "" && b + 1.0 < a) }'
fields_ok() {
    grep -q '^{"step":20,"loss":[0-9.e+-]*,.*"tokens_per_s":[0-9.e+-]*,"step_s":[0-9.e+-]*,"peak_device_bytes":[0-9]*,"peak_host_bytes":[0-9]*,"peak_storage_bytes":[0-9]*,"transfer_s":[0-9.e+-]*,"exposed_transfer_s":[0-9.e+-]*,"overlap_frac":[0-9.e+-]*,"offload_bytes":[0-9]*,"predicted_step_s":[0-9.e+-]*,"model_step_s":[0-9.e+-]*,"compute_s":[0-9.e+-]*,"exposed_comm_s":[0-9.e+-]*,"mem_planned":\(true\|false\),"mem_plan_bytes":[0-9]*,"state_read_bytes":[0-9]*,"state_written_bytes":[0-9]*,"state_wait_s":[0-9.e+-]*,"optim_s":[0-9.e+-]*}$' "$tmp/np4" &&
    grep -q '^{"final":true,"steps":20,"loss":[0-9.e+-]*,"accuracy":[0-9.e+-]*,"param_hash":"[0-9a-f]\{16\}","peak_device_bytes":[0-9]*,"peak_host_bytes":[0-9]*,"peak_storage_bytes":[0-9]*,"tokens_per_s":[0-9.e+-]*,"transfer_s":[0-9.e+-]*,"exposed_transfer_s":[0-9.e+-]*,"overlap_frac":[0-9.e+-]*,"offload_bytes":[0-9]*,"predicted_step_s":[0-9.e+-]*,"recompute_products":[0-9]*,"recompute_flops":[0-9.e+-]*,"device_init_bytes":null,"device_nccl_bytes":null,"device_region_bytes":null,"device_used_bytes":null,"device_outside_bytes":null}$' "$tmp/np4" &&
    grep -q '^held-out accuracy: [0-9]*\.[0-9]%$' "$tmp/np4"
}
check "per-step and final JSON objects, and the accuracy line" fields_ok
run bf16 2 "$P" $small --batch 4 --dtype bf16
echo "# bf16 compute: $(last_loss bf16)"
check "bf16 compute trains to within 0.05 of f32" \
    awk -v a="$(last_loss np1)" -v b="$(last_loss bf16)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d < 0.05) }'
awk 'BEGIN { for (i = 0; i < 300; i++) print "the quick brown fox jumps over the lazy dog " i }' > "$tmp/data.txt"
run text 2 "$P" --threads 1 --layers 2 --dim 32 --heads 4 --seq 32 --batch 4 --steps 10 --json \
    --eval-every 5 --val-batches 2 --data "$tmp/data.txt"
text_ok() {
    grep -q '^step  *5  val loss [0-9.]*$' "$tmp/text" &&
    grep -q '^{"final":true,"steps":10,"loss":[0-9.e+-]*,"val_loss":[0-9.e+-]*,"param_hash":"[0-9a-f]\{16\}"' "$tmp/text" &&
    grep -q '^val loss: [0-9]*\.[0-9]*$' "$tmp/text"
}
check "--data FILE: validation loss every --eval-every steps and at the end" text_ok
