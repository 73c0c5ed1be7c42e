#!/bin/sh
# strata-run.t - strata run, the restarting supervisor (tools/run_cmd.c):
#  - bad input: no job after '--', an unknown option, no rank count in the
#    job's command (exit 2 each, with a message); --help exits 0;
#    train_gpt --global-batch that the ranks do not divide (10 on 3: the
#    counts that divide it named), or with a --batch x --accum that is not
#    its share (exit 2, why);
#  - --global-batch 12 on 3 ranks with --batch 2 takes 2 micro-batches of
#    2 rows, and its losses are a 4-rank run's (3 rows each) within 1e-5;
#  - a 4-rank train_gpt at --global-batch 12, checkpoints every 5 steps,
#    whose last rank dies (SIGKILL, test fault rank_kill@15) at the start
#    of step 15: the supervisor logs one restart line naming rank 3 and
#    signal 9, restarts on 3 ranks, the job prints `resumed from ...
#    step-00000010.h5` and ends with exit 0, every loss of steps 11..30
#    within 1e-5 of an uninterrupted 4-rank run's (3 and 4 ranks sum the
#    same 12 rows in another order: equal up to rounding, so not the
#    param_hash), and no process of the job is left; the time from the
#    fault to the resumed job's first step is printed and must be < 60 s;
#  - a rank that stalls in every checkpoint save (ckpt_stall, 2 ranks,
#    collective_timeout 2 s) with --max-restarts 1: the watchdog ends each
#    run; one restart line naming the suspect rank from the flight records
#    (strata flight), on as many ranks, then exit 76 with a line saying why;
#  - SIGTERM to strata run reaches the ranks through mpirun (as SIGUSR1):
#    they stop after a step with a checkpoint, exit 0, no restart follows,
#    nothing is left.
# Open MPI only: the supervisor reads mpirun's report of the dead rank.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp strata-run
echo "1..17"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
# refuses DESC REGEX ARGS...: strata run ARGS exits 2 with a line matching REGEX
refuses() {
    tap_d=$1; re=$2; shift 2
    "$S" run "$@" > "$tmp/bad" 2>&1; rc=$?
    [ $rc -eq 2 ] && grep -Eq -- "$re" "$tmp/bad"
    ok $? "$tap_d (exit $rc)" "$tmp/bad"
}
refuses "no job after --" "no job: give its command after '--'" --max-restarts 2
refuses "an unknown option" "unknown option '--retries'" --retries 2 -- mpirun -np 2 true
refuses "no rank count in the job" "no rank count in the job's command" -- mpirun true
"$S" run --help > "$tmp/help" 2>&1
ok $? "--help exits 0" "$tmp/help"
grep -q -- "--max-restarts N" "$tmp/help" && grep -q "76: a restart was needed and none" "$tmp/help"
ok $? "--help names the options and exit 76" "$tmp/help"
"$L" 3 "$P" --threads 1 --layers 1 --dim 16 --steps 1 --global-batch 10 > "$tmp/gb" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "global-batch 10 cannot be split over 3 ranks.*(1, 2, 5, 10)" "$tmp/gb"
ok $? "train_gpt --global-batch 10 on 3 ranks: exit 2, the counts that divide it named ($rc)" "$tmp/gb"

"$L" 1 "$P" --threads 1 --layers 1 --dim 16 --steps 1 --global-batch 12 --batch 4 --accum 2 > "$tmp/gb2" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "global-batch 12 on 1 ranks is 12 rows per rank, not --batch 4 x --accum 2" "$tmp/gb2"
ok $? "train_gpt --global-batch 12 --batch 4 --accum 2 on 1 rank: exit 2, why ($rc)" "$tmp/gb2"
if [ "${test_hooks:-no}" != yes ] || [ "${MPI_FLAVOUR:-openmpi}" != openmpi ]; then
    why="needs the test hooks (configure --enable-test-hooks) and Open MPI's mpirun"
    for d in "uninterrupted run" "restarted job ends 0" "restart line" "resumed from" \
             "losses match" "fault to resumed step" "exhausted"; do skip "$d" "$why"; done
    exit 0
fi
A="--threads 1 --layers 2 --dim 32 --heads 4 --steps 30 --lr 3e-3 --json --eval-n 20 --global-batch 12"
"$L" 4 "$P" $A > "$tmp/ref" 2>&1
ok $? "an uninterrupted 4-rank run at --global-batch 12" "$tmp/ref"

"$L" 3 "$P" $A --batch 2 > "$tmp/acc" 2>&1 && grep -q "batch 2 x 2 micro x 3 ranks = 12 rows" "$tmp/acc"
ok $? "3 ranks at --global-batch 12 --batch 2: 2 micro-batches of 2 rows" "$tmp/acc"
# close A B: every step's loss of train_gpt's output A within 1e-5 of B's
close() {
    for f in "$1" "$2"; do sed -n 's/^[0-9 ]*{"step":\([0-9]*\),"loss":\([0-9.e+-]*\),.*/\1 \2/p' "$f"; done |
        awk '{ if ($1 in l) { d = $2 - l[$1]; if (d < 0) d = -d; if (d > max) max = d; k++ } else l[$1] = $2 }
             END { printf "# steps %d..30: max |loss - uninterrupted 4 ranks| %.2g\n", 31 - k, max;
                   exit !(k > 0 && max < 1e-5) }'
}
close "$tmp/acc" "$tmp/ref"
ok $? "... whose losses are those of 4 ranks x 3 rows within 1e-5"

