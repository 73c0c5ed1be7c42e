"""py_ckpt.py CKPT HASH TMPDIR - the h5py checks of t/py-ckpt.t (TAP)."""
import shutil
import sys

import h5py
import numpy as np

import strata_ckpt as sc
from py_tap import done, ok, plan, raises, skip

path, want_hash, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
plan(11)

params = sc.load(path)
meta = sc.info(path)
C, L = int(meta["config"]["dim"]), int(meta["config"]["layers"])
names = list(params)
ok(len(names) == 2 + 12 * L + 3 and params["block0/qkv_w"].shape == (3 * C, C)
   and params["embed/wte"].dtype == np.float32,
   f"load() returns {len(names)} fp32 tensors in full shape", names)
ok(names[:3] == ["embed/wte", "embed/wpe", "block0/ln1_w"] and names[-1] == "head/lm_w",
   "in registration order (embed, block0.., head)", names)
got = f"{sc.param_hash(params):016x}"
ok(got == want_hash, f"param_hash in Python {got} == train_gpt's {want_hash}")

# an older file: no `units`/`params` attributes; the order comes from the
# checksum tables and the datasets' places in the file
old = f"{tmp}/old.h5"
shutil.copy(path, old)
with h5py.File(old, "r+") as f:
    del f["model"].attrs["units"]
    for u in f["model"]:
        del f["model"][u].attrs["params"]
ok(list(sc.load(old)) == names, "a file without the order attributes gives the same order")

params_o, optim = sc.load(path, optim=True)
ok("block1/fc_w/exp_avg_sq" in optim["state"] and optim["scalars"]["head"]["step"] == 20.0
   and optim["state"]["block1/fc_w/exp_avg"].shape == params["block1/fc_w"].shape,
   "optim=True returns the AdamW state and the scalars", list(optim["scalars"]["head"]))


def corrupt(src, dst, dataset):
    """Flip one byte in the middle of a dataset's stored bytes."""
    shutil.copy(src, dst)
    with h5py.File(src, "r") as f:
        ds = f[dataset]
        at = ds.id.get_offset() + ds.id.get_storage_size() // 2
    with open(dst, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 0x40]))


bad = f"{tmp}/bad.h5"
corrupt(path, bad, "model/block1/qkv_w")
raises(lambda: sc.load(bad), sc.CheckpointError, "/model/block1/qkv_w",
       "a flipped byte in a weight is refused, naming the tensor")
ok(sc.load(bad, verify_checksums=False)["block1/qkv_w"].shape == (3 * C, C),
   "verify_checksums=False still reads it (for forensics)")
corrupt(path, bad, "optim/block0/qkv_w/exp_avg")
try:
    sc.load(bad)
    raises(lambda: sc.load(bad, optim=True), sc.CheckpointError, "exp_avg",
           "a flipped byte in the optimizer state: load() reads the weights, optim=True refuses")
except sc.CheckpointError as e:
    ok(False, "a flipped byte in the optimizer state: load() reads the weights, optim=True refuses", e)

v2 = f"{tmp}/v2.h5"
shutil.copy(path, v2)
with h5py.File(v2, "r+") as f:
    f.attrs["format_version"] = np.int64(2)
raises(lambda: sc.load(v2), sc.CheckpointError, "format_version 2",
       "format_version 2 is refused with the version named")
trunc = f"{tmp}/trunc.h5"
with open(path, "rb") as fi, open(trunc, "wb") as fo:
    fo.write(fi.read(4096))
raises(lambda: sc.load(trunc), sc.CheckpointError, "cannot open",
       "a truncated file is refused")

try:
    from safetensors.numpy import load_file
except ImportError:
    skip("to_safetensors() round-trips", "the safetensors module does not import")
else:
    out = f"{tmp}/m.safetensors"
    sc.to_safetensors(path, out)
    st = load_file(out)
    ok(len(st) == len(params) and np.array_equal(st["blocks.1.qkv.weight"], params["block1/qkv_w"])
       and np.array_equal(st["lm_head.weight"], params["head/lm_w"]),
       "to_safetensors() round-trips the weights under the PyTorch names", sorted(st)[:4])
done()
