#!/bin/sh
# hosts-train.t - train_gpt across three "hosts" (t/netns.sh: each its own
# network, hostname and PID namespace, veth links to a bridge), launched by
# mpirun with an rsh agent: TCP between hosts, shared memory within one.
#  - every rank runs on the host the hostfile gives it, in that host's PID
#    namespace; with shared memory alone (no TCP) the job cannot start, so
#    the hosts really are apart to Open MPI, while 2 ranks within one host
#    run on it;
#  - 4 ranks on 3 hosts (2+1+1) reach the param_hash of 4 ranks on one;
#  - checkpoints written from the 3 hosts verify, and a job on one host
#    resumes from them to the param_hash of an uninterrupted one-host run;
#    written in the background (ckpt_async, the writer's own communicator
#    over TCP), they hold the same state (strata ckpt diff).
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/netns.sh"
P="$top_builddir/examples/gpt/train_gpt"
netns_test hosts-train h1 h2 h3
echo "1..8"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 6 --json --eval-n 8"
spec=h1:2,h2:1,h3:1

# each rank: its rank, hostname, the host its pid 1 is the init of, its pid
netns_mpirun 4 $spec sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname) $(tr "\0" "\n" < /proc/1/cmdline | tail -1) $$"' \
    > "$tmp/where.out" 2>&1
sort "$tmp/where.out" | sed 's/^/# rank, hostname, init of, pid: /'
# (only the ranks' lines: mpirun may add a warning of its own, as its
# "plm:rsh: Warning: setpgid(...) failed" when a daemon starts fast)
check "ranks 0-1 run on h1, 2 on h2, 3 on h3, each in its host's PID namespace" \
    sh -c 'test "$(grep -E "^[0-9]+ " "$1" | sort | cut -d" " -f1-3 | tr "\n" " ")" = "0 h1 h1 1 h1 h1 2 h2 h2 3 h3 h3 "' \
    _ "$tmp/where.out"
netns_btl=self,vader netns_mpirun 4 $spec "$P" $small > "$tmp/shm.out" 2>&1; rc=$?
grep -m1 "unable to reach each other" "$tmp/shm.out" | sed 's/^/# without TCP: /'
check "with shared memory alone the hosts cannot reach each other (Open MPI says so; no step)" \
    sh -c 'test "$1" -ne 0 && grep -q "unable to reach each other" "$2" && ! grep -q "^{\"step\"" "$2"' \
    _ "$rc" "$tmp/shm.out" || tail -5 "$tmp/shm.out" | sed 's/^/# /'


netns_btl=self,vader netns_mpirun 2 h1:2 "$P" $small --steps 2 > "$tmp/vader.out" 2>&1; rc=$?
check "2 ranks on one of the hosts run over shared memory alone" \
    sh -c 'test "$1" -eq 0 && grep -q "^{\"final\"" "$2"' _ "$rc" "$tmp/vader.out" || tail -5 "$tmp/vader.out" | sed 's/^/# /'

# one host, then three
"$L" 4 "$P" $small > "$tmp/one.out" 2>&1
t0=$(ms); netns_mpirun 4 $spec "$P" $small > "$tmp/three.out" 2>&1; rc=$?; t1=$(ms)
one=$(hash_of "$tmp/one.out") three=$(hash_of "$tmp/three.out")
echo "# param_hash: 4 ranks on one host $one; 4 ranks on 3 hosts (2+1+1) $three ($((t1 - t0)) ms)"
check "4 ranks on 3 hosts reach the param_hash of 4 ranks on one" \
    sh -c 'test "$1" -eq 0 && test -n "$2" && test "$2" = "$3"' _ "$rc" "$one" "$three" ||
    tail -5 "$tmp/three.out" | sed 's/^/# /'

# checkpoints from three hosts, resumed on one
netns_mpirun 4 $spec "$P" $small --ckpt-dir "$tmp/d" --ckpt-every 2 --stop-at 4 > "$tmp/w.out" 2>&1; rc=$?
check "a job on 3 hosts writes checkpoints (steps 2 and 4) and leaves no lock" \
    sh -c 'test "$1" -eq 0 && test -e "$2/step-00000002.h5" && test -e "$2/step-00000004.h5" && test ! -e "$2/lock"' \
    _ "$rc" "$tmp/d" || tail -5 "$tmp/w.out" | sed 's/^/# /'
"$S" ckpt verify "$tmp/d" > "$tmp/v.out" 2>&1
check "they verify on this host, latest included" grep -q "latest: step-00000004.h5, OK" "$tmp/v.out" ||
    sed 's/^/# /' "$tmp/v.out"
"$L" 4 "$P" $small --ckpt-dir "$tmp/d" --resume > "$tmp/r.out" 2>&1; rc=$?
resumed=$(hash_of "$tmp/r.out")
echo "# param_hash: resumed on one host from the 3 hosts' step 4: $resumed"
check "a job on one host resumes from step 4 to the uninterrupted run's param_hash" \
    sh -c 'test "$1" -eq 0 && grep -q "resumed from .*step-00000004.h5 at step 4" "$2" && test "$3" = "$4"' \
    _ "$rc" "$tmp/r.out" "$resumed" "$one" || tail -5 "$tmp/r.out" | sed 's/^/# /'

# the same written in the background: the writer's own communicator, over TCP
netns_mpirun 4 $spec "$P" $small --ckpt-dir "$tmp/a" --ckpt-every 2 --stop-at 4 --set ckpt_async=on \
    > "$tmp/wa.out" 2>&1; rc=$?
"$L" 4 "$P" $small --ckpt-dir "$tmp/a" --resume > "$tmp/ra.out" 2>&1; rc2=$?
"$S" ckpt diff "$tmp/d/step-00000004.h5" "$tmp/a/step-00000004.h5" > "$tmp/diff.out" 2>&1; rc3=$?
ra=$(hash_of "$tmp/ra.out")
echo "# param_hash: resumed on one host from the 3 hosts' background-written step 4: $ra"
check "checkpoints the 3 hosts write in the background (ckpt_async) hold the same state, and resume alike" \
    sh -c 'test "$1" -eq 0 && test "$2" -eq 0 && test "$3" -eq 0 && test "$4" = "$5"' _ "$rc" "$rc2" "$rc3" "$ra" "$one" ||
    { tail -3 "$tmp/wa.out"; tail -3 "$tmp/ra.out"; grep -v " 0  *0$" "$tmp/diff.out" | head -5; } | sed 's/^/# /'
