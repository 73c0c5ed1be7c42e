#!/bin/sh
# Every collective on 4 ranks (per-rank contribution up to 16M, shard sizes 1,2).
. "$top_srcdir/t/tap.sh"
exec "$L" 4 "$top_builddir/t/comm_coll" --max-bytes 16M --shards 1,2
