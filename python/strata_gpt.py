"""strata_gpt - the GPT of examples/gpt as one PyTorch module, and its data.

The same model as examples/gpt/gpt.h, operation for operation:
  token + position embedding (wte [256, C], wpe [seq, C]);
  n_layer pre-LayerNorm blocks: x += attn_proj(attention(ln1(x))),
      x += fc_proj(gelu_tanh(fc(ln2(x))));
  attention: qkv = Linear(C, 3C), per token q | k | v, head h the channels
      h*C/H .. (h+1)*C/H of each; causal softmax of q k^T / sqrt(C/H);
  a final LayerNorm and an LM head lm_w [256, C] with NO bias and NOT tied to
      wte (each FSDP unit owns its tensors);
  LayerNorm eps 1e-5 (biased variance), GELU the tanh approximation,
  everything fp32; the loss is the cross-entropy summed over positions with
  a target (>= 0) and divided by their count.
Parameters are registered in strata's canonical order (embed, block0..,
head; within a unit as gpt_unit_params() lists them), so
list(GPT(cfg).parameters()) is the order param_hash uses.

The data functions port examples/gpt/data.c (text files and the generated
addition task; counter-based rows, the same bytes for any rank count) so a
validation loss can be recomputed and a peer trains on strata's rows.
"""
import math

# strata tensor name within a unit -> (module path, parameter)
_BLOCK = {"ln1_w": "ln1.weight", "ln1_b": "ln1.bias", "qkv_w": "qkv.weight",
          "qkv_b": "qkv.bias", "attn_proj_w": "attn_proj.weight",
          "attn_proj_b": "attn_proj.bias", "ln2_w": "ln2.weight", "ln2_b": "ln2.bias",
          "fc_w": "fc.weight", "fc_b": "fc.bias", "fc_proj_w": "fc_proj.weight",
          "fc_proj_b": "fc_proj.bias"}
_HEAD = {"lnf_w": "lnf.weight", "lnf_b": "lnf.bias", "lm_w": "lm_head.weight"}


def torch_name(strata_name):
    """'block3/qkv_w' -> 'blocks.3.qkv.weight', 'embed/wte' -> 'wte', 'head/lm_w' -> 'lm_head.weight'."""
    unit, p = strata_name.split("/")
    if unit == "embed" and p in ("wte", "wpe"):
        return p
    if unit == "head" and p in _HEAD:
        return _HEAD[p]
    if unit.startswith("block") and unit[5:].isdigit() and p in _BLOCK:
        return f"blocks.{int(unit[5:])}.{_BLOCK[p]}"
    raise KeyError(f"{strata_name} is not a tensor of the strata GPT")


def config_of(ckpt_config):
    """The model's shape from a checkpoint's config attributes (strata_ckpt.info()['config'])."""
    if ckpt_config.get("model") != "gpt":
        raise ValueError(f"the checkpoint's model is {ckpt_config.get('model')!r}, not 'gpt'")
    return {k: int(ckpt_config[k]) for k in ("layers", "dim", "heads", "seq")}


# ------------------------------------------------------------------ model ---

def _modules():
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, C, H):
            super().__init__()
            self.H = H
            self.ln1 = nn.LayerNorm(C, eps=1e-5)
            self.qkv = nn.Linear(C, 3 * C)
            self.attn_proj = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C, eps=1e-5)
            self.fc = nn.Linear(C, 4 * C)
            self.fc_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            B, T, C = x.shape
            hd = C // self.H
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.H, hd).transpose(1, 2) for t in (q, k, v))
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
            a = (p @ v).transpose(1, 2).reshape(B, T, C)
            x = x + self.attn_proj(a)
            return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        """GPT(dict(layers=, dim=, heads=, seq=)); forward(tokens [B, T] int64) -> logits [B, T, 256]."""
        VOCAB = 256

        def __init__(self, cfg):
            super().__init__()
            C, L = cfg["dim"], cfg["layers"]
            self.cfg = dict(cfg)
            self.wte = nn.Parameter(torch.zeros(self.VOCAB, C))
            self.wpe = nn.Parameter(torch.zeros(cfg["seq"], C))
            self.blocks = nn.ModuleList(Block(C, cfg["heads"]) for _ in range(L))
            self.lnf = nn.LayerNorm(C, eps=1e-5)
            self.lm_head = nn.Linear(C, self.VOCAB, bias=False)

        def forward(self, tokens):
            T = tokens.shape[1]
            x = self.wte[tokens] + self.wpe[:T]
            for b in self.blocks:
                x = b(x)
            return self.lm_head(self.lnf(x))

        def loss_sum(self, tokens, targets):
            """(sum of -log p(target) over targets >= 0, their count)."""
            logits = self(tokens)
            ls = F.cross_entropy(logits.reshape(-1, self.VOCAB), targets.reshape(-1),
                                 ignore_index=-1, reduction="sum")
            return ls, int((targets >= 0).sum())

    return GPT


