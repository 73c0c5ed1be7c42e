#!/bin/sh
# Checkpoint round trip on 4 rank(s): save, load back, every element checked.
d=$(mktemp -d "$top_builddir/t/ckpt-np4.XXXXXX") || exit 1
"$top_srcdir/t/launch" 4 "$top_builddir/t/ckpt_rt" roundtrip "$d"
rc=$?
rm -rf "$d"
exit $rc
