#!/bin/sh
# Cross-rank step check on 4 ranks: rank 2 registers a larger parameter;
# rank 1 saves an extra activation at step 1. Every rank fails, no hang.
. "$top_srcdir/t/tap.sh"
exec "$L" 4 "$top_builddir/t/step_check"
