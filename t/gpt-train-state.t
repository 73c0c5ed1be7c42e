#!/bin/sh
# gpt-train-state.t - the training state on every tier (state_place): the
# master shards, reduced gradient shards and optimizer moments on the host
# or storage tier, whole or by a fraction of the units, train to the
# param_hash of the run with everything on the device -- on 2 ranks, with
# hybrid sharding, bf16 compute and two micro-batches, and through a stop
# and a resume on 2 ranks and on 1 (from a checkpoint written with the
# state on storage, into any placement); state on storage is read and
# written every step and leaves the device budget, so a budget that
# refuses the all-device run trains; bad text is refused before a step;
# on a paced disk the reads are planned from the step's costs
# (state_fetch=plan), to the param_hash of reads one position ahead (next).
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-state
small="--threads 1 --layers 3 --dim 32 --heads 4 --batch 4 --steps 3 --json --eval-n 8
       --spill-dir $tmp"
need_of() { sed -n 's/^{"refused":true,"needs_device_bytes":\([0-9]*\),.*/\1/p' "$1"; }
last_step() { grep '^{"step"' "$1" | tail -1; }
field() { sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" "$1"; }
echo "1..17"
"$L" 2 "$P" $small > "$tmp/dev" 2>&1
ref=$(hash_of "$tmp/dev")
n=0
for pl in "*=host" "*=storage" "master=storage:0.5,optim=storage:0.5:host,grad=host"; do
    n=$((n + 1))
    "$L" 2 "$P" $small --state-place "$pl" > "$tmp/s$n" 2>&1
    h=$(hash_of "$tmp/s$n")
    if [ -n "$ref" ] && [ "$h" = "$ref" ]; then
        echo "ok $n - '$pl': the all-device run's param_hash ($h)"
    else
        echo "not ok $n - '$pl': the all-device run's param_hash ($h, device $ref)"
        grep -v '^{' "$tmp/s$n" | tail -3 | sed 's/^/#   /'
    fi
done

# *=storage (s2): every step reads state up and writes it back, and the
# device holds none of it
n=$((n + 1))
last_step "$tmp/s2" > "$tmp/s2.last"; last_step "$tmp/dev" > "$tmp/dev.last"
rd=$(field "$tmp/s2.last" state_read_bytes); wr=$(field "$tmp/s2.last" state_written_bytes)
pd=$(field "$tmp/s2.last" peak_device_bytes); pk=$(field "$tmp/dev.last" peak_device_bytes)
ps=$(field "$tmp/s2.last" peak_storage_bytes)
if [ "${rd:-0}" -gt 0 ] && [ "${wr:-0}" -gt 0 ] && [ "${ps:-0}" -gt 0 ] &&
   [ -n "$pd" ] && [ -n "$pk" ] && [ "$pd" -lt "$pk" ]; then
    echo "ok $n - *=storage: step 3 read $rd and wrote $wr bytes of state; device peak $pd < $pk"
else
    echo "not ok $n - *=storage: state read/written each step, device peak lower (read $rd written $wr, peaks $pd vs $pk, storage $ps)"
fi

same_as_device() {   # NP PLACE ARGS...: the param_hash of all-device and of PLACE, equal
    np=$1; pl=$2; shift 2
    "$L" $np "$P" $small "$@" > "$tmp/k" 2>&1
    "$L" $np "$P" $small "$@" --state-place "$pl" > "$tmp/p" 2>&1
    hk=$(hash_of "$tmp/k"); hp=$(hash_of "$tmp/p")
    test -n "$hk" && test "$hk" = "$hp"
}
n=$((n + 1))
if same_as_device 4 "*=storage" --shard 2; then
    echo "ok $n - hybrid sharding (4 ranks, 2 shard groups): *=storage gives the device run's param_hash"
else echo "not ok $n - hybrid sharding: *=storage gives the device run's param_hash"; fi
n=$((n + 1))
"$L" 2 "$P" $small --clip 0 --set optim_overlap=off > "$tmp/ov0" 2>&1
"$L" 2 "$P" $small --clip 0 --set optim_overlap=on --state-place "*=storage" > "$tmp/ov1" 2>&1
"$L" 2 "$P" $small --clip 0 --set optim_overlap=on > "$tmp/ov2" 2>&1
h0=$(hash_of "$tmp/ov0")
if [ -n "$h0" ] && [ "$h0" = "$(hash_of "$tmp/ov1")" ] && [ "$h0" = "$(hash_of "$tmp/ov2")" ]; then
    echo "ok $n - the updates on a thread beside the backward (optim_overlap=on): the device run's param_hash"
else echo "not ok $n - optim_overlap=on: the device run's param_hash"; fi
n=$((n + 1))
if same_as_device 2 "optim=storage,master=host,grad=storage" --dtype bf16 --accum 2 --clip 0; then
    echo "ok $n - bf16 compute, two micro-batches, no clipping: the device run's param_hash"
else echo "not ok $n - bf16 compute, two micro-batches, no clipping: the device run's param_hash"; fi

# stop at step 2 with the state on storage, resume
gb="--global-batch 8"
"$L" 2 "$P" $small $gb --state-place "*=storage" --stop-at 2 --ckpt-dir "$tmp/ck" \
    --ckpt-every 2 > "$tmp/stop" 2>&1
resume() {   # NP PLACE: resume a copy of the stopped run's checkpoints
    rm -rf "$tmp/ckr"; cp -r "$tmp/ck" "$tmp/ckr"
    "$L" $1 "$P" $small $gb --state-place "$2" --ckpt-dir "$tmp/ckr" --resume > "$tmp/r" 2>&1
    hash_of "$tmp/r"
}
n=$((n + 1))
h=$(resume 2 "*=storage")
if [ -n "$ref" ] && [ "$h" = "$ref" ]; then
    echo "ok $n - stopped at step 2 with the state on storage, resumed on 2 ranks: the uninterrupted run's param_hash"
else
    echo "not ok $n - stop and resume on 2 ranks: the uninterrupted run's param_hash ($h, $ref)"
    tail -3 "$tmp/r" | sed 's/^/#   /'
fi
n=$((n + 1))
h=$(resume 2 "*=device")
if [ -n "$ref" ] && [ "$h" = "$ref" ]; then
    echo "ok $n - ... resumed with the state on the device: the same"
else echo "not ok $n - ... resumed with the state on the device: the same ($h, $ref)"; fi
n=$((n + 1))
h1=$(resume 1 "*=device"); h2=$(resume 1 "*=storage"); h3=$(resume 1 "optim=storage:0.5,master=host")
if [ -n "$h1" ] && [ "$h1" = "$h2" ] && [ "$h1" = "$h3" ]; then
    echo "ok $n - resumed on 1 rank (two micro-batches): one param_hash for device, storage and mixed placements ($h1)"
else
    echo "not ok $n - resumed on 1 rank: one param_hash for every placement ($h1 $h2 $h3)"
fi

# a device budget the all-device run cannot have
"$L" 2 "$P" $small --device-mem 600K > "$tmp/ref" 2>&1
nd=$(need_of "$tmp/ref")
"$L" 2 "$P" $small --device-mem 600K --state-place "*=storage" > "$tmp/rs" 2>&1
ns=$(need_of "$tmp/rs")
n=$((n + 1))
if [ -n "$nd" ] && [ -n "$ns" ] && [ "$ns" -lt "$nd" ]; then
    echo "ok $n - with the state on storage the step needs $ns device bytes, all on the device $nd"
else
    echo "not ok $n - state on storage needs fewer device bytes ($ns vs $nd)"
    grep -v '^{"step' "$tmp/rs" | tail -2 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 2 "$P" $small --device-mem "${ns:-1}" --state-place "*=storage" > "$tmp/at" 2>&1
if [ -n "$ns" ] && [ "$ns" -lt "${nd:-0}" ] && [ "$(hash_of "$tmp/at")" = "$ref" ]; then
    echo "ok $n - and trains at exactly $ns bytes, where the all-device run is refused, to its param_hash"
else
    echo "not ok $n - trains at ${ns:-?} bytes to the device run's param_hash"
    grep -v '^{' "$tmp/at" | tail -3 | sed 's/^/#   /'
fi

# state_place=auto: the state leaves the device only for the room the plan lacks
"$L" 2 "$P" $small --device-mem 600K --act-policy auto > "$tmp/aa" 2>&1
"$L" 2 "$P" $small --device-mem 600K --act-policy auto --state-place auto > "$tmp/as" 2>&1
n=$((n + 1))
if grep -q '^{"refused":true' "$tmp/aa" && [ "$(hash_of "$tmp/as")" = "$ref" ] &&
   grep -q "strata: state_place auto: .* of training state left the device for the .* the plan lacked: .*optim=host:" "$tmp/as"; then
    echo "ok $n - at 600K act_policy=auto alone is refused; with state_place=auto the moments (and more) go to the host and it trains to the device run's param_hash"
else
    echo "not ok $n - state_place=auto trains where activations alone cannot"
    grep -v '^{' "$tmp/as" | grep -v '^ ' | tail -3 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 2 "$P" $small --state-place auto > "$tmp/an" 2>&1
if [ "$(hash_of "$tmp/an")" = "$ref" ] && ! grep -q "state_place auto:" "$tmp/an"; then
    echo "ok $n - state_place=auto with room on the device moves nothing"
else echo "not ok $n - state_place=auto with room on the device moves nothing"; fi
n=$((n + 1))
"$L" 1 "$P" $small --device-mem 200K > "$tmp/full" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "the training state does not fit the device (unit '.*' of [0-9]*): put part of it on the host or storage tier with the option state_place" "$tmp/full"; then
    echo "ok $n - state larger than the device budget: the commit fails (exit $rc) naming state_place"
else
    echo "not ok $n - state larger than the device budget: the commit fails naming state_place (exit $rc)"
    grep -v '^{' "$tmp/full" | tail -2 | sed 's/^/#   /'
fi
n=$((n + 1))
"$L" 1 "$P" $small --state-place "optim=disk" > "$tmp/bad" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "state_place: optim='disk' is not a tier: device, host or storage" "$tmp/bad" &&
   ! grep -q '^{"step"' "$tmp/bad"; then
    echo "ok $n - an unknown tier is refused before a step (exit $rc), naming the tiers"
else
    echo "not ok $n - an unknown tier is refused before a step (exit $rc)"
    tail -2 "$tmp/bad" | sed 's/^/#   /'
fi

# state_fetch: a disk paced at 1G/s; the runtime makes a fetch plan from
# the recorded step (which reads go earlier is t/sched_statefetch.t's to
# check, on fixed costs: here they are measured), and it trains to the
# same param_hash as reads one position ahead. The waits are printed, not
# judged: timing belongs to bench/run state.
fetch="--threads 1 --layers 4 --dim 128 --heads 4 --batch 32 --steps 6 --json --eval-n 1
       --spill-dir $tmp --set link_storage_bw=1G --set log_level=info"
"$L" 1 "$P" $fetch --state-place "*=storage" --set state_fetch=next > "$tmp/fn" 2>&1
"$L" 1 "$P" $fetch --state-place "*=storage" --set state_fetch=plan > "$tmp/fp" 2>&1
waits() { grep '^{"step":[3-6],' "$1" | sed 's/.*"state_wait_s":\([0-9.e+-]*\).*/\1/' |
          awk '{ s += $1; n++ } END { if (n == 4) printf "%.6f", s }'; }
wn=$(waits "$tmp/fn"); wp=$(waits "$tmp/fp")
early=$(sed -n 's/.*state fetch plan: [0-9]* reads over [0-9]* compute positions, \([0-9]*\) of them earlier.*/\1/p' "$tmp/fp")
n=$((n + 1))
echo "# state_fetch=plan: $early reads earlier than one position ahead; steps 3-6 waited $wp s for reads, next $wn s"
if [ -n "$early" ] && ! grep -q "state fetch plan:" "$tmp/fn" &&
   [ -n "$(hash_of "$tmp/fp")" ] && [ "$(hash_of "$tmp/fp")" = "$(hash_of "$tmp/fn")" ]; then
    echo "ok $n - state_fetch=plan: a fetch plan made from the recorded step ($early reads earlier than one position ahead); next makes none; same param_hash"
else
    echo "not ok $n - state_fetch=plan: a fetch plan, none with next, the same param_hash ($early earlier; hashes $(hash_of "$tmp/fp") $(hash_of "$tmp/fn"))"
    grep -v '^{' "$tmp/fp" | tail -3 | sed 's/^/#   /'
fi
