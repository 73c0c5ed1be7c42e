#!/bin/sh
# Bad use of the FSDP API on 2 ranks: clear statuses, no crash, no hang.
. "$top_srcdir/t/tap.sh"
exec "$L" 2 "$top_builddir/t/fsdp_errors"
