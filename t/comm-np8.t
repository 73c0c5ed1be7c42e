#!/bin/sh
# Every collective on 8 ranks (per-rank contribution up to 4M, shard sizes 2,4).
. "$top_srcdir/t/tap.sh"
exec "$L" 8 "$top_builddir/t/comm_coll" --max-bytes 4M --shards 2,4
