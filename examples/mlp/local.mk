# examples/mlp - the smallest complete use of the library API. Its model
# (mlp_model.c) is a small library, libmlp.a, that the example program, the
# FSDP tests and the FSDP benchmark link.
noinst_LIBRARIES += examples/mlp/libmlp.a
examples_mlp_libmlp_a_SOURCES = examples/mlp/mlp_model.c examples/mlp/mlp_model.h
MLP_LIBS = examples/mlp/libmlp.a

noinst_PROGRAMS += examples/mlp/mlp
examples_mlp_mlp_SOURCES = examples/mlp/mlp.c
examples_mlp_mlp_LDADD = $(MLP_LIBS) libstrata.la

# the same model trained as a real program does: checkpoints and resume,
# held-out evaluation, an activation policy under a budget, the model hash
noinst_PROGRAMS += examples/mlp/train_mlp
examples_mlp_train_mlp_SOURCES = examples/mlp/train_mlp.c
examples_mlp_train_mlp_LDADD = $(MLP_LIBS) libstrata.la
