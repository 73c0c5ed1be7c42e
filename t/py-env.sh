# t/py-env.sh - sourced by the Python tests: the interpreter and a small
# train_gpt run on a text file that leaves a checkpoint.
# The interpreter is Debian's /usr/bin/python3 (where python3-h5py,
# python3-numpy, python3-xxhash and python3-torch install), not whatever
# python3 comes first on PATH; STRATA_PYTHON overrides it.
PY=${STRATA_PYTHON:-/usr/bin/python3}
PYTHONPATH="$top_srcdir/python:$top_srcdir/t${PYTHONPATH:+:$PYTHONPATH}"; export PYTHONPATH
# py_needs MODULE...: skip the whole test with a reason unless they import
py_needs() {
    [ -x "$PY" ] || { echo "1..0 # SKIP no Python interpreter at $PY (set STRATA_PYTHON)"; exit 0; }
    for m in "$@"; do
        "$PY" -c "import $m" 2>/dev/null ||
            { echo "1..0 # SKIP $PY cannot import $m (Debian: python3-$m; see bootstrap)"; exit 0; }
    done
}
# py_train DIR: 2 ranks, 20 steps on a generated text; DIR/out holds the
# output, DIR/ck the checkpoints, DIR/text.txt the data
py_train() {
    awk 'BEGIN { srand(7); for (i = 0; i < 400; i++) { w = ""; n = 3 + int(rand() * 6);
         for (j = 0; j < n; j++) w = w sprintf("%c", 97 + int(rand() * 26)); print w " of the " i } }' \
        > "$1/text.txt"
    "$top_srcdir/t/launch" 2 "$top_builddir/examples/gpt/train_gpt" --threads 1 --layers 2 \
        --dim 32 --heads 4 --seq 16 --batch 4 --steps 20 --data "$1/text.txt" --val-batches 3 \
        --json --ckpt-dir "$1/ck" > "$1/out" 2>&1
}
# final_field NAME: a field of train_gpt's final JSON object
final_field() { sed -n "s/^{\"final\":true.*\"$1\":\"*\([^,\"]*\)\"*.*/\1/p" "$tmp/out"; }
