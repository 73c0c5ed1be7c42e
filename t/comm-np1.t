#!/bin/sh
# Every collective on 1 ranks (per-rank contribution up to 64M, shard sizes 1).
. "$top_srcdir/t/tap.sh"
exec "$L" 1 "$top_builddir/t/comm_coll" --max-bytes 64M --shards 1
