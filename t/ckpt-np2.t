#!/bin/sh
# Checkpoint round trip on 2 rank(s): save, load back, every element checked.
d=$(mktemp -d "$top_builddir/t/ckpt-np2.XXXXXX") || exit 1
"$top_srcdir/t/launch" 2 "$top_builddir/t/ckpt_rt" roundtrip "$d"
rc=$?
rm -rf "$d"
exit $rc
