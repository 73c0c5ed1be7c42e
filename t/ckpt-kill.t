#!/bin/sh
# A rank killed with SIGKILL in the middle of a save (test fault
# STRATA_TEST_FAULT=ckpt_kill@BYTES, base/test_fault.h: rank 1 raises
# SIGKILL once it has written that many bytes). mpirun must fail;
# afterwards the previous checkpoint is intact, verifies and loads,
# `latest` still names it, and no partial file exists under a final name.
if [ "${test_hooks:-no}" != yes ]; then
    echo "1..0 # SKIP built without the test hooks (configure --enable-test-hooks)"
    exit 0
fi
launch="$top_srcdir/t/launch"
prog="$top_builddir/t/ckpt_rt"
strata="$top_builddir/tools/strata"
d=$(mktemp -d "$top_builddir/t/ckpt-kill.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
n=0
check() {   # check DESCRIPTION COMMAND...
    desc=$1; shift
    n=$((n + 1))
    if "$@" > "$d/out.log" 2>&1; then echo "ok $n - $desc"
    else echo "not ok $n - $desc"; sed 's/^/# /' "$d/out.log"; fi
}
echo "1..9"
check "save step 1 on 2 ranks" "$launch" 2 "$prog" save "$d" 1
n=$((n + 1))
# mpirun itself, not t/launch: its exit status is 137 here (the rank's
# SIGKILL), which t/launch would take for its own timeout
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
STRATA_TEST_FAULT=ckpt_kill@600 timeout 120 "${MPIRUN:-mpirun}" -np 2 --oversubscribe --bind-to none \
    --mca pml ob1 --mca btl self,vader "$prog" save "$d" 2 > "$d/kill.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "signal 9" "$d/kill.log"; then
    echo "ok $n - save of step 2 with rank 1 killed mid-write fails (mpirun exit $rc)"
else
    echo "not ok $n - save of step 2 with rank 1 killed mid-write: mpirun exit $rc"; sed 's/^/# /' "$d/kill.log"
fi
check "the killed save left its data in step-00000002.h5.tmp only" test -f "$d/step-00000002.h5.tmp"
check "no step-00000002.h5 under the final name" test ! -e "$d/step-00000002.h5"
check "latest still names step-00000001.h5" grep -qx "step-00000001.h5" "$d/latest"
check "strata ckpt verify passes on step 1" "$strata" ckpt verify "$d/step-00000001.h5"
check "step 1 loads on 2 ranks, every element as saved" "$launch" 2 "$prog" load "$d" 1
check "a new save of step 2 succeeds" "$launch" 2 "$prog" save "$d" 2
check "the stale .tmp is gone and step 2 verifies" \
    sh -c "test ! -e '$d/step-00000002.h5.tmp' && '$strata' ckpt verify '$d/step-00000002.h5'"
