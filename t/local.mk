# t/ - TAP tests. Programs named *.t run directly; multi-rank programs are
# started by the *.t scripts through t/launch.
check_LIBRARIES = t/libtap.a
t_libtap_a_SOURCES = t/tap.c t/tap.h

# Tests of the public API link the shared library (so its export list is
# tested too); tests of internals link the convenience library.
TEST_LDADD = libstrata.la t/libtap.a
TEST_INTERNAL_LDADD = libstrata_core.la t/libtap.a

check_PROGRAMS += \
    t/unit_config.t \
    t/unit_dtype.t \
    t/unit_group.t \
    t/unit_wait.t \
    t/unit_thread.t \
    t/comm_coll \
    t/comm_rs \
    t/comm_errors \
    t/comm_staged \
    t/unit_commsel.t \
    t/base_agree

t_unit_config_t_SOURCES = t/unit_config.t.c
t_unit_dtype_t_SOURCES = t/unit_dtype.t.c
t_unit_group_t_SOURCES = t/unit_group.t.c
t_unit_wait_t_SOURCES = t/unit_wait.t.c
t_unit_thread_t_SOURCES = t/unit_thread.t.c
t_unit_config_t_LDADD = $(TEST_LDADD)
t_unit_dtype_t_LDADD = $(TEST_LDADD)
t_unit_group_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_wait_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_thread_t_LDADD = $(TEST_INTERNAL_LDADD)
t_comm_coll_SOURCES = t/comm_coll.c t/comm_gen.h
t_comm_coll_LDADD = $(TEST_LDADD)
t_comm_staged_SOURCES = t/comm_staged.c
t_comm_staged_LDADD = $(TEST_LDADD) $(CUDA_LIBS)
t_unit_commsel_t_SOURCES = t/unit_commsel.t.c
t_unit_commsel_t_LDADD = $(TEST_INTERNAL_LDADD)
t_comm_rs_SOURCES = t/comm_rs.c
t_comm_rs_LDADD = $(TEST_INTERNAL_LDADD)
t_comm_errors_LDADD = $(TEST_LDADD)
t_base_agree_SOURCES = t/base_agree.c
t_base_agree_LDADD = $(TEST_INTERNAL_LDADD)

dist_check_SCRIPTS += \
    t/launch \
    t/comm-np1.t t/comm-np2.t t/comm-np3.t t/comm-np4.t t/comm-np8.t t/comm-np128.t \
    t/comm-ucx.t t/comm-errors.t t/comm-rs-np2.t t/comm-rs-np4.t t/comm-rs-np6.t \
    t/agree-np3.t t/comm-staged-np2.t t/comm-staged-np4.t

TESTS += \
    t/unit_config.t \
    t/unit_dtype.t \
    t/unit_group.t \
    t/unit_wait.t \
    t/unit_thread.t \
    t/comm-errors.t \
    t/comm-np1.t t/comm-np2.t t/comm-np3.t t/comm-np4.t t/comm-np8.t \
    t/comm-rs-np2.t t/comm-rs-np4.t t/comm-rs-np6.t \
    t/agree-np3.t \
    t/unit_commsel.t t/comm-staged-np2.t t/comm-staged-np4.t \
    t/comm-ucx.t \
    t/comm-np128.t

# NCCL backend: its pure logic everywhere NCCL is built; its collectives on
# device buffers (skips without a CUDA device; t/gpu/nccl-check.sh runs it
# on 1 and 2 GPUs).
dist_check_SCRIPTS += t/comm-nccl-np1.t
EXTRA_DIST += t/gpu/nccl-check.sh t/gpu/device-check.sh t/tap.sh t/README
if HAVE_NCCL
check_PROGRAMS += t/unit_nccl.t t/comm_nccl
t_unit_nccl_t_SOURCES = t/unit_nccl.t.c
t_unit_nccl_t_LDADD = $(TEST_INTERNAL_LDADD)
t_comm_nccl_SOURCES = t/comm_nccl.c t/comm_gen.h
t_comm_nccl_LDADD = $(TEST_LDADD) $(CUDA_LIBS)
TESTS += t/unit_nccl.t t/comm-nccl-np1.t
endif

