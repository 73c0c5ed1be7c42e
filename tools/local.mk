bin_PROGRAMS += tools/strata
tools_strata_SOURCES = tools/strata.c tools/cmds.h tools/ckpt_cmd.c tools/plan_cmd.c tools/plan_model_cmd.c \
                       tools/trace_cmd.c tools/flight_cmd.c tools/run.h tools/run_cmd.c tools/run_hosts.c tools/trace_json.h tools/trace_merge.c tools/trace_plot.c
# strata calibrate times sgemm; a build without CBLAS gets a calibrate
# that says what to install (configure treats CBLAS as optional)
if HAVE_CBLAS
tools_strata_SOURCES += tools/calibrate_cmd.c tools/calibrate.h tools/calibrate_team.c tools/calibrate_costs.c
else
tools_strata_SOURCES += tools/calibrate_none.c
endif
tools_strata_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS) $(JANSSON_CFLAGS)
# OpenMP: calibrate runs its split products in an OpenMP team, as the
# GPT's kernels do (calibrate_team.c)
tools_strata_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tools_strata_LDADD = $(TRACE_LIBS) $(PLAN_LIBS) libstrata_core.la $(BLAS_LIBS) $(OPENMP_CFLAGS)

# reading traces back and their per-step analysis, for `strata trace` and
# the tests; jansson parses the JSON
noinst_LIBRARIES += tools/libtrace.a
tools_libtrace_a_SOURCES = tools/trace.h tools/trace_read.c tools/trace_analyze.c
tools_libtrace_a_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
TRACE_LIBS = tools/libtrace.a $(JANSSON_LIBS)

