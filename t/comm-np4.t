#!/bin/sh
# Every collective on 4 ranks (per-rank contribution up to 64M, shard sizes 1,2).
exec "$top_srcdir/t/launch" 4 "$top_builddir/t/comm_coll" --max-bytes 64M --shards 1,2
