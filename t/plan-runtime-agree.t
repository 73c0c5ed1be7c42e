#!/bin/sh
# plan-runtime-agree.t - what train_gpt prints as its plan's predictions and
# what `strata plan` says for the same job agree, on 1 to 4 ranks (the
# example GPT, act_policy auto, a budget that refuses and one that admits):
# - refused: the bytes kept free against fragmentation are the runtime's, to
#   the byte, and the budget needed is within 10%;
# - admitted: the measured peak is within 10% of the runtime's printed
#   prediction; strata plan given the runtime's printed actions predicts that
#   peak within 10%; strata plan's own auto fits the budget less the reserve,
#   as the runtime's does (the two autos' peaks printed: the runtime's weighs
#   measured costs).
# Peaks and bytes only: the step times are bench/run plan's (timing in make
# check would fail on a loaded machine). The hardware file's figures are a
# CPU node's, rounded: a peak depends on them only through when a
# reduce-scatter ends.
. "$top_srcdir/t/tap.sh"
tap_tmp plan-runtime-agree
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cat > "$tmp/hw.json" <<'JSON'
{"name": "cpu-agree", "source": "a CPU node's figures, rounded (peaks do not depend on them but for a reduce-scatter's timing)",
 "device": "cpu",
 "hbm": {"usable_bytes": 4294967296, "bandwidth": 5e9},
 "compute": {"dense_flops": 3e10, "mfu": 0.9},
 "host_link": {"d2h_bw": 2.5e9, "h2d_bw": 2.5e9, "both_bw": 2.5e9, "latency_s": 0, "compute_cost": 1},
 "host_bytes": 8589934592, "storage_bw": 3e8,
 "collectives": {"domain_size": 8, "latency_s": 1e-5, "compute_cost": 1, "sync_s": 1e-4,
   "all_gather": {"intra": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}], "inter": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}]},
   "reduce_scatter": {"intra": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}], "inter": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}]},
   "all_to_all": {"intra": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}], "inter": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}]},
   "all_reduce": {"intra": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}], "inter": [{"ranks": 2, "bytes": 1048576, "busbw": 2e9}]}}}
JSON
# ranks:layers:dim:heads:seq:batch:refused budget:admitted budget
exec python3 - "$S" "$L" "$top_builddir/examples/gpt/train_gpt" "$tmp/hw.json" "$tmp" \
    1:4:64:4:64:16:10M:20M 2:4:128:4:64:8:16M:24M 3:4:128:4:64:8:16M:18M 4:4:64:4:64:8:6M:10M <<'PY'
import json, os, re, subprocess, sys
S, L, P, hw, tmp = sys.argv[1:6]
cases = [c.split(":") for c in sys.argv[6:]]
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "K": 1024, "M": 1024 ** 2}
def size(txt):
    """bytes of a size as train_gpt prints it ("14.7 MiB") or as given ("18M")"""
    m = re.fullmatch(r"([0-9.]+) ?([KMG]?i?B|[KM])", txt)
    return float(m.group(1)) * UNITS[m.group(2)]
n = 0
def ok(cond, desc, diag=""):
    global n
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, desc))
    if not cond and diag: print("\n".join("# " + l for l in diag.splitlines()))
