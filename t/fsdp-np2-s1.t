#!/bin/sh
# Plain data parallelism on 2 ranks (S = 1): gradients averaged by allreduce only.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/fsdp_equiv" --shard 1