# tiers: single-rank programs; the ones with a context call
# strata_init, which starts MPI itself.
check_PROGRAMS += t/tiers_arena.t t/tiers_mplan.t t/tiers_move.t t/tiers_storage.t t/tiers_link.t t/tiers_cuda.t t/tiers_limits.t t/tiers_hostauto.t
t_tiers_limits_t_SOURCES = t/tiers_limits.t.c
t_tiers_limits_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_hostauto_t_SOURCES = t/tiers_hostauto.t.c
t_tiers_hostauto_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_arena_t_SOURCES = t/tiers_arena.t.c
t_tiers_mplan_t_SOURCES = t/tiers_mplan.t.c
t_tiers_mplan_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_move_t_SOURCES = t/tiers_move.t.c t/tiers_util.h
t_tiers_storage_t_SOURCES = t/tiers_storage.t.c t/tiers_util.h
t_tiers_link_t_SOURCES = t/tiers_link.t.c
t_tiers_cuda_t_SOURCES = t/tiers_cuda.t.c t/tiers_util.h
t_tiers_arena_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_move_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_storage_t_LDADD = $(TEST_INTERNAL_LDADD) $(HDF5_LIBS)
t_tiers_link_t_LDADD = $(TEST_INTERNAL_LDADD)
t_tiers_cuda_t_LDADD = $(TEST_LDADD) $(CUDA_LIBS)
TESTS += t/tiers_arena.t t/tiers_mplan.t t/tiers_move.t t/tiers_storage.t t/tiers_link.t t/tiers_cuda.t t/tiers_limits.t t/tiers_hostauto.t
# checkpoints (io/ckpt_*.c)
check_PROGRAMS += t/unit_ckpt_geom.t
t_unit_ckpt_geom_t_SOURCES = t/unit_ckpt_geom.t.c
t_unit_ckpt_geom_t_LDADD = $(TEST_INTERNAL_LDADD)
TESTS += t/unit_ckpt_geom.t
check_PROGRAMS += t/unit_ckpt_hash.t
t_unit_ckpt_hash_t_SOURCES = t/unit_ckpt_hash.t.c
t_unit_ckpt_hash_t_LDADD = $(TEST_INTERNAL_LDADD) $(XXHASH_LIBS)
TESTS += t/unit_ckpt_hash.t
# the test-fault switch (base/test_fault.h)
check_PROGRAMS += t/unit_test_fault.t
t_unit_test_fault_t_SOURCES = t/unit_test_fault.t.c
t_unit_test_fault_t_LDADD = $(TEST_INTERNAL_LDADD)
TESTS += t/unit_test_fault.t
# the same with libxxhash's generic build forced
dist_check_SCRIPTS += t/ckpt-hash-generic.t
TESTS += t/ckpt-hash-generic.t
check_PROGRAMS += t/ckpt_rt t/ckpt_bad
t_ckpt_bad_SOURCES = t/ckpt_bad.c t/ckpt_synth.h
t_ckpt_bad_LDADD = $(TEST_LDADD) $(HDF5_LIBS)
t_ckpt_rt_SOURCES = t/ckpt_rt.c t/ckpt_synth.h
t_ckpt_rt_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += t/ckpt-np1.t t/ckpt-np2.t t/ckpt-np4.t t/ckpt-reshard.t t/ckpt-bad.t t/ckpt-kill.t t/ckpt-cli.t t/ckpt-h5dump.t t/ckpt-direct.t \
    t/ckpt-stall.t t/ckpt-enospc.t t/ckpt-async.t
TESTS += t/ckpt-np1.t t/ckpt-np2.t t/ckpt-np4.t t/ckpt-reshard.t t/ckpt-bad.t t/ckpt-kill.t t/ckpt-cli.t t/ckpt-h5dump.t t/ckpt-direct.t \
    t/ckpt-stall.t
