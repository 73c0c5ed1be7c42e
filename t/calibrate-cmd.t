#!/bin/sh
# calibrate-cmd.t - `strata calibrate` writes a hardware file the planner reads:
# on 2 ranks with 2 threads each, the sgemm shapes with how they were split
# (a team of single-threaded calls, or the BLAS's own threads), the threads,
# the nonblocking collectives' busbw tables, the compute time a collective
# costs (collectives.compute_cost, >= 0) and the wait at each start
# (collectives.sync_s, under a second), and what a host-link copy costs the
# compute (host_link.compute_cost, >= 0); `strata plan`
# plans the example GPT on it, and on a copy whose compute costs are what
# busy shared cores measure (hundreds). Bad options exit 2 with a message. Timings
# are not asserted: they are this machine's at this moment.
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp calibrate
echo "1..7"
bad() { "$S" calibrate "$@" > "$tmp/out" 2> "$tmp/err"; test $? -eq 2 && grep -q -- "$1" "$tmp/err"; }
check "--threads 0 is refused" bad --threads 0
check "--shape 1,2 is refused" bad --shape 1,2
hw="$tmp/cpu.json"
STRATA_TEST_TIMEOUT=300 "$L" 2 "$S" calibrate --out "$hw" --dir "$tmp" --threads 2 --max 1M --disk 1M \
    > "$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
check "2 ranks x 2 threads: exit 0 and a JSON file" sh -c 'test "$1" = 0 && python3 -m json.tool "$2" > /dev/null' _ "$rc" "$hw"
check "sgemm shapes with their split, and 2 threads" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["compute"]
s = c["sgemm"]
assert s["threads"] == 2, s["threads"]
assert c["dense_flops"] > 0 and all(x["flops"] > 0 and x["split"] in ("team", "blas") for x in s["shapes"]), s
' "$hw"
check "busbw tables over 2 ranks; collectives' compute_cost >= 0, sync_s in [0, 1); the host link's compute_cost >= 0" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["collectives"]
assert c["compute_cost"] >= 0 and 0 <= c["sync_s"] < 1, c
assert json.load(open(sys.argv[1]))["host_link"]["compute_cost"] >= 0
for k in ("all_gather", "reduce_scatter", "all_to_all", "all_reduce"):
    assert all(p["ranks"] == 2 and p["busbw"] > 0 for p in c[k]["intra"]), (k, c[k])
' "$hw"
"$S" plan --model gpt-example --hw "$hw" --fsdp 2 --micro 16 --seq 16 --policy all > "$tmp/plan" 2>&1
check "strata plan reads it: five rows for the example GPT" sh -c 'test "$(grep -c "^\(keep\|recompute\|host\|auto\)  *\(lhs\|naive\)" "$1")" = 5' _ "$tmp/plan" ||
    { sed 's/^/# /' "$tmp/plan"; sed 's/^/# /' "$hw"; }
# ranks sharing busy cores (CI's make check -j) measure collectives and
# copies costing the compute hundreds of times their table time: read, not refused
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["collectives"]["compute_cost"] = 500.0
d["host_link"]["compute_cost"] = 250.0
json.dump(d, open(sys.argv[2], "w"))
' "$hw" "$tmp/busy.json"
"$S" plan --model gpt-example --hw "$tmp/busy.json" --fsdp 2 --micro 16 --seq 16 --policy all > "$tmp/plan2" 2>&1
check "a file measured on busy shared cores (compute_cost 500 and 250) is read: five rows" \
    sh -c 'test "$(grep -c "^\(keep\|recompute\|host\|auto\)  *\(lhs\|naive\)" "$1")" = 5' _ "$tmp/plan2" ||
    sed 's/^/# /' "$tmp/plan2"
