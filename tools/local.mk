bin_PROGRAMS += tools/strata
tools_strata_SOURCES = tools/strata.c tools/ckpt_cmd.c
tools_strata_LDADD = libstrata.la
