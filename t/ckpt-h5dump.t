#!/bin/sh
# `h5dump -d /model/...` shows a checkpoint's values (fp32 and the bf16 copy).
. "$top_srcdir/t/tap.sh"
[ -n "${H5DUMP:-}" ] || tap_skip_all "h5dump not found by configure"
tap_tmp ckpt-h5dump "$top_builddir/t"
echo "1..3"
if "$L" 2 "$top_builddir/t/ckpt_rt" save "$tmp" 4 --half bf16 > "$tmp/log" 2>&1; then
    echo "ok 1 - save step 4 on 2 ranks"
else
    echo "not ok 1 - save step 4 on 2 ranks"; sed 's/^/# /' "$tmp/log"
fi
f=$tmp/step-00000004.h5
# embed/w holds 0.25 * j + step for element j, in rows of 7
n=1
for ds in /model/embed/w /model_bf16/embed/w; do
    n=$((n + 1))
    "$H5DUMP" -d "$ds" "$f" > "$tmp/dump" 2>&1
    if grep -q '(0,0): 4, 4.25, 4.5, 4.75, 5, 5.25, 5.5,' "$tmp/dump" &&
       grep -q '(4,0): 11, 11.25, 11.5, 11.75, 12, 12.25, 12.5' "$tmp/dump"; then
        echo "ok $n - h5dump -d $ds shows the values"
    else
        echo "not ok $n - h5dump -d $ds"; sed 's/^/# /' "$tmp/dump"
    fi
done
