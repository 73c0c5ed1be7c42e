#!/bin/sh
# ckpt-stall.t - a checkpoint save through the public strata_ckpt_save,
# called by a plain C program (t/ckpt_rt, no FSDP model), is one recorded
# operation under ckpt_timeout: rank 1 hangs in the middle of writing the
# tensor data (test fault ckpt_stall@BYTES, base/test_fault.h) with
# ckpt_timeout 2 s, and the watchdog ends the job with exit 75, naming
# ckpt_save and ckpt_timeout, within the deadline + 10 s. The flight
# records hold the save as one operation (not one per layer of the call),
# and the previous checkpoint is still the one `latest` names and verifies.
# With ckpt_timeout long (600 s) and collective_timeout 2 s, the other
# rank's wait for it to agree ends the job within collective_timeout (plus
# the time it spent in the save itself) + 10 s, naming collective_timeout.
set -u
. "$top_srcdir/t/tap.sh"
tap_need_hooks
P="$top_builddir/t/ckpt_rt"
tap_tmp ckpt-stall
echo "1..8"
T=2
"$L" 2 "$P" save "$tmp/d" 1 > "$tmp/save1.out" 2>&1
check "setup: step 1 saved on 2 ranks" test -f "$tmp/d/step-00000001.h5"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_odls_base_sigkill_timeout=3
mkdir "$tmp/fl"
t0=$(date +%s.%N)
# mpirun itself under a timeout of its own: a save that hangs is the
# failure this test is about, and t/launch would only say "timed out"
# shellcheck disable=SC2046
STRATA_CKPT_TIMEOUT=$T STRATA_FLIGHT_DIR="$tmp/fl" STRATA_TEST_FAULT=ckpt_stall@600 \
    timeout 120 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) "$P" save "$tmp/d" 2 \
    > "$tmp/stall.out" 2> "$tmp/stall.err"
rc=$?
t1=$(date +%s.%N)
took=$(echo "$t1 - $t0" | bc)
echo "# rank 1 stalled inside strata_ckpt_save: exit $rc after $took s"
grep watchdog "$tmp/stall.err" | sed 's/^/# /'
check "the watchdog ends the job with exit 75" test "$rc" -eq 75
check "within ckpt_timeout + 10 s" awk -v t="$took" -v b="$T" 'BEGIN { exit !(t < b + 10) }'
check "the report names ckpt_save and ckpt_timeout" \
    grep -q "rank [01]: watchdog: ckpt_save (group world, .*) not complete after [0-9.]* s (ckpt_timeout $T s)" \
    "$tmp/stall.err"
one_op() {  # each record that exists holds the save as one open ckpt_save operation
    ls "$tmp/fl"/flight.*.json > /dev/null 2>&1 || return 1
    for f in "$tmp/fl"/flight.*.json; do
        python3 - "$f" <<'PY' || return 1
import json, sys
ops = [e for e in json.load(open(sys.argv[1]))["entries"] if e["kind"] == "ckpt_save"]
sys.exit(not (len(ops) == 1 and ops[0]["state"] != "done"))
PY
    done
}
check "the flight records hold the save as one unfinished ckpt_save operation" one_op
check "latest still names step 1, which verifies; no step 2 under its final name" \
    sh -c 'test "$(cat "$1/latest")" = step-00000001.h5 && test ! -e "$1/step-00000002.h5" &&
           "$2" ckpt verify "$1/step-00000001.h5" > /dev/null' _ "$tmp/d" "$S"

t0=$(date +%s.%N)
# shellcheck disable=SC2046
STRATA_CKPT_TIMEOUT=600 STRATA_COLLECTIVE_TIMEOUT=$T STRATA_FLIGHT_DIR="$tmp/fl" STRATA_TEST_FAULT=ckpt_stall@600 \
    timeout 120 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) "$P" save "$tmp/d" 3 \
    > "$tmp/stall2.out" 2> "$tmp/stall2.err"
rc=$?
t1=$(date +%s.%N)
took=$(echo "$t1 - $t0" | bc)
echo "# rank 1 stalled, ckpt_timeout 600 s, collective_timeout $T s: exit $rc after $took s"
grep watchdog "$tmp/stall2.err" | sed 's/^/# /'
check "ckpt_timeout 600 s, collective_timeout $T s: exit 75 within collective_timeout + 10 s" \
    sh -c 'test "$1" -eq 75 && awk -v t="$2" -v b="$3" "BEGIN { exit !(t < b + 10) }"' _ "$rc" "$took" "$T"
check "the waiting rank's report names its wait and collective_timeout" \
    grep -q "rank 0: watchdog: mpi (group world, .*) not complete after [0-9.]* s (collective_timeout $T s)" \
    "$tmp/stall2.err"
