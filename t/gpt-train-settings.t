#!/bin/sh
# gpt-train-settings.t - settings and messages: a flag beats its STRATA_*
# variable, which beats the default (threads; shard size on 2 ranks); a bad
# STRATA_* value is refused once, naming the variable; --ckpt-dir naming a
# file or a path under a file and --data naming a directory get messages
# that name the problem, before any step; an error every rank hits is
# printed once; the spill file system full (test fault spill_enospc) says
# ENOSPC, the file, the bytes needed and free and what to do; spill
# directories of dead owners are reclaimed at start while a live job's,
# in the same spill_dir, is left alone; the stop signals reach one thread
# only. Times to exit are printed. The
# storage runs use the naive schedule: lhs keeps every save on device when
# it fits, and then nothing spills. The banner names the BLAS kernels.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-settings
tap_cleanup() { kill $bg 2>/dev/null; }
bg=
echo "1..15"
one() { timeout 120 "$P" --steps 1 --layers 1 --dim 16 "$@"; }   # MPI singleton, 1 rank
tiny="--steps 1 --layers 1 --dim 16 --threads 1"

STRATA_THREADS=3 one > "$tmp/a" 2>&1
check "STRATA_THREADS=3 is used when --threads is not given" grep -q ", 3 threads per rank" "$tmp/a"
STRATA_THREADS=3 one --threads 2 > "$tmp/b" 2>&1
check "--threads 2 beats STRATA_THREADS=3" grep -q ", 2 threads per rank" "$tmp/b"
# which kernels the products run on: a tokens/s figure means little without
# it (with OpenBLAS: its version and core; a forced core is named as such)
env -u OPENBLAS_CORETYPE "$P" $tiny > "$tmp/blas" 2>&1
check "the banner names the BLAS and, with OpenBLAS, the kernels it picked" \
    sh -c 'grep -q "OpenBLAS [0-9.]*, [A-Za-z0-9]* kernels)*$" "$1" ||
           grep -q "a CBLAS other than OpenBLAS)*$" "$1"' _ "$tmp/blas"
OPENBLAS_CORETYPE=Haswell "$P" $tiny > "$tmp/blas2" 2>&1
check "a core forced by OPENBLAS_CORETYPE is named as forced" \
    sh -c 'grep -q ", Haswell kernels (OPENBLAS_CORETYPE=Haswell)[):a-z ]*$" "$1" ||
           grep -q "a CBLAS other than OpenBLAS)*$" "$1"' _ "$tmp/blas2"
STRATA_SHARD_SIZE=1 "$L" 2 "$P" $tiny > "$tmp/c" 2>&1
STRATA_SHARD_SIZE=1 "$L" 2 "$P" $tiny --shard 2 > "$tmp/d" 2>&1
check "STRATA_SHARD_SIZE=1 is used on 2 ranks; --shard 2 beats it" \
    sh -c 'grep -q "2 ranks, shard group 1," "$1" && grep -q "2 ranks, shard group 2," "$2"' _ "$tmp/c" "$tmp/d"
STRATA_THREADS=abc "$L" 2 "$P" $tiny > "$tmp/e" 2>&1; rc=$?
sed 's/^/# /' "$tmp/e" | grep train_gpt
check "a bad STRATA_THREADS is refused once, naming the variable" \
    sh -c 'test "$1" -ne 0 && test "$(grep -c "STRATA_THREADS: option threads: cannot parse .abc." "$2")" -eq 1' _ "$rc" "$tmp/e"
"$L" 2 "$P" $tiny --device-mem 64K > "$tmp/f" 2>&1; rc=$?
check "an error every rank hits (device budget) is printed once" \
    sh -c 'test "$1" -ne 0 && test "$(grep -c "device tier full" "$2")" -eq 1' _ "$rc" "$tmp/f"
