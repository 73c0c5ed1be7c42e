#!/bin/sh
# FSDP training on 4 ranks (S = 4) equals one process on the same global batch.
exec "$top_srcdir/t/launch" 4 "$top_builddir/t/fsdp_equiv" --shard 4
