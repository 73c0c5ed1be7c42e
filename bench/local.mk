# bench/ - benchmark programs; bench/run launches them.
noinst_PROGRAMS += bench/comm_bench
bench_comm_bench_SOURCES = bench/comm_bench.c bench/stats.h
bench_comm_bench_LDADD = libstrata.la
noinst_PROGRAMS += bench/ckpt_bench
bench_ckpt_bench_SOURCES = bench/ckpt_bench.c bench/stats.h
bench_ckpt_bench_LDADD = $(MLP_LIBS) libstrata.la
EXTRA_DIST += bench/run bench/report bench/offload bench/offload-plot bench/plan bench/plan-validate \
	bench/peers bench/peers_torch.py bench/state bench/big bench/gpt_params.py
noinst_PROGRAMS += bench/tiers_bench
bench_tiers_bench_SOURCES = bench/tiers_bench.c bench/stats.h
bench_tiers_bench_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS)
bench_tiers_bench_LDADD = libstrata_core.la $(BLAS_LIBS)

noinst_PROGRAMS += bench/fsdp_bench
bench_fsdp_bench_SOURCES = bench/fsdp_bench.c bench/stats.h
bench_fsdp_bench_LDADD = $(MLP_LIBS) libstrata.la

# the sgemm reference bench/run kernels measures train_gpt against
if HAVE_CBLAS
noinst_PROGRAMS += bench/sgemm_bench
bench_sgemm_bench_SOURCES = bench/sgemm_bench.c bench/stats.h
bench_sgemm_bench_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS)
bench_sgemm_bench_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
bench_sgemm_bench_LDADD = $(BLAS_LIBS) $(DNNL_LIBS) $(OPENMP_CFLAGS)
# bench/plan: the CPU's compute.mfu from one block through the GPT's kernels
noinst_PROGRAMS += bench/calibrate_mfu
bench_calibrate_mfu_SOURCES = bench/calibrate_mfu.c bench/stats.h
bench_calibrate_mfu_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
# the convenience library, not libstrata.la: base_now and the planner's
# calls into sched/ are internal
bench_calibrate_mfu_LDADD = examples/gpt/libgpt.a $(PLAN_LIBS) libstrata_core.la $(BLAS_LIBS) $(DNNL_LIBS) \
    $(OPENMP_CFLAGS) -lm
endif

# the cuda backend's copy engines against cudaMemcpyAsync (t/gpu/device-check.sh
# runs it on a GPU; without one it exits 77)
noinst_PROGRAMS += bench/copy_bw
bench_copy_bw_SOURCES = bench/copy_bw.c bench/stats.h
bench_copy_bw_LDADD = libstrata.la $(CUDA_LIBS)
