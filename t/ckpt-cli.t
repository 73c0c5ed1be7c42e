#!/bin/sh
# `strata ckpt info|verify|diff` on files written by t/ckpt_rt: output,
# exit statuses, --help.
launch="$top_srcdir/t/launch"
prog="$top_builddir/t/ckpt_rt"
strata="$top_builddir/tools/strata"
d=$(mktemp -d "$top_builddir/t/ckpt-cli.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$d/out"; fi; }
run() { "$@" > "$d/out" 2>&1; }   # run CMD...: output in $d/out, status in $?
echo "1..16"
run "$launch" 2 "$prog" save "$d/a" 4 --half bf16; ok $? "save step 4 (with a bf16 copy) on 2 ranks"
run "$launch" 2 "$prog" save "$d/b" 5; ok $? "save step 5 on 2 ranks"
a=$d/a/step-00000004.h5 b=$d/b/step-00000005.h5
for sub in "" info verify diff; do
    # shellcheck disable=SC2086
    run "$strata" ckpt $sub --help; ok $? "strata ckpt $sub --help exits 0"
done
run "$strata" ckpt info "$a"
rc=$?; [ $rc = 0 ] && grep -q '^step  *4$' "$d/out" && grep -q '^/model/block.0/qkv  *f32  *\[13,11\]  *572$' "$d/out" &&
    grep -q '^/model_bf16/embed/g  *bf16  *\[3,2,5\]  *60$' "$d/out" && grep -q 'config.model  *synthetic' "$d/out"
ok $? "info shows step, tensors with dtype, shape and bytes, and the configuration"
run "$strata" ckpt verify "$a"; rc=$?
[ $rc = 0 ] && grep -q 'OK: step 4' "$d/out"; ok $? "verify of a good file: exit 0, OK"
cp "$a" "$d/trunc.h5" && truncate -s 200000 "$d/trunc.h5"
run "$strata" ckpt verify "$d/trunc.h5"; rc=$?
[ $rc = 1 ] && grep -q 'truncated' "$d/out"; ok $? "verify of a truncated file: exit 1, says truncated"
run "$strata" ckpt verify "$d/none.h5"; [ $? = 1 ]; ok $? "verify of a missing file: exit 1"
run "$strata" ckpt diff "$a" "$a"; rc=$?
[ $rc = 0 ] && grep -q '^/model/embed/w  *0  *0$' "$d/out"; ok $? "diff of a file with itself: exit 0, zero differences"
run "$strata" ckpt diff "$b" "$a"; rc=$?
# step 5 vs step 4 values differ by exactly 1 everywhere
[ $rc = 1 ] && grep -q '^/model/block.0/qkv  *1  *' "$d/out" && grep -q '^/model_bf16/embed/w  *only in' "$d/out"
ok $? "diff of steps 5 and 4: exit 1, max_abs 1, the bf16 copy only in one"
run "$strata" ckpt diff "$a" "$d/none.h5"; [ $? = 2 ]; ok $? "diff with a missing file: exit 2"
run "$strata" ckpt info; [ $? = 2 ]; ok $? "info without a file: usage, exit 2"
run "$strata" ckpt frobnicate x; [ $? = 2 ]; ok $? "unknown subcommand: exit 2"
run "$strata" --help; grep -q '^  ckpt ' "$d/out"; ok $? "strata --help lists ckpt"
