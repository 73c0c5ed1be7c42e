#!/bin/sh
# The point-to-point reduce-scatter (comm/rs.c) against MPI's, bit for bit, on 4 ranks.
exec "$top_srcdir/t/launch" 4 "$top_builddir/t/comm_rs"
