#!/bin/sh
# The staged collective backend against the MPI backend, bit for bit, on 4
# ranks (world, shard and replica groups of 2).
. "$top_srcdir/t/tap.sh"
exec "$L" 4 "$top_builddir/t/comm_staged"
