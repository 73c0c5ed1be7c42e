#!/bin/sh
# Every collective on 128 ranks (FSDP-128 is a design target), oversubscribed:
# all-gather up to 64 KiB per rank, reductions up to 16 KiB per rank (their
# send buffers are 128x that), shard groups of 8 and their replica groups.
# What 128 ranks add is the rank count and the group splits; the large
# sizes (past the 1 MiB blocking threshold) are t/comm-np1..np8's, and each
# rank here checks 128x its contribution (256K/64K cost 55% more CPU).
. "$top_srcdir/t/tap.sh"
exec "$L" 128 "$top_builddir/t/comm_coll" --quick \
    --max-bytes 64K --max-reduce 16K --shards 8
