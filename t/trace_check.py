"""trace_check.py MERGED.json NRANKS - the Trace Event Format rules a merged
trace must follow (what Perfetto and chrome://tracing rely on), as TAP.
No trace processor runs offline here (Perfetto's Python package downloads
its binary), so this checks the format's documented rules instead."""
import json
import sys

from py_tap import done, ok, plan

path, nranks = sys.argv[1], int(sys.argv[2])
plan(7)
try:
    doc = json.load(open(path))
except ValueError as e:
    ok(False, "the merged trace is JSON", e)
    sys.exit(1)
ev = doc.get("traceEvents") if isinstance(doc, dict) else None
ok(isinstance(ev, list) and doc.get("displayTimeUnit") in ("ms", "ns"),
   "JSON object with a traceEvents array and a valid displayTimeUnit")
PH = set("BEXIiCMsftbne")
bad = [e for e in ev if not (isinstance(e, dict) and e.get("ph") in PH and isinstance(e.get("pid"), int)
                             and isinstance(e.get("name"), str))]
bad += [e for e in ev if e["ph"] in "XsftC" and not (isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0)]
bad += [e for e in ev if e["ph"] == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0
                                                 and isinstance(e.get("tid"), int))]
ok(not bad, f"every event has a known ph, int pid, a name; X/C/flow events ts >= 0, X a dur ({len(ev)} events)",
   bad[:3])
names = {e["pid"]: e["args"].get("name") for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
ok(sorted(names) == list(range(nranks)) and all(names.values()),
   f"one process per rank, each named: {names}")
pids = {e["pid"] for e in ev}
ok(pids == set(range(nranks)), f"events only of pids 0..{nranks - 1}", sorted(pids))
byid = {}
for e in ev:
    if e["ph"] in "sf":
        byid.setdefault((e.get("cat"), e.get("id")), []).append(e)
pairs = [v for v in byid.values() if sorted(x["ph"] for x in v) == ["f", "s"]]
ok(byid and len(pairs) == len(byid) and all(x["name"] == "activation" for v in pairs for x in v),
   f"flow events come in s/f pairs with one id, cat and name ({len(pairs)} flows)")


def slice_at(e, cat):
    """The X event of engine cat on e's thread that contains e's ts."""
    return [x for x in ev if x["ph"] == "X" and x["pid"] == e["pid"] and x.get("tid") == e["tid"]
            and x.get("cat") == cat and x["ts"] <= e["ts"] <= x["ts"] + x["dur"]]


def bound(v):
    s = next(x for x in v if x["ph"] == "s")
    f = next(x for x in v if x["ph"] == "f")
    # an engine interleaves the chunks of an urgent transfer with a large
    # one, so two slices of one thread may both hold the point: any will do
    act = lambda x: (x["args"]["unit"], x["args"]["name"])
    d = {act(x) for x in slice_at(s, "d2h") if x["name"] == "D2H"}
    h = {act(x) for x in slice_at(f, "h2d") if x["name"] == "H2D"}
    return s["ts"] <= f["ts"] and f.get("bp") == "e" and bool(d & h)


bad = [v for v in pairs if not bound(v)]
ok(pairs and not bad,
   "each flow starts inside a D2H and ends (later) inside the H2D of the same activation")
for v in bad[:3]:   # what a failure looked like, for the next person
    for x in sorted(v, key=lambda x: x["ph"], reverse=True):
        print(f"#   {x['ph']} ts {x['ts']} pid {x['pid']} tid {x['tid']}: d2h slices "
              f"{slice_at(x, 'd2h')}, h2d slices {slice_at(x, 'h2d')}")
steps = {}
for e in ev:
    if e["ph"] == "X" and e["name"] == "step":
        steps.setdefault(e["args"]["step"], []).append(e)
starts = [max(x["ts"] for x in v) - min(x["ts"] for x in v) for v in steps.values()]
ok(steps and all(len(v) == nranks for v in steps.values()) and max(starts) < 1e6,
   f"every step is on every rank and the ranks' step starts line up (max spread {max(starts or [0]):.0f} us)")
done()
