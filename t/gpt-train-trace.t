#!/bin/sh
# gpt-train-trace.t - train_gpt --trace FILE.json writes FILE.<rank>.json on
# every rank and `strata trace` reads them back; with a host policy the
# --json step objects carry the activation transfer statistics (transfer_s,
# exposed_transfer_s, overlap_frac in [0,1], offload_bytes > 0,
# predicted_step_s > 0) and so does the final object; with keep they show
# no transfers; a reduce-scatter's span ends when it was seen complete,
# not at the step's end. The transfer runs use the naive schedule: with the default
# 4 GiB device budget lhs keeps every offload on device (it fits, and is
# faster so), which the last test checks, and says so once.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-trace
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
echo "1..9"
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
# 4 layers, keep: the first reduce-scatter of the backward (the head's,
# started after its backward) is seen complete while later units still run
# their backward (the callbacks' progress calls test it), so its span ends
# before the last backward starts; a span that ran to the step's end hid that
"$L" 2 "$P" $small --layers 4 --trace "$tmp/rs.json" > "$tmp/rs" 2>&1
python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
step = [e for e in ev if e.get("name") == "step"][-1]
t0, t1 = step["ts"], step["ts"] + step["dur"]
inside = lambda n: sorted((e for e in ev if e.get("name") == n and e.get("ph") == "X" and t0 <= e["ts"] <= t1),
                          key=lambda e: e["ts"])
rs, b = inside("RS"), inside("B")
end = rs[0]["ts"] + rs[0]["dur"] if rs else None
print("#   first RS ends at %s us, last B starts at %s us, step ends at %s" % (end, b[-1]["ts"] if b else None, t1))
sys.exit(0 if rs and b and end < b[-1]["ts"] else 1)' "$tmp/rs.0.json" &&
    echo "ok 9 - the first reduce-scatter's span ends before the last backward starts" ||
    echo "not ok 9 - the first reduce-scatter's span ends before the last backward starts"
