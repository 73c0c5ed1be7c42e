#!/bin/sh
# copy-bw.t - bench/copy_bw's options and its answer without a device:
# bad options exit 2 with a message; without a CUDA device it says so and
# exits 77 ({"skip":...} with --json); with one, --json gives a d2h and an
# h2d row per size with positive bandwidths.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/bench/copy_bw"
tap_tmp copy-bw
echo "1..4"
bad() { "$P" "$@" > "$tmp/out" 2> "$tmp/err"; test $? -eq 2 && grep -q "^usage: copy_bw" "$tmp/err"; }
check "an unknown option is refused with the usage" bad --frobnicate
check "--sizes 0 is refused" bad --sizes 0
check "an odd --pairs is refused" bad --pairs 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$P" --json --sizes 1M --pairs 2 > "$tmp/out" 2> "$tmp/err"; rc=$?
sed 's/^/# /' "$tmp/out" "$tmp/err"
if [ 77 = $rc ]; then
    check "without a CUDA device: exit 77, a skip line and the reason on stderr" \
        sh -c 'grep -q "^{\"skip\":\"[^\"]*\"}$" "$1" && grep -q "copy_bw: skipped: " "$2"' _ "$tmp/out" "$tmp/err"
else
    check "on a CUDA device: d2h and h2d rows of 1 MiB with positive GB/s" \
        sh -c 'test "$1" = 0 && test 2 = "$(grep -c "^{\"path\":\"\(d2h\|h2d\)\",\"bytes\":1048576,\"gbs\":[0-9.]*[1-9]" "$2")"' _ "$rc" "$tmp/out"
fi
