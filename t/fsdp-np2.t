#!/bin/sh
# FSDP training on 2 ranks (S = 2) equals one process on the same global batch.
exec "$top_srcdir/t/launch" 2 "$top_builddir/t/fsdp_equiv" --shard 2
