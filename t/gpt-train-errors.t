#!/bin/sh
# gpt-train-errors.t - train_gpt refuses bad input with a non-zero exit and
# a message that says what is wrong: dim not divisible by heads, an unknown
# flag, a missing value, a bad number, an unknown saved name in
# --act-policy, a device budget too small (the message names the tier, the
# need and the budget), an empty --trace name, --resume without
# --ckpt-dir, a missing --data file, a --device other than cuda|host|auto,
# --device cuda where no CUDA device answers (exit 2; skipped with one); --help exits 0 and documents the stop
# signal.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
echo "1..13"
# refuses "description" "regex the output must match" ARGS...
refuses() {
    n=$((n + 1)); d=$1; re=$2; shift 2
    out=$("$L" 1 "$P" --threads 1 "$@" 2>&1); rc=$?
    echo "$out" | grep train_gpt | sed "s/^/# /"
    if [ "$rc" -ne 0 ] && echo "$out" | grep -Eq -- "$re"; then echo "ok $n - $d"
    else echo "not ok $n - $d (exit $rc)"; fi
}
refuses "dim not divisible by heads" "dim 10 is not divisible by heads 4" --dim 10 --heads 4
refuses "an unknown flag" "unknown option '--frobnicate'" --frobnicate 3
refuses "a flag without its value" "--steps needs a value" --steps
refuses "a bad number" "--batch needs an integer" --batch 0
refuses "an unknown name in --act-policy lists the saved names" \
    "saves no 'qkvx' \(it saves: unit_input, ln1, .*mlp_act" --act-policy "qkvx=host,*=keep"
refuses "a device budget too small names tier, need and budget" \
    "device tier full: need [0-9.]+ [KMG]?i?B, budget 64 KiB" --device-mem 64K --layers 2 --dim 32
refuses "--trace with an empty file name" "--trace needs a file name" --trace ""
refuses "--resume without --ckpt-dir" "--resume needs --ckpt-dir" --resume
refuses "a missing --data file" "nonexistent" --data /nonexistent/file.txt
refuses "--schedule other than lhs|naive" "--schedule is lhs or naive" --schedule fast
refuses "--device other than cuda|host|auto" "--device is cuda, host or auto, not 'gpu'" --device gpu
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L 2> /dev/null | grep -q GPU; then
    skip "--device cuda without a device: exit 2 and a message" "a CUDA device answers here"
else
    out=$("$L" 1 "$P" --threads 1 --device cuda --steps 1 2>&1); rc=$?
    echo "$out" | grep train_gpt | sed "s/^/# /"
    [ "$rc" -eq 2 ] && echo "$out" | grep -q -- "--device cuda: no CUDA device answers"
    ok $? "--device cuda without a device: exit 2 and a message" || echo "# exit $rc"
fi
out=$("$L" 1 "$P" --help 2>&1); rc=$?
[ "$rc" -eq 0 ] && echo "$out" | grep -q "SIGUSR1" && echo "$out" | grep -q "odls_base_sigkill_timeout" &&
   echo "$out" | grep -q -- "--act-policy"
ok $? "--help exits 0 and documents options and the stop signal"
