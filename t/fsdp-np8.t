#!/bin/sh
# FSDP training on 8 ranks (S = 8) equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 8 "$top_builddir/t/fsdp_equiv" --shard 8