# h5dump, when configure found it, for t/ckpt-h5dump.t
AM_TESTS_ENVIRONMENT += H5DUMP='$(H5DUMP)'; export H5DUMP;
# FSDP core
check_PROGRAMS += t/unit_fsdp_geometry.t t/unit_fsdp_mem.t t/unit_fsdp_optim.t t/unit_fsdp_pool.t t/unit_fsdp_straggler.t t/unit_fsdp_place.t t/fsdp_equiv t/fsdp_errors t/step_check
t_step_check_SOURCES = t/step_check.c
t_step_check_LDADD = $(TEST_LDADD)
t_unit_fsdp_geometry_t_SOURCES = t/unit_fsdp_geometry.t.c
t_unit_fsdp_geometry_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_fsdp_mem_t_SOURCES = t/unit_fsdp_mem.t.c
t_unit_fsdp_mem_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_fsdp_optim_t_SOURCES = t/unit_fsdp_optim.t.c
t_unit_fsdp_optim_t_LDADD = $(TEST_INTERNAL_LDADD) -lm
t_unit_fsdp_pool_t_SOURCES = t/unit_fsdp_pool.t.c
t_unit_fsdp_pool_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_fsdp_straggler_t_SOURCES = t/unit_fsdp_straggler.t.c
t_unit_fsdp_straggler_t_LDADD = $(TEST_INTERNAL_LDADD)
t_unit_fsdp_place_t_SOURCES = t/unit_fsdp_place.t.c
t_unit_fsdp_place_t_LDADD = $(TEST_INTERNAL_LDADD)
t_fsdp_equiv_SOURCES = t/fsdp_equiv.c
t_fsdp_equiv_LDADD = $(MLP_LIBS) $(TEST_LDADD)
t_fsdp_errors_SOURCES = t/fsdp_errors.c
t_fsdp_errors_LDADD = $(MLP_LIBS) $(TEST_INTERNAL_LDADD)
# recompute at name granularity: held saves, per-save producing costs
check_PROGRAMS += t/save_held
t_save_held_SOURCES = t/save_held.c
t_save_held_LDADD = $(TEST_INTERNAL_LDADD)
dist_check_SCRIPTS += t/save-held.t
TESTS += t/save-held.t
dist_check_SCRIPTS += \
    t/fsdp-np1.t t/fsdp-np2.t t/fsdp-np2-s1.t t/fsdp-np2-thread.t t/fsdp-np3.t t/fsdp-np4.t \
    t/fsdp-np4-s2.t t/fsdp-np8.t \
    t/fsdp-np128.t t/fsdp-errors.t t/step-check.t t/flight-stop.t t/flight-bypass.t \
    t/flight-cmd.t
TESTS += \
    t/unit_fsdp_geometry.t t/unit_fsdp_mem.t t/unit_fsdp_optim.t t/unit_fsdp_pool.t \
    t/unit_fsdp_straggler.t t/unit_fsdp_place.t \
    t/fsdp-errors.t t/step-check.t t/flight-stop.t t/flight-bypass.t t/flight-cmd.t \
    t/fsdp-np1.t t/fsdp-np2.t t/fsdp-np2-s1.t t/fsdp-np2-thread.t t/fsdp-np3.t t/fsdp-np4.t \
    t/fsdp-np4-s2.t t/fsdp-np8.t \
    t/fsdp-np128.t

# model checkpoints (fsdp/ckpt.c): resume and resharding through the model API
check_PROGRAMS += t/fsdp_ckpt
t_fsdp_ckpt_SOURCES = t/fsdp_ckpt.c
t_fsdp_ckpt_LDADD = $(MLP_LIBS) $(TEST_LDADD)
dist_check_SCRIPTS += t/fsdp-ckpt.t
TESTS += t/fsdp-ckpt.t

