# plan/ - the planner behind strata plan-model and strata calibrate: model
# and hardware files (JSON, read with jansson), a model's units and their
# step program, evaluated by sched/'s scheduler and simulator. A static
# library for the tools, the benchmarks and the tests, not part of
# libstrata: the runtime neither reads these files nor needs jansson.
noinst_LIBRARIES += plan/libplan.a
plan_libplan_a_SOURCES = plan/plan.h plan/files.c plan/units.c plan/eval.c plan/state.c
# where plan_find_file looks for share/models and share/hw: the installed
# data directory, and the source tree while a program runs from this build
# tree. Given to this library only, so libstrata.so holds no build paths.
plan_libplan_a_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS) -DSTRATA_PKGDATADIR='"$(pkgdatadir)"' \
    -DSTRATA_SRCDIR='"$(abs_top_srcdir)"' -DSTRATA_BUILDDIR='"$(abs_top_builddir)"'
# what a program that uses the planner links, before libstrata_core.la
PLAN_LIBS = plan/libplan.a $(JANSSON_LIBS)
