#!/bin/sh
# strata_unit_gradcheck on 2 ranks: right backwards pass, wrong ones are caught.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/gradcheck_units"
