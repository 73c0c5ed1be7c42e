"""py_rows - python/strata_gpt.py's port of train_gpt's generated addition
rows: known rows (the same as t/gpt_data.t.c checks in C), targets only on
the answer bytes, the split's pairs, and any rank's slice equal to the
single-rank batch. No torch, numpy or build needed."""
import re

import py_tap as tap
import strata_gpt as sg

tap.plan(6)
KNOWN = [(sg.SPLIT_TRAIN, 0, 0, b"907+911=1811981\n279+551=10"),
         (sg.SPLIT_VAL, 3, 5, b"915+207=7202211\n871+895=56")]
for split, step, row, want in KNOWN:
    ins, _ = sg.addition_rows(split, 1, step, row, 1, 26)
    tap.ok(bytes(ins[0]) == want, f"split {split} step {step} row {row}: {want[:12]!r}", bytes(ins[0]))


def examples(split, steps, T=39):
    """(a, b, written sum, targets right) of every whole example in steps' rows."""
    out = []
    for step in range(steps):
        ins, tgs = sg.addition_rows(split, 1, step, 0, 4, T)
        for inp, tg in zip(ins, tgs):
            for m in re.finditer(rb"(\d{3})\+(\d{3})=(\d{7})\n", bytes(inp[:-1])):
                i, d = m.start(), [c - 48 for c in m[3]]
                want = [-1] * 7 + list(bytes(inp[i + 8:i + 16]))
                written = d[1] + 10 * d[3] + 100 * d[5] + 1000 * d[6]
                out.append((int(m[1]), int(m[2]), written, tg[i:i + 15] == want))
    return out


tr, va = examples(sg.SPLIT_TRAIN, 30), examples(sg.SPLIT_VAL, 10)
tap.ok(len(tr) > 200 and all(a + b == s and t for a, b, s, t in tr),
       f"{len(tr)} training examples: right sums, targets on the answer and newline only")
tap.ok(not any(sg._add_heldout(a, b) for a, b, _, _ in tr), "no held-out pair in training rows")
tap.ok(len(va) > 50 and all(sg._add_heldout(a, b) for a, b, _, _ in va),
       f"{len(va)} validation examples, all held-out pairs")
whole = sg.addition_rows(sg.SPLIT_TRAIN, 5, 3, 0, 8, 20)
parts = [sg.addition_rows(sg.SPLIT_TRAIN, 5, 3, 2 * r, 2, 20) for r in range(4)]
tap.ok(all(whole[k] == sum((p[k] for p in parts), []) for k in (0, 1)),
       "4 ranks x 2 rows equal 1 rank x 8 rows")
