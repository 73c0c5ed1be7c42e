#!/bin/sh
# hosts-run.t - strata run across three "hosts" (t/netns.sh): 4 ranks on
# h1, h2, h3 (2+1+1) train at --global-batch 12 with a checkpoint every 5
# steps; h3 is killed whole mid-run. mpirun says it lost a daemon, or a
# rank names its peer's host (no rank is reported dead); strata run finds
# h3 (it does not answer the rsh agent), ends the launcher if it hangs, and
# starts the job again without h3 -- a copy of the
# hostfile without it, 3 ranks (12 rows still) -- from the newest
# checkpoint. The resumed job finishes; its losses match an uninterrupted
# run at global batch 12; from the kill to the first resumed step at most
# 60 s.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/netns.sh"
P="$top_builddir/examples/gpt/train_gpt"
netns_test hosts-run h1 h2 h3
echo "1..5"
job="--threads 1 --layers 2 --dim 32 --heads 4 --global-batch 12 --eval-n 8 --seq 16 --steps 400 --json"
flags=$(netns_mpi_flags h1:2,h2:1,h3:1)
wait_for() { i=0; while [ $i -lt 900 ] && ! grep -qs "$1" "$2"; do sleep 0.1; i=$((i + 1)); done; }

# shellcheck disable=SC2086
netns_launch "$S" run --max-restarts 2 -- "${MPIRUN:-mpirun}" -np 4 $flags -x STRATA_COLLECTIVE_TIMEOUT=5 \
    "$P" $job --ckpt-dir "$tmp/d" --ckpt-every 5 --resume > "$tmp/run.out" 2> "$tmp/run.err" &
pid=$!
wait_for '^{"step":40,' "$tmp/run.out"
t0=$(ms); netns_kill h3
# the first step line after "resumed from": the fault to the resumed step
i=0; t1=
while [ $i -lt 900 ] && [ -z "$t1" ]; do
    sed -n '/^resumed from/,$p' "$tmp/run.out" | grep -q '^{"step"' && t1=$(ms)
    sleep 0.1; i=$((i + 1))
done
wait "$pid"; rc=$?
grep "^strata run\|resumed from\|lost communication\|Remote daemon" "$tmp/run.err" "$tmp/run.out" | sed 's/^/# /'
check "strata run exits 0 after one restart" \
    sh -c 'test "$1" -eq 0 && test "$(grep -c "^strata run: restart " "$2")" -eq 1' _ "$rc" "$tmp/run.err" ||
    tail -40 "$tmp/run.err" | sed "s/^/# /"
check "the restart line names the lost host and goes on 3 ranks at global batch 12" \
    grep -q "restart 1 of 2: host h3 lost .* on 3 ranks (was 4), global batch 12 kept" "$tmp/run.err"
check "the resumed job says where it resumed and trains to step 400" \
    sh -c 'grep -q "^resumed from .*step-00000[0-9]*.h5" "$1" && grep -q "^{\"step\":400," "$1"' _ "$tmp/run.out"

echo "# h3 killed at step 40 or later; $(grep "^resumed from" "$tmp/run.out"); first resumed step $((${t1:-0} - t0)) ms after the kill"
"$L" 4 "$P" $job > "$tmp/ref.out" 2>&1
loss_of() { sed -n 's/^{"final":true.*"loss":\([0-9.e+-]*\),.*/\1/p' "$1"; }
check "the final loss matches an uninterrupted run at global batch 12 (within 1e-5)" \
    awk -v a="$(loss_of "$tmp/run.out")" -v b="$(loss_of "$tmp/ref.out")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; print "# final loss " a " against " b; exit !(a != "" && b != "" && d < 1e-5) }'
check "from the kill to the first step of the resumed job at most 60 s" \
    test -n "$t1" -a $((${t1:-0} - t0)) -le 60000
