#!/bin/sh
# Recompute at name granularity through the public calls, on 1 rank: which
# saves a recompute pass holds, and the producing costs it records.
. "$top_srcdir/t/tap.sh"
exec "$L" 1 "$top_builddir/t/save_held"
