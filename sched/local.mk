# sched/ - deciding when things run: the step program, activation policies,
# the latency-hiding and naive schedules, their simulator, the automatic
# plan, when training state on storage is fetched, and the trace writer
# (its reader and analysis: tools/; the planner of model and hardware
# files: plan/). Pure code, tested without MPI.
libstrata_core_la_SOURCES += \
    sched/sched.h \
    sched/sched_impl.h \
    sched/program.c \
    sched/policy.c \
    sched/schedule.c \
    sched/schedule_layout.c \
    sched/schedule_ops.c \
    sched/share.c \
    sched/simulate.c \
    sched/plan.c \
    sched/statefetch.c \
    sched/trace.c
