#!/bin/sh
# ckpt-access.t - a checkpoint the job may not read (mode 000; as root the
# commands run without CAP_DAC_OVERRIDE, through setpriv): `strata ckpt
# info`, `verify` and `diff` say "permission denied" with the mode and the
# owner, not "not an HDF5 file"; train_gpt --resume names it and stops
# (exit 1) instead of falling back to the older checkpoint, writing nothing.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp ckpt-access
noread() {
    if [ "$(id -u)" = 0 ]; then setpriv --bounding-set -dac_override,-dac_read_search "$@"
    else "$@"; fi
}
echo secret > "$tmp/probe"; chmod 000 "$tmp/probe"
if noread cat "$tmp/probe" >/dev/null 2>&1; then
    echo "1..0 # SKIP this process reads a mode-000 file (setpriv cannot drop CAP_DAC_OVERRIDE here)"
    exit 0
fi
echo "1..5"
small="--threads 1 --layers 1 --dim 16 --batch 4 --eval-n 8 --ckpt-dir $tmp/d"
timeout 120 "$P" $small --steps 4 --ckpt-every 2 > "$tmp/first.out" 2>&1
chmod 000 "$tmp/d/step-00000004.h5"
ls "$tmp/d" > "$tmp/before"

noread "$S" ckpt info "$tmp/d/step-00000004.h5" > "$tmp/info.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/info.out"
check "ckpt info: exit 1, permission denied with the mode and owner" \
    sh -c 'test "$1" -eq 1 && grep -q "cannot be read by this process .*Permission denied (mode 0000, owner uid" "$2" &&
           ! grep -q "not an HDF5 file" "$2"' _ "$rc" "$tmp/info.out"
noread "$S" ckpt verify "$tmp/d/step-00000004.h5" > "$tmp/verify.out" 2>&1; rc=$?
check "ckpt verify: exit 1, permission denied" \
    sh -c 'test "$1" -eq 1 && grep -q "Permission denied" "$2" && ! grep -q "not an HDF5 file" "$2"' _ "$rc" "$tmp/verify.out"
noread "$S" ckpt diff "$tmp/d/step-00000002.h5" "$tmp/d/step-00000004.h5" > "$tmp/diff.out" 2>&1; rc=$?
check "ckpt diff: exit 2, permission denied" \
    sh -c 'test "$1" -eq 2 && grep -q "Permission denied" "$2" && ! grep -q "not an HDF5 file" "$2"' _ "$rc" "$tmp/diff.out"

OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 noread timeout 120 "$P" $small --steps 6 --resume \
    > "$tmp/resume.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/resume.out" | grep -v "^# step"
check "--resume names the unreadable file and stops (exit 1) without falling back" \
    sh -c 'test "$1" -eq 1 && grep -q "step-00000004.h5 cannot be read .*Permission denied.*not falling back" "$2" &&
           ! grep -q "resumed from" "$2" && ! grep -q "^step " "$2"' _ "$rc" "$tmp/resume.out"
ls "$tmp/d" > "$tmp/after"
check "nothing was written or pruned" cmp -s "$tmp/before" "$tmp/after"
