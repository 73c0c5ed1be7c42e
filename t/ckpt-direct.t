#!/bin/sh
# Direct raw transfers (pwrite/pread at the datasets' file offsets) and the
# HDF5 transfers (STRATA_CKPT_DIRECT=0) write the same file and read each
# other's files: a checkpoint saved one way loads the other way, on the same
# and on another number of ranks, every element checked by ckpt_rt. The
# debug log's byte counts show which way each save and load went. Both
# files verify, diff as identical (values and checksum tables), and h5dump
# shows the values.
. "$top_srcdir/t/tap.sh"
prog="$top_builddir/t/ckpt_rt"
tap_tmp ckpt-direct "$top_builddir/t"
export STRATA_LOG_LEVEL=debug
# every rank's debug line of the save says how many bytes went directly
saved_direct() { c=$(grep -c 'bytes written here, [1-9][0-9]* directly)' "$1"); [ "$c" = "$2" ]; }
saved_hdf5() { c=$(grep -c '([1-9][0-9]* bytes written here, 0 directly)' "$1"); [ "$c" = "$2" ]; }
read_direct() { c=$(grep -c 'reading ([1-9][0-9]* bytes directly, 0 through HDF5)' "$1"); [ "$c" = "$2" ]; }
read_hdf5() { c=$(grep -c 'reading (0 bytes directly, [1-9][0-9]* through HDF5)' "$1"); [ "$c" = "$2" ]; }
loaded() { ! grep -q '^not ok' "$1" && [ "$(grep -c '^ok' "$1")" = 3 ]; }

echo "1..17"
"$L" 2 "$prog" save "$tmp/direct" 4 --half bf16 > "$tmp/s1" 2>&1
ok $? "save step 4 on 2 ranks, direct (the default)" "$tmp/s1"
saved_direct "$tmp/s1" 2; ok $? "both ranks wrote their tensor bytes directly" "$tmp/s1"
STRATA_CKPT_DIRECT=0 "$L" 2 "$prog" save "$tmp/hdf5" 4 --half bf16 > "$tmp/s2" 2>&1
ok $? "save step 4 on 2 ranks with STRATA_CKPT_DIRECT=0" "$tmp/s2"
saved_hdf5 "$tmp/s2" 2; ok $? "both ranks wrote through H5Dwrite" "$tmp/s2"

# direct file, HDF5 reads; HDF5 file, direct reads; same W and resharded
for c in "direct 0 2" "direct 0 3" "hdf5 1 2" "hdf5 1 3"; do
    set -- $c
    STRATA_CKPT_DIRECT=$2 "$L" "$3" "$prog" load "$tmp/$1" 4 > "$tmp/l" 2>&1
    if [ "$2" = 1 ]; then how=direct; check=read_direct; else how="through HDF5"; check=read_hdf5; fi
    loaded "$tmp/l" && $check "$tmp/l" "$3"
    ok $? "$1-written file loaded $how on $3 ranks: every element as saved" "$tmp/l"
done

a=$tmp/direct/step-00000004.h5 b=$tmp/hdf5/step-00000004.h5
"$S" ckpt verify "$a" > "$tmp/v" 2>&1; ok $? "the direct file verifies" "$tmp/v"
"$S" ckpt verify "$b" > "$tmp/v" 2>&1; ok $? "the HDF5-written file verifies" "$tmp/v"
"$S" ckpt diff "$a" "$b" > "$tmp/diff" 2>&1; rc=$?
[ $rc = 0 ] && grep -q '^/model/embed/w  *0  *0$' "$tmp/diff" && grep -q '^/optim/block.0/qkv/exp_avg  *0  *0$' "$tmp/diff"
ok $? "strata ckpt diff: the two files hold the same values (exit 0)" "$tmp/diff"

if [ -z "${H5DUMP:-}" ]; then
    for i in 1 2 3 4 5 6; do skip "h5dump" "h5dump not found by configure"; done
    exit 0
fi
# the same checksum tables: the same bytes were hashed
for u in embed block.0 block.1; do
    "$H5DUMP" -d "/checksums/$u" "$a" | sed 1d > "$tmp/ca" 2>&1
    "$H5DUMP" -d "/checksums/$u" "$b" | sed 1d > "$tmp/cb" 2>&1
    cmp -s "$tmp/ca" "$tmp/cb" && grep -q 'DATASET "/checksums/'"$u"'"' "$tmp/ca"
    ok $? "/checksums/$u is the same in both files" "$tmp/ca"
done
# embed/w holds 0.25 * j + step for element j, in rows of 7
for f in "$a" "$b"; do
    "$H5DUMP" -d /model/embed/w "$f" > "$tmp/dump" 2>&1
    grep -q '(0,0): 4, 4.25, 4.5, 4.75, 5, 5.25, 5.5,' "$tmp/dump" &&
        grep -q '(4,0): 11, 11.25, 11.5, 11.75, 12, 12.25, 12.5' "$tmp/dump"
    ok $? "h5dump -d /model/embed/w of $(basename "$(dirname "$f")")/$(basename "$f") shows the values" "$tmp/dump"
done
"$H5DUMP" -d /model_bf16/embed/w "$a" > "$tmp/dump" 2>&1
grep -q '(4,0): 11, 11.25, 11.5, 11.75, 12, 12.25, 12.5' "$tmp/dump"
ok $? "h5dump -d /model_bf16/embed/w of the direct file shows the values" "$tmp/dump"
