libstrata_core_la_SOURCES += \
    comm/comm.h \
    comm/comm.c \
    comm/group.c \
    comm/mpi.c \
    comm/recorder.h \
    comm/recorder_impl.h \
    comm/recorder.c \
    comm/watchdog.c \
    comm/agree.c \
    comm/rs.c
NCCL_SOURCES = \
    comm/nccl_backend.h \
    comm/nccl_convert.h \
    comm/nccl_convert.cu \
    comm/nccl_map.c \
    comm/nccl.c
if HAVE_NCCL
libstrata_core_la_SOURCES += $(NCCL_SOURCES)
endif
EXTRA_DIST += $(NCCL_SOURCES)

# nvcc compiles the conversion kernels. libtool drives it like a C compiler
# but must not add -fPIC (nvcc refuses it): -prefer-non-pic keeps libtool's
# flag out, and --compiler-options=-fPIC (not -Xcompiler, which libtool
# takes for its own option) makes every object position-independent, so the
# one object serves the shared and the static library. No exceptions or
# thread-safe statics: the objects then need only libcudart, not libstdc++.
SUFFIXES = .cu
NVCC_COMPILE = $(NVCC) $(NVCCFLAGS) --compiler-options=-fPIC,-fno-exceptions,-fno-threadsafe-statics \
    $(DEFS) -I$(top_builddir) -I$(top_srcdir) $(CUDA_CFLAGS)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
.cu.lo:
	$(AM_V_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(NVCC_COMPILE) -prefer-non-pic \
	    -c -o $@ $<
comm/nccl_convert.lo: comm/nccl_convert.h
