bin_PROGRAMS += tools/strata
tools_strata_SOURCES = tools/strata.c tools/cmds.h tools/ckpt_cmd.c tools/plan_cmd.c tools/trace_cmd.c \
    tools/trace_json.h tools/trace_merge.c tools/trace_plot.c
tools_strata_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_strata_LDADD = libstrata.la $(JANSSON_LIBS)
# trace --merge/--plot: the merged file checked against the Trace Event
# Format's rules in Python (t/trace_check.py, stdlib only)
EXTRA_DIST += t/trace_check.py
dist_check_SCRIPTS += t/trace-merge.t
TESTS += t/trace-merge.t
