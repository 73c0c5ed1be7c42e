libstrata_la_SOURCES += \
    base/base.h \
    base/status.c \
    base/dtype.c \
    base/config.c \
    base/log.c
