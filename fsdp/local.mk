# fsdp/ - the FSDP runtime: units, flat sharded parameters, the step,
# collectives' progress, the sharded optimizer.
libstrata_core_la_SOURCES += \
    fsdp/fsdp.h \
    fsdp/geometry.c \
    fsdp/mem.c \
    fsdp/ckpt.c \
    fsdp/call.c \
    fsdp/model.c \
    fsdp/progress.c \
    fsdp/optim.c \
    fsdp/step.c \
    fsdp/exec.c \
    fsdp/exec_plan.c \
    fsdp/exec_costs.c
