#!/bin/sh
# Every collective on 128 ranks (per-rank contribution up to 256K, shard sizes 8,16).
exec "$top_srcdir/t/launch" 128 "$top_builddir/t/comm_coll" --max-bytes 256K --shards 8,16
