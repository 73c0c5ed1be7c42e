# t/ - TAP tests. Programs named *.t run directly; multi-rank programs are
# started by the *.t scripts through t/launch.
check_LIBRARIES = t/libtap.a
t_libtap_a_SOURCES = t/tap.c t/tap.h

TEST_LDADD = libstrata.la t/libtap.a

check_PROGRAMS += \
    t/unit_config.t \
    t/unit_dtype.t \
    t/unit_group.t \
    t/comm_coll \
    t/comm_errors

t_unit_config_t_SOURCES = t/unit_config.t.c
t_unit_dtype_t_SOURCES = t/unit_dtype.t.c
t_unit_group_t_SOURCES = t/unit_group.t.c
t_unit_config_t_LDADD = $(TEST_LDADD)
t_unit_dtype_t_LDADD = $(TEST_LDADD)
t_unit_group_t_LDADD = $(TEST_LDADD)
t_comm_coll_LDADD = $(TEST_LDADD)
t_comm_errors_LDADD = $(TEST_LDADD)

dist_check_SCRIPTS += \
    t/launch \
    t/comm-np1.t t/comm-np2.t t/comm-np3.t t/comm-np4.t t/comm-np8.t t/comm-np128.t \
    t/comm-ucx.t t/comm-errors.t

TESTS += \
    t/unit_config.t \
    t/unit_dtype.t \
    t/unit_group.t \
    t/comm-errors.t \
    t/comm-np1.t t/comm-np2.t t/comm-np3.t t/comm-np4.t t/comm-np8.t \
    t/comm-ucx.t \
    t/comm-np128.t

# checkpoints (io/ckpt_*.c)
check_PROGRAMS += t/unit_ckpt_geom.t
t_unit_ckpt_geom_t_SOURCES = t/unit_ckpt_geom.t.c
t_unit_ckpt_geom_t_LDADD = $(TEST_LDADD)
TESTS += t/unit_ckpt_geom.t
check_PROGRAMS += t/ckpt_rt t/ckpt_bad
t_ckpt_bad_SOURCES = t/ckpt_bad.c t/ckpt_synth.h
t_ckpt_bad_LDADD = $(TEST_LDADD) $(HDF5_LIBS)
t_ckpt_rt_SOURCES = t/ckpt_rt.c t/ckpt_synth.h
t_ckpt_rt_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += t/ckpt-np1.t t/ckpt-np2.t t/ckpt-np4.t t/ckpt-reshard.t t/ckpt-bad.t t/ckpt-kill.t t/ckpt-cli.t t/ckpt-h5dump.t
TESTS += t/ckpt-np1.t t/ckpt-np2.t t/ckpt-np4.t t/ckpt-reshard.t t/ckpt-bad.t t/ckpt-kill.t t/ckpt-cli.t t/ckpt-h5dump.t
# h5dump, when configure found it, for t/ckpt-h5dump.t
AM_TESTS_ENVIRONMENT += H5DUMP='$(H5DUMP)'; export H5DUMP;
