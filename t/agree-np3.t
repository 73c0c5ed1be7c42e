#!/bin/sh
# The one agreement on an error (base/agree.h) on 3 ranks: which failure wins, and its message everywhere.
exec "$top_srcdir/t/launch" 3 "$top_builddir/t/base_agree"
