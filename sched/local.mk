# sched/ - deciding when things run: the step program, activation policies,
# the latency-hiding and naive schedules, their simulator, the automatic
# plan and the trace writer (its reader and analysis: tools/). Pure code,
# tested without MPI.
libstrata_core_la_SOURCES += \
    sched/sched.h \
    sched/sched_impl.h \
    sched/program.c \
    sched/policy.c \
    sched/schedule.c \
    sched/schedule_layout.c \
    sched/schedule_ops.c \
    sched/simulate.c \
    sched/plan.c \
    sched/trace.c \
    sched/planner.h \
    sched/plan_files.c \
    sched/plan_units.c \
    sched/plan_eval.c
# the planner reads JSON with jansson and finds its data files by name
AM_CPPFLAGS += $(JANSSON_CFLAGS) -DSTRATA_PKGDATADIR='"$(pkgdatadir)"' \
               -DSTRATA_SRCDIR='"$(abs_top_srcdir)"' -DSTRATA_BUILDDIR='"$(abs_top_builddir)"'
libstrata_core_la_LIBADD += $(JANSSON_LIBS)
