#!/bin/sh
# hosts-partition.t - a host unplugged mid-run (its link down at the
# switch: no connection is reset, as when a host loses power): 4 ranks on
# h1+h2 with collective_timeout 3 s; every rank, on both sides, ends by its
# own watchdog within the timeout + 10 s, writing its flight record (which
# names its host), and `strata flight` lists the ranks by host. Open MPI's
# mpirun cannot reach h2's daemon and may not exit: it is given 3 s, then
# killed, and the test says which (docs/reliability.md, "Across hosts").
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/netns.sh"
P="$top_builddir/examples/gpt/train_gpt"
netns_test hosts-partition h1 h2
echo "1..4"
T=3
mkdir "$tmp/fl"
# time for the ranks to write their records once the first aborts (docs/flight.md)
export OMPI_MCA_odls_base_sigkill_timeout=3 STRATA_COLLECTIVE_TIMEOUT=$T STRATA_FLIGHT_DIR="$tmp/fl"
netns_mpirun 4 h1:2,h2:2 -x STRATA_COLLECTIVE_TIMEOUT -x STRATA_FLIGHT_DIR "$P" --threads 1 --layers 2 --dim 32 \
    --heads 4 --batch 2 --steps 1000000 --log-every 50 > "$tmp/job.out" 2>&1 &
job=$!
i=0; while [ $i -lt 600 ] && ! grep -qs '^step  *50/' "$tmp/job.out"; do sleep 0.1; i=$((i + 1)); done
ranks() { echo $(( $(netns_on h1 pgrep -c -f "^[^ ]*train_gpt ") + $(netns_on h2 pgrep -c -f "^[^ ]*train_gpt ") )); }
before=$(ranks)
t0=$(ms); netns_unplug h2
i=0; while [ $i -lt 300 ] && [ "$(ranks)" -gt 0 ]; do sleep 0.1; i=$((i + 1)); done
t1=$(ms) left=$(ranks)
i=0; while [ $i -lt 30 ] && kill -0 $job 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
if kill -0 $job 2>/dev/null; then how="did not exit in 3 s; killed"; netns_kill_launch; else how="exited"; fi
wait $job; rc=$?
echo "# h2 unplugged: $before ranks running before, $left after $((t1 - t0)) ms; mpirun $how (exit $rc)"
check "h2 unplugged: every rank on both hosts ends within collective_timeout + 10 s" \
    sh -c 'test "$1" -eq 4 && test "$2" -eq 0 && test "$3" -lt $(( ($4 + 10) * 1000 ))' _ "$before" "$left" "$((t1 - t0))" "$T"
grep "watchdog" "$tmp/job.out" | head -2 | sed 's/^/# /'
check "the ranks h1's daemon still reaches report the wait, naming collective_timeout" \
    grep -q "rank [01]: watchdog: .* not complete after .*(collective_timeout $T s)" "$tmp/job.out"
hosts=$(for r in 0 1 2 3; do sed -n 's/.*"host": "\([^"]*\)".*/\1/p' "$tmp/fl/flight.$r.json" 2>/dev/null | head -1; done | tr '\n' ' ')
echo "# flight records' hosts, ranks 0-3: $hosts"
check "every rank wrote its flight record, naming its host" test "$hosts" = "h1 h1 h2 h2 "
"$S" flight "$tmp"/fl/flight.*.json > "$tmp/flight.out" 2>&1
sed 's/^/# /' "$tmp/flight.out"
check "strata flight lists the ranks by host" grep -qx "ranks by host: h1 0,1; h2 2,3" "$tmp/flight.out"
