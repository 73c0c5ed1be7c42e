# examples/mlp - the smallest complete use of the library API; its model
# (mlp_model.c) is also the model of the FSDP tests and benchmark.
noinst_PROGRAMS += examples/mlp/mlp
examples_mlp_mlp_SOURCES = examples/mlp/mlp.c examples/mlp/mlp_model.c examples/mlp/mlp_model.h
examples_mlp_mlp_LDADD = libstrata.la
