#!/bin/sh
# trace-merge.t - `strata trace --merge` of a 2-rank train_gpt --trace run
# that offloads to host and storage (naive schedule: lhs would keep them on
# device at the default budget): one Chrome trace that follows the Trace
# Event Format (t/trace_check.py: a schema check, as no trace processor runs
# offline here), one process per rank, D2H->H2D flows; `--plot` draws a PNG
# through gnuplot and says so clearly where gnuplot is missing; bad input;
# bench/offload --plot's drawing (bench/offload-plot) from a table.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/py-env.sh"
tap_tmp trace-merge
echo "1..8"
"$L" 2 "$top_builddir/examples/gpt/train_gpt" --threads 1 --layers 2 --dim 32 \
    --heads 4 --batch 4 --steps 3 --eval-n 8 --spill-dir "$tmp" \
    --act-policy "mlp_up=host,qkv=storage,*=keep" --schedule naive --trace "$tmp/tr.json" > "$tmp/out" 2>&1 ||
    { echo "Bail out! train_gpt --trace failed"; sed 's/^/# /' "$tmp/out" | tail -5; exit 1; }
"$S" trace --merge "$tmp/all.json" "$tmp/tr.0.json" "$tmp/tr.1.json" > "$tmp/m" 2>&1; rc=$?
sed 's/^/# /' "$tmp/m"
check "--merge writes one trace of both ranks with flows" \
    sh -c 'test "$1" -eq 0 && grep -q "2 ranks.*[1-9][0-9]* D2H->H2D flows" "$2"' _ $rc "$tmp/m"
if [ -x "$PY" ]; then
    "$PY" "$top_srcdir/t/trace_check.py" "$tmp/all.json" 2 > "$tmp/chk" 2>&1; rc=$?
    sed 's/^/# /' "$tmp/chk"
    check "the merged trace follows the Trace Event Format (t/trace_check.py)" \
        sh -c 'test "$1" -eq 0 && grep -q "^1\.\.7" "$2" && ! grep -q "^not ok" "$2"' _ $rc "$tmp/chk"
else
    skip "the merged trace follows the Trace Event Format" "no $PY"
fi
cp "$tmp/tr.0.json" "$tmp/dup.json"
"$S" trace --merge "$tmp/x.json" "$tmp/tr.0.json" "$tmp/dup.json" > "$tmp/e" 2>&1; rc=$?
check "two files of one rank are refused, naming both" \
    sh -c 'test "$1" -eq 1 && grep -q "tr.0.json and .*dup.json are both rank 0" "$2"' _ $rc "$tmp/e"
echo '{"traceEvents": [' > "$tmp/broken.json"
"$S" trace --merge "$tmp/x.json" "$tmp/broken.json" > "$tmp/e" 2>&1; rc=$?
check "a file that is not JSON is refused with its name" \
    sh -c 'test "$1" -eq 1 && grep -q "broken.json: not JSON" "$2"' _ $rc "$tmp/e"
if command -v gnuplot > /dev/null; then
    "$S" trace --plot "$tmp/step.png" --title "host offload" "$tmp"/tr.[01].json > "$tmp/p" 2>&1; rc=$?
    sed 's/^/# /' "$tmp/p"
    check "--plot draws the last step as a PNG" \
        sh -c 'test "$1" -eq 0 && test "$(head -c 4 "$2" | od -An -c | tr -d " ")" = "211PNG"' _ $rc "$tmp/step.png"
else
    skip "--plot draws the last step as a PNG" "gnuplot not installed (gnuplot-nox)"
fi
STRATA_GNUPLOT=/nonexistent/gnuplot "$S" trace --plot "$tmp/n.png" "$tmp"/tr.[01].json > "$tmp/e" 2>&1; rc=$?
check "--plot without gnuplot: exit 1 and says to install it" \
    sh -c 'test "$1" -eq 1 && grep -q "gnuplot, which is not installed.*gnuplot-nox" "$2"' _ $rc "$tmp/e"
"$S" trace --plot "$tmp/n.png" --step 99 "$tmp"/tr.[01].json > "$tmp/e" 2>&1; rc=$?
check "--plot of a step the trace lacks: exit 1, says which" \
    sh -c 'test "$1" -eq 1 && grep -q "no step 99" "$2"' _ $rc "$tmp/e"
# bench/offload --plot: the drawing from a table of bench/offload's form
printf 'keep@m ok 8 0.03 30000 20000000 0 0\nkeep@4m oom 32\nhost-lhs@4m ok 32 0.1 40000 18000000 12000000 0\n' > "$tmp/table"
if command -v gnuplot > /dev/null; then
    "$top_srcdir/bench/offload-plot" "$tmp/table" "$tmp/off.png" > "$tmp/o" 2>&1; rc=$?
    check "bench/offload-plot draws tokens/s and peak memory per tier as a PNG" \
        sh -c 'test "$1" -eq 0 && test "$(head -c 4 "$2" | od -An -c | tr -d " ")" = "211PNG"' _ $rc "$tmp/off.png"
else
    skip "bench/offload-plot draws a PNG" "gnuplot not installed (gnuplot-nox)"
fi
