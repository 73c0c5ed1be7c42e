#!/bin/sh
# py-torch.t - python/strata_gpt.py (PyTorch) loaded from a train_gpt
# checkpoint through strata_ckpt.to_torch(): the strict load, the parameter
# order, and the validation loss it computes on the same bytes equal to
# train_gpt's within 1e-4. Skips where torch does not import (Debian's
# python3-torch is enough). Details in t/py_torch.py.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/py-env.sh"
py_needs numpy h5py xxhash torch
tap_tmp py-torch
if ! py_train "$tmp"; then
    echo "Bail out! train_gpt failed:"; sed 's/^/# /' "$tmp/out" | tail -5; exit 1
fi
vl=$(final_field val_loss)
echo "# train_gpt: val_loss $vl"
# train_gpt's validation: seed 1, 3 batches of 2 ranks x 4 rows of 16 bytes
exec "$PY" "$top_srcdir/t/py_torch.py" "$tmp/ck/step-00000020.h5" "$vl" "$tmp/text.txt" 1 8 3 16
