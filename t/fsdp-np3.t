#!/bin/sh
# FSDP training on 3 ranks (S = 3) equals one process on the same global batch.
exec "$top_srcdir/t/launch" 3 "$top_builddir/t/fsdp_equiv" --shard 3
