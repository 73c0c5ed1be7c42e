# python/ - checkpoint reader and the GPT in PyTorch: plain modules, no build
# step. Their tests run Debian's /usr/bin/python3 (t/py-env.sh) and skip with
# a reason where a module does not import.
EXTRA_DIST += python/strata_ckpt.py python/strata_gpt.py t/py-env.sh t/py_tap.py \
    t/py_ckpt.py t/py_torch.py
dist_check_SCRIPTS += t/py-ckpt.t t/py-torch.t
TESTS += t/py-ckpt.t t/py-torch.t