# the growable public structures, as older and newer programs use them
check_PROGRAMS += t/abi_grow.t
t_abi_grow_t_SOURCES = t/abi_grow.t.c
t_abi_grow_t_LDADD = $(TEST_LDADD)
TESTS += t/abi_grow.t

# strata_unit_gradcheck: a unit's backward against its forward's differences
check_PROGRAMS += t/gradcheck_units
t_gradcheck_units_SOURCES = t/gradcheck_units.c
t_gradcheck_units_LDADD = $(MLP_LIBS) $(TEST_LDADD) -lm
dist_check_SCRIPTS += t/gradcheck-np2.t
TESTS += t/gradcheck-np2.t
# examples/mlp/train_mlp on 1, 2 and 4 ranks: checkpoints, policies, the hash
dist_check_SCRIPTS += t/mlp-ranks.t
TESTS += t/mlp-ranks.t

# sched (the pure half): the step program, policies, the scheduler and
# its simulator, the automatic plan, the trace format; no MPI needed.
check_PROGRAMS += t/sched_program.t t/sched_policy.t t/sched_schedule.t t/sched_trace.t \
    t/sched_statefetch.t t/sched_share.t
t_sched_program_t_SOURCES = t/sched_program.t.c
t_sched_policy_t_SOURCES = t/sched_policy.t.c
t_sched_schedule_t_SOURCES = t/sched_schedule.t.c
t_sched_trace_t_SOURCES = t/sched_trace.t.c
t_sched_statefetch_t_SOURCES = t/sched_statefetch.t.c
t_sched_share_t_SOURCES = t/sched_share.t.c
t_sched_program_t_LDADD = $(TEST_INTERNAL_LDADD)
t_sched_policy_t_LDADD = $(TEST_INTERNAL_LDADD)
t_sched_schedule_t_LDADD = $(TEST_INTERNAL_LDADD)
t_sched_trace_t_LDADD = $(TRACE_LIBS) $(TEST_INTERNAL_LDADD)
t_sched_statefetch_t_LDADD = $(TEST_INTERNAL_LDADD)
t_sched_share_t_LDADD = $(TEST_INTERNAL_LDADD)
dist_check_SCRIPTS += t/sched-cli.t
EXTRA_DIST += t/sched_gpt.prog
TESTS += t/sched_program.t t/sched_policy.t t/sched_schedule.t t/sched_trace.t t/sched_statefetch.t \
    t/sched_share.t t/sched-cli.t

# activation policies and schedules in the FSDP step (fsdp/exec_*.c)
check_PROGRAMS += t/act_equiv
t_act_equiv_SOURCES = t/act_equiv.c
t_act_equiv_LDADD = $(MLP_LIBS) $(TRACE_LIBS) $(TEST_INTERNAL_LDADD)
dist_check_SCRIPTS += t/act-np1.t t/act-np2.t t/act-np4.t
TESTS += t/act-np1.t t/act-np2.t t/act-np4.t

# admission: every policy swept over device budgets, refused or trains
check_PROGRAMS += t/admit_sweep
t_admit_sweep_SOURCES = t/admit_sweep.c
t_admit_sweep_LDADD = $(MLP_LIBS) $(TEST_INTERNAL_LDADD)
dist_check_SCRIPTS += t/admit-np1.t t/admit-np2.t t/gpt-train-admit.t t/gpt-train-memplan.t t/gpt-train-boundary.t t/gpt-train-state.t t/gpt-train-regen.t
TESTS += t/admit-np1.t t/admit-np2.t t/gpt-train-admit.t t/gpt-train-memplan.t t/gpt-train-boundary.t t/gpt-train-state.t t/gpt-train-regen.t

# verify_transfers: round trips checksummed, a stale reload caught
dist_check_SCRIPTS += t/verify-transfers.t
TESTS += t/verify-transfers.t

# the layers of docs/architecture.md: each folder includes only those below it
dist_check_SCRIPTS += t/layers-includes.t
TESTS += t/layers-includes.t

