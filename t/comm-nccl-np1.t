#!/bin/sh
# NCCL collectives on device buffers, 1 rank (skips without a CUDA device).
. "$top_srcdir/t/tap.sh"
exec "$L" 1 "$top_builddir/t/comm_nccl" --max-bytes 16M --shards 1
