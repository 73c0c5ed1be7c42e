#!/bin/sh
# Every collective on 128 ranks (FSDP-128 is a design target), oversubscribed:
# all-gather up to 256 KiB per rank, reductions up to 64 KiB per rank (their
# send buffers are 128x that), shard groups of 8 and their replica groups.
. "$top_srcdir/t/tap.sh"
exec "$L" 128 "$top_builddir/t/comm_coll" --quick \
    --max-bytes 256K --max-reduce 64K --shards 8
