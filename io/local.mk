# io/ - HDF5: checkpoints (ckpt_*.c) and the storage tier's file format.
libstrata_la_SOURCES += \
    io/io.h \
    io/ckpt_geom.c \
    io/ckpt_h5.c \
    io/ckpt_layout.c \
    io/ckpt_save.c \
    io/ckpt_load.c \
    io/ckpt_inspect.c
