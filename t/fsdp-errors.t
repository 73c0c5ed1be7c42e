#!/bin/sh
# Bad use of the FSDP API on 2 ranks: clear statuses, no crash, no hang.
exec "$top_srcdir/t/launch" 2 "$top_builddir/t/fsdp_errors"
