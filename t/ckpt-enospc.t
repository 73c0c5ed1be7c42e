#!/bin/sh
# ckpt-enospc.t - a checkpoint file system that fills during a save (a
# 3 MiB tmpfs, filled to within 128 KiB after a first good checkpoint):
# on 2 ranks, found by the reservation before any byte is written, and
# (test fault ckpt_noreserve) by the direct writes themselves; on 1 rank
# the same. Each run ends with exit 1 on every rank within 60 s (no hang in
# HDF5's collective close, no segfault at MPI_Finalize), the message names
# the file system and the lack of space, `latest` still names the previous
# checkpoint, which verifies, and no step-*.tmp or lock is left. The same
# for a save written in the background (ckpt_async). Needs root (mount).
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp ckpt-enospc
tap_tmpfs 3m
echo "1..15"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
small="--threads 1 --layers 2 --dim 32 --heads 4 --eval-n 8 --ckpt-dir $fs/d"

"$L" 2 "$P" $small --batch 4 --steps 2 > "$tmp/first.out" 2>&1
# leave 128 KiB free: less than a checkpoint of this model (about 0.5 MiB)
dd if=/dev/zero of="$fs/fill" bs=64k 2>/dev/null
truncate -s -131072 "$fs/fill"
echo "# $(df -k "$fs" | tail -1)"

# one full save: NP, the fault (or empty), the case's name, more options
full() {
    np=$1 fault=$2 name=$3
    shift 3
    t0=$(ms)
    # the same global batch of 8 rows, or the resume is refused
    STRATA_TEST_FAULT=$fault "$L" "$np" "$P" $small --batch $((8 / np)) --steps 4 --ckpt-every 2 --resume \
        "$@" > "$tmp/$name.out" 2>&1
    rc=$?; t1=$(ms)
    grep -v "^step\|^{" "$tmp/$name.out" | grep -iv "^ *$\|^---\|mpirun\|process\|exit code\|per user\|primary job" | sed "s/^/# /"
    echo "# $name: exit $rc after $((t1 - t0)) ms"
    check "$name: exit 1 within 60 s" test "$rc" -eq 1 -a $((t1 - t0)) -lt 60000
    check "$name: the message names the file system and the lack of space, once" \
        sh -c 'test "$(grep -c "the file system $2 (tmpfs) is full (No space left on device)" "$1")" -eq 1' \
        _ "$tmp/$name.out" "$fs"
    check "$name: latest names the previous checkpoint, which verifies; no .tmp, no lock left" \
        sh -c 'grep -qx step-00000002.h5 "$1/latest" && "$2" ckpt verify "$1/step-00000002.h5" >/dev/null &&
               ! ls "$1" | grep -q "\.tmp$" && test ! -e "$1/lock"' _ "$fs/d" "$S"
}
full 2 "" reserve-np2
if [ "${test_hooks:-no}" = yes ]; then
    full 2 ckpt_noreserve@1 write-np2
    full 1 ckpt_noreserve@1 write-np1
else
    for i in 4 5 6 7 8 9; do echo "ok $i # SKIP built without the test hooks"; done
    n=9
fi
full 1 "" reserve-np1
# written in the background: the failure ends the job at the next step
# (steps 5 and 6 follow the failed save of step 4) or save, all ranks alike
full 2 "" async-np2 --steps 6 --set ckpt_async=on
