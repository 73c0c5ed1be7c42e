#!/bin/sh
# layers-includes.t - the layers of docs/architecture.md hold: each
# folder's sources include (by "folder/file.h") only the folders drawn
# below it. The checker is first shown a folder that breaks the rule, so it
# cannot pass by finding nothing.
set -u
. "$top_srcdir/t/tap.sh"
tap_tmp layers
# the strata folders named by DIR's #include "x/y.h" lines that are not
# in ALLOWED (DIR's own folder always is), one a line
extra() {
    dir=$1; allowed=" $2 ${3:-} "
    for f in "$dir"/*.c "$dir"/*.h; do [ -f "$f" ] && cat "$f"; done |
        sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([a-z_]*\)\/.*/\1/p' | sort -u |
        while read -r d; do
            case " base comm tiers io sched fsdp plan tools bench examples t " in *" $d "*) ;; *) continue ;; esac
            case "$allowed" in *" $d "*) ;; *) echo "$d" ;; esac
        done
}
# layer FOLDER ALLOWED...: one test line
layer() {
    dir=$1; shift
    bad=$(extra "$top_srcdir/$dir" "$*" "${dir%%/*}" | tr '\n' ' ')
    check "$dir includes only: ${*:-nothing of strata}${bad:+ (also: $bad)}" test -z "$bad"
}
echo "1..12"
mkdir "$tmp/base"
printf '#include "base/base.h"\n#include "comm/comm.h"\n#include "strata/tiers.h"\n' > "$tmp/base/x.c"
got=$(extra "$tmp/base" base)
check "the checker finds a folder that includes a layer above it" test "$got" = comm
[ "$got" = comm ] || echo "# it named: '$got'"
layer base
layer comm base
layer tiers base
layer io base
layer sched base
layer fsdp base comm tiers sched
layer plan base sched
layer tools base comm sched plan
layer examples/mlp
layer examples/gpt
layer bench base comm tiers io sched fsdp plan examples
