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

# FSDP core (issue 4)
check_PROGRAMS += t/unit_fsdp_geometry.t t/fsdp_equiv t/fsdp_errors
t_unit_fsdp_geometry_t_SOURCES = t/unit_fsdp_geometry.t.c
t_unit_fsdp_geometry_t_LDADD = $(TEST_LDADD)
t_fsdp_equiv_SOURCES = t/fsdp_equiv.c examples/mlp/mlp_model.c
t_fsdp_equiv_LDADD = $(TEST_LDADD)
t_fsdp_errors_SOURCES = t/fsdp_errors.c examples/mlp/mlp_model.c
t_fsdp_errors_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += \
    t/fsdp-np1.t t/fsdp-np2.t t/fsdp-np2-s1.t t/fsdp-np3.t t/fsdp-np4.t t/fsdp-np4-s2.t \
    t/fsdp-np8.t \
    t/fsdp-np128.t t/fsdp-errors.t
TESTS += \
    t/unit_fsdp_geometry.t \
    t/fsdp-errors.t \
    t/fsdp-np1.t t/fsdp-np2.t t/fsdp-np2-s1.t t/fsdp-np3.t t/fsdp-np4.t t/fsdp-np4-s2.t \
    t/fsdp-np8.t \
    t/fsdp-np128.t
