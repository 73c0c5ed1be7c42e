#!/bin/sh
# layers-includes.t - the layers of docs/architecture.md hold: each
# folder's sources include (by "folder/file.h") only the folders drawn
# below it. The checker is first shown a folder that breaks the rule, so it
# cannot pass by finding nothing.
set -u
src="${top_srcdir:-.}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# the strata folders named by DIR's #include "x/y.h" lines that are not
# in ALLOWED (DIR's own folder always is), one a line
extra() {
    dir=$1; allowed=" $2 ${3:-} "
    for f in "$dir"/*.c "$dir"/*.h; do [ -f "$f" ] && cat "$f"; done |
        sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([a-z_]*\)\/.*/\1/p' | sort -u |
        while read -r d; do
            case " base comm tiers io sched fsdp tools bench examples t " in *" $d "*) ;; *) continue ;; esac
            case "$allowed" in *" $d "*) ;; *) echo "$d" ;; esac
        done
}
echo "1..11"
mkdir "$tmp/base"
printf '#include "base/base.h"\n#include "comm/comm.h"\n#include "strata/tiers.h"\n' > "$tmp/base/x.c"
got=$(extra "$tmp/base" base)
[ "$got" = comm ] && echo "ok 1 - the checker finds a folder that includes a layer above it" ||
    echo "not ok 1 - the checker finds a folder that includes a layer above it (got '$got')"
n=1
check() {   # check FOLDER ALLOWED...
    n=$((n + 1)); dir=$1; shift
    bad=$(extra "$src/$dir" "$*" "${dir%%/*}" | tr '\n' ' ')
    [ -z "$bad" ] && echo "ok $n - $dir includes only: ${*:-nothing of strata}" ||
        echo "not ok $n - $dir includes only: ${*:-nothing of strata} (also: $bad)"
}
check base
check comm base
check tiers base
check io base
check sched base
check fsdp base comm tiers sched
check tools base sched
check examples/mlp
check examples/gpt
check bench base comm tiers io sched fsdp examples
