#!/bin/sh
# sched-cli.t - `strata plan` and `strata trace` from the command line:
# help, a schedule and its simulation, auto, bad policies and budgets, a
# trace written by plan and read by trace, unreadable and malformed files.
. "$top_srcdir/t/tap.sh"
prog="$top_srcdir/t/sched_gpt.prog"
tap_tmp sched-cli
has() { grep -q -- "$1" "$2"; }

echo 1..15
link="--link-d2h 8G --link-h2d 8G --link-storage 2G --link-latency 0.00002"

"$S" plan --help > "$tmp/help" 2>&1
check "plan --help documents the program format" has "unit NAME" "$tmp/help"

"$S" plan -q --budget 1200M --policy '*=host' --schedule both $link "$prog" > "$tmp/both" 2>&1
check "plan prints lhs and naive results" sh -c "grep -q '^lhs ' '$tmp/both' && grep -q '^naive ' '$tmp/both'"

"$S" plan -q --budget 1200M --policy '*=host' --schedule all $link "$prog" > "$tmp/all" 2>&1
step_of() { sed -n "s/^$1 *step *\([0-9.]*\) ms.*/\1/p" "$2"; }
check "--schedule all prints none, naive and lhs, slowest first (nothing overlaps in none)" \
    awk -v a="$(step_of none "$tmp/all")" -v b="$(step_of naive "$tmp/all")" -v c="$(step_of lhs "$tmp/all")" \
    'BEGIN { exit !(a != "" && b != "" && c != "" && a + 0 > b + 0 && b + 0 >= c + 0) }' ||
    sed 's/^/# /' "$tmp/all"
"$S" plan -q --schedule sometimes "$prog" > "$tmp/badmode" 2>&1
rc=$?
check "a bad --schedule names the choices, exit 2" \
    sh -c "[ $rc -eq 2 ] && grep -q 'lhs' '$tmp/badmode' && grep -q 'none, both or all' '$tmp/badmode'"

"$S" plan --budget 1200M --policy 'qkv=storage,*=host' $link "$prog" > "$tmp/list" 2>&1
check "plan prints the per-engine schedule" sh -c "grep -q '^engine io' '$tmp/list' && grep -q 'H2S u1 qkv' '$tmp/list'"

STRATA_ACT_POLICY=auto "$S" plan -q --budget 1200M $link "$prog" > "$tmp/auto" 2>&1
check "STRATA_ACT_POLICY=auto prints the chosen plan" sh -c "grep -q 'activation plan' '$tmp/auto' && grep -q '^predicted' '$tmp/auto'"

"$S" plan -q --budget 1200M --policy 'qvk=host' "$prog" > "$tmp/bad" 2>&1
rc=$?
check "unknown name fails and lists the saved names" sh -c "[ $rc -ne 0 ] && grep -q \"'qvk'\" '$tmp/bad' && grep -q 'x, ln1, qkv' '$tmp/bad'"

"$S" plan -q --budget 600M --policy auto "$prog" > "$tmp/small" 2>&1
rc=$?
check "budget below every plan names the smallest that fits" sh -c "[ $rc -ne 0 ] && grep -q 'smallest device budget that fits' '$tmp/small'"

"$S" plan -q --budget 1200M --policy '*=keep' "$prog" > "$tmp/keep" 2>&1
rc=$?
check "keep that does not fit fails with the need" sh -c "[ $rc -ne 0 ] && grep -q 'need' '$tmp/keep'"

printf 'unit a\nsave x 1k\nfrobnicate 3\n' > "$tmp/bad.prog"
"$S" plan -q "$tmp/bad.prog" > "$tmp/badprog" 2>&1
rc=$?
check "malformed program names its line" sh -c "[ $rc -ne 0 ] && grep -q 'line 3' '$tmp/badprog'"

"$S" plan -q --budget 1200M --policy '*=host' $link --trace "$tmp/r0.json" "$prog" > /dev/null 2>&1
"$S" trace "$tmp/r0.json" > "$tmp/trace" 2>&1
check "trace reads what plan wrote and reports overlap" sh -c "grep -q 'overlap' '$tmp/trace' && grep -q '^ *0 *1 ' '$tmp/trace'"

"$S" trace --help > "$tmp/thelp" 2>&1
check "trace --help" has "strata trace FILE" "$tmp/thelp"

"$S" trace "$tmp/nope.json" > "$tmp/nope" 2>&1
rc=$?
check "unreadable file: error naming it" sh -c "[ $rc -ne 0 ] && grep -q 'nope.json' '$tmp/nope'"

echo '{"traceEvents": [ {"ph": "X", "ts": }' > "$tmp/mal.json"
"$S" trace "$tmp/mal.json" > "$tmp/mal" 2>&1
rc=$?
check "malformed file: error with its line" sh -c "[ $rc -ne 0 ] && grep -q 'not a strata trace: line 1' '$tmp/mal'"

"$S" trace > /dev/null 2>&1
rc=$?
check "no files: usage error" [ $rc -eq 2 ]
