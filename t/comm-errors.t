#!/bin/sh
# Bad input to the collectives on 3 ranks: statuses and messages, no hang.
. "$top_srcdir/t/tap.sh"
exec "$L" 3 "$top_builddir/t/comm_errors"