: > "$tmp/file"
for c in "file:--ckpt-dir $tmp/file:exists but is not a directory" \
         "under:--ckpt-dir $tmp/file/sub:cannot be created: Not a directory" \
         "data:--data $tmp:is a directory, not a regular file"; do
    name=${c%%:*}; rest=${c#*:}; args=${rest%%:*}; re=${rest#*:}
    t0=$(ms); one --threads 1 $args > "$tmp/$name.out" 2>&1; rc=$?; t1=$(ms)
    sed 's/^/# /' "$tmp/$name.out"; echo "# $args: exit $rc after $((t1 - t0)) ms"
    check "$args: refused before any step: $re" \
        sh -c 'test "$1" -ne 0 && grep -q "$2" "$3" && ! grep -q "^step" "$3"' _ "$rc" "$re" "$tmp/$name.out"
done

# the spill file system full
mkdir "$tmp/sp"
t0=$(ms); STRATA_TEST_FAULT=spill_enospc@1 one --threads 1 --act-policy '*=storage' --schedule naive --spill-dir "$tmp/sp" \
    > "$tmp/full.out" 2>&1; rc=$?; t1=$(ms)
sed 's/^/# /' "$tmp/full.out"; echo "# spill full: exit $rc after $((t1 - t0)) ms"
check "spill full: exit != 0; the default-level error says ENOSPC, file, bytes needed and free, what to do" \
    sh -c 'test "$1" -ne 0 && test "$(grep -c "ENOSPC" "$2")" -eq 1 &&
           grep -q "ENOSPC.*spill file .*/spill.h5.: [0-9]* more bytes needed, [0-9]* bytes free .*spill_dir" "$2"' \
    _ "$rc" "$tmp/full.out"
check "and its spill directory is gone" sh -c 'test -z "$(ls "$1")"' _ "$tmp/sp"

# reclaim: a dead owner's directory goes; a live job's stays
"$P" --threads 1 --layers 1 --dim 16 --steps 1000000 --log-every 20 --act-policy '*=storage' --schedule naive \
    --spill-dir "$tmp/sp" > "$tmp/live.out" 2>&1 &
bg=$!
i=0; while [ $i -lt 600 ] && ! grep -q '^step  *20/' "$tmp/live.out"; do sleep 0.1; i=$((i + 1)); done
live=$(ls "$tmp/sp")
# the stop signals (and SIGUSR2) reach one thread only, never a thread in
# the middle of a kernel or an MPI call: every other thread blocks them
takers=0 threads=0
for st in /proc/$bg/task/*/status; do
    blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$st" 2>/dev/null) || continue
    [ -n "$blk" ] || continue
    threads=$((threads + 1))
    # SIGINT 2, SIGUSR1 10, SIGUSR2 12, SIGTERM 15: bits 1, 9, 11, 14
    [ $(( 0x$blk & 0x4a02 )) -eq 0 ] && takers=$((takers + 1))
done
echo "# live job: $threads threads, $takers take SIGINT, SIGUSR1, SIGUSR2 and SIGTERM"
check "one thread of the live job's takes the stop signals and SIGUSR2; the others block them" \
    sh -c 'test "$1" -eq 1 && test "$2" -gt 2' _ "$takers" "$threads"
sh -c 'exit 0' & dead=$!; wait $dead
mkdir "$tmp/sp/strata-spill-r0-dead01"
echo "host=$(hostname) pid=$dead start=1" > "$tmp/sp/strata-spill-r0-dead01/owner"
head -c 1000000 /dev/zero > "$tmp/sp/strata-spill-r0-dead01/spill.h5"
one --threads 1 --act-policy '*=storage' --schedule naive --spill-dir "$tmp/sp" > "$tmp/reclaim.out" 2>&1; rc=$?
grep "removed" "$tmp/reclaim.out" | sed 's/^/# /'
check "a dead owner's spill directory is reclaimed at start, the live job's is kept" \
    sh -c 'test "$1" -eq 0 && test ! -e "$2/strata-spill-r0-dead01" && test -n "$3" && test -d "$2/$3" &&
           grep -q "removed 1 spill directory of dead jobs" "$4"' _ "$rc" "$tmp/sp" "$live" "$tmp/reclaim.out"
kill -USR1 $bg; wait $bg; rc=$?; bg=
check "the live job ran on undisturbed, and removed its own directory" \
    sh -c 'test "$1" -eq 0 && grep -q "SIGUSR1 received" "$2" && test -z "$(ls "$3")"' _ "$rc" "$tmp/live.out" "$tmp/sp" ||
    { echo "# live job: exit $rc; left in spill_dir: $(ls "$tmp/sp" | tr '\n' ' ')"; tail -5 "$tmp/live.out" | sed 's/^/# /'; }
