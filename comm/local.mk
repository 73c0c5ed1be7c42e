libstrata_la_SOURCES += \
    comm/comm.h \
    comm/comm.c \
    comm/group.c \
    comm/mpi.c
if HAVE_NCCL
libstrata_la_SOURCES += comm/nccl.c
endif
EXTRA_DIST += comm/nccl.c
