#!/bin/sh
# hosts-lock.t - the checkpoint lock and spill reclaim across two "hosts"
# (t/netns.sh: each its own network, hostname and PID namespace; the
# directories are on a file system both see, as a shared one would be).
# Pids repeat across hosts (each PID namespace counts from 1), so only the
# hostname tells a holder on this host from one elsewhere:
#  - a job on h1+h2 holds its directory's lock as rank 0's host and pid
#    (h1's); a job started on h2 is refused, naming h1;
#  - h1 killed whole: the job ends, the lock stays; a job on h2 still
#    refuses it (another host's lock is never taken over, whatever pids h2
#    has); h1 back up, a job there takes it over, the holder's pid gone;
#  - spill directories: h2 killed whole while spilling leaves its directory;
#    a job on h1 leaves it alone (another host's), a job on h2 back up
#    reclaims it, and neither touches h1's live job's directory, which
#    that job removes itself when it stops;
#  - a SLURM job's lock: a job of the same SLURM job on h2 takes it over
#    (a requeue on another node), but on h1, where its holder provably
#    still runs (pid and start time), it is refused: another step of it.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/netns.sh"
P="$top_builddir/examples/gpt/train_gpt"
netns_test hosts-lock h1 h2
echo "1..11"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
one() { h=$1; shift; netns_on "$h" timeout 60 "$P" --threads 1 --layers 1 --dim 16 --eval-n 8 "$@"; }  # 1 rank on host h
wait_for() { i=0; while [ $i -lt 600 ] && ! grep -qs "$1" "$2"; do sleep 0.1; i=$((i + 1)); done; }
# the pid of train_gpt with $2 in its arguments, as host $1 numbers it
pid_on() { netns_on "$1" pgrep -f -- "^[^ ]*train_gpt .*$2" | head -1; }

# the lock of a job on two hosts
netns_mpirun 2 h1:1,h2:1 "$P" --threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 1000000 --log-every 50 \
    --ckpt-dir "$tmp/d" > "$tmp/job.out" 2>&1 &
job=$!
wait_for '^step  *50/' "$tmp/job.out"
holder=$(pid_on h1 "--ckpt-dir $tmp/d")
echo "# the lock: $(cat "$tmp/d/lock" 2>/dev/null); rank 0 is pid $holder on h1"
check "a job on h1+h2 holds the lock as h1 and rank 0's pid there" \
    sh -c 'test -n "$1" && grep -q "^host=h1 pid=$1 " "$2/lock"' _ "$holder" "$tmp/d"
one h2 --steps 1 --ckpt-dir "$tmp/d" > "$tmp/h2.out" 2>&1; rc=$?
check "a job on h2 is refused (exit 2), naming the holder on h1" \
    sh -c 'test "$1" -eq 2 && grep -q "is in use by another job (pid $2 on h1," "$3"' _ "$rc" "$holder" "$tmp/h2.out" ||
    sed 's/^/# /' "$tmp/h2.out"

# the ranks left on h2 must end; Open MPI 4.1's mpirun itself sometimes
# hangs after a host is lost ("abort is already in progress"): it is
# given 10 s, then killed, and the test says which happened
t0=$(ms); netns_kill h1
i=0; while [ $i -lt 300 ] && [ -n "$(pid_on h2 "ckpt-dir $tmp/d")" ]; do sleep 0.1; i=$((i + 1)); done
t1=$(ms)
i=0; while [ $i -lt 100 ] && kill -0 $job 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
if kill -0 $job 2>/dev/null; then how="did not exit in 10 s; killed"; netns_kill_launch; else how="exited"; fi
wait $job; rc=$?; t2=$(ms)
echo "# h1 killed whole: the rank on h2 ended after $((t1 - t0)) ms; mpirun $how (exit $rc) after $((t2 - t0)) ms"
# what mpirun says of the lost host (never "noticed that process rank R ... exited on signal")
grep -m2 "lost communication\|unable to reliably start\|Remote daemon:\|Peer host:" "$tmp/job.out" | sed 's/^/# mpirun: /'
check "h1 killed whole: the job's rank on h2 ends within 30 s; the lock stays h1's" \
    sh -c 'test -z "$1" && test "$2" -lt 30000 && grep -q "^host=h1 pid=$3 " "$4/lock"' \
    _ "$(pid_on h2 "ckpt-dir $tmp/d")" "$((t1 - t0))" "$holder" "$tmp/d" || grep -v "^step" "$tmp/job.out" | tail -5 | sed 's/^/# /'
netns_on h2 kill -0 "$holder" 2>/dev/null && onh2="a live process" || onh2="no process"
one h2 --steps 1 --ckpt-dir "$tmp/d" > "$tmp/h2b.out" 2>&1; rc=$?
echo "# on h2, pid $holder is $onh2; the job there: exit $rc"
check "a job on h2 still refuses the dead host's lock, naming it" \
    sh -c 'test "$1" -eq 2 && grep -q "in use by another job (pid $2 on h1," "$3" && ! grep -q "taking over" "$3"' \
    _ "$rc" "$holder" "$tmp/h2b.out" || sed 's/^/# /' "$tmp/h2b.out"
