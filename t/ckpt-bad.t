#!/bin/sh
# Bad checkpoint files and bad arguments, on 2 ranks (t/ckpt_bad.c).
. "$top_srcdir/t/tap.sh"
tap_tmp ckpt-bad "$top_builddir/t"
"$L" 2 "$top_builddir/t/ckpt_bad" "$tmp"
