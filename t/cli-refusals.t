#!/bin/sh
# cli-refusals.t - small faults of the command lines:
#  - SIGUSR1 as soon as train_gpt's main runs (before MPI and the model
#    are set up) is a stop request like any other: a checkpoint after
#    step 1, exit 0 (the signals are blocked until the handlers are in);
#  - options the model's set-up refuses exit with the usage code 2, as a
#    bad flag does: --shard 3 on 2 ranks, a policy naming a save twice,
#    --device-mem 1; --set chunk_size=0 names the option and its minimum;
#  - strata trace, flight and plan given a FIFO refuse it at once instead
#    of waiting for a writer;
#  - strata trace reads a file as it parses it: 1 GiB of zeros (sparse) is
#    refused with a few MiB resident, not the file's size.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp cli-refusals
echo "1..9"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tiny="--threads 1 --layers 1 --dim 16 --batch 4 --eval-n 8"

# the program itself (timeout would die of the signal; libtool's wrapper
# script execs it at once)
t0=$(ms); "$P" $tiny --steps 1000 --ckpt-dir "$tmp/u" > "$tmp/usr1.out" 2>&1 & job=$!
# as soon as main has USR1 blocked or caught (bit 10 of SigBlk or SigCgt;
# before it, the dynamic loader's time, the default action still applies)
i=0; while [ $i -lt 1000 ]; do
    m=
    case $(readlink "/proc/$job/exe") in    # the program, not libtool's wrapper shell
    */train_gpt) m=$(awk '/^Sig(Blk|Cgt):/ { printf "%s ", $2 }' "/proc/$job/status" 2>/dev/null) ;;
    esac
    for x in $m; do [ $(( 0x$x & 0x200 )) -ne 0 ] && break 2; done
    sleep 0.01; i=$((i + 1))
done
kill -USR1 $job; t1=$(ms)
echo "# SIGUSR1 sent $((t1 - t0)) ms after the start; setup done by then: $(grep -q '^train_gpt: 1 rank' "$tmp/usr1.out" && echo yes || echo no)"
wait $job; rc=$?
echo "# exit $rc"; grep -v "^step" "$tmp/usr1.out" | head -5 | sed "s/^/#   /"
grep "SIGUSR1\|checkpoint" "$tmp/usr1.out" | sed 's/^/# /'
check "SIGUSR1 as soon as main runs: stops after step 1 with a checkpoint, exit 0" \
    sh -c 'test "$1" -eq 0 && grep -q "SIGUSR1 received" "$2" && test -f "$3/step-00000001.h5"' \
    _ "$rc" "$tmp/usr1.out" "$tmp/u"

refused() {   # DESC PATTERN RANKS ARGS...: exit 2, the message once
    desc=$1 pat=$2 np=$3; shift 3
    "$L" "$np" "$P" $tiny --steps 1 "$@" > "$tmp/r.out" 2>&1; rc=$?
    grep "$pat" "$tmp/r.out" | head -2 | sed 's/^/# /'
    check "$desc: exit 2, said once" \
        sh -c 'test "$1" -eq 2 && test "$(grep -c "$2" "$3")" -eq 1' _ "$rc" "$pat" "$tmp/r.out"
}
refused "--shard 3 on 2 ranks" "shard size 3 does not divide the world size 2" 2 --shard 3
refused "a policy naming a save twice" "'ln1' given twice" 1 --act-policy 'ln1=host,ln1=keep'
refused "--device-mem 1" "device tier full" 1 --device-mem 1
refused "--set chunk_size=0" "option chunk_size: '0' is less than its minimum, 1 byte" 1 --set chunk_size=0

mkfifo "$tmp/fifo"
for cmd in trace flight plan; do
    timeout 10 "$S" $cmd "$tmp/fifo" > "$tmp/$cmd.out" 2>&1; rc=$?
    sed 's/^/# /' "$tmp/$cmd.out"
    check "strata $cmd FIFO: refused at once (not a regular file)" \
        sh -c 'test "$1" -ne 0 && test "$1" -ne 124 && grep -q "is a FIFO, not a regular file" "$2"' \
        _ "$rc" "$tmp/$cmd.out"
done

truncate -s 1G "$tmp/big.json"
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M" -o "$tmp/rss" "$S" trace "$tmp/big.json" > "$tmp/big.out" 2>&1; rc=$?
    rss=$(tail -1 "$tmp/rss")
    head -1 "$tmp/big.out" | sed 's/^/# /'; echo "# strata trace of 1 GiB of zeros: exit $rc, $rss KiB resident at most"
    check "strata trace of a 1 GiB file: refused, under 100 MiB resident" \
        sh -c 'test "$1" -eq 1 && test "$2" -lt 102400 && grep -q "not a strata trace" "$3"' _ "$rc" "$rss" "$tmp/big.out"
else
    echo "ok 9 # SKIP /usr/bin/time is not installed"
fi
