#!/bin/sh
# The point-to-point reduce-scatter (comm/rs.c) against MPI's, bit for bit, on 6 ranks.
exec "$top_srcdir/t/launch" 6 "$top_builddir/t/comm_rs"
