#!/bin/sh
# gpt-train-straggler.t - a rank persistently slower than the others is
# named once. train_gpt on 3 ranks, straggler_every 10 of 20 steps; the
# test fault slow_rank@1 (base/test_fault.h) makes rank 1 sleep 5 ms in
# every unit callback. Asserted: rank 0 names rank 1, exactly once over
# two windows, with its busy seconds beside the others' median; every
# rank writes its flight record then, and `strata flight` prints the note
# once; no rank is named (and no record written) in the same run without
# the fault, nor with straggler_every 0, which turns the check off; a
# ratio below 1 is refused. Then the same slow rank also hangs in a
# checkpoint save (ckpt_stall), and the flight records the watchdog
# leaves still carry the note that names rank 1.
set -u
. "$top_srcdir/t/tap.sh"
tap_need_hooks
P="$top_builddir/examples/gpt/train_gpt"
[ -x "$P" ] || tap_skip_all "train_gpt is not built (configure found no CBLAS)"
tap_tmp straggler
echo "1..8"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
small="--threads 1 --layers 1 --dim 16 --heads 2 --batch 3 --steps 20 --eval-n 8"
line="straggler: rank 1 busy [0-9.]* s over steps [0-9]*-[0-9]*, [0-9.]*x the other ranks' median [0-9.]* s (compute [0-9.]* s, .*waiting for collectives [0-9.]* s"

mkdir "$tmp/sl" "$tmp/ev"
STRATA_TEST_FAULT=slow_rank@1 STRATA_FLIGHT_DIR="$tmp/sl" "$L" 3 "$P" $small \
    --set straggler_every=10 > "$tmp/slow.out" 2>&1
rc=$?
grep straggler "$tmp/slow.out" | sed 's/^/# /'
check "a slowed rank 1 is named once, on rank 0, with its numbers" \
    sh -c 'test "$1" -eq 0 && test "$(grep -c straggler "$2")" -eq 1 &&
           grep -q "r0 WARN.*$3" "$2"' _ "$rc" "$tmp/slow.out" "$line"
check "every rank wrote its flight record when rank 1 was named" \
    sh -c 'for r in 0 1 2; do grep -q "\"reason\": \"straggler\"" "$1/flight.$r.json" || exit 1; done' \
    _ "$tmp/sl"
"$S" flight "$tmp/sl"/flight.*.json > "$tmp/slflight.out" 2>&1
check "strata flight on those records prints the note once" \
    sh -c 'test "$(grep -c "^note: straggler" "$1")" -eq 1 && grep -q "^note: $2" "$1"' \
    _ "$tmp/slflight.out" "$line"

STRATA_FLIGHT_DIR="$tmp/ev" "$L" 3 "$P" $small --set straggler_every=10 > "$tmp/even.out" 2>&1
rc=$?
grep straggler "$tmp/even.out" | sed 's/^/# /'
check "a balanced run names no rank and writes no flight record" \
    sh -c 'test "$1" -eq 0 && ! grep -q straggler "$2" && ! ls "$3"/flight.* > /dev/null 2>&1' \
    _ "$rc" "$tmp/even.out" "$tmp/ev"

STRATA_TEST_FAULT=slow_rank@1 "$L" 3 "$P" $small --set straggler_every=0 > "$tmp/off.out" 2>&1
rc=$?
check "straggler_every 0 turns the check off" \
    sh -c 'test "$1" -eq 0 && ! grep -q straggler "$2"' _ "$rc" "$tmp/off.out"

"$L" 2 "$P" $small --set straggler_ratio=0.5 > "$tmp/bad.out" 2>&1
rc=$?
grep straggler_ratio "$tmp/bad.out" | sed 's/^/# /'
check "straggler_ratio below 1 is refused: exit 2, its minimum said once" \
    sh -c 'test "$1" -eq 2 && test "$(grep -c "straggler_ratio.*less than its minimum, 1 " "$2")" -eq 1' \
    _ "$rc" "$tmp/bad.out"

# the watchdog's records: rank 1 is slow, then hangs in the save at step 10
mkdir "$tmp/fl"
# shellcheck disable=SC2046
OMPI_MCA_odls_base_sigkill_timeout=3 STRATA_TEST_FAULT=slow_rank@1,ckpt_stall@1 \
    STRATA_CKPT_TIMEOUT=2 STRATA_FLIGHT_DIR="$tmp/fl" \
    timeout 120 "${MPIRUN:-mpirun}" -np 3 $("$L" --flags) "$P" $small \
    --set straggler_every=10 --ckpt-dir "$tmp/ck" --ckpt-every 10 > "$tmp/stall.out" 2>&1
rc=$?
echo "# slowed, then stalled in the save: exit $rc"
check "setup: the watchdog ends the job (exit 75)" test "$rc" -eq 75
"$S" flight "$tmp/fl"/flight.*.json > "$tmp/flight.out" 2>&1
sed 's/^/# /' "$tmp/flight.out"
check "the watchdog's records keep the note: strata flight prints it once" \
    sh -c 'test "$(grep -c "^note: straggler" "$1")" -eq 1 && grep -q "^note: $2" "$1"' \
    _ "$tmp/flight.out" "$line"
