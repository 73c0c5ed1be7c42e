#!/bin/sh
# Activation policies (keep/host/storage/recompute/auto/mix) x schedules (lhs/naive)
# train bitwise alike within a device budget, on 1 rank(s); the trace reads back
# with strata trace.
set -e
. "$top_srcdir/t/tap.sh"
tap_tmp act-np1
"$L" 1 "$top_builddir/t/act_equiv" --trace "$tmp/tr"
# the command-line reader takes the files too
"$S" trace "$tmp"/tr-host.*.json > "$tmp/report" || { echo "not ok # strata trace failed"; cat "$tmp/report"; exit 1; }
