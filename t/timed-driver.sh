#!/bin/sh
# t/timed-driver.sh DRIVER [ARGS...] - run automake's test driver and write
# the test's wall time in seconds, with its name, to LOG.time next to the
# --log-file it was given (.ci/run prints the slowest; make clean removes them).
log=""
prev=""
for a in "$@"; do
    [ "$prev" = --log-file ] && log=$a
    prev=$a
done
start=$(date +%s.%N)
"$@"
rc=$?
if [ -n "$log" ]; then
    awk -v s="$start" -v e="$(date +%s.%N)" -v t="${log%.log}" 'BEGIN { printf "%.1f %s\n", e - s, t }' \
        > "${log%.log}.time"
fi
exit $rc
