#!/bin/sh
# The collectives with UCX as Open MPI's transport (skips where Open MPI has no UCX PML).
exec "$top_srcdir/t/launch" 4 --ucx "$top_builddir/t/comm_coll" --max-bytes 4M --shards 2
