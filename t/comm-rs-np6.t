#!/bin/sh
# The point-to-point reduce-scatter (comm/rs.c) against MPI's, bit for bit, on 6 ranks.
. "$top_srcdir/t/tap.sh"
exec "$L" 6 "$top_builddir/t/comm_rs"
