#!/bin/sh
# Resharding on load: save on A ranks (shard size S), load on B ranks with
# another shard size, every element checked by ckpt_rt on the loading side.
# Each mpirun is one TAP line here; its own TAP output is shown on failure.
. "$top_srcdir/t/tap.sh"
prog="$top_builddir/t/ckpt_rt"
cases="4:4:2:2 2:2:3:3 1:1:4:4 4:4:1:1 4:2:3:3 3:3:4:2"   # save-W:save-S:load-W:load-S
tap_tmp ckpt-reshard "$top_builddir/t"
echo "1..12"
for c in $cases; do
    IFS=: read sw ss lw ls <<EOT
$c
EOT
    d="$tmp/$sw-$ss-$lw-$ls"; mkdir "$d"
    n=$((n + 1))
    if "$L" "$sw" "$prog" save "$d" 7 --shard "$ss" > "$d/save.log" 2>&1; then
        echo "ok $n - save on $sw ranks (S=$ss)"
    else
        echo "not ok $n - save on $sw ranks (S=$ss)"; sed 's/^/# /' "$d/save.log"
    fi
    n=$((n + 1))
    if "$L" "$lw" "$prog" load "$d" 7 --shard "$ls" > "$d/load.log" 2>&1 &&
       ! grep -q '^not ok' "$d/load.log"; then
        echo "ok $n - $sw ranks (S=$ss) -> $lw ranks (S=$ls): every element as saved"
    else
        echo "not ok $n - $sw ranks (S=$ss) -> $lw ranks (S=$ls)"; sed 's/^/# /' "$d/load.log"
    fi
done