# the benchmarks at a tiny size: --json output is JSON objects with the fields docs/benchmarks.md documents
dist_check_SCRIPTS += t/bench-json.t
TESTS += t/bench-json.t
# bench/run NAME --report: the dated report with machine, build and the table as printed
dist_check_SCRIPTS += t/bench-report.t
TESTS += t/bench-report.t
# checkpoints staged through the host, as on the cuda backend (test fault ckpt_stage)
dist_check_SCRIPTS += t/ckpt-stage.t
TESTS += t/ckpt-stage.t
# bench/copy_bw: its options, and the skip without a CUDA device
dist_check_SCRIPTS += t/copy-bw.t
TESTS += t/copy-bw.t

# docs/options.md's option table against `strata config -v`
dist_check_SCRIPTS += t/readme-options.t
TESTS += t/readme-options.t
# README.md's library example (and docs/api.md's copy) compiles with -Werror and trains
dist_check_SCRIPTS += t/readme-example.t
TESTS += t/readme-example.t

# the GPT example (examples/gpt/, built only where CBLAS is): its kernels'
# gradients, the reference trainer, the data, and train_gpt under mpirun
dist_check_SCRIPTS += t/gpt-train-np1-np4.t t/gpt-train-policy.t t/gpt-train-resume.t \
    t/gpt-train-errors.t t/gpt-train-trace.t t/gpt-train-tight.t t/gpt-learn.t t/slurm-run.t \
    t/gpt-train-damaged.t t/gpt-train-lock.t t/gpt-train-settings.t t/gpt-demo.t t/gpt-threads.t \
    t/gpt-train-recompute.t t/gpt-train-nonfinite.t t/gpt-train-shape.t t/ckpt-access.t \
    t/ckpt-lock-dead.t t/cli-refusals.t t/flight-dir.t t/spill-full.t t/gpt-matmul.t \
    t/gpt-train-straggler.t t/gpt-train-devmem.t
if HAVE_CBLAS
# bench/run plan-validate: the planner against published runs (share/validation)
dist_check_SCRIPTS += t/plan-validate.t
TESTS += t/plan-validate.t
check_PROGRAMS += t/gpt_grad.t t/gpt_ref.t t/gpt_data.t
t_gpt_grad_t_SOURCES = t/gpt_grad.t.c
t_gpt_ref_t_SOURCES = t/gpt_ref.t.c
# OpenMP as in the kernels: the thread test checks the team they get
t_gpt_ref_t_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
t_gpt_data_t_SOURCES = t/gpt_data.t.c
t_gpt_grad_t_LDADD = $(GPT_LDADD) t/libtap.a
t_gpt_ref_t_LDADD = $(GPT_LDADD) t/libtap.a
t_gpt_data_t_LDADD = $(GPT_LDADD) t/libtap.a
TESTS += t/gpt_grad.t t/gpt_ref.t t/gpt_data.t t/gpt-learn.t t/gpt-demo.t
# the CUDA kernels' per-index maths compiled for the host, against kernels.c
check_PROGRAMS += t/gpu_kernels_host.t
t_gpu_kernels_host_t_SOURCES = t/gpu_kernels_host.t.c
t_gpu_kernels_host_t_LDADD = $(GPT_LDADD) t/libtap.a -lm
TESTS += t/gpu_kernels_host.t
TESTS += t/gpt-train-np1-np4.t t/gpt-train-policy.t t/gpt-train-resume.t t/gpt-train-errors.t \
    t/gpt-train-trace.t t/gpt-train-tight.t t/slurm-run.t t/gpt-threads.t t/gpt-matmul.t
# recompute at name granularity: fewer products, the same param_hash
TESTS += t/gpt-train-recompute.t
# the final line's device-memory fields (null here) and reduce16 on the mpi backend
TESTS += t/gpt-train-devmem.t
# the fault matrix of resume, the checkpoint lock and the settings (docs/reliability.md)
TESTS += t/ckpt-enospc.t t/ckpt-async.t t/gpt-train-shape.t t/ckpt-access.t t/ckpt-lock-dead.t t/cli-refusals.t \
    t/flight-dir.t t/spill-full.t
