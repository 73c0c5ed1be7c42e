#!/bin/sh
# strata_unit_gradcheck on 2 ranks: right backwards pass, wrong ones are caught.
exec "$top_srcdir/t/launch" 2 "$top_builddir/t/gradcheck_units"
