#!/bin/sh
# FSDP training on 1 ranks (S = 1) equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 1 "$top_builddir/t/fsdp_equiv" --shard 1
