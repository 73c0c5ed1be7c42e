#!/bin/sh
# Checkpoint round trip on 2 rank(s): save, load back, every element checked.
. "$top_srcdir/t/tap.sh"
tap_tmp ckpt-np2 "$top_builddir/t"
"$L" 2 "$top_builddir/t/ckpt_rt" roundtrip "$tmp"
