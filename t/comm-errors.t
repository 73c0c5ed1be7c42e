#!/bin/sh
# Bad input to the collectives on 3 ranks: statuses and messages, no hang.
exec "$top_srcdir/t/launch" 3 "$top_builddir/t/comm_errors"
