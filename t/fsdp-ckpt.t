#!/bin/sh
# Model checkpoints: resume bitwise on 2 ranks; save on 2, load on 3 and 1
# (resharding moves the values exactly).
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp strata-fsdp-ckpt
mkdir "$tmp/resume" "$tmp/xw"
P="$top_builddir/t/fsdp_ckpt"
# each run prints its own plan; the TAP driver wants one stream with one
# plan: 6 + 2 + 3 + 3 tests, renumbered. A run that dies early leaves the
# count short of the plan, which fails.
echo "1..14"
{
    "$L" 2 "$P" resume "$tmp/resume" && "$L" 2 "$P" save "$tmp/xw" &&
    "$L" 3 "$P" load "$tmp/xw" && "$L" 1 "$P" load "$tmp/xw"
} | awk '/^1\.\.[0-9]+/ { next } /^(not )?ok [0-9]+/ { n++; sub(/ok [0-9]+/, "ok " n) } { print }'
