#!/bin/sh
# flight-dir.t - where flight records go: on a job's first run (its
# --ckpt-dir made after strata_init) a record (SIGUSR2) goes into the
# checkpoint directory, not the working directory; with a flight_dir that
# cannot be written the record goes to the next place, and the messages
# name the failure and the file actually written.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp flight-dir
trap 'kill $job 2>/dev/null; rm -rf "$tmp"' EXIT
job=
echo "1..3"
mkdir "$tmp/cwd"; : > "$tmp/file"
# one run: SIGUSR2 once a step is logged, then SIGUSR1 to stop
usr2() {
    (cd "$tmp/cwd" && exec "$P" --threads 1 --layers 1 --dim 16 --batch 4 --eval-n 8 --steps 1000000 \
        --log-every 20 --ckpt-dir "$1") > "$2" 2>&1 & job=$!
    i=0; while [ $i -lt 600 ] && ! grep -q '^step  *20/' "$2"; do sleep 0.1; i=$((i + 1)); done
    kill -USR2 $job
    i=0; while [ $i -lt 100 ] && ! grep -q 'flight record written to' "$2"; do sleep 0.1; i=$((i + 1)); done
    kill -USR1 $job; wait $job; job=
    grep "flight" "$2" | sed 's/^/# /'
}
usr2 "$tmp/ck" "$tmp/first.out"
check "first run: the record is in the new checkpoint directory, not the working directory" \
    sh -c 'test -f "$1/flight.0.json" && test -z "$(ls "$2")" &&
           grep -q "flight record written to $1/flight.0.json" "$3"' _ "$tmp/ck" "$tmp/cwd" "$tmp/first.out"
rm -f "$tmp/ck/flight.0.json"
STRATA_FLIGHT_DIR="$tmp/file/sub" usr2 "$tmp/ck" "$tmp/bad.out"
check "an unwritable flight_dir is named with why" \
    grep -q "cannot write the flight record $tmp/file/sub/flight.0.json: Not a directory" "$tmp/bad.out"
check "and the record goes to the checkpoint directory, which the messages name" \
    sh -c 'test -f "$1/flight.0.json" && grep -q "went to $1/flight.0.json instead" "$2" &&
           grep -q "flight record written to $1/flight.0.json" "$2"' _ "$tmp/ck" "$tmp/bad.out"
