#!/bin/sh
# launch-cap.t - t/launch honours STRATA_TEST_MAX_RANKS (the sanitizer run
# sets it): a test over the cap skips saying why, one within it runs (the
# launcher is replaced by echo, so no MPI job starts).
launch="$top_srcdir/t/launch"
echo "1..3"
out=$(STRATA_TEST_MAX_RANKS=8 MPIRUN=/bin/false "$launch" 128 prog 2>&1); rc=$?
if [ $rc = 0 ] && [ "$out" = "1..0 # SKIP 128 ranks is over STRATA_TEST_MAX_RANKS=8" ]; then
    echo "ok 1 - 128 ranks over a cap of 8: skipped with the reason"
else echo "not ok 1 - 128 ranks over a cap of 8: skipped with the reason (rc $rc: $out)"; fi
out=$(STRATA_TEST_MAX_RANKS=8 MPIRUN=/bin/echo MPI_FLAVOUR=other "$launch" 8 prog arg 2>&1)
if [ "$out" = "-np 8 prog arg" ]; then echo "ok 2 - 8 ranks within the cap: launched"
else echo "not ok 2 - 8 ranks within the cap: launched (got: $out)"; fi
out=$(env -u STRATA_TEST_MAX_RANKS MPIRUN=/bin/echo MPI_FLAVOUR=other "$launch" 128 prog 2>&1)
if [ "$out" = "-np 128 prog" ]; then echo "ok 3 - no cap: 128 ranks launched"
else echo "not ok 3 - no cap: 128 ranks launched (got: $out)"; fi
