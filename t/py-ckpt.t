#!/bin/sh
# py-ckpt.t - python/strata_ckpt.py (h5py, numpy, xxhash) on a train_gpt
# checkpoint: the FNV-1a param_hash computed in Python equals the one
# train_gpt printed; the order is recoverable from the file (also from a
# file without the order attributes); corrupt, truncated and other-version
# files are refused; safetensors export round-trips (skipped without the
# safetensors module). Details in t/py_ckpt.py.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/py-env.sh"
py_needs numpy h5py xxhash
tap_tmp py-ckpt
if ! py_train "$tmp"; then
    echo "Bail out! train_gpt failed:"; sed 's/^/# /' "$tmp/out" | tail -5; exit 1
fi
hash=$(final_field param_hash)
echo "# train_gpt: param_hash $hash, checkpoint $(sed -n 's/^checkpoint: //p' "$tmp/out")"
exec "$PY" "$top_srcdir/t/py_ckpt.py" "$tmp/ck/step-00000020.h5" "$hash" "$tmp"
