#!/bin/sh
# Every collective on 3 ranks (per-rank contribution up to 16M, shard sizes 1,3).
. "$top_srcdir/t/tap.sh"
exec "$L" 3 "$top_builddir/t/comm_coll" --max-bytes 16M --shards 1,3
