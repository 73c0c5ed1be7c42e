#!/bin/sh
# plan-validate.t - bench/run plan-validate, the planner against published
# runs (share/validation/runs.json): --json prints one JSON object per row of
# the data file, in its order, each with the published values, the
# prediction, the comparison and the mfu it was predicted with; a
# calibration row's predicted throughput is its published one (the mfu that
# makes it so), at most one per hardware file; a row whose run used tensor
# parallelism is listed, not planned, and says why; the table names every
# row and the targets met; --report writes the table into a results file;
# bad options and a data file naming an unknown model fail with a message.
# Cheap: the planner takes milliseconds a row.
. "$top_srcdir/t/tap.sh"
tap_tmp plan-validate
run="$top_srcdir/bench/run"
runs="$top_srcdir/share/validation/runs.json"
export STRATA_BUILDDIR="$top_builddir"

echo 1..8

"$run" plan-validate --json > "$tmp/json" 2> "$tmp/err"
check "--json: exit 0" test $? -eq 0 || sed 's/^/# /' "$tmp/err"
check "--json: one JSON object per row of the data file, in its order, each with its fields" python3 -c "
import json, sys
rows = json.load(open('$runs'))['rows']
out = [json.loads(l) for l in open('$tmp/json')]
if [o['id'] for o in out] != [r['id'] for r in rows]:
    sys.exit('# ids: %s' % [o['id'] for o in out])
for o in out:
    for k in ('id', 'hw', 'model', 'shape', 'policy', 'tp', 'config_known', 'mfu', 'published', 'source', 'planned'):
        if k not in o: sys.exit('# %s: no %s' % (o['id'], k))
    if not o['planned']: continue
    for k in ('fits', 'device_bytes', 'host_bytes', 'step_s', 'tokens_per_s_per_device', 'tflops_per_device'):
        if k not in o['predicted']: sys.exit('# %s: no predicted.%s' % (o['id'], k))
    c = o['compare']
    for k in ('fits', 'device', 'host', 'throughput'):
        if 'met' not in c[k]: sys.exit('# %s: no compare.%s.met' % (o['id'], k))
    if c['fits']['met'] != (o['published']['fits'] == o['predicted']['fits']): sys.exit('# %s: fits' % o['id'])
"
check "a calibration row predicts its published throughput (within 0.5%), one per hardware file, used by its other rows" python3 -c "
import json, sys
out = [json.loads(l) for l in open('$tmp/json')]
cal = [o for o in out if o['calibrates']]
if not cal or len({o['calibrates'] for o in cal}) != len(cal): sys.exit('# calibration rows: %d' % len(cal))
for o in cal:
    t = o['compare']['throughput']
    print('# %s: mfu %.4f, published %g, predicted %g' % (o['id'], o['mfu'], t['published'], t['predicted']))
    if abs(t['error']) > 0.005 or t['met'] is not None: sys.exit(1)
    if any(p['hw'] == o['hw'] and p['mfu'] != o['mfu'] for p in out): sys.exit('# %s: another mfu' % o['hw'])
"
check "a row whose run used tensor parallelism is listed, not planned, saying so" python3 -c "
import json, sys
tp = [json.loads(l) for l in open('$tmp/json') if json.loads(l)['tp'] > 1]
if not tp or any(o['planned'] or 'TP' not in o['note'] for o in tp): sys.exit(1)
"

"$run" plan-validate > "$tmp/table" 2> "$tmp/err"
check "the table names every row, the calibrations and the targets met" python3 -c "
import json, sys
t = open('$tmp/table').read()
for r in json.load(open('$runs'))['rows']:
    if r['id'] not in t: sys.exit('# no row ' + r['id'])
if 'targets met: fits/OOM' not in t or 'calibration (compute.mfu' not in t: sys.exit('# summary')
"

STRATA_RESULTS_DIR="$tmp/results" "$run" plan-validate --report > "$tmp/rep" 2> "$tmp/err"
check "--report writes the table into results/plan-validate.md" sh -c \
    "grep -q '^# bench/run plan-validate' '$tmp/results/plan-validate.md' && grep -q 'targets met: fits/OOM' '$tmp/results/plan-validate.md'"

"$run" plan-validate --rows 3 > "$tmp/bad" 2>&1; rc=$?
check "an unknown option: exit 2, naming it" sh -c "test $rc -eq 2 && grep -q 'unknown option --rows' '$tmp/bad'"

python3 -c "
import json
d = json.load(open('$runs'))
d['rows'] = [r for r in d['rows'] if r['hw'] == 'h100-hgx']
d['rows'][1]['model'] = 'no-such-model'
json.dump(d, open('$tmp/runs.json', 'w'))"
"$run" plan-validate --runs "$tmp/runs.json" > "$tmp/bad" 2>&1; rc=$?
check "a data file naming an unknown model: exit 1, naming the file it looked for" \
    sh -c "test $rc -eq 1 && grep -q 'no-such-model' '$tmp/bad'"
