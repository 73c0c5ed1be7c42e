"""py_torch.py CKPT VAL_LOSS TEXT SEED ROWS BATCHES T - the PyTorch checks of t/py-torch.t."""
import sys

import torch

import strata_ckpt as sc
import strata_gpt as sg
from py_tap import done, ok, plan, raises

path, want = sys.argv[1], float(sys.argv[2])
text = open(sys.argv[3], "rb").read()
seed, rows, batches, T = (int(x) for x in sys.argv[4:8])
torch.set_num_threads(1)
plan(5)

sd = sc.to_torch(path)
model = sg.GPT(sg.config_of(sc.info(path)["config"]))
missing = model.load_state_dict(sd, strict=True)
ok(not missing.missing_keys and not missing.unexpected_keys,
   f"to_torch() gives a state_dict that strata_gpt.GPT loads strictly ({len(sd)} tensors)")
order = [sg.torch_name(k) for k in sc.load(path)]
ok([n for n, _ in model.named_parameters()] == order,
   "GPT.parameters() come in the checkpoint's canonical order")
ok(model.lm_head.weight.data_ptr() != model.wte.data_ptr() and model.lm_head.bias is None,
   "the LM head has its own weight (not tied to wte) and no bias, as examples/gpt")
got = sg.val_loss(model.eval(), text, seed, rows, batches, T)
# (measured here: they agree to ~1e-8; the tolerance asked for is 1e-4. It
# does not tell GELU variants apart on a model this small: 6e-6 apart)
print(f"# |difference| {abs(got - want):.3g}")
ok(abs(got - want) < 1e-4, f"validation loss in PyTorch {got:.6f} == train_gpt's {want:.6f} (1e-4)")
raises(lambda: sg.torch_name("block0/nope"), KeyError, "block0/nope",
       "a tensor name the GPT does not have is refused")
done()
