#!/bin/sh
# A rank killed with SIGKILL in the middle of a save (test fault
# STRATA_TEST_FAULT=ckpt_kill@BYTES, base/test_fault.h: rank 1 raises
# SIGKILL once it has written that many bytes). mpirun must fail;
# afterwards the previous checkpoint is intact, verifies and loads,
# `latest` still names it, and no partial file exists under a final name.
. "$top_srcdir/t/tap.sh"
tap_need_hooks
prog="$top_builddir/t/ckpt_rt"
tap_tmp ckpt-kill "$top_builddir/t"
echo "1..9"
check_log "save step 1 on 2 ranks" "$L" 2 "$prog" save "$tmp" 1
n=$((n + 1))
# mpirun itself, not t/launch: its exit status is 137 here (the rank's
# SIGKILL), which t/launch would take for its own timeout
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
# shellcheck disable=SC2046
STRATA_TEST_FAULT=ckpt_kill@600 timeout 120 "${MPIRUN:-mpirun}" -np 2 $("$L" --flags) \
    "$prog" save "$tmp" 2 > "$tmp/kill.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "signal 9" "$tmp/kill.log"; then
    echo "ok $n - save of step 2 with rank 1 killed mid-write fails (mpirun exit $rc)"
else
    echo "not ok $n - save of step 2 with rank 1 killed mid-write: mpirun exit $rc"; sed 's/^/# /' "$tmp/kill.log"
fi
check_log "the killed save left its data in step-00000002.h5.tmp only" test -f "$tmp/step-00000002.h5.tmp"
check_log "no step-00000002.h5 under the final name" test ! -e "$tmp/step-00000002.h5"
check_log "latest still names step-00000001.h5" grep -qx "step-00000001.h5" "$tmp/latest"
check_log "strata ckpt verify passes on step 1" "$S" ckpt verify "$tmp/step-00000001.h5"
check_log "step 1 loads on 2 ranks, every element as saved" "$L" 2 "$prog" load "$tmp" 1
check_log "a new save of step 2 succeeds" "$L" 2 "$prog" save "$tmp" 2
check_log "the stale .tmp is gone and step 2 verifies" \
    sh -c "test ! -e '$tmp/step-00000002.h5.tmp' && '$S' ckpt verify '$tmp/step-00000002.h5'"
