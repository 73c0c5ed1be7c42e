# bench/ - benchmark programs; bench/run launches them.
noinst_PROGRAMS += bench/comm_bench
bench_comm_bench_SOURCES = bench/comm_bench.c
bench_comm_bench_LDADD = libstrata.la
EXTRA_DIST += bench/run

noinst_PROGRAMS += bench/fsdp_bench
bench_fsdp_bench_SOURCES = bench/fsdp_bench.c examples/mlp/mlp_model.c
bench_fsdp_bench_LDADD = libstrata.la
