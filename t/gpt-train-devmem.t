#!/bin/sh
# gpt-train-devmem.t - what the CPU can check of the device's memory
# report and of reduce16 (docs/device-check.md's device-memory row runs the
# rest on a GPU): train_gpt's final JSON line carries device_init_bytes,
# device_nccl_bytes, device_region_bytes, device_used_bytes and
# device_outside_bytes, null on the host backend (no device to measure);
# --reduce-dtype bf16 trains; reduce16=native is ignored on the mpi backend
# with a warning naming it, so the run's param_hash is the wide run's.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-devmem
small="--threads 1 --layers 1 --dim 32 --heads 4 --batch 2 --seq 16 --steps 3 --json
       --eval-n 8 --spill-dir $tmp"
final() { grep '^{"final":true' "$tmp/$1"; }
echo "1..5"
"$L" 1 "$P" $small > "$tmp/one" 2>&1 || echo "# one: exit $?"
n=1
fields="device_init_bytes device_nccl_bytes device_region_bytes device_used_bytes device_outside_bytes"
bad=""
for f in $fields; do
    final one | grep -q "\"$f\":null[,}]" || bad="$bad $f"
done
[ -z "$bad" ] && [ -n "$(final one)" ] && echo "ok 1 - host backend: the final line's device fields are present and null" \
    || { echo "not ok 1 - host backend: device fields present and null (missing or not null:$bad)"; tail -3 "$tmp/one" | sed 's/^/#   /'; }
if command -v jq > /dev/null; then
    c=$(final one | jq -r "[$(echo $fields | sed 's/\([a-z_]*\)/has("\1")/g; s/ /, /g')] | all")
    [ "$c" = true ] && echo "ok 2 - the final line is JSON with every device field (jq)" \
        || echo "not ok 2 - the final line is JSON with every device field (jq: $c)"
else
    echo "ok 2 # SKIP no jq"
fi
hash() { final "$1" | sed -n 's/.*"param_hash":"\([0-9a-f]*\)".*/\1/p'; }
"$L" 2 "$P" $small --reduce-dtype bf16 > "$tmp/wide" 2>&1 || echo "# wide: exit $?"
STRATA_REDUCE16=native "$L" 2 "$P" $small --reduce-dtype bf16 > "$tmp/native" 2>&1 \
    || echo "# native: exit $?"
w=$(hash wide); nh=$(hash native)
[ -n "$w" ] && echo "ok 3 - --reduce-dtype bf16 trains on 2 ranks ($w)" \
    || { echo "not ok 3 - --reduce-dtype bf16 trains on 2 ranks"; tail -3 "$tmp/wide" | sed 's/^/#   /'; }
grep -q "reduce16=native is ignored: the mpi backend" "$tmp/native" \
    && echo "ok 4 - reduce16=native on the mpi backend: ignored, with a warning naming it" \
    || { echo "not ok 4 - reduce16=native ignored with a warning"; head -3 "$tmp/native" | sed 's/^/#   /'; }
[ -n "$w" ] && [ "$w" = "$nh" ] && echo "ok 5 - and the run is the wide run, bit for bit (param_hash)" \
    || echo "not ok 5 - native on mpi gives the wide run's param_hash ($w vs $nh)"
