#!/bin/sh
# py-rows.t - python/strata_gpt.py's port of train_gpt's generated addition
# rows (the rows bench/peers feeds PyTorch) against known rows that
# t/gpt_data.t checks in C, and the task's rules. Plain Python, no modules.
set -u
. "$top_srcdir/t/tap.sh"
. "$top_srcdir/t/py-env.sh"
py_needs re
exec "$PY" "$top_srcdir/t/py_rows.py"
