#!/bin/sh
# The one agreement on an error (base/agree.h) on 3 ranks: which failure wins, and its message everywhere.
. "$top_srcdir/t/tap.sh"
exec "$L" 3 "$top_builddir/t/base_agree"
