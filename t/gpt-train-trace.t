#!/bin/sh
# gpt-train-trace.t - train_gpt --trace FILE.json writes FILE.<rank>.json on
# every rank and `strata trace` reads them back; with a host policy the
# --json step objects carry the activation transfer statistics (transfer_s,
# exposed_transfer_s, overlap_frac in [0,1], offload_bytes > 0,
# predicted_step_s > 0) and so does the final object; with keep they show
# no transfers. The transfer runs use the naive schedule: with the default
# 4 GiB device budget lhs keeps every offload on device (it fits, and is
# faster so), which the last test checks, and says so once.
set -u
L="$top_srcdir/t/launch"; P="$top_builddir/examples/gpt/train_gpt"; S="$top_builddir/tools/strata"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpt-trace.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
echo "1..8"
"$L" 2 "$P" $small --act-policy "mlp_up=host,qkv=storage,*=keep" --schedule naive --trace "$tmp/tr.json" \
    > "$tmp/out" 2>&1; rc=$?
[ "$rc" -eq 0 ] && echo "ok 1 - a run with --trace succeeds" || { echo "not ok 1 - a run with --trace succeeds (exit $rc)"; sed 's/^/#   /' "$tmp/out" | tail -5; }
[ -s "$tmp/tr.0.json" ] && [ -s "$tmp/tr.1.json" ] && echo "ok 2 - one trace file per rank (tr.0.json, tr.1.json)" ||
    { echo "not ok 2 - one trace file per rank (tr.0.json, tr.1.json)"; ls "$tmp" | sed 's/^/#   /'; }
"$S" trace "$tmp/tr.0.json" "$tmp/tr.1.json" > "$tmp/rep" 2>&1; rc=$?
sed 's/^/#   /' "$tmp/rep" | head -8
[ "$rc" -eq 0 ] && grep -qi "overlap" "$tmp/rep" && echo "ok 3 - strata trace reads them and reports overlap" ||
    echo "not ok 3 - strata trace reads them and reports overlap (exit $rc)"
# field NAME of the lines matching RE: its values, one a line
field() { grep "$1" "$tmp/$3" | sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p"; }
steps=$(grep -c '^{"step"' "$tmp/out")
bad=$(field '^{"step"' offload_bytes out | awk '$1 <= 0' | wc -l)
badov=$(field '^{"step"' overlap_frac out | awk '$1 < 0 || $1 > 1' | wc -l)
xs=$(field '^{"step"' transfer_s out | awk '$1 > 0' | wc -l)
[ "$steps" -eq 3 ] && [ "$bad" -eq 0 ] && [ "$badov" -eq 0 ] && [ "$xs" -eq 3 ] &&
    echo "ok 4 - every step object has offload_bytes > 0, transfer_s > 0, overlap_frac in [0,1]" ||
    echo "not ok 4 - every step object has offload_bytes > 0, transfer_s > 0, overlap_frac in [0,1] ($steps steps, $bad/$xs/$badov)"
pr=$(field '^{"step"' predicted_step_s out | awk '$1 > 0' | wc -l)
[ "$pr" -eq 3 ] && echo "ok 5 - every step object has predicted_step_s > 0" || echo "not ok 5 - every step object has predicted_step_s > 0 ($pr of 3)"
ft=$(field '^{"final"' transfer_s out); fe=$(field '^{"final"' exposed_transfer_s out)
[ -n "$ft" ] && [ -n "$fe" ] && awk "BEGIN{exit !($ft > 0 && $fe >= 0 && $fe <= $ft)}" &&
    echo "ok 6 - the final object has transfer_s > 0 and exposed_transfer_s within it" ||
    echo "not ok 6 - the final object has transfer_s > 0 and exposed_transfer_s within it ('$ft' '$fe')"
"$L" 2 "$P" $small > "$tmp/keep" 2>&1
kb=$(field '^{"step"' offload_bytes keep | awk '$1 != 0' | wc -l)
ks=$(grep -c '^{"step"' "$tmp/keep")
[ "$ks" -eq 3 ] && [ "$kb" -eq 0 ] && echo "ok 7 - with keep no step offloads a byte" ||
    echo "not ok 7 - with keep no step offloads a byte ($ks steps, $kb with bytes)"
"$L" 2 "$P" $small --act-policy "mlp_up=host,qkv=storage,*=keep" > "$tmp/lhs" 2>&1
lb=$(field '^{"step"' offload_bytes lhs | awk '$1 != 0' | wc -l)
ls=$(grep -c '^{"step"' "$tmp/lhs"); said=$(grep -c "keeps every offload on device" "$tmp/lhs")
hk=$(sed -n 's/^{"final":true.*"param_hash":"\([0-9a-f]*\)".*/\1/p' "$tmp/keep")
hl=$(sed -n 's/^{"final":true.*"param_hash":"\([0-9a-f]*\)".*/\1/p' "$tmp/lhs")
[ "$ls" -eq 3 ] && [ "$lb" -eq 0 ] && [ "$said" -eq 1 ] && [ -n "$hk" ] && [ "$hk" = "$hl" ] &&
    echo "ok 8 - lhs with room keeps every offload on device, says so once, same param_hash" ||
    echo "not ok 8 - lhs with room keeps every offload on device, says so once, same param_hash ($ls steps, $lb with bytes, said $said, '$hk' '$hl')"
