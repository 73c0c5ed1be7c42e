# io/ - HDF5: the storage tier's spill file format.
libstrata_la_SOURCES += \
    io/io.h \
    io/spill.c
