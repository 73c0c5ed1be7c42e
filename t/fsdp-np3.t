#!/bin/sh
# FSDP training on 3 ranks (S = 3) equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 3 "$top_builddir/t/fsdp_equiv" --shard 3
