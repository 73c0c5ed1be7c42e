#!/bin/sh
# Activation policies (keep/host/storage/recompute/auto/mix) x schedules (lhs/naive)
# train bitwise alike within a device budget, on 2 rank(s); the trace reads back
# with strata trace.
set -e
dir=$(mktemp -d "${TMPDIR:-/tmp}/act-np2.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$top_srcdir/t/launch" 2 "$top_builddir/t/act_equiv" --trace "$dir/tr"
# the command-line reader takes the files too
"$top_builddir/tools/strata" trace "$dir"/tr-host.*.json > "$dir/report" || { echo "not ok # strata trace failed"; cat "$dir/report"; exit 1; }
