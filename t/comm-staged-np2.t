#!/bin/sh
# The staged collective backend against the MPI backend, bit for bit, on 2 ranks.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/comm_staged"
