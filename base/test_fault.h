/*
 * test_fault.h - faults the test suite injects into the library: one
 * mechanism for all of them, so that a new fault is a row in the table
 * below and a call at its site, never another environment variable.
 *
 *     STRATA_TEST_FAULT=NAME@N[,NAME@N...]
 *
 * arms fault NAME with the count N (>= 1); what N counts and what the
 * fault does is the site's business (the table says). Compiled in only
 * when configure's --enable-test-hooks is on, which is the default in a
 * git checkout (developers and CI run `make check`, and the fault tests
 * need it) and off in a release tarball (what gets built to be installed).
 * Off, test_fault_arg() is a no-op that returns 0 and the variable is
 * ignored: an installed library cannot be told by its environment to kill
 * itself. The tests that need a fault skip when it is off
 * ($test_hooks, yes or no, in the test environment says which).
 *
 * Faults (site; test):
 *   ckpt_kill@BYTES  rank 1 raises SIGKILL once it has written BYTES of
 *                    tensor data in a checkpoint save (io/ckpt_save.c;
 *                    t/ckpt-kill.t)
 *   ckpt_kill0@BYTES the same on rank 0 (t/gpt-train-lock.t: the lock and
 *                    the .tmp it leaves are cleaned up by the next job)
 *   ckpt_bg_delay@MS the thread of an asynchronous save (ckpt_async)
 *                    sleeps MS ms before it copies the shards (host
 *                    backend) and writes: training goes on, and the next
 *                    optimizer step waits for the copy (fsdp/ckpt.c;
 *                    t/ckpt-async.t)
 *   ckpt_stall@BYTES rank 1 hangs (pause() until killed) once it has
 *                    written BYTES of tensor data in a checkpoint save: the
 *                    watchdog's ckpt_timeout must end the job
 *                    (io/ckpt_save.c; t/ckpt-stall.t)
 *   ckpt_noreserve@1 checkpoint saves reserve no blocks before writing, so
 *                    a full file system fails the direct writes instead of
 *                    the reservation (io/ckpt_save.c; t/ckpt-enospc.t)
 *   spill_enospc@N   the storage tier's spill writes fail with ENOSPC once
 *                    N bytes have gone to the spill file (tiers/spill.c;
 *                    t/gpt-train-settings.t)
 *   ckpt_stage@1     checkpoint saves and loads on the host backend stage
 *                    the shards through host copies as the cuda backend
 *                    must (fsdp/ckpt.c; t/gpt-train-resume.t)
 *   nan_grad@STEP    at optimizer step STEP (1-based) the last shard rank
 *                    of every replica puts a NaN into the last unit's
 *                    reduced gradient, so the gradient norm is not finite
 *                    (fsdp/step.c, needs clip_norm > 0;
 *                    t/gpt-train-nonfinite.t)
 *   slow_rank@R      rank R (>= 1) sleeps 5 ms at the end of every unit
 *                    callback: a straggler (fsdp/call.c;
 *                    t/gpt-train-straggler.t)
 *   rank_kill@STEP   the last rank of the world raises SIGKILL at the start
 *                    of optimizer step STEP (1-based), as a dead node would
 *                    (fsdp/step.c; t/strata-run.t, which arms it on the
 *                    first run only)
 *   mplan_hold@STEP  at optimizer step STEP (1-based), when it places by
 *                    the memory plan, 256 bytes at the base of the plan's
 *                    span are held to the step's end, as a buffer freed
 *                    later than recorded would be: the buffer planned
 *                    there goes beside the plan's span (tiers/tiers.c;
 *                    t/gpt-train-memplan.t)
 *   mplan_stuck@STEP the same, as if the device had no room beside the
 *                    plan's span: the step leaves the plan (same files)
 *   host_auto_mem@BYTES host_mem=auto sizes its cap as if the node had
 *                    BYTES of memory (tiers/tiers.c; t/tiers_hostauto.t)
 *   nccl_bytes@BYTES the host backend counts BYTES of device memory as
 *                    NCCL's, as the cuda backend counts what its
 *                    communicators took: reserved in the device tier
 *                    (tiers/tiers.c; t/tiers_hostauto.t)
 *   stale_reload@N   the Nth save an activation schedule brings back to the
 *                    device arrives stale (its first bytes not the ones
 *                    that left), as a reload read before its copy landed
 *                    would (fsdp/exec_run.c; t/verify-transfers.t)
 */
#ifndef STRATA_BASE_TEST_FAULT_H
#define STRATA_BASE_TEST_FAULT_H

#include <stdint.h>

#define TEST_FAULT_ENV "STRATA_TEST_FAULT"

/* N of fault `name` in $STRATA_TEST_FAULT; 0 when it is not armed, when
 * the variable is malformed (said once on stderr) or when the hooks are
 * not compiled in. Reads the environment on each call: call it once per
 * operation (a save), not per byte. */
uint64_t test_fault_arg(const char *name);

/* The parser behind it, pure and always compiled: 1 and *n_p = N when
 * spec arms name; 0 when it does not; -1 when spec is malformed (an item
 * that is not NAME@N with N in 1..2^63; *n_p untouched). */
int test_fault_parse(const char *spec, const char *name, uint64_t *n_p);

#endif
