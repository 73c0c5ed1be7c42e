#!/bin/sh
# examples/mlp/train_mlp on 1, 2 and 4 ranks with the same global batch:
# what the library guarantees across rank counts, and of checkpoints and
# policies (as t/fsdp-np*.t, t/gpt-train-np1-np4.t and t/act-np*.t
# assert for their models):
#  - every unit's backward passes strata_unit_gradcheck;
#  - the per-step and held-out losses agree within 1e-4 on 1, 2 and 4
#    ranks, and the held-out loss falls;
#  - on each rank count, a run stopped at step 6 and resumed from its
#    checkpoint ends with the param_hash of the run never stopped, and
#    prints the same losses for steps 7..12;
#  - 4 ranks resume the checkpoint 2 ranks wrote with its exact values
#    (the param_hash at the load is the one saved);
#  - pre=host under the device budget it needs (printed after step 1)
#    offloads, stays within it, and trains bitwise like keeping.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/mlp/train_mlp"
tap_tmp mlp-ranks
echo "1..9"
small="--layers 3 --width 16 --steps 12 --eval-every 6 --print-every 1"
batch() { echo $((8 / $1)); }
# run NAME NP ARGS...: train_mlp's output in $tmp/NAME; its tail shown on failure
run() {
    out=$1; ranks=$2; shift 2
    "$L" "$ranks" "$P" $small --batch "$(batch "$ranks")" "$@" > "$tmp/$out" 2>&1 && return 0
    grep -v "^-\|^ *$\|mpirun\|Process\|Exit code\|job to be" "$tmp/$out" | tail -n 6 | sed 's/^/# /'
    return 1
}
final_hash() { sed -n 's/^final step .*param_hash \([0-9a-f]*\).*/\1/p' "$tmp/$1"; }
losses() { sed -n 's/^step *\([0-9]*\)  loss \(.*\)/\1 \2/p' "$tmp/$1"; }
held_out() { sed -n 's/^step *\([0-9]*\)  held-out loss \(.*\)/\1 \2/p' "$tmp/$1"; }
# close A B: the same steps, values within 1e-4
close() {
    awk 'NR == FNR { v[$1] = $2; next }
         { if (!($1 in v)) exit 1; d = v[$1] - $2; if (d < 0) d = -d; if (d > 1e-4) exit 1; n++ }
         END { exit !(n > 0) }' "$1" "$2"
}

for np in 1 2 4; do
    run full$np $np --ckpt "$tmp/ck-full$np" --gradcheck || echo "# the $np-rank run failed"
    run half$np $np --ckpt "$tmp/ck-half$np" --steps 6 && run resumed$np $np --ckpt "$tmp/ck-half$np" --resume
done
gradcheck_ok() {
    test "$(grep -c '^gradcheck fc[0-9]: max rel err .*: ok$' "$tmp/full$1")" -eq 3
}
check "every unit's backward passes strata_unit_gradcheck" gradcheck_ok 1
for np in 1 2 4; do
    losses full$np > "$tmp/l$np"
    held_out full$np > "$tmp/h$np"
done
echo "# held-out loss at steps 6, 12: 1 rank $(cut -d' ' -f2 "$tmp/h1" | tr '\n' ' ')," \
    "2 ranks $(cut -d' ' -f2 "$tmp/h2" | tr '\n' ' '), 4 ranks $(cut -d' ' -f2 "$tmp/h4" | tr '\n' ' ')"
same_losses() { test "$(wc -l < "$tmp/l1")" -eq 12 && close "$tmp/l1" "$tmp/l2" && close "$tmp/l1" "$tmp/l4"; }
check "1, 2 and 4 ranks: the same losses at each of the 12 steps within 1e-4" same_losses
same_held_out() { test "$(wc -l < "$tmp/h1")" -eq 2 && close "$tmp/h1" "$tmp/h2" && close "$tmp/h1" "$tmp/h4"; }
check "and the same held-out losses at steps 6 and 12" same_held_out
check "the held-out loss falls from step 6 to step 12" \
    awk 'NR == 1 { a = $2 } NR == 2 { b = $2 } END { exit !(NR == 2 && b < a) }' "$tmp/h1"
# resumed NP: the resumed run's hash and its losses for steps 7..12 are the full run's
resumed() {
    losses resumed$1 > "$tmp/r$1"
    awk '$1 > 6' "$tmp/l$1" > "$tmp/f$1"
    test -n "$(final_hash full$1)" && test "$(final_hash full$1)" = "$(final_hash resumed$1)" &&
        grep -q '^resumed from .*step-00000006.h5 at step 6' "$tmp/resumed$1" &&
        cmp -s "$tmp/f$1" "$tmp/r$1"
}
for np in 1 2 4; do
    check "$np rank(s): stopped at step 6 and resumed, the param_hash and losses of the run never stopped" resumed $np
done
# the newest there: step 12, which the resumed 2-rank run saved
run reshard 4 --ckpt "$tmp/ck-half2" --resume
loaded_hash() { sed -n 's/^resumed from .* param_hash \([0-9a-f]*\)$/\1/p' "$tmp/$1"; }
check "4 ranks load the 2-rank checkpoint with its exact values (param_hash $(final_hash resumed2))" \
    sh -c 'test -n "$1" && test "$1" = "$2"' sh "$(final_hash resumed2)" "$(loaded_hash reshard)"
run need 2 --policy pre=host --eval-every 0
need=$(sed -n 's/^policy pre=host needs device_mem >= \([0-9]*\);.*/\1/p' "$tmp/need")
echo "# pre=host needs device_mem >= ${need:-?} bytes"
run budget 2 --policy pre=host --device-mem "${need:-1}" --eval-every 0
under_budget() {
    sed -n 's/^final step .* peak device \([0-9]*\) bytes, offloaded \([0-9]*\)$/\1 \2/p' "$tmp/budget" |
        awk -v need="$need" '{ exit !($1 <= need && $2 > 0) }' &&
        test "$(final_hash budget)" = "$(final_hash full2)"
}
check "pre=host under that budget offloads, stays within it and trains bitwise like keep" under_budget
