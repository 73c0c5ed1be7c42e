#!/bin/sh
# FSDP-128: a tiny model sharded over 128 ranks equals one process (about a minute on 2 cores).
. "$top_srcdir/t/tap.sh"
exec "$L" 128 "$top_builddir/t/fsdp_equiv" --shard 128 --layers 2 --width 8 --batch 1 --steps 2 --quick --no-progress-thread
