# t/tap.sh - sourced by every shell test (. "$top_srcdir/t/tap.sh"): the
# helpers they share. t/README says how the tests are named and wired.
#   $L, $S             t/launch (NP PROGRAM ARGS: a multi-rank run) and tools/strata
#   tap_skip_all WHY   the whole test skips: "1..0 # SKIP WHY", exit 0
#   tap_need_hooks     skip the whole test unless built with the test hooks
#   tap_tmp NAME [DIR] $tmp: a fresh directory under DIR (default $TMPDIR or
#                      /tmp), removed at exit; a test with more to undo at
#                      exit (a daemon, a background run) defines tap_cleanup,
#                      which runs first
#   check DESC CMD...  one numbered ok / not ok line from CMD's exit status;
#                      returns that status, so `check ... || diagnostics` works
#   check_log DESC CMD...  check, with CMD's output kept in $tmp/check.log and
#                      shown as diagnostics when it fails
#   ok STATUS DESC [FILE]  one numbered line from a status already taken
#                      (ok $? ...); FILE shown as diagnostics when STATUS is not 0
#   skip DESC WHY      one numbered "ok N - DESC # SKIP WHY" line
#   ms                 wall clock in milliseconds
#   hash_of FILE       the param_hash of train_gpt's final JSON line in FILE
# The helpers keep their own variables in tap_* names: a test's $d or $desc
# survives a check.
L="$top_srcdir/t/launch"; S="$top_builddir/tools/strata"; n=0

tap_skip_all() { echo "1..0 # SKIP $*"; exit 0; }
tap_need_hooks() {
    [ "${test_hooks:-no}" = yes ] ||
        tap_skip_all "built without the test hooks (configure --enable-test-hooks)"
}
tap_at_exit() {
    command -v tap_cleanup > /dev/null 2>&1 && tap_cleanup
    [ -z "${tap_mounted:-}" ] || umount "$tap_mounted" 2>/dev/null
    rm -rf "$tmp"
}
tap_tmp() {
    tmp=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/$1.XXXXXX") || exit 1
    trap tap_at_exit EXIT
}
# tap_tmpfs SIZE: a tmpfs of SIZE mounted at $fs (under $tmp, after
# tap_tmp) and unmounted at exit; the test skips where it cannot be mounted
tap_tmpfs() {
    fs="$tmp/fs"
    mkdir "$fs" && mount -t tmpfs -o "size=$1" tmpfs "$fs" 2>/dev/null ||
        tap_skip_all "cannot mount a tmpfs here (needs root and mount permission)"
    tap_mounted=$fs
}
check() {
    n=$((n + 1)); tap_desc=$1; shift
    if "$@"; then echo "ok $n - $tap_desc"; return 0; fi
    echo "not ok $n - $tap_desc"; return 1
}
check_log() {
    n=$((n + 1)); tap_desc=$1; shift
    if "$@" > "$tmp/check.log" 2>&1; then echo "ok $n - $tap_desc"; return 0; fi
    echo "not ok $n - $tap_desc"; sed 's/^/# /' "$tmp/check.log"; return 1
}
ok() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; return 0; fi
    echo "not ok $n - $2"; [ -z "${3:-}" ] || sed 's/^/# /' "$3"; return 1
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
ms() { date +%s%N | cut -c1-13; }
hash_of() { sed -n 's/^{"final":true.*"param_hash":"\([0-9a-f]*\)".*/\1/p' "$1"; }
