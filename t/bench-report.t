#!/bin/sh
# bench-report.t - `bench/run NAME --report` writes the dated report the
# README and docs/ quote from: the date, the machine and its CPU flags, the
# build, the command and the benchmark's table exactly as printed; refuses
# --json and "all"; a failed benchmark leaves no report behind.
. "$top_srcdir/t/tap.sh"
run="$top_srcdir/bench/run"
tap_tmp bench-report
export STRATA_BUILDDIR="$top_builddir" STRATA_RESULTS_DIR="$tmp/results"
echo 1..9

"$run" tiers --report --max 64K --repeats 1 --storage-budget 1M --dir "$tmp" --no-interference \
    > "$tmp/out" 2> "$tmp/err"
check "tiers --report: exit 0" test $? -eq 0
r="$tmp/results/tiers.md"
check "it writes \$STRATA_RESULTS_DIR/tiers.md" test -s "$r"
check "the report has the date, the machine, the CPU flags and the core count" \
    sh -c "grep -q '^- date: [0-9-]* [0-9:]* UTC' '$r' && grep -q '^- machine: .*(family .*, model .*), [0-9]* cores' '$r' && grep -q '^- CPU flags:' '$r'"
check "the report has the build and the command" \
    sh -c "grep -q '^- build: .*, BLAS' '$r' && grep -q '^- command: \`bench/run tiers --max 64K --repeats 1' '$r'"
# the table between the fences is the benchmark's standard output, byte for byte
sed -n '/^```$/,/^```$/p' "$r" | sed '1d;$d' > "$tmp/table"
check "the table is the output as printed" cmp -s "$tmp/table" "$tmp/out"
check "the table is not empty" test -s "$tmp/table"

"$run" tiers --report --json > /dev/null 2> "$tmp/err"
check "--report with --json is refused (exit 2)" test $? -eq 2
"$run" all --report > /dev/null 2> "$tmp/err"
check "--report with all is refused (exit 2)" test $? -eq 2
rm -f "$r"
"$run" tiers --report --no-such-option > /dev/null 2> "$tmp/err"
rc=$?
check "a failed benchmark fails and writes no report (exit $rc)" sh -c "[ $rc -ne 0 ] && [ ! -e '$r' ]"
