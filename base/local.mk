libstrata_core_la_SOURCES += \
    base/base.h \
    base/status.c \
    base/dtype.c \
    base/config.c \
    base/log.c \
    base/node.c \
    base/wait.h \
    base/wait.c \
    base/h5lock.c \
    base/test_fault.h \
    base/nvtx.h \
    base/test_fault.c
