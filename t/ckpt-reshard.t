#!/bin/sh
# Resharding on load: save on A ranks (shard size S), load on B ranks with
# another shard size, every element checked by ckpt_rt on the loading side.
# Each mpirun is one TAP line here; its own TAP output is shown on failure.
launch="$top_srcdir/t/launch"
prog="$top_builddir/t/ckpt_rt"
cases="4:4:2:2 2:2:3:3 1:1:4:4 4:4:1:1 4:2:3:3 3:3:4:2"   # save-W:save-S:load-W:load-S
echo "1..12"
n=0
for c in $cases; do
    IFS=: read sw ss lw ls <<EOT
$c
EOT
    d=$(mktemp -d "$top_builddir/t/ckpt-reshard.XXXXXX") || exit 1
    n=$((n + 1))
    if "$launch" "$sw" "$prog" save "$d" 7 --shard "$ss" > "$d/save.log" 2>&1; then
        echo "ok $n - save on $sw ranks (S=$ss)"
    else
        echo "not ok $n - save on $sw ranks (S=$ss)"; sed 's/^/# /' "$d/save.log"
    fi
    n=$((n + 1))
    if "$launch" "$lw" "$prog" load "$d" 7 --shard "$ls" > "$d/load.log" 2>&1 &&
       ! grep -q '^not ok' "$d/load.log"; then
        echo "ok $n - $sw ranks (S=$ss) -> $lw ranks (S=$ls): every element as saved"
    else
        echo "not ok $n - $sw ranks (S=$ss) -> $lw ranks (S=$ls)"; sed 's/^/# /' "$d/load.log"
    fi
    rm -rf "$d"
done
