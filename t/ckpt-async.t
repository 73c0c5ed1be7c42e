#!/bin/sh
# ckpt-async.t - checkpoints written in the background (ckpt_async=on),
# train_gpt on 2 ranks. The writer is held back 300 ms per save before it
# copies the shards (test fault ckpt_bg_delay), so the next step reaches
# its optimizer first and must wait for each unit's copy: the files must
# still hold the state of the step they are named for, byte for byte what
# a synchronous save writes (this fails without that wait), and the run's
# param_hash must not move. A rank killed in the middle of a background write
# (ckpt_kill) leaves the previous checkpoint as `latest`, verified. A
# writer stuck in the middle of a file (ckpt_stall) ends the job at
# ckpt_timeout as a synchronous save does (exit 75, flight records). A bad
# value is a usage error.
set -u
. "$top_srcdir/t/tap.sh"
tap_need_hooks
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp ckpt-async
echo "1..12"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
small="--threads 1 --layers 2 --dim 32 --heads 4 --eval-n 8 --batch 4 --json"

"$L" 2 "$P" $small --steps 12 --ckpt-every 4 --ckpt-dir "$tmp/sync" \
    > "$tmp/sync.out" 2> "$tmp/sync.err"
rc_sync=$?
STRATA_TEST_FAULT=ckpt_bg_delay@300 "$L" 2 "$P" $small --steps 12 --ckpt-every 4 \
    --ckpt-dir "$tmp/async" --set ckpt_async=on > "$tmp/async.out" 2> "$tmp/async.err"
rc=$?
grep -i "checkpoint" "$tmp/async.err" | sed 's/^/# /'
check "both runs exit 0" test "$rc_sync" -eq 0 -a "$rc" -eq 0 || sed 's/^/# /' "$tmp/async.err"
check "the same param_hash as with synchronous saves" \
    sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(hash_of "$tmp/sync.out")" "$(hash_of "$tmp/async.out")"
same=yes
for s in 00000004 00000008 00000012; do
    "$S" ckpt diff "$tmp/sync/step-$s.h5" "$tmp/async/step-$s.h5" > "$tmp/diff.$s" 2>&1 || {
        same=no; echo "# step-$s.h5 differs:"; grep -v " 0  *0$" "$tmp/diff.$s" | head -5 | sed 's/^/#   /'; }
done
check "every file holds its step's state, identical to the synchronous save's" test "$same" = yes
check "each save said staged, then written, once" \
    sh -c 'test "$(grep -c "staged in .* written in the background" "$1")" -eq 3 &&
           test "$(grep -c "MiB written; waited" "$1")" -eq 3' _ "$tmp/async.err"
check "latest names step 12; no .tmp left" \
    sh -c 'grep -qx step-00000012.h5 "$1/latest" && ! ls "$1" | grep -q "\.tmp$"' _ "$tmp/async"

# a rank killed while the background write of step 8 is under way; mpirun
# itself, not t/launch, whose own timeout is also an exit status
"$L" 2 "$P" $small --steps 4 --ckpt-dir "$tmp/kill" > /dev/null 2>&1
# shellcheck disable=SC2046
STRATA_TEST_FAULT=ckpt_kill@600 timeout 120 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) \
    "$P" $small --steps 8 --ckpt-every 4 --ckpt-dir "$tmp/kill" --resume --set ckpt_async=on \
    > "$tmp/kill.out" 2>&1
rc=$?
echo "# killed run: exit $rc"
check "the killed run fails (not a timeout)" test "$rc" -ne 0 -a "$rc" -ne 124
check "latest still names step 4, which verifies; no step-00000008.h5" \
    sh -c 'grep -qx step-00000004.h5 "$1/latest" && "$2" ckpt verify "$1/step-00000004.h5" >/dev/null &&
           test ! -e "$1/step-00000008.h5"' _ "$tmp/kill" "$S"

# rank 1's writer stuck in the middle of step 8's file, ckpt_timeout 4 s
# shellcheck disable=SC2046
t0=$(ms)
STRATA_TEST_FAULT=ckpt_stall@600 timeout 120 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) \
    "$P" $small --steps 8 --ckpt-every 4 --ckpt-dir "$tmp/kill" --resume --set ckpt_async=on \
    --set ckpt_timeout=4 > "$tmp/stall.out" 2>&1
rc=$?; t1=$(ms)
echo "# stalled writer: exit $rc after $((t1 - t0)) ms"
check "a stuck background write ends the job with exit 75 within ckpt_timeout + 15 s" \
    test "$rc" -eq 75 -a $((t1 - t0)) -lt 19000 || sed 's/^/# /' "$tmp/stall.out"
check "the message names the background checkpoint and ckpt_timeout; a flight record written" \
    sh -c 'grep -q "written in the background into .* did not finish within ckpt_timeout (4 s)" "$1" &&
           ls "$2" | grep -q "^flight\.[01]\.json$"' _ "$tmp/stall.out" "$tmp/kill"
check "latest still names step 4" grep -qx step-00000004.h5 "$tmp/kill/latest"

"$L" 1 "$P" $small --steps 1 --set ckpt_async=maybe > "$tmp/bad.out" 2>&1
rc=$?
check "ckpt_async=maybe: usage exit 2, the option named" \
    sh -c 'test "$1" -eq 2 && grep -q "ckpt_async" "$2"' _ "$rc" "$tmp/bad.out" || sed 's/^/# /' "$tmp/bad.out"
check_log "without ckpt_dir the option changes nothing (no save, exit 0)" \
    "$L" 1 "$P" $small --steps 2 --set ckpt_async=on
