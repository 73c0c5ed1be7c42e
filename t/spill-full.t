#!/bin/sh
# spill-full.t - a spill file system that is really full (a 3 MiB tmpfs
# filled to within 64 KiB), not the spill_enospc test fault: on 1 rank and
# on 2 the job fails (non-zero) and the default log level names the cause:
# the plan refused at once because storage_mem was lowered to the file
# system's free space, or (should the space go during the step) the
# documented ENOSPC message (file, bytes needed and free, what to do; its
# default-level text is checked with the fault in gpt-train-settings.t);
# and no spill directory is left behind. Needs root (mount).
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp spill-full
tap_tmpfs 3m
echo "1..4"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dd if=/dev/zero of="$fs/fill" bs=64k 2>/dev/null
truncate -s -65536 "$fs/fill"
for np in 1 2; do
    t0=$(ms)
    "$L" $np "$P" --threads 1 --layers 1 --dim 16 --batch 4 --steps 2 --act-policy '*=storage' \
        --schedule naive --spill-dir "$fs" > "$tmp/np$np.out" 2>&1; rc=$?; t1=$(ms)
    grep "ENOSPC\|failed\|refused" "$tmp/np$np.out" | head -3 | sed 's/^/# /'
    echo "# $np rank(s): exit $rc after $((t1 - t0)) ms"
    check "$np rank(s): exit != 0; the default level names the full file system (storage_mem lowered to its free space, or ENOSPC with the spill file, bytes needed and free)" \
        sh -c 'test "$1" -ne 0 && test "$1" -ne 124 &&
               grep -qE "storage_mem .* lowered to [0-9.]+ [KMG]?i?B, the free space of spill_dir|storage tier full \(ENOSPC.*spill file .*: [0-9]* more bytes needed, [0-9]* bytes free .*spill_dir" "$2"' \
        _ "$rc" "$tmp/np$np.out"
    check "$np rank(s): no spill directory left" sh -c '! ls "$1" | grep -q strata-spill' _ "$fs"
done
