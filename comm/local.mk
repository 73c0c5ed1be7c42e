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
    comm/nccl_map.c \
    comm/nccl.c
if HAVE_NCCL
libstrata_core_la_SOURCES += $(NCCL_SOURCES)
endif
EXTRA_DIST += $(NCCL_SOURCES)

