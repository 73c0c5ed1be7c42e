# t/tap.sh - sourced by the shell tests (. "$top_srcdir/t/tap.sh"): the
# helpers they share.
#   tap_need_hooks     skip the whole test unless built with the test hooks
#   tap_tmp NAME       $tmp: a fresh directory, removed at exit
#   check DESC CMD...  one numbered ok / not ok line from CMD's exit status
#   ms                 wall clock in milliseconds
#   hash_of FILE       the param_hash of train_gpt's final JSON line in FILE
L="$top_srcdir/t/launch"; S="$top_builddir/tools/strata"; n=0

tap_need_hooks() {
    if [ "${test_hooks:-no}" != yes ]; then
        echo "1..0 # SKIP built without the test hooks (configure --enable-test-hooks)"
        exit 0
    fi
}
tap_tmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
}
check() { n=$((n + 1)); d=$1; shift; if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fi; }
ms() { date +%s%N | cut -c1-13; }
hash_of() { sed -n 's/^{"final":true.*"param_hash":"\([0-9a-f]*\)".*/\1/p' "$1"; }
