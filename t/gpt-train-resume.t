#!/bin/sh
# gpt-train-resume.t - checkpoints of train_gpt:
#  - a run stopped at step 4 (--stop-at) and resumed with --resume logs the
#    same per-step losses and ends with the same param_hash as a run never
#    stopped (2 ranks); the resume also works on 1 rank (resharding);
#  - SIGUSR1 to mpirun mid-run: the ranks stop after the current step, write
#    a checkpoint and exit 0, and --resume continues from it to the end;
#  - SIGTERM to mpirun with odls_base_sigkill_timeout raised (Open MPI only; as --help
#    says) also stops after the step with a checkpoint.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-resume
echo "1..9"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 10 --json --eval-n 8"
losses() { for f in "$@"; do sed -n 's/^{"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/p' "$tmp/$f"; done; }

"$L" 2 "$P" $small > "$tmp/full" 2>&1
"$L" 2 "$P" $small --ckpt-dir "$tmp/ck" --stop-at 4 > "$tmp/a" 2>&1; rc_a=$?
sed 's/^/# /' "$tmp/a" | grep -v '{"step"'
cp -r "$tmp/ck" "$tmp/ck1"      # step 4, for the 1-rank resume below
"$L" 2 "$P" $small --ckpt-dir "$tmp/ck" --resume > "$tmp/b" 2>&1; rc_b=$?
grep -v '{"step"' "$tmp/b" | sed 's/^/# /'
check "--stop-at 4 exits 0 with a checkpoint of step 4" \
    sh -c 'test "$1" -eq 0 && test -f "$2/ck/step-00000004.h5" && grep -q "stopped after step 4 of 10" "$3"' \
    _ "$rc_a" "$tmp" "$tmp/a"
check "--resume starts at step 5 and runs to the end" \
    sh -c 'test "$1" -eq 0 && grep -q "resumed from .*step-00000004.h5 at step 4" "$2" &&
           grep -q "^{\"step\":5," "$2" && ! grep -q "^{\"step\":4," "$2"' _ "$rc_b" "$tmp/b"
losses full > "$tmp/l_full"; losses a b > "$tmp/l_resumed"
diff "$tmp/l_full" "$tmp/l_resumed" | sed 's/^/# /'
check "the per-step losses of stop+resume equal the uninterrupted run's" \
    sh -c 'test "$(wc -l < "$1")" -eq 10 && cmp -s "$1" "$2"' _ "$tmp/l_full" "$tmp/l_resumed"
check "and so does the final param_hash" \
    sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(hash_of "$tmp/full")" "$(hash_of "$tmp/b")"
# the same checkpoint resumed on 1 rank (the loader reshards): it runs
# steps 5..10 and its losses agree closely (not bitwise: the reduction
# order differs)
"$L" 1 "$P" $small --batch 8 --ckpt-dir "$tmp/ck1" --resume --stop-at 5 > "$tmp/c" 2>&1
s5_full=$(awk '$1 == 5 { print $2 }' "$tmp/l_full"); s5_one=$(losses c | awk '$1 == 5 { print $2 }')
echo "# step 5 loss: 2 ranks $s5_full, resumed on 1 rank $s5_one"
check "a 2-rank checkpoint resumes on 1 rank with the same loss (1e-5)" \
    awk -v a="$s5_full" -v b="$s5_one" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d < 1e-5) }'

# signals: a long run, stopped by a signal to mpirun once it is training
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
signal_run() {  # signal_run SIG NAME [mpirun args]: rc in $tmp/NAME.rc
    sig=$1; name=$2; shift 2
    # shellcheck disable=SC2046
    ${MPIRUN:-mpirun} -np 2 $("$L" --flags) "$@" \
        "$P" --threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 1000000 --log-every 100 \
        --ckpt-dir "$tmp/$name" > "$tmp/$name.out" 2>&1 &
    pid=$!
    # its own output away from ours: a sleep left running must not hold the
    # test's output open (the harness waits for it)
    ( sleep 120; kill -9 $pid 2>/dev/null ) > /dev/null 2>&1 & dog=$!
    i=0
    while [ $i -lt 600 ] && ! grep -q '^step  *200/' "$tmp/$name.out"; do sleep 0.1; i=$((i + 1)); done
    kill -"$sig" $pid
    wait $pid; echo $? > "$tmp/$name.rc"
    kill $dog 2>/dev/null
    grep -v '^step' "$tmp/$name.out" | sed 's/^/# /'
}
signal_run USR1 usr1
check "SIGUSR1 to mpirun: exit 0 after a step, with a checkpoint" \
    sh -c 'test "$(cat "$1.rc")" -eq 0 && grep -q "stopped after step [0-9]* of 1000000 (SIGUSR1 received); checkpoint" "$1.out" &&
           test -f "$1/latest"' _ "$tmp/usr1"
at=$(sed -n 's/.*stopped after step \([0-9]*\) of.*/\1/p' "$tmp/usr1.out")
"$L" 2 "$P" --threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps $((at + 3)) --json \
    --eval-n 8 --ckpt-dir "$tmp/usr1" --resume > "$tmp/usr1b" 2>&1; rc=$?
check "--resume continues after the signal's checkpoint to the end" \
    sh -c 'test "$1" -eq 0 && grep -q "at step $2\$" "$3" && grep -q "^{\"step\":$(($2 + 1))," "$3" &&
           grep -q "^{\"final\":true,\"steps\":$(($2 + 3))," "$3"' _ "$rc" "$at" "$tmp/usr1b"
if [ "${MPI_FLAVOUR:-openmpi}" = openmpi ]; then
    signal_run TERM term --mca odls_base_sigkill_timeout 5
    check "SIGTERM to mpirun (sigkill timeout 5 s): stops after a step with a checkpoint" \
        sh -c 'grep -q "stopped after step [0-9]* of 1000000 (SIGTERM received); checkpoint" "$1.out" &&
               test -f "$1/latest"' _ "$tmp/term"
else
    skip "SIGTERM to mpirun stops after a step" "SIGTERM's grace time is Open MPI's odls_base_sigkill_timeout"
    : > "$tmp/term.out"
fi
check "no run needed its watchdog" \
    sh -c '! grep -q "Killed\|SIGKILL\|signal 9" "$1.out" "$2.out"' _ "$tmp/usr1" "$tmp/term"
