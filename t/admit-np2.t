#!/bin/sh
# Admission swept over device budgets, every policy, two model shapes, on 2
# rank(s): refused before step 1 naming the budget it needs, or trains.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/admit_sweep"