def GPT(cfg):
    """A new strata GPT module (torch imported only here)."""
    return _modules()(cfg)


def from_checkpoint(path):
    """The GPT of a strata checkpoint, weights loaded (strict), in eval mode."""
    import strata_ckpt
    m = GPT(config_of(strata_ckpt.info(path)["config"]))
    m.load_state_dict(strata_ckpt.to_torch(path), strict=True)
    return m.eval()


# ------------------------------------------------------------------- data ---

MASK64 = (1 << 64) - 1
SPLIT_TRAIN, SPLIT_VAL = 0, 1


def _mix64(z):   # splitmix64's finaliser, as examples/gpt/data.c
    z = (z + 0x9e3779b97f4a7c15) & MASK64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK64
    return z ^ (z >> 31)


def text_rows(text, split, seed, step, row0, nrows, T, val_frac=0.1):
    """Rows row0.. of the global batch of step over a text file's bytes, as
    train_gpt --data reads them: (inputs, targets), lists of nrows lists of T ints."""
    n_train = len(text) - int(val_frac * len(text))
    base, length = (n_train, len(text) - n_train) if split == SPLIT_VAL else (0, n_train)
    ins, tgs = [], []
    for i in range(nrows):
        s = _mix64(_mix64(_mix64(_mix64(seed) ^ split) ^ step) ^ (row0 + i))
        s = (s + 0x9e3779b97f4a7c15) & MASK64
        start = base + ((_mix64(s) * (length - T)) >> 64)
        ins.append(list(text[start:start + T]))
        tgs.append(list(text[start + 1:start + T + 1]))
    return ins, tgs


ADD_LEN, ADD_PROMPT = 16, 8     # "aaa+bbb=" b0 s0 b1 s1 b2 s2 carry "\n" (examples/gpt/data.c)


def _add_heldout(a, b):
    lo, hi = min(a, b), max(a, b)
    return _mix64(0x616464 ^ (lo * 1000 + hi)) % 10 == 0


def _add_format(a, b):
    """gpt_add_format: "aaa+bbb=", then least significant first each sum
    digit after the digit of b it adds, the carry out last, "\n"."""
    s, bb, ans = a + b, b, b""
    for _ in range(3):
        ans += b"%d%d" % (bb % 10, s % 10)
        s, bb = s // 10, bb // 10
    return b"%03d+%03d=" % (a, b) + ans + b"%d\n" % s


def addition_rows(split, seed, step, row0, nrows, T):
    """Rows row0.. of the global batch of step of the generated addition task,
    as train_gpt without --data makes them: (inputs, targets), lists of nrows
    lists of T ints; targets are -1 on the operand bytes (no loss there)."""
    ins, tgs = [], []
    for i in range(nrows):
        s = _mix64(_mix64(_mix64(_mix64(seed) ^ split) ^ step) ^ (row0 + i))
        inp, tg, pos = [0] * T, [0] * T, 0

        def below(n):
            nonlocal s
            s = (s + 0x9e3779b97f4a7c15) & MASK64
            return (_mix64(s) * n) >> 64
        while pos < T + 1:
            while True:
                a, b = below(1000), below(1000)
                if _add_heldout(a, b) == (split == SPLIT_VAL):
                    break
            ex = _add_format(a, b)
            for j in range(ADD_LEN):
                if pos >= T + 1:
                    break
                if pos > 0:
                    tg[pos - 1] = ex[j] if j >= ADD_PROMPT else -1
                if pos < T:
                    inp[pos] = ex[j]
                pos += 1
        ins.append(inp)
        tgs.append(tg)
    return ins, tgs


def val_loss(model, text, seed, rows, val_batches, T):
    """Mean loss per byte over val_batches batches of `rows` rows (train_gpt's
    'val loss': rows = ranks x --batch)."""
    import torch
    total, count = 0.0, 0
    with torch.no_grad():
        for k in range(val_batches):
            ins, tgs = text_rows(text, SPLIT_VAL, seed, k, 0, rows, T)
            ls, n = model.loss_sum(torch.tensor(ins), torch.tensor(tgs))
            total += float(ls)
            count += n
    return total / max(count, 1)
