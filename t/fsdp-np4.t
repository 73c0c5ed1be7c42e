#!/bin/sh
# FSDP training on 4 ranks (S = 4) equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 4 "$top_builddir/t/fsdp_equiv" --shard 4
