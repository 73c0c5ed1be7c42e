#!/bin/sh
# Bad checkpoint files and bad arguments, on 2 ranks (t/ckpt_bad.c).
d=$(mktemp -d "$top_builddir/t/ckpt-bad.XXXXXX") || exit 1
"$top_srcdir/t/launch" 2 "$top_builddir/t/ckpt_bad" "$d"
rc=$?
rm -rf "$d"
exit $rc
