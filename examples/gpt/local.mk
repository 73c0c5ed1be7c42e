# make demo runs this (train_gpt on 4 ranks)
EXTRA_DIST += examples/gpt/demo examples/gpt/train_gpt.sbatch

# examples/gpt/ - the GPT-2-style model (forward and backward on CPUs, data)
# and its single-process reference trainer. Needs CBLAS for the matrix
# products, so nothing here is built without it.
if HAVE_CBLAS
noinst_LIBRARIES += examples/gpt/libgpt.a
examples_gpt_libgpt_a_SOURCES = \
    examples/gpt/gpt.h \
    examples/gpt/kernels_scalar.h \
    examples/gpt/kernels.c \
    examples/gpt/gemm.c \
    examples/gpt/gemm_bf16.c \
    examples/gpt/kernels_gpu.h \
    examples/gpt/gpt_cuda.h \
    examples/gpt/model.c \
    examples/gpt/threads.c \
    examples/gpt/data.c
examples_gpt_libgpt_a_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS)
# the elementwise loops are written to vectorise; -O2 alone barely does, and
# the clamps in exp/GELU need -fno-trapping-math to become vector selects
examples_gpt_libgpt_a_CFLAGS = $(AM_CFLAGS) -ftree-vectorize -fno-trapping-math \
    $(OPENMP_CFLAGS)

# OPENMP_CFLAGS (-fopenmp) also links the OpenMP runtime the kernels use
GPT_LDADD = examples/gpt/libgpt.a libstrata.la $(BLAS_LIBS) $(DNNL_LIBS) $(OPENMP_CFLAGS) -lm

noinst_PROGRAMS += examples/gpt/gpt_ref_train
examples_gpt_gpt_ref_train_SOURCES = examples/gpt/gpt_ref_train.c
examples_gpt_gpt_ref_train_LDADD = $(GPT_LDADD)

# the main job: the model as FSDP units, trained by mpirun
noinst_PROGRAMS += examples/gpt/train_gpt
examples_gpt_train_gpt_SOURCES = examples/gpt/train_gpt.c examples/gpt/train_gpt.h \
    examples/gpt/train_opts.c examples/gpt/train_report.c \
    examples/gpt/gpt_fsdp.c examples/gpt/gpt_fsdp.h \
    examples/gpt/gpt_fsdp_dev.h examples/gpt/gpt_fsdp_cuda.c
examples_gpt_train_gpt_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) $(CUDA_CFLAGS)
# GPT_CUDA_LIBS: the units' device twins (empty without CUDA and NCCL)
examples_gpt_train_gpt_LDADD = $(GPT_LDADD) $(JANSSON_LIBS) $(GPT_CUDA_LIBS)
endif

# the GPT's kernels on a CUDA device (kernels_gpu.cu: per-index bodies from
# kernels_gpu.h, GEMMs through cuBLAS); nvcc compiles them by the .cu.lo rule
# of base/local.mk. Their maths is tested on the host by t/gpu_kernels_host.t.
EXTRA_DIST += examples/gpt/kernels_gpu.cu
if HAVE_NCCL
noinst_LTLIBRARIES += examples/gpt/libgpt_cuda.la
examples_gpt_libgpt_cuda_la_SOURCES =
examples_gpt_libgpt_cuda_la_LIBADD = examples/gpt/kernels_gpu.lo
EXTRA_examples_gpt_libgpt_cuda_la_DEPENDENCIES = examples/gpt/kernels_gpu.lo
examples/gpt/kernels_gpu.lo: examples/gpt/kernels_gpu.h examples/gpt/kernels_scalar.h \
    examples/gpt/gpt_cuda.h include/strata/elem.h
GPT_CUDA_LIBS = examples/gpt/libgpt_cuda.la $(CUDA_LIBS) -lcublasLt -lcublas
endif
