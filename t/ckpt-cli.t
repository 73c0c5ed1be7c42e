#!/bin/sh
# `strata ckpt info|verify|diff` on files written by t/ckpt_rt: output,
# exit statuses, --help.
. "$top_srcdir/t/tap.sh"
prog="$top_builddir/t/ckpt_rt"
tap_tmp ckpt-cli "$top_builddir/t"
run() { "$@" > "$tmp/out" 2>&1; }   # run CMD...: output in $tmp/out, status in $?
echo "1..16"
run "$L" 2 "$prog" save "$tmp/a" 4 --half bf16; ok $? "save step 4 (with a bf16 copy) on 2 ranks" "$tmp/out"
run "$L" 2 "$prog" save "$tmp/b" 5; ok $? "save step 5 on 2 ranks" "$tmp/out"
a=$tmp/a/step-00000004.h5 b=$tmp/b/step-00000005.h5
for sub in "" info verify diff; do
    # shellcheck disable=SC2086
    run "$S" ckpt $sub --help; ok $? "strata ckpt $sub --help exits 0" "$tmp/out"
done
run "$S" ckpt info "$a"
rc=$?; [ $rc = 0 ] && grep -q '^step  *4$' "$tmp/out" && grep -q '^/model/block.0/qkv  *f32  *\[13,11\]  *572$' "$tmp/out" &&
    grep -q '^/model_bf16/embed/g  *bf16  *\[3,2,5\]  *60$' "$tmp/out" && grep -q 'config.model  *synthetic' "$tmp/out"
ok $? "info shows step, tensors with dtype, shape and bytes, and the configuration" "$tmp/out"
run "$S" ckpt verify "$a"; rc=$?
[ $rc = 0 ] && grep -q 'OK: step 4' "$tmp/out"; ok $? "verify of a good file: exit 0, OK" "$tmp/out"
cp "$a" "$tmp/trunc.h5" && truncate -s 200000 "$tmp/trunc.h5"
run "$S" ckpt verify "$tmp/trunc.h5"; rc=$?
[ $rc = 1 ] && grep -q 'truncated' "$tmp/out"; ok $? "verify of a truncated file: exit 1, says truncated" "$tmp/out"
run "$S" ckpt verify "$tmp/none.h5"; [ $? = 1 ]; ok $? "verify of a missing file: exit 1" "$tmp/out"
run "$S" ckpt diff "$a" "$a"; rc=$?
[ $rc = 0 ] && grep -q '^/model/embed/w  *0  *0$' "$tmp/out"; ok $? "diff of a file with itself: exit 0, zero differences" "$tmp/out"
run "$S" ckpt diff "$b" "$a"; rc=$?
# step 5 vs step 4 values differ by exactly 1 everywhere
[ $rc = 1 ] && grep -q '^/model/block.0/qkv  *1  *' "$tmp/out" && grep -q '^/model_bf16/embed/w  *only in' "$tmp/out"
ok $? "diff of steps 5 and 4: exit 1, max_abs 1, the bf16 copy only in one" "$tmp/out"
run "$S" ckpt diff "$a" "$tmp/none.h5"; [ $? = 2 ]; ok $? "diff with a missing file: exit 2" "$tmp/out"
run "$S" ckpt info; [ $? = 2 ]; ok $? "info without a file: usage, exit 2" "$tmp/out"
run "$S" ckpt frobnicate x; [ $? = 2 ]; ok $? "unknown subcommand: exit 2" "$tmp/out"
run "$S" --help; grep -q '^  ckpt ' "$tmp/out"; ok $? "strata --help lists ckpt" "$tmp/out"
