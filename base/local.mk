libstrata_core_la_SOURCES += \
    base/base.h \
    base/status.c \
    base/dtype.c \
    base/config.c \
    base/grow.h \
    base/grow.c \
    base/log.c \
    base/node.c \
    base/wait.h \
    base/wait.c \
    base/thread.h \
    base/thread.c \
    base/shard.h \
    base/shard.c \
    base/agree.h \
    base/agree.c \
    base/h5lock.c \
    base/proc.h \
    base/proc.c \
    base/file.h \
    base/file.c \
    base/place.h \
    base/place.c \
    base/test_fault.h \
    base/nvtx.h \
    base/test_fault.c
# the 16-bit casts on a CUDA stream, for the device layer and the NCCL
# backend alike: built with CUDA whether or not NCCL is found
BASE_CUDA_SOURCES = base/dtype_cuda.h base/dtype_cuda.cu
if HAVE_CUDA
libstrata_core_la_SOURCES += $(BASE_CUDA_SOURCES)
endif
EXTRA_DIST += $(BASE_CUDA_SOURCES)

# nvcc compiles the CUDA kernels (base/, fsdp/, examples/gpt/). libtool
# drives it like a C compiler but must not add -fPIC (nvcc refuses it): -prefer-non-pic keeps libtool's
# flag out, and --compiler-options=-fPIC (not -Xcompiler, which libtool
# takes for its own option) makes every object position-independent, so the
# one object serves the shared and the static library. No exceptions or
# thread-safe statics: the objects then need only libcudart, not libstdc++.
SUFFIXES = .cu
NVCC_COMPILE = $(NVCC) $(NVCCFLAGS) --compiler-options=-fPIC,-fno-exceptions,-fno-threadsafe-statics \
    $(DEFS) -I$(top_builddir) -I$(top_srcdir) -I$(top_srcdir)/include $(CUDA_CFLAGS)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
.cu.lo:
	$(AM_V_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(NVCC_COMPILE) -prefer-non-pic \
	    -c -o $@ $<
base/dtype_cuda.lo: base/dtype_cuda.h include/strata/elem.h
