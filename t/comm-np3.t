#!/bin/sh
# Every collective on 3 ranks (per-rank contribution up to 64M, shard sizes 1,3).
exec "$top_srcdir/t/launch" 3 "$top_builddir/t/comm_coll" --max-bytes 64M --shards 1,3
