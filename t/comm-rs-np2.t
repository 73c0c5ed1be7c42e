#!/bin/sh
# The point-to-point reduce-scatter (comm/rs.c) against MPI's, bit for bit, on 2 ranks.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/comm_rs"
