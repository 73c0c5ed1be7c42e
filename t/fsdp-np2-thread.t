#!/bin/sh
# FSDP training on 2 ranks whose callbacks never call strata_call_progress:
# the progress thread alone moves the collectives during them, and the
# result still equals one process on the same global batch.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/fsdp_equiv" --shard 2 --chunk 0
