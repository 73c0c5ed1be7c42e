#!/bin/sh
# flight-cmd.t - strata flight on records written here, one case per way a
# job parts: a rank that never entered, ranks that disagree, a rank with no
# record (and one with no record while every other record is a watchdog
# timeout's, also where nobody blocks in a wait), every rank inside one operation with one of them paused (and
# an old pause that does not count), a rank waiting in nothing; bad input.
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp flight-cmd
echo "1..13"

# rec RANK NOW PAUSE_S PAUSE_END ENTRY... : rank's record in $tmp/c (world 4),
# written on SIGTERM (REASON=timeout: by the rank's own watchdog)
entry() {   # group seq kind bytes state t_enqueue
    printf '{"index": %s, "group": "%s", "seq": %s, "kind": "%s", "step": 7, "unit": 1, "bytes": %s, "dtype": "f32", "t_enqueue": %s, "t_start": %s, "t_end": 0, "state": "%s", "status": 0}' \
        "$2" "$1" "$2" "$3" "$4" "$6" "$6" "$5"
}
rec() {
    r=$1 now=$2 ps=$3 pe=$4; shift 4
    { printf '{"format": "strata-flight-1", "rank": %s, "world_size": 4, "reason": "%s", "host": "h", "pid": 1, "now": %s, "wall_minus_mono": 0, "collective_timeout": 3, "ckpt_timeout": 1800, "entries_max": 2048, "ops": 3, "pause_s": %s, "pause_end": %s,\n "groups": [{"name": "world", "size": 4, "rank": %s}],\n "entries": [' "$r" "${REASON:-sigterm}" "$now" "$ps" "$pe" "$r"
      sep=""; for e in "$@"; do printf '%s%s' "$sep" "$e"; sep=", "; done
      printf ']}\n'; } > "$tmp/c/flight.$r.json"
}
done1=$(entry world 1 allgather 64 done 10)
fresh() { rm -rf "$tmp/c"; mkdir "$tmp/c"; }
run() { "$S" flight "$tmp"/c/flight.*.json > "$tmp/out" 2>&1; echo $? > "$tmp/rc"; }
says() { [ "$(cat "$tmp/rc")" = "$1" ] && [ "$(tail -1 "$tmp/out")" = "suspect ranks: $2" ] ||
    { sed 's/^/# /' "$tmp/out"; return 1; }; }

fresh
for r in 0 1 3; do rec $r 20 0 0 "$done1" "$(entry world 2 reduce_scatter 64 waiting 11)"; done
rec 2 20 0 0 "$done1"
run
check "a rank that never entered the operation the others wait in is the suspect" \
    eval 'says 1 2 && grep -q "never entered by rank 2" "$tmp/out"'

fresh
for r in 0 1 2; do rec $r 20 0 0 "$done1" "$(entry world 2 reduce_scatter 64 waiting 11)"; done
rec 3 20 0 0 "$done1" "$(entry world 2 reduce_scatter 128 waiting 11)"
run
check "ranks that disagree on an operation's size: the odd one out" \
    eval 'says 1 3 && grep -q "ranks disagree" "$tmp/out"'

fresh
for r in 0 1 2; do rec $r 20 0 0 "$done1"; done
run
check "a rank of the world without a record is a suspect" \
    eval 'says 1 3 && grep -q "rank 3: no flight record" "$tmp/out"'

# as under MPICH, whose launcher SIGKILLs a stopped rank before it writes:
# ranks 1 and 3 finished seq 3, which rank 0 still waits in
fresh
for r in 1 3; do REASON=timeout rec $r 20 0 0 "$done1" "$(entry world 2 allgather 64 waiting 11)" \
    "$(entry world 3 allreduce 24 done 11)"; done
REASON=timeout rec 0 20 0 0 "$done1" "$(entry world 2 allgather 64 waiting 11)" \
    "$(entry world 3 allreduce 24 waiting 11)"
run
check "no record from one rank while every other rank's watchdog timed out: that rank only" \
    eval 'says 1 2 && grep -q "rank 2: no flight record" "$tmp/out" &&
          grep -q "every record was written on its rank.s own timeout" "$tmp/out"'

