#!/bin/sh
# gpt-train-damaged.t - --resume never loses work. The newest checkpoint
# (step 4 of a 6-step run) damaged in each way: truncated, empty, not
# HDF5, one byte flipped in the tensor data, one byte flipped in HDF5's
# metadata. With an older good one (step 2) beside it: the damaged file is
# named with why, the job resumes from step 2 and reaches the param_hash of
# an uninterrupted run. Alone: an error naming it, a non-zero exit, nothing
# written. A sound file of another model (another width) is not damaged:
# refused (exit 2) naming the difference, with or without an older one,
# nothing written, no fall-back (t/gpt-train-shape.t has more). No
# checkpoint at all: step 0, said so. Each case's time to exit is printed.
# One rank, started without mpirun (MPI singleton): the fallback is the
# same on any rank count (the ranks agree on each file's status), and the
# 2-rank kills and lock are t/gpt-train-lock.t.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-damaged
echo "1..15"
small="--threads 1 --layers 2 --dim 32 --heads 4 --batch 4 --steps 6 --json --eval-n 8"
L1() { timeout 120 "$@"; }

L1 "$P" $small --ckpt-dir "$tmp/good" --ckpt-every 2 --stop-at 4 > "$tmp/good.out" 2>&1
L1 "$P" $small > "$tmp/full.out" 2>&1
full=$(hash_of "$tmp/full.out")
L1 "$P" --threads 1 --layers 2 --dim 16 --heads 4 --batch 4 --steps 6 --stop-at 4 \
    --ckpt-dir "$tmp/other" > "$tmp/other.out" 2>&1
check "setup: checkpoints of steps 2 and 4, and one of another model" \
    test -f "$tmp/good/step-00000002.h5" -a -f "$tmp/good/step-00000004.h5" -a \
         -f "$tmp/other/step-00000004.h5" -a -n "$full"

flip() {    # flip FILE OFFSET: one byte xor 0x10
    python3 -c 'import sys
p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read())
b[o if o >= 0 else len(b) // 2] ^= 0x10; open(p, "wb").write(b)' "$1" "$2"
}
damage() {  # damage KIND FILE
    case $1 in
    truncated) head -c 300000 "$tmp/good/step-00000004.h5" > "$2" ;;
    empty)     : > "$2" ;;
    not-hdf5)  echo "this is not a checkpoint" > "$2" ;;
    flip-data) cp "$tmp/good/step-00000004.h5" "$2"; flip "$2" -1 ;;
    flip-meta) cp "$tmp/good/step-00000004.h5" "$2"; flip "$2" 200 ;;
    shape)     cp "$tmp/other/step-00000004.h5" "$2" ;;
    esac
}
for kind in truncated empty not-hdf5 flip-data flip-meta; do
    # with the older good one: resumes from step 2 to the uninterrupted hash
    d="$tmp/w-$kind"; mkdir "$d"
    cp "$tmp/good/step-00000002.h5" "$d/"; damage $kind "$d/step-00000004.h5"
    echo "step-00000004.h5" > "$d/latest"
    t0=$(ms); L1 "$P" $small --ckpt-dir "$d" --resume > "$tmp/w-$kind.out" 2>&1; rc=$?; t1=$(ms)
    grep "skipping\|resumed" "$tmp/w-$kind.out" | sed 's/^/# /'
    echo "# $kind with an older good one: exit $rc after $((t1 - t0)) ms"
    check "$kind newest, older good one: skipped with why, resumed from step 2, same param_hash" \
        sh -c 'test "$1" -eq 0 && grep -q "skipping $2/step-00000004.h5: ." "$3" &&
               test "$(grep -c skipping "$3")" -eq 1 &&
               grep -q "resumed from $2/step-00000002.h5 at step 2" "$3" && test "$4" = "$5"' \
        _ "$rc" "$d" "$tmp/w-$kind.out" "$(hash_of "$tmp/w-$kind.out")" "$full"
    # alone: refused, nothing written
    d="$tmp/a-$kind"; mkdir "$d"; damage $kind "$d/step-00000004.h5"
    ls -l --time-style=+%s.%N "$d" > "$tmp/a-$kind.before"
    t0=$(ms); L1 "$P" $small --ckpt-dir "$d" --resume > "$tmp/a-$kind.out" 2>&1; rc=$?; t1=$(ms)
    grep train_gpt "$tmp/a-$kind.out" | sed 's/^/# /'
    echo "# $kind alone: exit $rc after $((t1 - t0)) ms"
    ls -l --time-style=+%s.%N "$d" > "$tmp/a-$kind.after"
    check "$kind alone: an error naming it, exit != 0, no step run, nothing written" \
        sh -c 'test "$1" -ne 0 && grep -q "skipping $2/step-00000004.h5: ." "$3" &&
               grep -q "1 checkpoint file in $2, none loads" "$3" && ! grep -q "{\"step\"" "$3" &&
               cmp -s "$4" "$5"' _ "$rc" "$d" "$tmp/a-$kind.out" "$tmp/a-$kind.before" "$tmp/a-$kind.after"
done
for older in yes no; do
    d="$tmp/s-$older"; mkdir "$d"
    [ $older = yes ] && cp "$tmp/good/step-00000002.h5" "$d/"
    damage shape "$d/step-00000004.h5"; echo "step-00000004.h5" > "$d/latest"
    ls -l --time-style=+%s.%N "$d" > "$tmp/s-$older.before"
    t0=$(ms); L1 "$P" $small --ckpt-dir "$d" --resume > "$tmp/s-$older.out" 2>&1; rc=$?; t1=$(ms)
    grep train_gpt "$tmp/s-$older.out" | sed 's/^/# /'
    echo "# another width, older good one $older: exit $rc after $((t1 - t0)) ms"
    ls -l --time-style=+%s.%N "$d" > "$tmp/s-$older.after"
    check "another width (older good one: $older): refused naming it, exit 2, nothing written" \
        sh -c 'test "$1" -eq 2 && grep -q "refusing $2/step-00000004.h5: .*dim 16 in the file, 32 here" "$3" &&
               ! grep -q "resumed from\|{\"step\"" "$3" && cmp -s "$4" "$5"' \
        _ "$rc" "$d" "$tmp/s-$older.out" "$tmp/s-$older.before" "$tmp/s-$older.after"
done
mkdir "$tmp/none"
L1 "$P" $small --ckpt-dir "$tmp/none" --resume > "$tmp/none.out" 2>&1; rc=$?
check "no checkpoint at all: starts from step 0 and says so" \
    sh -c 'test "$1" -eq 0 && grep -q "no checkpoint in $2; starting from step 0" "$3" &&
           test "$4" = "$5"' _ "$rc" "$tmp/none" "$tmp/none.out" "$(hash_of "$tmp/none.out")" "$full"
mkdir "$tmp/v"; cp "$tmp/good/step-00000002.h5" "$tmp/v/"; damage flip-data "$tmp/v/step-00000004.h5"
echo "step-00000004.h5" > "$tmp/v/latest"
"$S" ckpt verify "$tmp/v" > "$tmp/verify.out" 2>&1; rc=$?
sed 's/^/# /' "$tmp/verify.out"
check "strata ckpt verify DIR: the damaged file fails, the good one passes, latest named" \
    sh -c 'test "$1" -ne 0 && grep -q "step-00000002.h5: OK" "$2" && grep -q "step-00000004.h5: .*problem" "$2" &&
           grep -q "latest: names step-00000004.h5, which is not a sound" "$2"' _ "$rc" "$tmp/verify.out"
