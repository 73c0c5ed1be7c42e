#!/bin/sh
# Hybrid sharding on 4 ranks: S = 2 shard groups, replicated twice.
. "$top_srcdir/t/tap.sh"
exec "$L" 4 "$top_builddir/t/fsdp_equiv" --shard 2
