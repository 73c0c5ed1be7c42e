#!/bin/sh
# gpt-train-lock.t - one job per checkpoint directory, and the kills:
#  - a second job on the directory of a running one is refused at start,
#    naming the holder, and the first job is untouched;
#  - a lock of a dead process on this host is taken over with a warning;
#    one of another host is refused until `strata ckpt unlock DIR`;
#  - kill -9 of a non-zero rank mid-step, and of rank 0 mid-save (test
#    fault ckpt_kill0): the job ends; the next --resume takes the dead
#    job's lock over, removes its .tmp, and reaches the param_hash of an
#    uninterrupted run. Each case's time to exit is printed.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-lock
tap_cleanup() { kill $bg 2>/dev/null; }
bg=
echo "1..10"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 6 --json --eval-n 8"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
# mpirun with t/launch's flags for this MPI, without t/launch's own wrapping
mpi() { timeout 500 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) "$@"; }
# a rank's MPI rank: Open MPI's OMPI_COMM_WORLD_RANK, MPICH hydra's PMI_RANK
rank_of() { tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | sed -n 's/^\(OMPI_COMM_WORLD_RANK\|PMI_RANK\)=//p'; }

# a long job in the background, then a second one on its directory
mpi "$P" --threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 1000000 --log-every 50 \
    --ckpt-dir "$tmp/d" > "$tmp/first.out" 2>&1 &
bg=$!
i=0; while [ $i -lt 600 ] && ! grep -q '^step  *50/' "$tmp/first.out"; do sleep 0.1; i=$((i + 1)); done
t0=$(ms); "$L" 2 "$P" $small --ckpt-dir "$tmp/d" > "$tmp/second.out" 2>&1; rc=$?; t1=$(ms)
sed 's/^/# /' "$tmp/second.out"; echo "# second job on a locked directory: exit $rc after $((t1 - t0)) ms"
check "a second job on a locked directory is refused at start, naming the holder" \
    sh -c 'test "$1" -ne 0 && grep -q "is in use by another job (pid [0-9]* on $(hostname), started" "$2" &&
           ! grep -q "^{\"step\"" "$2"' _ "$rc" "$tmp/second.out"
# the stop signal to the ranks themselves ($bg is the shell around timeout
# and mpirun, which would not pass USR1 on)
for p in $(pgrep -f -- "--ckpt-dir $tmp/d"); do
    [ -n "$(rank_of $p)" ] && kill -USR1 $p
done
wait $bg; rc=$?; bg=
check "the first job ran on and stopped cleanly, leaving no lock" \
    sh -c 'test "$1" -eq 0 && grep -q "SIGUSR1 received" "$2" && test ! -e "$3/lock"' _ "$rc" "$tmp/first.out" "$tmp/d"

# a dead holder on this host; a holder on another host
mkdir "$tmp/e"; sh -c 'exit 0' & dead=$!; wait $dead
echo "host=$(hostname) pid=$dead start=1 job=-" > "$tmp/e/lock"
"$L" 2 "$P" $small --ckpt-dir "$tmp/e" > "$tmp/dead.out" 2>&1; rc=$?
grep warning "$tmp/dead.out" | sed 's/^/# /'
check "a dead holder's lock on this host is taken over with a warning" \
    sh -c 'test "$1" -eq 0 && grep -q "taking over the lock .*pid $2 .*no longer exists" "$3" && test ! -e "$4/lock"' \
    _ "$rc" "$dead" "$tmp/dead.out" "$tmp/e"
echo "host=elsewhere.example pid=1 start=1 job=-" > "$tmp/e/lock"
"$L" 2 "$P" $small --ckpt-dir "$tmp/e" > "$tmp/other.out" 2>&1; rc=$?
check "a lock held on another host is refused" \
    sh -c 'test "$1" -ne 0 && grep -q "in use by another job (pid 1 on elsewhere.example" "$2"' _ "$rc" "$tmp/other.out"
"$S" ckpt unlock "$tmp/e" > "$tmp/unlock.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/unlock.out"
check "strata ckpt unlock DIR removes it, naming the holder" \
    sh -c 'test "$1" -eq 0 && test ! -e "$2/lock" && grep -q "pid 1 on elsewhere.example" "$3"' _ "$rc" "$tmp/e" "$tmp/unlock.out"

# kills: the uninterrupted run, then a non-zero rank killed mid-step
"$L" 2 "$P" $small > "$tmp/full.out" 2>&1
full=$(hash_of "$tmp/full.out")
mpi "$P" $small --steps 1000000 --ckpt-dir "$tmp/k" --ckpt-every 2 > "$tmp/k1.out" 2>&1 &
job=$!
i=0; while [ $i -lt 600 ] && ! grep -q '^{"step":5,' "$tmp/k1.out"; do sleep 0.1; i=$((i + 1)); done
victim=
for p in $(pgrep -f -- "--ckpt-dir $tmp/k --ckpt-every"); do   # the ranks sit below timeout and mpirun
    [ "$(rank_of $p)" = 1 ] && victim=$p
done
t0=$(ms); kill -9 $victim; wait $job; rc=$?; t1=$(ms)
echo "# kill -9 of rank 1 mid-step: mpirun exit $rc after $((t1 - t0)) ms"
check "kill -9 of rank 1 mid-step ends the job (non-zero) within 30 s" \
    sh -c 'test -n "$1" && test "$2" -ne 0 && test "$2" -ne 124 && test "$3" -lt 30000' _ "$victim" "$rc" "$((t1 - t0))"
"$S" ckpt verify "$tmp/k" > "$tmp/kv.out" 2>&1
check "its checkpoints verify, latest included" grep -q "latest: step-[0-9]*.h5, OK" "$tmp/kv.out"
# rank 0 killed mid-save of step 4 (its step 2 is good); the lock stays
"$L" 2 "$P" $small --ckpt-dir "$tmp/m" --stop-at 2 > "$tmp/m0.out" 2>&1
t0=$(ms); STRATA_TEST_FAULT=ckpt_kill0@600 mpi "$P" $small --ckpt-dir "$tmp/m" --ckpt-every 2 --resume \
    > "$tmp/m1.out" 2>&1; rc=$?; t1=$(ms)
echo "# kill -9 of rank 0 mid-save: mpirun exit $rc after $((t1 - t0)) ms"
check "kill -9 of rank 0 mid-save ends the job, leaving a .tmp and its lock" \
    sh -c 'test "$1" -ne 0 && test "$1" -ne 124 && test -e "$2/lock" && ls "$2" | grep -q "\.tmp$"' _ "$rc" "$tmp/m"
"$L" 2 "$P" $small --ckpt-dir "$tmp/m" --resume > "$tmp/m2.out" 2>&1; rc=$?
grep -v '^{"step"' "$tmp/m2.out" | grep "strata\|resume" | sed 's/^/# /'
check "the next --resume takes the dead lock over and removes the dead writer's .tmp" \
    sh -c 'test "$1" -eq 0 && grep -q "taking over the lock" "$2" && grep -q "removed .*\.tmp, left by a save that died" "$2" &&
           ! ls "$3" | grep -q "\.tmp$"' _ "$rc" "$tmp/m2.out" "$tmp/m"
check "and resumes from step 2 to the uninterrupted run's param_hash" \
    sh -c 'grep -q "resumed from .*step-00000002.h5 at step 2" "$3" && test -n "$1" && test "$1" = "$2"' \
    _ "$(hash_of "$tmp/m2.out")" "$full" "$tmp/m2.out"