# the same where the others' collective is driven by a progress thread (it
# is "started", nobody blocks in a wait): the ranks that timed out ran, so
# the one without a record is still the only suspect
fresh
for r in 0 1 3; do REASON=timeout rec $r 20 0 0 "$done1" "$(entry world 2 reduce_scatter 64 started 11)"; done
run
check "every watchdog timed out on a collective nobody blocks in: the rank without a record only" \
    eval 'says 1 2 && grep -q "every record was written on its rank.s own timeout" "$tmp/out"'

fresh
for r in 0 1 3; do rec $r 20 0 0 "$done1" "$(entry world 2 allreduce 4 waiting 11)"; done
rec 2 20.5 5.2 20.4 "$done1" "$(entry world 2 allreduce 4 waiting 12)"
run
check "every rank inside one operation: the rank that did not run for 5.2 s, and only it" \
    eval 'says 1 2 && grep -q "rank 2 did not run for 5.2 s" "$tmp/out"'

fresh
for r in 0 1 3; do rec $r 20 0 0 "$done1" "$(entry world 2 allreduce 4 waiting 11)"; done
rec 2 20 5.2 8 "$done1" "$(entry world 2 allreduce 4 waiting 12)"
run
check "a pause that ended longer than collective_timeout ago does not count" \
    eval 'says 1 2 && grep -q "entered by every rank, not complete; rank 2 entered it last" "$tmp/out" &&
          ! grep -q "did not run" "$tmp/out"'

# stopped between operations, resumed by the launcher when the others'
# watchdogs fired, then timed out on its own in the next one, 3.3 s after
# the pause ended; rank 3 still waits in the all-gather rank 2 finished
fresh
for r in 0 1; do REASON=timeout rec $r 16.7 0 0 "$done1" "$(entry world 2 allgather 64 done 11)" \
    "$(entry world 3 allreduce 24 waiting 13.7)"; done
REASON=timeout rec 3 16.7 0 0 "$done1" "$(entry world 2 allgather 64 waiting 11)"
REASON=timeout rec 2 20 3.5 16.7 "$done1" "$(entry world 2 allgather 64 done 11)" \
    "$(entry world 3 allreduce 24 waiting 16.9)"
run
check "a rank paused, resumed and timed out in its next operation: it, not those that finished" \
    eval 'says 1 2 && grep -q "rank 2 did not run for 3.5 s, 3.3 s before" "$tmp/out"'

fresh
for r in 0 1 3; do rec $r 20 0 0 "$done1" "$(entry world 2 allreduce 24 waiting 11)"; done
rec 2 20 0 0 "$done1" "$(entry world 2 allreduce 24 done 11)" "$(entry world 3 allgather 64 waiting 12)"
run
check "a rank that finished what the others still wait in, and went on: the suspect" \
    eval 'says 1 2 && grep -q "seq 2 (allreduce, 24 bytes, step 7, unit 1): done on rank 2, still waited in on rank 0,1,3" "$tmp/out"'

fresh
for r in 0 1 2 3; do rec $r 20 0 0 "$done1" "$(entry world 2 allreduce 4 done 11)"; done
run
check "records that agree and finished: no suspect, exit 0" eval 'says 0 none'

fresh
for r in 0 1 2 3; do rec $r 20 0 0 "$done1" "$(entry world 2 allreduce 4 done 11)"; done
sed -i 's/"format": "strata-flight-1"/"format": "strata-flight-9"/' "$tmp/c/flight.1.json"
run
check "a record of another format: exit 2, named" \
    eval '[ "$(cat "$tmp/rc")" = 2 ] && grep -q "flight.1.json: not a strata-flight-1 record" "$tmp/out"'

fresh
printf '{"format": "strata-flight-1", "rank": 0,' > "$tmp/c/flight.0.json"
run
check "a truncated record: exit 2, named with jansson's reason" \
    eval '[ "$(cat "$tmp/rc")" = 2 ] && grep -q "flight.0.json: not a flight record: " "$tmp/out"'

"$S" flight > /dev/null 2> "$tmp/err"; urc=$?
check "no files: usage on stderr, exit 2" eval '[ $urc -eq 2 ] && grep -q "usage: strata flight" "$tmp/err"'
