# io/ - the HDF5 checkpoint formats (ckpt_*.c). The storage tier's spill
# file is the tier's own (tiers/spill.c).
libstrata_core_la_SOURCES += \
    io/io.h \
    io/ckpt_geom.c \
    io/ckpt_h5.c \
    io/ckpt_hash.c \
    io/ckpt_hash_avx2.c \
    io/ckpt_layout.c \
    io/ckpt_save.c \
    io/ckpt_load.c \
    io/ckpt_inspect.c
