#!/bin/sh
# calibrate-mfu.t - bench/calibrate_mfu writes a CPU hardware file's
# compute.mfu from one block of the example GPT through its CPU kernels:
# on a file `strata calibrate` wrote on 1 rank, the mfu lies in (0, 1], the
# figures it came from stand beside it and give it by the formula of
# docs/planner.md (a block faster than the sgemm: mfu 1 and its rate as
# dense_flops, the sgemm's kept in mfu_from), the rest of the file is unchanged, and `strata plan`
# reads the file. Bad input exits 2 with a message and leaves the file as
# it was: a missing option, a model of another family, a sequence past the
# model's, a file without the rates, and a file whose dense_flops is not
# this machine's (a GPU's: the mfu would be far below the planner's 0.01).
# Timings are not asserted: they are this machine's at this moment.
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp calibrate-mfu
M="$top_builddir/bench/calibrate_mfu"
echo "1..9"
# bad MESSAGE ARGS...: exit 2 and MESSAGE on stderr
bad() { want=$1; shift; "$M" "$@" > "$tmp/out" 2> "$tmp/err"; test $? -eq 2 && grep -q -- "$want" "$tmp/err"; }
hw="$tmp/cpu.json"
STRATA_TEST_TIMEOUT=300 "$L" 1 "$S" calibrate --out "$hw" --dir "$tmp" --threads 2 --max 1M --disk 1M \
    > "$tmp/out" 2>&1 || sed 's/^/# /' "$tmp/out"
cp "$hw" "$tmp/before.json"
check "a missing --seq is refused" bad "--seq is required" --hw "$hw" --model gpt-example --micro 4
check "a model of another family than gpt is refused, naming it" bad "family (gpt)" --hw "$hw" \
    --model llama3-8b --micro 1 --seq 8
check "--seq longer than the model's is refused" bad "outside 1..64" --hw "$hw" --model gpt-example \
    --micro 1 --seq 65
echo '{"name": "x"}' > "$tmp/empty.json"
check "a file without dense_flops and the hbm bandwidth is refused" bad "strata calibrate" \
    --hw "$tmp/empty.json" --model gpt-example --micro 4 --seq 16
cp "$top_srcdir/share/hw/h100-hgx.json" "$tmp/gpu.json"
STRATA_TEST_TIMEOUT=120 "$L" 1 "$M" --hw "$tmp/gpu.json" --model gpt-example --micro 4 --seq 16 --threads 1 \
    > "$tmp/out" 2> "$tmp/err"
rc=$?
check "a GPU's file is refused (not this machine's rate) and left as it was" sh -c \
    'test "$1" = 2 && grep -q "not this machine" "$2" && cmp -s "$3" "$4"' _ "$rc" "$tmp/err" "$tmp/gpu.json" \
    "$top_srcdir/share/hw/h100-hgx.json"
check "the bad inputs left the calibrated file as it was" cmp -s "$hw" "$tmp/before.json"
STRATA_TEST_TIMEOUT=120 "$L" 1 "$M" --hw "$hw" --model gpt-example --micro 8 --seq 16 --threads 2 \
    > "$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
check "1 rank x 2 threads: exit 0" test "$rc" = 0
check "mfu in (0, 1], the figures it came from (the forward and backward apart) and their formula; the rest of the file unchanged" python3 -c '
import json, sys
d, before = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
c = d["compute"]
f = c["mfu_from"]
assert f["model"] == "gpt-example" and f["micro_batch"] == 8 and f["seq"] == 16, f
assert f["block_s"] > 0 and f["matrix_s_at_dense"] > 0 and f["elementwise_s"] > 0, f
# the forward and the backward timed apart, the block their sum
assert f["forward_s"] > 0 and f["backward_s"] > 0, f
assert abs(f["forward_s"] + f["backward_s"] - f["block_s"]) <= 1e-9 * f["block_s"], f
left = max(f["block_s"] - f["elementwise_s"], 0.1 * f["block_s"])
assert 0 < c["mfu"] <= 1 and abs(c["mfu"] - min(1, f["matrix_s_at_dense"] / left)) < 1e-9 * c["mfu"], (c["mfu"], f)
# a block faster than the sgemm: mfu 1 at the block'"'"'s rate, the sgemm'"'"'s kept beside it
sgemm = before["compute"]["dense_flops"]
assert f["sgemm_dense_flops"] == sgemm, f
assert c["dense_flops"] == sgemm or (c["mfu"] == 1 and c["dense_flops"] > sgemm), (c["dense_flops"], sgemm)
del c["mfu_from"]; c["mfu"] = 1.0; c["dense_flops"] = sgemm
assert d == before, "calibrate_mfu changed more than compute.mfu"
' "$hw" "$tmp/before.json"
"$S" plan --model gpt-example --hw "$hw" --fsdp 1 --micro 8 --seq 16 --policy all > "$tmp/plan" 2>&1
check "strata plan reads it: five rows for the example GPT" sh -c \
    'test "$(grep -c "^\(keep\|recompute\|host\|auto\)  *\(lhs\|naive\)" "$1")" = 5' _ "$tmp/plan"
