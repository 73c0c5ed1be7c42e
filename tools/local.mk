bin_PROGRAMS += tools/strata
tools_strata_SOURCES = tools/strata.c tools/cmds.h tools/ckpt_cmd.c tools/plan_cmd.c tools/trace_cmd.c
tools_strata_LDADD = libstrata_core.la
