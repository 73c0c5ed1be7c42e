#!/bin/sh
# Every collective on 3 ranks (per-rank contribution up to 64M, shard sizes 1,3).
. "$top_srcdir/t/tap.sh"
exec "$L" 3 "$top_builddir/t/comm_coll" --max-bytes 64M --shards 1,3
