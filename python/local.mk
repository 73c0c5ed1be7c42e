# python/ - checkpoint reader and the GPT in PyTorch: plain modules, no build
# step (their tests are wired in t/local.mk)
EXTRA_DIST += python/strata_ckpt.py python/strata_gpt.py