# the supervised job; every line stamped with the wall clock (ms) as it comes
stamp() { while IFS= read -r tap_l; do echo "$(ms) $tap_l"; done; }
# the fault armed on the first run only (STRATA_RUN_RESTART=0)
arm='[ "$STRATA_RUN_RESTART" = 0 ] || unset STRATA_TEST_FAULT; exec "$0" "$@"'
mpi="${MPIRUN:-mpirun}"
# shellcheck disable=SC2046
{ STRATA_TEST_FAULT=rank_kill@15 timeout -k 5 120 "$S" run -- "$mpi" -np 4 $("$L" --flags) \
      sh -c "$arm" "$P" $A --ckpt-dir "$tmp/ck" --ckpt-every 5 --resume 2>&1
  echo $? > "$tmp/rc"; } | stamp > "$tmp/run"
rc=$(cat "$tmp/rc")
grep 'strata run\|resumed from\|noticed\|"final"' "$tmp/run" | cut -d' ' -f2- | cut -c1-150 | sed 's/^/# /'
ok $(( rc != 0 )) "the job with rank 3 killed at step 15 ends with exit 0 under strata run ($rc)"
grep -q "strata run: restart 1 of 3: rank 3 died (signal 9) (job exit 137); [0-9.]* s after the fault; on 3 ranks (was 4), global batch 12 kept" "$tmp/run"
ok $? "one restart line: rank 3, signal 9, the time since the fault, 3 ranks, batch kept"
grep -q " resumed from $tmp/ck/step-00000010.h5 at step 10$" "$tmp/run" &&
    grep -q ' train_gpt: 3 ranks, .* batch 4 x 1 micro x 3 ranks = 12 rows/step' "$tmp/run"
ok $? "the resumed job: resumed from step-00000010.h5, on 3 ranks x 4 rows"
# the steps after "resumed from", against the uninterrupted run's
sed -n '/ resumed from /,$p' "$tmp/run" > "$tmp/res"
close "$tmp/res" "$tmp/ref" && [ "$(grep -c '{"step"' "$tmp/res")" -eq 20 ]
ok $? "losses of steps 11..30 on 3 ranks within 1e-5 of the uninterrupted 4-rank run"
# the fault: rank 3 dies at the start of step 15, right after step 14's line
t_fault=$(sed -n 's/^\([0-9]*\) {"step":14,.*/\1/p' "$tmp/run" | head -n 1)
t_res=$(sed -n '/ resumed from /,$p' "$tmp/run" | sed -n 's/^\([0-9]*\) {"step":11,.*/\1/p' | head -n 1)
echo "# fault (after step 14) to the resumed job's first step (11): $(( ${t_res:-0} - ${t_fault:-0} )) ms"
[ -n "$t_fault" ] && [ -n "$t_res" ] && [ $((t_res - t_fault)) -lt 60000 ] &&
    ! ps -eo args | grep -v grep | grep -q -- "--ckpt-dir $tmp/ck"
ok $? "fault to resumed step under 60 s; no process of the job left"

# a rank that stalls in every save (ckpt_stall, rank 1 of 2): the watchdog
# ends each run (exit 75); one restart on as many ranks, then exit 76; both
# lines name the suspect from the flight records
# shellcheck disable=SC2046
STRATA_TEST_FAULT=ckpt_stall@600 timeout -k 5 120 "$S" run --max-restarts 1 -- "$mpi" -np 2 \
    $("$L" --flags) "$P" $A --set collective_timeout=2 --ckpt-every 2 --ckpt-dir "$tmp/ck2" \
    --resume > "$tmp/ex" 2>&1
rc=$?
grep "strata run" "$tmp/ex" | sed 's/^/# /'
[ $rc -eq 76 ] &&
    grep -q "^strata run: restart 1 of 1: the watchdog of rank 0 ended the job (exit 75; flight records: suspect ranks 1) (job exit 75); .* on 2 ranks (was 2)" "$tmp/ex" &&
    grep -q "^strata run: the watchdog of rank 0 ended the job (exit 75; flight records: suspect ranks 1) (job exit 75); no restart is left (--max-restarts): giving up after 1 restart (exit 76)" "$tmp/ex"
ok $? "the watchdog's end: a restart naming the suspect rank, then exit 76 ($rc)" "$tmp/ex"

# SIGTERM to strata run: passed on to mpirun (as SIGUSR1), the ranks stop
# after a step with a checkpoint, no restart follows, no process of the job
# is left
# shellcheck disable=SC2046
"$S" run -- "$mpi" -np 2 $("$L" --flags) "$P" --threads 1 --layers 1 --dim 16 \
    --steps 1000000 --log-every 10 --ckpt-dir "$tmp/ck3" --resume > "$tmp/term" 2>&1 &
sup=$!
i=0
while [ $i -lt 300 ] && ! grep -q "^step " "$tmp/term"; do sleep 0.1; i=$((i + 1)); done
kill -TERM $sup
# the stop takes a step and a checkpoint; a hang is a failure, not a hung suite
i=0
while [ $i -lt 600 ] && kill -0 $sup 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -KILL $sup 2>/dev/null
wait $sup
rc=$?
grep "stopped\|strata run" "$tmp/term" | sed 's/^/# /'
[ $rc -eq 0 ] &&
    grep -q "^train_gpt: stopped after step [0-9]* of 1000000 (SIGUSR1 received); checkpoint" "$tmp/term" &&
    ! grep -q "strata run: restart" "$tmp/term" &&
    ! ps -eo args | grep -v grep | grep -q -- "--ckpt-dir $tmp/ck3"
ok $? "SIGTERM to strata run: a stop with a checkpoint, no restart, nothing left (exit $rc)" "$tmp/term"
