bin_PROGRAMS += tools/strata
tools_strata_SOURCES = tools/strata.c tools/cmds.h tools/ckpt_cmd.c tools/plan_cmd.c tools/plan_model_cmd.c \
                      tools/trace_cmd.c tools/calibrate_cmd.c
tools_strata_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS)
tools_strata_LDADD = libstrata.la $(JANSSON_LIBS) $(BLAS_LIBS)
