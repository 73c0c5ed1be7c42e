#!/bin/sh
# FSDP training on 2 ranks (S = 2) equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/fsdp_equiv" --shard 2
