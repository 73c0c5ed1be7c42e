#!/bin/sh
# launch-cap.t - t/launch honours STRATA_TEST_MAX_RANKS (the sanitizer run
# sets it): a test over the cap skips saying why, one within it runs (the
# launcher is replaced by echo, so no MPI job starts).
. "$top_srcdir/t/tap.sh"
echo "1..3"
out=$(STRATA_TEST_MAX_RANKS=8 MPIRUN=/bin/false "$L" 128 prog 2>&1); rc=$?
[ $rc = 0 ] && [ "$out" = "1..0 # SKIP 128 ranks is over STRATA_TEST_MAX_RANKS=8" ]
ok $? "128 ranks over a cap of 8: skipped with the reason" || echo "# rc $rc: $out"
out=$(STRATA_TEST_MAX_RANKS=8 MPIRUN=/bin/echo MPI_FLAVOUR=other "$L" 8 prog arg 2>&1)
[ "$out" = "-np 8 prog arg" ]; ok $? "8 ranks within the cap: launched" || echo "# got: $out"
out=$(env -u STRATA_TEST_MAX_RANKS MPIRUN=/bin/echo MPI_FLAVOUR=other "$L" 128 prog 2>&1)
[ "$out" = "-np 128 prog" ]; ok $? "no cap: 128 ranks launched" || echo "# got: $out"