netns_restart h1
one h1 --steps 1 --ckpt-dir "$tmp/d" > "$tmp/h1.out" 2>&1; rc=$?
grep warning "$tmp/h1.out" | sed 's/^/# /'
check "h1 back up: a job there takes the lock over with a warning, and ends without it" \
    sh -c 'test "$1" -eq 0 && grep -q "taking over the lock .*pid $2 on h1, .*: its \(process no longer exists\|pid now belongs to another process\)" "$3" &&
           test ! -e "$4/lock"' _ "$rc" "$holder" "$tmp/h1.out" "$tmp/d" || sed 's/^/# /' "$tmp/h1.out"

# spill directories: a live job on h1, a job on h2 that dies with its host
mkdir "$tmp/sp"
spill() { h=$1; shift; one "$h" --act-policy '*=storage' --schedule naive --spill-dir "$tmp/sp" "$@"; }
spill h1 --steps 1000000 --log-every 20 > "$tmp/live.out" 2>&1 &
live=$!
spill h2 --steps 1000000 --log-every 20 > "$tmp/dead.out" 2>&1 &
dead=$!
wait_for '^step  *20/' "$tmp/live.out"; wait_for '^step  *20/' "$tmp/dead.out"
livedir=$(grep -l "^host=h1 " "$tmp"/sp/*/owner 2>/dev/null | head -1); livedir=${livedir%/owner}
netns_kill h2; wait $dead
deaddir=$(grep -l "^host=h2 " "$tmp"/sp/*/owner 2>/dev/null | head -1); deaddir=${deaddir%/owner}
echo "# spill directories: h1's live job's $(cat "$livedir/owner" 2>/dev/null); h2's dead job's $(cat "$deaddir/owner" 2>/dev/null)"
check "h2 killed whole while spilling leaves its spill directory" \
    sh -c 'test -n "$1" && test -n "$2" && test -e "$2/spill.h5"' _ "$livedir" "$deaddir"
spill h1 --steps 1 > "$tmp/s1.out" 2>&1; rc=$?
check "a spill job on h1 leaves h2's dead job's directory alone, and the live one" \
    sh -c 'test "$1" -eq 0 && test -d "$2" && test -d "$3" && ! grep -q "removed .* spill director" "$4"' \
    _ "$rc" "$deaddir" "$livedir" "$tmp/s1.out" || sed 's/^/# /' "$tmp/s1.out"
netns_restart h2
spill h2 --steps 1 > "$tmp/s2.out" 2>&1; rc=$?
grep "removed" "$tmp/s2.out" | sed 's/^/# /'
check "h2 back up: a spill job there reclaims its dead job's directory, and keeps h1's live one" \
    sh -c 'test "$1" -eq 0 && test ! -e "$2" && test -d "$3" && grep -q "removed 1 spill directory of dead jobs" "$4"' \
    _ "$rc" "$deaddir" "$livedir" "$tmp/s2.out" || sed 's/^/# /' "$tmp/s2.out"
netns_on h1 kill -USR1 "$(pid_on h1 "spill-dir $tmp/sp")"; wait $live; rc=$?
check "h1's live job ran on undisturbed and removed its own directory when stopped" \
    sh -c 'test "$1" -eq 0 && grep -q "SIGUSR1 received" "$2" && test -z "$(ls "$3")"' _ "$rc" "$tmp/live.out" "$tmp/sp" ||
    { echo "# live job: exit $rc; left in spill_dir: $(ls "$tmp/sp" | tr '\n' ' ')"; tail -5 "$tmp/live.out" | sed 's/^/# /'; }

# a SLURM job's lock: a requeue may land on another node, but a holder of
# the same job still running on this host is another step of it, writing
netns_on h1 sleep 61 & napper=$!
i=0; while [ $i -lt 50 ] && [ -z "$(netns_on h1 pgrep -f '^sleep 61$')" ]; do sleep 0.1; i=$((i + 1)); done
np=$(netns_on h1 pgrep -f '^sleep 61$' | head -1)
pstart=$(netns_on h1 sed 's/.*) //' "/proc/$np/stat" | cut -d' ' -f20)
mkdir "$tmp/j"; echo "host=h1 pid=$np start=1 job=77 pstart=$pstart" > "$tmp/j/lock"
SLURM_JOB_ID=77 one h1 --steps 1 --ckpt-dir "$tmp/j" > "$tmp/j1.out" 2>&1; rc=$?
check "SLURM job 77's lock, its holder running on h1: another step of job 77 on h1 is refused (exit 2)" \
    sh -c 'test "$1" -eq 2 && grep -q "in use by another job (pid $2 on h1, .*SLURM job 77)" "$3"' _ "$rc" "$np" "$tmp/j1.out" ||
    sed 's/^/# /' "$tmp/j1.out"
SLURM_JOB_ID=77 one h2 --steps 1 --ckpt-dir "$tmp/j" > "$tmp/j2.out" 2>&1; rc=$?
grep warning "$tmp/j2.out" | sed 's/^/# /'
check "a job 77 on h2 (a requeue on another node) takes it over, saying so" \
    sh -c 'test "$1" -eq 0 && grep -q "taking over the lock .*pid $2 on h1, .*: same SLURM job (requeued)" "$3"' \
    _ "$rc" "$np" "$tmp/j2.out" || sed 's/^/# /' "$tmp/j2.out"
kill $napper 2>/dev/null
