"""strata_ckpt - strata checkpoints (HDF5, docs/checkpoint-format.md) in Python.

No build step: numpy and h5py to read, xxhash (PyPI or Debian's python3-xxhash)
to check the stored XXH3-64 checksums, torch for to_torch(), safetensors for
to_safetensors(). Each is imported only by the functions that need it.

    import strata_ckpt
    params = strata_ckpt.load("ck/step-00000100.h5")      # {"block0/qkv_w": ndarray, ...}
    params, optim = strata_ckpt.load(path, optim=True)
    sd = strata_ckpt.to_torch(path)                        # state_dict of strata_gpt.GPT
    strata_ckpt.to_safetensors(path, "model.safetensors")

load() refuses (CheckpointError) a file that is not a strata checkpoint, has
another format_version, or whose bytes do not match its checksums.
"""
import numpy as np

FORMAT = b"strata-checkpoint"
VERSION = 1
FNV_OFFSET, FNV_PRIME, MASK64 = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1


class CheckpointError(Exception):
    """The file is not a readable, intact strata checkpoint (the message says why)."""


def _h5py():
    import h5py
    return h5py


def _str(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _open(path):
    h5py = _h5py()
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise CheckpointError(f"{path}: cannot open as HDF5: {e}") from None
    fmt, ver = f.attrs.get("format"), f.attrs.get("format_version")
    if fmt != FORMAT:
        f.close()
        raise CheckpointError(f"{path}: not a strata checkpoint (format attribute {fmt!r})")
    if ver is None or int(ver) != VERSION:
        f.close()
        raise CheckpointError(f"{path}: format_version {ver} is not supported (this reader "
                              f"reads version {VERSION})")
    return f


def info(path):
    """The root metadata: {"config": {...}, "step", "world_size", "shard_size", ...}."""
    with _open(path) as f:
        out = {k: _str(v) if isinstance(v, bytes) else v.item() if hasattr(v, "item") else v
               for k, v in f.attrs.items() if not k.startswith("config.")}
        out["config"] = {k[7:]: _str(v) for k, v in f.attrs.items() if k.startswith("config.")}
        out["step"] = int(f["train"].attrs["step"])
        return out


def _offset(ds):
    off = ds.id.get_offset()
    return -1 if off is None else off


def order(f):
    """[(unit, [param, ...]), ...] in the model's registration order: the
    order param_hash and the flat shards use. From the attributes `units` of
    /model and `params` of /model/<unit>; files written before those
    attributes existed: each unit's parameters in the order of its checksum
    table, the units in the order their first dataset lies in the file (the
    writer creates them in registration order, each allocated at creation)."""
    g = f["model"]
    units = [_str(u) for u in g.attrs["units"]] if "units" in g.attrs else None
    out = []
    for u in units if units is not None else list(g.keys()):
        if "params" in g[u].attrs:
            ps = [_str(p) for p in g[u].attrs["params"]]
        else:
            pre = f"/model/{u}/"
            ps = [_str(t)[len(pre):] for t in f["checksums"][u].attrs["tensors"]
                  if _str(t).startswith(pre)]
        out.append((u, ps))
    if units is None:
        out.sort(key=lambda up: _offset(g[up[0]][up[1][0]]) if up[1] else -1)
    return out


def _raw(ds):
    """A dataset's stored elements as little-endian bytes, flat, no conversion."""
    if ds.dtype.kind == "f" and ds.dtype.itemsize == 4:
        return np.ascontiguousarray(ds[...].reshape(-1), dtype="<f4").view(np.uint8)
    # 16-bit copies (bf16 has no numpy type): read the words as stored
    words = np.empty(ds.shape, np.uint16)
    ds.id.read(_h5py().h5s.ALL, _h5py().h5s.ALL, words, mtype=ds.id.get_type())
    return np.ascontiguousarray(words.reshape(-1), dtype="<u2").view(np.uint8)


def verify(f, prefixes=("/model/",)):
    """Check every checksummed region of the tensors whose path starts with
    one of prefixes, and that their regions tile each tensor exactly."""
    try:
        import xxhash
    except ImportError:
        raise CheckpointError("checking checksums needs the xxhash module "
                              "(pip install xxhash, or Debian's python3-xxhash); "
                              "load(..., verify=False) skips the check") from None
    if "checksums" not in f:
        raise CheckpointError(f"{f.filename}: no /checksums group")
    seen = set()
    for unit, tab in f["checksums"].items():
        names = [_str(n) for n in tab.attrs["tensors"]]
        rows = tab[...]
        for t, name in enumerate(names):
            if not name.startswith(prefixes):
                continue
            if name not in f:
                raise CheckpointError(f"{f.filename}: {name} is in the checksum table of "
                                      f"{unit} but not in the file")
            ds = f[name]
            raw, size = _raw(ds), ds.dtype.itemsize
            cover = sorted((int(rows[s, t, 0]), int(rows[s, t, 1]), int(rows[s, t, 2]))
                           for s in range(rows.shape[0]) if rows[s, t, 1])
            pos = 0
            for off, length, h in cover:
                if off != pos:
                    raise CheckpointError(f"{f.filename}: checksums of {name} do not tile "
                                          f"it (gap or overlap at element {pos})")
                got = xxhash.xxh3_64_intdigest(raw[off * size:(off + length) * size].tobytes())
                if got != h:
                    raise CheckpointError(f"{f.filename}: {name} elements {off}.."
                                          f"{off + length - 1} fail their checksum (stored "
                                          f"{h:016x}, computed {got:016x}): the file is corrupt")
                pos = off + length
            if pos != ds.size:
                raise CheckpointError(f"{f.filename}: checksums of {name} cover {pos} of "
                                      f"{ds.size} elements")
            seen.add(name)
    if "/model/" not in prefixes:
        return
    for unit, params in order(f):
        for p in params:
            if f"/model/{unit}/{p}" not in seen:
                raise CheckpointError(f"{f.filename}: /model/{unit}/{p} has no checksums")


def load(path, optim=False, verify_checksums=True):
    """The model's fp32 tensors {"unit/param": ndarray (full shape)}, in
    registration order (dicts keep insertion order). With optim=True also the
    optimizer: (params, {"state": {"unit/param/state": ndarray},
    "scalars": {"unit": {name: float}}}). Checksums of everything returned
    are checked unless verify_checksums=False."""
    with _open(path) as f:
        if verify_checksums:
            verify(f, ("/model/", "/optim/") if optim else ("/model/",))
        params = {f"{u}/{p}": f[f"model/{u}/{p}"][...] for u, ps in order(f) for p in ps}
        if not optim:
            return params
        state, scalars = {}, {}
        for u, ps in order(f):
            g = f[f"optim/{u}"]
            scalars[u] = {k: float(v) for k, v in g.attrs.items()}
            for p in ps:
                if p in g:
                    for s, ds in g[p].items():
                        state[f"{u}/{p}/{s}"] = ds[...]
        return params, {"state": state, "scalars": scalars}


def param_hash(params):
    """FNV-1a 64 over the fp32 bytes of the tensors in the order given (load()'s
    order is the canonical one): the param_hash train_gpt prints."""
    h = FNV_OFFSET
    for a in params.values():
        for b in np.ascontiguousarray(a, dtype="<f4").tobytes():
            h = ((h ^ b) * FNV_PRIME) & MASK64
    return h


def to_torch(path, verify_checksums=True):
    """A PyTorch state_dict for strata_gpt.GPT (config from strata_gpt.config_of)."""
    import torch
    import strata_gpt
    params = load(path, verify_checksums=verify_checksums)
    return {strata_gpt.torch_name(k): torch.from_numpy(v) for k, v in params.items()}


def to_safetensors(path, out, verify_checksums=True):
    """Writes the weights to the safetensors file out (no torch needed), named
    as in to_torch() for a GPT checkpoint ("unit.param" otherwise), with the
    checkpoint's config and step as metadata."""
    from safetensors.numpy import save_file
    import strata_gpt
    meta = info(path)
    gpt = meta["config"].get("model") == "gpt"
    params = load(path, verify_checksums=verify_checksums)
    tensors = {(strata_gpt.torch_name(k) if gpt else k.replace("/", ".")): v
               for k, v in params.items()}
    md = {f"config.{k}": v for k, v in meta["config"].items()}
    md.update(format="strata-checkpoint", step=str(meta["step"]))
    save_file(tensors, out, metadata=md)
