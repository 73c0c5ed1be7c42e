#!/bin/sh
# Every collective on 1 ranks (per-rank contribution up to 16M, shard sizes 1).
. "$top_srcdir/t/tap.sh"
exec "$L" 1 "$top_builddir/t/comm_coll" --max-bytes 16M --shards 1
