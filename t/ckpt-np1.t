#!/bin/sh
# Checkpoint round trip on 1 rank(s): save, load back, every element checked.
. "$top_srcdir/t/tap.sh"
tap_tmp ckpt-np1 "$top_builddir/t"
"$L" 1 "$top_builddir/t/ckpt_rt" roundtrip "$tmp"
