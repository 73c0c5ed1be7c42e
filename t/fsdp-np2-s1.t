#!/bin/sh
# Plain data parallelism on 2 ranks (S = 1): gradients averaged by allreduce only.
exec "$top_srcdir/t/launch" 2 "$top_builddir/t/fsdp_equiv" --shard 1
