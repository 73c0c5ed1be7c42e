#!/bin/sh
# Checkpoint round trip on 4 rank(s): save, load back, every element checked.
. "$top_srcdir/t/tap.sh"
tap_tmp ckpt-np4 "$top_builddir/t"
"$L" 4 "$top_builddir/t/ckpt_rt" roundtrip "$tmp"
