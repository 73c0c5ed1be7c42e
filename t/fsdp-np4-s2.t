#!/bin/sh
# Hybrid sharding on 4 ranks: S = 2 shard groups, replicated twice.
exec "$top_srcdir/t/launch" 4 "$top_builddir/t/fsdp_equiv" --shard 2
