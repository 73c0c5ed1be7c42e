#!/bin/sh
# The collectives with UCX as Open MPI's transport (skips where Open MPI has no UCX PML).
. "$top_srcdir/t/tap.sh"
exec "$L" 4 --ucx "$top_builddir/t/comm_coll" --max-bytes 4M --shards 2
