# t/checks.mk - the suite under other tools, each its own target (not part
# of make check): ASan + UBSan (t/check-sanitize.sh), valgrind on the
# single-process unit tests, and the libFuzzer harnesses (fuzz/run).
EXTRA_DIST += fuzz/hdf5-known.supp t/valgrind.supp t/check-sanitize.sh t/devbuild.sh t/lsan.supp t/sanitize_noclose.c t/timed-driver.sh fuzz
.PHONY: check-sanitize check-valgrind fuzz

check-sanitize:
	$(SHELL) $(top_srcdir)/t/check-sanitize.sh $(TESTS_SANITIZE)

fuzz:
	FUZZ_TIME=$${FUZZ_TIME:-60} $(SHELL) $(top_srcdir)/fuzz/run $(FUZZ)

# the unit tests that start no MPI job, each under memcheck; any error or
# definite leak fails it (Open MPI's own suppressions for the one that
# initialises MPI as a singleton, and t/valgrind.supp for its leaks)
VALGRIND_TESTS = t/unit_config.t t/unit_dtype.t t/unit_group.t t/unit_ckpt_geom.t \
    t/unit_ckpt_hash.t t/unit_test_fault.t t/unit_fsdp_geometry.t t/unit_fsdp_mem.t \
    t/sched_policy.t t/sched_program.t t/sched_schedule.t t/sched_trace.t \
    t/plan_model.t t/tiers_arena.t t/gpt_data.t t/gpt_ref.t t/gpt_grad.t
VALGRIND = valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --num-callers=40
check-valgrind:
	@command -v valgrind >/dev/null || { echo "check-valgrind: needs valgrind (apt-get install valgrind)"; exit 1; }
	supp=$$(dirname "$$(command -v mpirun)")/../share/openmpi/openmpi-valgrind.supp; \
	if [ -f "$$supp" ]; then supp="--suppressions=$$supp"; else supp=""; fi; \
	supp="$$supp --suppressions=$(abs_top_srcdir)/t/valgrind.supp"; \
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(VALGRIND_TESTS)' \
	    T_LOG_COMPILER="$(LIBTOOL) --mode=execute $(VALGRIND) $$supp"
CLEANFILES += t/*.time