for np_, layers, dim, heads, seq, batch, small, budget in cases:
    model = os.path.join(tmp, "g%s-%s-%s-%s.json" % (layers, dim, heads, seq))
    with open(model, "w") as f:
        json.dump({"name": "g", "family": "gpt", "layers": int(layers), "hidden": int(dim), "heads": int(heads),
                   "max_seq": int(seq), "vocab": 256}, f)
    shape = "%s ranks, %sx%s seq %s batch %s" % (np_, layers, dim, seq, batch)
    train = [L, np_, P, "--threads", "1", "--layers", layers, "--dim", dim, "--heads", heads, "--seq", seq,
             "--batch", batch, "--steps", "2", "--eval-n", "1", "--spill-dir", tmp, "--json", "--act-policy", "auto"]
    def plan(policy, hbm):
        out = subprocess.run([S, "plan", "--model", model, "--hw", hw, "--fsdp", np_, "--micro", batch, "--seq", seq,
                              "--policy", policy, "--hbm", hbm, "--json"], capture_output=True, text=True).stdout
        return json.loads(out.splitlines()[0])
    # a budget too small: the runtime's refusal beside the planner's row
    out = subprocess.run(train + ["--device-mem", small], capture_output=True, text=True).stdout
    ref = [json.loads(l) for l in out.splitlines() if l.startswith('{"refused"')]
    p = plan("auto", small)
    if not ref:
        ok(False, "%s at %s: refused" % (shape, small), out[-800:]); continue
    ref = ref[0]
    need = p["device_bytes"] + p["device_reserve_bytes"]
    print("# %s at %s: runtime needs %d (reserve %d); planner %s, needs %d (reserve %d)" % (
        shape, small, ref["needs_device_bytes"], ref["reserve_bytes"], "fits" if p["fits"] else "does not fit",
        need, p["device_reserve_bytes"]))
    ok(ref["reserve_bytes"] == p["device_reserve_bytes"], "%s: the reserve kept free is the runtime's" % shape)
    ok(not p["fits"] and abs(need / ref["needs_device_bytes"] - 1) <= 0.10,
       "%s at %s: both refuse; the budget needed within 10%%" % (shape, small))
    # the budget admitted: the runtime's printed plan, its measured peak, the planner's rows
    # the last plan printed is the one made with step 1's costs, which step 2 ran
    out = subprocess.run(train + ["--device-mem", budget], capture_output=True, text=True).stdout
    preds = re.findall(r"^predicted: step [0-9.]+ ms, peak device ([0-9.]+ [KMG]?i?B),", out, re.M)
    acts = re.findall(r"^activation plan:\n((?:  \S+ +\S+ +.*\n)+)", out, re.M)
    fin = [json.loads(l) for l in out.splitlines() if l.startswith('{"final"')]
    if not preds or not acts or not fin:
        ok(False, "%s at %s: trains and prints its plan" % (shape, budget), out[-800:]); continue
    pred, meas = size(preds[-1]), fin[0]["peak_device_bytes"]
    rows = [l.split() for l in acts[-1].splitlines()[1:]]   # under the header: name action bytes
    policy = ",".join("%s=%s" % (r[0], r[1]) for r in rows)
    same = plan(policy, budget)
    auto = plan("auto", budget)
    B = size(budget)
    print("# %s at %s: runtime predicts %d, measures %d; planner, its actions: %d (%s); planner auto: %d + %d "
          "kept free (%s)" % (shape, budget, pred, meas, same["device_bytes"], policy, auto["device_bytes"],
                               auto["device_reserve_bytes"], auto["actions"]))
    ok(abs(meas / pred - 1) <= 0.10, "%s at %s: measured peak within 10%% of the runtime's prediction (%.1f%%)" % (
        shape, budget, 100 * (meas / pred - 1)))
    ok(same["fits"] and abs(same["device_bytes"] / pred - 1) <= 0.10,
       "%s at %s: strata plan with the runtime's plan predicts its peak within 10%% (%.1f%%)" % (
           shape, budget, 100 * (same["device_bytes"] / pred - 1)))
    # the two autos' peaks are printed, not judged: the runtime's auto weighs
    # the costs its first step measured, so a loaded machine may move it to
    # another plan that fits
    ok(auto["fits"] and auto["device_bytes"] + auto["device_reserve_bytes"] <= B,
       "%s at %s: strata plan's auto fits the budget less the reserve (its peak %.1f%% from the runtime's)" % (
           shape, budget, 100 * (auto["device_bytes"] / pred - 1)))
print("1..%d" % n)
PY