TESTS += t/gpt-train-damaged.t t/gpt-train-lock.t t/gpt-train-settings.t t/gpt-train-nonfinite.t
# a rank slowed by a test fault is named once (fsdp/straggler.c)
TESTS += t/gpt-train-straggler.t
# several "hosts" on this machine, mpirun across them (t/netns.sh: network,
# UTS, PID and mount namespaces joined by veth links; each skips where they
# cannot be made)
dist_check_SCRIPTS += t/hosts-train.t t/hosts-lock.t t/hosts-partition.t t/hosts-run.t
TESTS += t/hosts-train.t t/hosts-lock.t t/hosts-partition.t t/hosts-run.t
EXTRA_DIST += t/netns.sh

# the planner: model and hardware files, formulas, the worked example of
# docs/planner.md (checks the example GPT against examples/gpt's own sizes)
check_PROGRAMS += t/plan_model.t
t_plan_model_t_SOURCES = t/plan_model.t.c
t_plan_model_t_LDADD = examples/gpt/libgpt.a $(PLAN_LIBS) $(TEST_INTERNAL_LDADD) $(BLAS_LIBS) $(DNNL_LIBS) $(OPENMP_CFLAGS)
dist_check_SCRIPTS += t/plan-model-cli.t t/plan-runtime-agree.t t/calibrate-cmd.t t/calibrate-mfu.t
TESTS += t/plan_model.t t/plan-model-cli.t t/plan-runtime-agree.t t/calibrate-cmd.t t/calibrate-mfu.t
endif

# the shared library exports only the public API and needs nothing of the
# tools (jansson, the planner, the build tree's paths); the installed
# package builds an out-of-tree program through pkg-config
AM_TESTS_ENVIRONMENT += CC='$(CC)' MAKE='$(MAKE)' PKG_CONFIG='$(PKG_CONFIG)'; export CC MAKE PKG_CONFIG;
dist_check_SCRIPTS += t/lib-symbols.t t/lib-deps.t t/install-pkgconfig.t
EXTRA_DIST += t/install_prog.c
TESTS += t/lib-symbols.t t/lib-deps.t t/install-pkgconfig.t

# python/ (Debian's /usr/bin/python3, t/py-env.sh; each skips with a reason
# where its modules do not import) and strata trace --merge/--plot (the
# merged file checked against the Trace Event Format's rules,
# t/trace_check.py); all run train_gpt
EXTRA_DIST += t/py-env.sh t/py_tap.py t/py_ckpt.py t/py_torch.py t/trace_check.py
# strata_gpt's port of the generated rows: plain Python, no build needed
EXTRA_DIST += t/py_rows.py
dist_check_SCRIPTS += t/py-rows.t
TESTS += t/py-rows.t
dist_check_SCRIPTS += t/py-ckpt.t t/py-torch.t t/trace-merge.t
if HAVE_CBLAS
TESTS += t/py-ckpt.t t/py-torch.t t/trace-merge.t
endif
# inputs the fuzzers (fuzz/, make fuzz) found, as regression tests
check_PROGRAMS += t/fuzz_regress.t
t_fuzz_regress_t_SOURCES = t/fuzz_regress.t.c
t_fuzz_regress_t_LDADD = $(TRACE_LIBS) $(TEST_INTERNAL_LDADD)
TESTS += t/fuzz_regress.t
# fuzz/run's classifier: a crash inside HDF5 is set aside, one in strata fails
dist_check_SCRIPTS += t/fuzz-classify.t
TESTS += t/fuzz-classify.t
# t/launch's rank cap (STRATA_TEST_MAX_RANKS, set by make check-sanitize)
dist_check_SCRIPTS += t/launch-cap.t
TESTS += t/launch-cap.t
# strata run, the restarting supervisor: a rank killed, the job goes on on 3
dist_check_SCRIPTS += t/strata-run.t t/run-probe.t
TESTS += t/strata-run.t t/run-probe.t
