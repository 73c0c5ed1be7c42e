# fsdp/ - the FSDP runtime, the top of the library: the context (strata_init
# assembles comm/ and tiers/), units, flat sharded parameters, the step,
# collectives' progress, the sharded optimizer.
libstrata_core_la_SOURCES += \
    fsdp/fsdp.h \
    fsdp/context.c \
    fsdp/geometry.c \
    fsdp/mem.c \
    fsdp/state.c \
    fsdp/fetch.c \
    fsdp/optq.c \
    fsdp/dev.h \
    fsdp/dev.c \
    fsdp/dev_host.c \
    fsdp/pool.c \
    fsdp/ckpt.c \
    fsdp/call.c \
    fsdp/model.c \
    fsdp/progress.c \
    fsdp/step.c \
    fsdp/straggler.c \
    fsdp/exec_impl.h \
    fsdp/exec_step.c \
    fsdp/exec_run.c \
    fsdp/exec_rec.c \
    fsdp/exec_check.c \
    fsdp/exec_plan.c \
    fsdp/exec_costs.c \
    fsdp/gradcheck.c
# The optimizer's loops are vectorised with sqrtf inline (errno would keep
# it a call, and the loop scalar) and no contraction into FMA, so each
# element rounds as the plain loop does in every clone of optim.c, on any
# x86-64 (OPTIM_CFLAGS: configure.ac).
noinst_LTLIBRARIES += libstrata_optim.la
libstrata_optim_la_SOURCES = fsdp/optim.c
libstrata_optim_la_CFLAGS = $(AM_CFLAGS) $(OPTIM_CFLAGS)
libstrata_core_la_LIBADD += libstrata_optim.la
# the device layer's cuda backend and its kernels (optimizer, norms)
FSDP_CUDA_SOURCES = fsdp/dev_cuda.c fsdp/dev_kernels.h fsdp/dev_kernels.cu
if HAVE_CUDA
libstrata_core_la_SOURCES += $(FSDP_CUDA_SOURCES)
endif
EXTRA_DIST += $(FSDP_CUDA_SOURCES)
fsdp/dev_kernels.lo: fsdp/dev_kernels.h include/strata/elem.h
