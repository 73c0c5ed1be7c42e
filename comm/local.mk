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
    comm/rs.c \
    comm/select.h \
    comm/select.c \
    comm/stage.h \
    comm/staged.c \
    comm/stage_host.c
# the staged backend's device copies (cudaMemcpyAsync), with or without NCCL
STAGE_CUDA_SOURCES = comm/stage_cuda.c
if HAVE_CUDA
libstrata_core_la_SOURCES += $(STAGE_CUDA_SOURCES)
endif
EXTRA_DIST += $(STAGE_CUDA_SOURCES)
NCCL_SOURCES = \
    comm/nccl_backend.h \
    comm/nccl_map.c \
    comm/nccl.c
if HAVE_NCCL
libstrata_core_la_SOURCES += $(NCCL_SOURCES)
endif
EXTRA_DIST += $(NCCL_SOURCES)

