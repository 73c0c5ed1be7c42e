#!/bin/sh
# sched-cli.t - `strata plan` and `strata trace` from the command line:
# help, a schedule and its simulation, auto, bad policies and budgets, a
# trace written by plan and read by trace, unreadable and malformed files.
strata="$top_builddir/tools/strata"
prog="$top_srcdir/t/sched_gpt.prog"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
check() {   # check DESCRIPTION COMMAND...: ok when COMMAND succeeds
    desc=$1; shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; fi
}
has() { grep -q -- "$1" "$2"; }

echo 1..13
link="--link-d2h 8G --link-h2d 8G --link-storage 2G --link-latency 0.00002"

"$strata" plan --help > "$tmp/help" 2>&1
check "plan --help documents the program format" has "unit NAME" "$tmp/help"

"$strata" plan -q --budget 1200M --policy '*=host' --schedule both $link "$prog" > "$tmp/both" 2>&1
check "plan prints lhs and naive results" sh -c "grep -q '^lhs ' '$tmp/both' && grep -q '^naive ' '$tmp/both'"

"$strata" plan --budget 1200M --policy 'qkv=storage,*=host' $link "$prog" > "$tmp/list" 2>&1
check "plan prints the per-engine schedule" sh -c "grep -q '^engine io' '$tmp/list' && grep -q 'H2S u1 qkv' '$tmp/list'"

STRATA_ACT_POLICY=auto "$strata" plan -q --budget 1200M $link "$prog" > "$tmp/auto" 2>&1
check "STRATA_ACT_POLICY=auto prints the chosen plan" sh -c "grep -q 'activation plan' '$tmp/auto' && grep -q '^predicted' '$tmp/auto'"

"$strata" plan -q --budget 1200M --policy 'qvk=host' "$prog" > "$tmp/bad" 2>&1
rc=$?
check "unknown name fails and lists the saved names" sh -c "[ $rc -ne 0 ] && grep -q \"'qvk'\" '$tmp/bad' && grep -q 'x, ln1, qkv' '$tmp/bad'"

"$strata" plan -q --budget 600M --policy auto "$prog" > "$tmp/small" 2>&1
rc=$?
check "budget below every plan names the smallest that fits" sh -c "[ $rc -ne 0 ] && grep -q 'smallest device budget that fits' '$tmp/small'"

"$strata" plan -q --budget 1200M --policy '*=keep' "$prog" > "$tmp/keep" 2>&1
rc=$?
check "keep that does not fit fails with the need" sh -c "[ $rc -ne 0 ] && grep -q 'need' '$tmp/keep'"

printf 'unit a\nsave x 1k\nfrobnicate 3\n' > "$tmp/bad.prog"
"$strata" plan -q "$tmp/bad.prog" > "$tmp/badprog" 2>&1
rc=$?
check "malformed program names its line" sh -c "[ $rc -ne 0 ] && grep -q 'line 3' '$tmp/badprog'"

"$strata" plan -q --budget 1200M --policy '*=host' $link --trace "$tmp/r0.json" "$prog" > /dev/null 2>&1
"$strata" trace "$tmp/r0.json" > "$tmp/trace" 2>&1
check "trace reads what plan wrote and reports overlap" sh -c "grep -q 'overlap' '$tmp/trace' && grep -q '^ *0 *1 ' '$tmp/trace'"

"$strata" trace --help > "$tmp/thelp" 2>&1
check "trace --help" has "strata trace FILE" "$tmp/thelp"

"$strata" trace "$tmp/nope.json" > "$tmp/nope" 2>&1
rc=$?
check "unreadable file: error naming it" sh -c "[ $rc -ne 0 ] && grep -q 'nope.json' '$tmp/nope'"

echo '{"traceEvents": [ {"ph": "X", "ts": }' > "$tmp/mal.json"
"$strata" trace "$tmp/mal.json" > "$tmp/mal" 2>&1
rc=$?
check "malformed file: error with its line" sh -c "[ $rc -ne 0 ] && grep -q 'not a strata trace: line 1' '$tmp/mal'"

"$strata" trace > /dev/null 2>&1
rc=$?
check "no files: usage error" [ $rc -eq 2 ]
