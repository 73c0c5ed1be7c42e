# tiers/ - memory tiers, arenas, copy engines, events, the storage policy
# and its spill file format (spill.c).
libstrata_core_la_SOURCES += \
    tiers/tiers.h \
    tiers/spill.h \
    tiers/arena.c \
    tiers/mplan.c \
    tiers/tiers.c \
    tiers/block.c \
    tiers/engine.c \
    tiers/storage.c \
    tiers/spill.c \
    tiers/limits.c \
    tiers/host.c
if HAVE_CUDA
libstrata_core_la_SOURCES += tiers/cuda.c
endif
EXTRA_DIST += tiers/cuda.c
