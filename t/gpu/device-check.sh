#!/bin/bash
# device-check.sh - the GPU check, in one script that fits one lent H200
# (at most 8 minutes). The lent machine is bare and offline: driver, nvcc,
# the CUDA libraries and a Python with PyTorch, but no Open MPI, HDF5,
# OpenBLAS, jansson or autotools. So:
#
#   t/gpu/device-check.sh --prepare DIR    here, after a CUDA build (configure
#       found /usr/local/cuda): the real binaries (not libtool wrappers),
#       libstrata, the PyTorch peer (bench/peers_torch.py with
#       python/strata_gpt.py), and every shared library they need that the
#       lent machine lacks (Open MPI with its plugins and help files, PMIx,
#       HDF5, OpenBLAS, jansson, xxhash, ...) packed into DIR/bundle.tar.xz;
#       DIR stays under 60 MiB (checked with du) and every library a binary
#       needs resolves inside the bundle or from the machine's base/CUDA
#       libraries.
#   t/gpu/device-check.sh --dry-run DIR OUT   here: the whole device run, from
#       the bundle, on the host backend (GPU steps report skip; the
#       tokens/s step runs a tiny config against PyTorch on the CPU).
#   t/gpu/device-check.sh --run DIR OUT       on the GPU machine.
#
# Steps: the unit tests (CUDA ones, host kernels, NCCL logic, tiers, errors);
# NCCL collectives on 1 GPU (2 when present); the GPT 50 steps f32 and bf16
# against the host backend; one param_hash over every --act-policy; one step
# under compute-sanitizer memcheck; the offload experiment on the real link;
# the copy engines against cudaMemcpyAsync (bench/copy_bw, target 0.9x);
# tokens/s of the 12-layer width-768 GPT against PyTorch eager on the same
# GPU (target 0.5x); checkpoints saved and resumed on cuda and across
# backends (param_hash against an uninterrupted run).
#
# Results: OUT/summary.txt (one line per step: ok / not ok / skip, with the
# numbers), OUT/offload.txt (the offload experiment), and each step's log
# in OUT/. Exit status 0 when no step failed.
#
# The exact commands for a session that is lent a GPU (docs/device-check.md
# says more): here, in the repository root of a CUDA build,
#   echo /gpub/ >> .git/info/exclude
#   t/gpu/device-check.sh --prepare gpub && t/gpu/device-check.sh --dry-run gpub /tmp/gpuo
# then one device call, carry ["gpub"], timeout_s 560 (only 8 files come
# back from $OUT, so the logs travel as one tarball):
#   t/gpu/device-check.sh --run gpub /tmp/gpuo; rc=$?; cp /tmp/gpuo/summary.txt $OUT/;
#   tar -C /tmp -czf $OUT/gpuo.tgz gpuo; exit $rc
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "device-check: $*" >&2; exit 2; }

# libraries the lent machine has itself: glibc, the compiler runtime, the
# CUDA driver and toolkit libraries (NCCL too: PyTorch's wheel ships it)
system_lib() {
    case "$(basename "$1")" in
    ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*) return 0 ;;
    libgcc_s.so*|libstdc++.so*|libgomp.so*|libresolv.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas*.so*|libnccl.so*|libnvidia*|libcupti*) return 0 ;;
    libnvToolsExt*) return 0 ;;
    esac
    return 1
}

# the programs the device run uses (libtool keeps the real ones in .libs/)
PROGS="examples/gpt/train_gpt t/fsdp_errors t/tiers_cuda.t t/gpu_kernels_host.t t/unit_nccl.t
       t/comm_nccl t/tiers_move.t bench/copy_bw"
# the PyTorch peer of the tokens/s check (its model module; it needs torch only)
PYFILES="bench/peers_torch.py python/strata_gpt.py"
OMPI_LIB=/usr/lib/x86_64-linux-gnu/openmpi
PMIX_LIB=/usr/lib/x86_64-linux-gnu/pmix2

prepare() {
    local dir=$1 stage
    [ -f "$here/config.h" ] || die "build first (./configure && make)"
    grep -q '^#define HAVE_CUDA 1' "$here/config.h" || die "not a CUDA build: configure did not find CUDA"
    make -C "$here" -j2 >/dev/null || die "make failed"
    make -C "$here" -j2 $(echo $PROGS | tr ' ' '\n' | grep '^t/') >/dev/null || die "make of the test programs failed"
    mkdir -p "$dir" && stage=$(mktemp -d) || die "cannot make $dir"
    mkdir -p "$stage/bin" "$stage/lib" "$stage/ompi"
    local p real
    for p in $PROGS; do
        # a libtool wrapper script keeps the real program in .libs/; a
        # program linked without shared libraries of the tree is itself
        # real (a .libs/ copy beside it is then a stale one)
        real="$here/$p"
        [ -x "$real" ] || die "missing program $p"
        if [ "$(head -c 2 "$real")" = "#!" ]; then
            real="$here/$(dirname "$p")/.libs/$(basename "$p")"
            [ -x "$real" ] || die "missing program $p (the libtool wrapper's .libs/ copy)"
        fi
        cp "$real" "$stage/bin/"
    done
    cp -L "$here"/.libs/libstrata.so.? "$stage/lib/"
    for p in $PYFILES; do
        mkdir -p "$stage/py/$(dirname "$p")" && cp "$here/$p" "$stage/py/$p" || die "missing $p"
    done
    # Open MPI and PMIx keep Debian's layout under the prefix, so OPAL_PREFIX
    # and PMIX_PREFIX relocate them; orterun/orted start the job
    mkdir -p "$stage/ompi/bin" "$stage/ompi/lib/x86_64-linux-gnu" "$stage/ompi/share"
    cp /usr/bin/orterun /usr/bin/orted "$stage/ompi/bin/"
    cp -a "$OMPI_LIB" "$PMIX_LIB" "$stage/ompi/lib/x86_64-linux-gnu/"
    rm -rf "$stage"/ompi/lib/x86_64-linux-gnu/openmpi/lib/*java* \
           "$stage"/ompi/lib/x86_64-linux-gnu/openmpi/lib/*mpifh* \
           "$stage"/ompi/lib/x86_64-linux-gnu/openmpi/lib/*usempi* \
           "$stage"/ompi/lib/x86_64-linux-gnu/openmpi/include
    cp -a /usr/share/openmpi "$stage/ompi/share/" 2>/dev/null
    cp -a /usr/share/pmix "$stage/ompi/share/" 2>/dev/null
    # every library any of those needs, but the machine's own
    local f lib missing=0
    for f in "$stage"/bin/* "$stage"/lib/* $(find "$stage/ompi" -name '*.so*' -type f) \
             "$stage"/ompi/bin/*; do
        ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
    done | sort -u > "$stage/needed"
    while read -r lib; do
        system_lib "$lib" && continue
        case "$lib" in "$stage"/*) continue ;; esac
        [ -e "$stage/lib/$(basename "$lib")" ] || cp -L "$lib" "$stage/lib/"
    done < "$stage/needed"
    # check: with the bundle's lib first, nothing outside it but the system's
    for f in "$stage"/bin/*; do
        LD_LIBRARY_PATH="$stage/lib:$stage/ompi/lib/x86_64-linux-gnu/openmpi/lib" ldd "$f" |
            awk '/=> /{print $3}' | while read -r lib; do
            case "$lib" in "$stage"/*) ;; *) system_lib "$lib" || { echo "device-check: $f needs $lib"; exit 1; } ;; esac
        done || missing=1
    done
    [ 0 = $missing ] || die "a library is missing from the bundle (above)"
    rm -f "$stage/needed"
    tar -C "$stage" -cJf "$dir/bundle.tar.xz" . || die "tar failed"
    rm -rf "$stage"
    local kib; kib=$(du -sk "$dir" | cut -f1)
    echo "device-check: $dir is $((kib / 1024)) MiB ($(tar -tJf "$dir/bundle.tar.xz" | grep -c /lib/) library files)"
    [ "$kib" -le $((60 * 1024)) ] || die "$dir is over 60 MiB"
}

# ---------------------------------------------------------------- the run ---

summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
failed=0
step() {    # step NAME CMD...: run with a log, ok / not ok by exit status
    local name=$1; shift
    if timeout 120 "$@" > "$OUT/$name.log" 2>&1; then summary "ok      $name"
    else summary "not ok  $name (exit $?, see $name.log)"; failed=1; fi
}
tap_step() {    # a TAP program: ok unless a 'not ok' line or a bad exit; SKIP shown
    local name=$1; shift
    timeout 120 "$@" > "$OUT/$name.log" 2>&1; local rc=$?
    if grep -q '^1\.\.0 # SKIP' "$OUT/$name.log"; then
        summary "skip    $name ($(sed -n 's/^1\.\.0 # SKIP *//p' "$OUT/$name.log"))"
    elif [ 0 = $rc ] && ! grep -q '^not ok' "$OUT/$name.log"; then
        summary "ok      $name ($(grep -c '^ok' "$OUT/$name.log") checks)"
    else summary "not ok  $name (exit $rc, see $name.log)"; failed=1; fi
}
final_of() { grep '^{"final":true' "$1" | tail -1; }
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<< "$1"; }

# The offload experiment: keep at batch 4m unconstrained sets the scale;
# the device budget is then 85% of its peak, where keep@4m cannot fit
# (host offload of every save needs about 80% at this shape: the
# parameters, optimizer state and unit outputs stay), and recompute, host (naive and lhs) and auto run at
# 4m within it. Tokens/s and overlap per run into OUT/offload.txt (and the
# summary).
offload() {
    local B=$1 backend=$2 MPI=$3 m=8 p1 p4 budget run pol sched j bad=0
    local base="--threads 2 --layers 4 --dim 64 --heads 4 --seq 64 --steps 4 --json --eval-n 8 --device $backend --spill-dir $B"
    : > "$OUT/offload.txt"
    for run in m:$m 4m:$((4 * m)); do
        timeout 120 $MPI -np 1 "$B/bin/train_gpt" $base --batch ${run#*:} --act-policy "*=keep" \
            > "$OUT/offload-keep-${run%%:*}.log" 2>&1
        j=$(final_of "$OUT/offload-keep-${run%%:*}.log")
        echo "keep@${run%%:*} (batch ${run#*:}, no budget): peak_device_bytes $(field "$j" peak_device_bytes) tokens_per_s $(field "$j" tokens_per_s)" >> "$OUT/offload.txt"
        [ m = "${run%%:*}" ] && p1=$(field "$j" peak_device_bytes) || p4=$(field "$j" peak_device_bytes)
    done
    if [ -z "$p1" ] || [ -z "$p4" ]; then
        summary "not ok  offload: keep did not run (see offload-keep-*.log)"; failed=1; return
    fi
    budget=$((p4 * 17 / 20))
    echo "budget at 4m: $budget bytes (85% of keep@4m's peak)" >> "$OUT/offload.txt"
    if timeout 120 $MPI -np 1 "$B/bin/train_gpt" $base --batch $((4 * m)) --act-policy "*=keep" \
        --device-mem $budget > "$OUT/offload-keep-4m-budget.log" 2>&1; then
        echo "keep@4m: FIT within $budget bytes (it must not)" >> "$OUT/offload.txt"; bad=1
    else echo "keep@4m: refused within $budget bytes, as it must" >> "$OUT/offload.txt"; fi
    for run in recompute:lhs host:naive host:lhs auto:lhs; do
        pol=${run%%:*}; sched=${run#*:}
        [ auto = "$pol" ] || pol="*=$pol"
        timeout 180 $MPI -np 1 "$B/bin/train_gpt" $base --batch $((4 * m)) --act-policy "$pol" \
            --schedule "$sched" --device-mem $budget > "$OUT/offload-${run%%:*}-$sched.log" 2>&1
        j=$(final_of "$OUT/offload-${run%%:*}-$sched.log")
        if [ -n "$j" ]; then
            echo "${run%%:*}-$sched@4m: tokens_per_s $(field "$j" tokens_per_s) overlap_frac $(field "$j" overlap_frac) peak_device_bytes $(field "$j" peak_device_bytes)" >> "$OUT/offload.txt"
        else echo "${run%%:*}-$sched@4m: failed (see offload-${run%%:*}-$sched.log)" >> "$OUT/offload.txt"; bad=1; fi
    done
    if [ 1 = $bad ]; then summary "not ok  offload ($(tr '\n' ';' < "$OUT/offload.txt"))"; failed=1
    else summary "ok      offload ($(tr '\n' ';' < "$OUT/offload.txt"))"; fi
}

# The copy engines against plain cudaMemcpyAsync (bench/copy_bw, 1, 16 and
# 256 MiB, d2h and h2d): the target is 0.9x at 16 MiB and up, where the
# link's bandwidth rules (at 1 MiB a copy lasts tens of microseconds and
# the event poll's latency shows; that row is reported, not judged).
copy_bw() {
    local B=$1 rc j rows="" worst="" line
    timeout 120 "$B/bin/copy_bw" --json > "$OUT/copy_bw.json" 2> "$OUT/copy_bw.log"; rc=$?
    if [ 77 = $rc ]; then
        summary "skip    copy_bw ($(sed -n 's/^copy_bw: skipped: //p' "$OUT/copy_bw.log"))"; return
    fi
    while read -r line; do
        j=$(field "$line" ratio)
        [ -n "$j" ] || continue
        rows="$rows $(field "$line" path)@$(( $(field "$line" bytes) >> 20 ))MiB:$(field "$line" gbs)/$(field "$line" ref_gbs)GB/s=${j}x"
        [ "$(field "$line" bytes)" -ge $((16 << 20)) ] || continue
        if [ -z "$worst" ] || awk -v a="$j" -v b="$worst" 'BEGIN { exit !(a < b) }'; then worst=$j; fi
    done < "$OUT/copy_bw.json"
    if [ 0 = $rc ] && [ -n "$worst" ] && awk -v w="$worst" 'BEGIN { exit !(w >= 0.9) }'; then
        summary "ok      copy_bw: engine vs cudaMemcpyAsync, worst ${worst}x at >= 16 MiB (target 0.9x):$rows"
    else summary "not ok  copy_bw (exit $rc, worst '${worst:-none}' at >= 16 MiB, target 0.9x):$rows"; failed=1; fi
}

# the median of the per-step tokens_per_s after the first step of a train_gpt log
step_tps() {
    sed -n 's/^{"step":\([0-9]*\),.*"tokens_per_s":\([0-9.]*\),.*/\1 \2/p' "$1" | awk '$1 > 1 { print $2 }' |
        sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# tokens/s of train_gpt against PyTorch eager (bench/peers_torch.py: the
# same GPT, rows and global batch) on the same device: the 12-layer,
# width-768 config (12 heads, seq 256, byte vocabulary), target 0.5x; in a
# dry-run a tiny config on the host backend against PyTorch on the CPU,
# the wiring only (not judged).
tokens() {
    local B=$1 backend=$2 MPI=$3 dry=$4 L=12 C=768 H=12 T=256 rows=16 steps=8 dev=cuda
    local extra="--device-mem 40G" st pt j why
    [ 1 = "$dry" ] && { L=2; C=64; H=4; T=64; rows=8; steps=4; dev=cpu; extra=""; }
    local what="${L}x${C} (heads $H, seq $T, $rows rows/step)"
    timeout 300 $MPI -np 1 "$B/bin/train_gpt" --threads 2 --layers $L --dim $C --heads $H --seq $T \
        --batch $rows --steps $steps --json --eval-n 1 --device $backend $extra \
        > "$OUT/tokens-strata.log" 2>&1
    st=$(step_tps "$OUT/tokens-strata.log")
    if j=$(python3 -W ignore -c 'import sys, torch
if sys.argv[1] == "cuda" and not torch.cuda.is_available(): sys.exit("torch.cuda.is_available() is False")' \
           $dev 2>&1); then why=""; else why="torch: $(echo "$j" | tail -1)"; fi
    if [ -z "$why" ]; then
        timeout 300 python3 "$B/py/bench/peers_torch.py" eager $L $C $H $T $rows $steps 2 $dev \
            > "$OUT/tokens-torch.json" 2> "$OUT/tokens-torch.log"
        # its line is json.dumps's (spaces after the colons)
        pt=$(python3 -c 'import json, sys
d = [json.loads(x) for x in open(sys.argv[1]) if x.startswith("{")][-1:] or [{"error": "no result"}]
print("%s\t%s" % (d[0].get("tokens_per_s", ""), d[0].get("error", "")))' "$OUT/tokens-torch.json" 2>&1)
        why=${pt#*$'\t'}; pt=${pt%%$'\t'*}
    fi
    if [ -z "$st" ]; then
        summary "not ok  tokens: train_gpt on $backend did not run $what (see tokens-strata.log)"; failed=1
    elif [ -z "$pt" ]; then
        summary "skip    tokens: train_gpt $st tokens/s on $backend, $what; PyTorch half skipped (${why:-no result, see tokens-torch.log})"
    else
        local ratio; ratio=$(awk -v a="$st" -v b="$pt" 'BEGIN { printf "%.3f", a / b }')
        pt=$(awk -v b="$pt" 'BEGIN { printf "%.1f", b }')
        local msg="tokens: train_gpt $st vs PyTorch eager $pt tokens/s ($backend vs torch $dev), $what: ${ratio}x"
        if [ 1 = "$dry" ]; then summary "ok      $msg (dry-run: not judged)"
        elif awk -v r="$ratio" 'BEGIN { exit !(r >= 0.5) }'; then summary "ok      $msg (target 0.5x)"
        else summary "not ok  $msg (target 0.5x)"; failed=1; fi
    fi
}

# Checkpoints on the backend under test: 8 steps uninterrupted, then 4 with
# a checkpoint and --resume to 8 (the same param_hash, optimizer state
# included); the step-4 file loaded by 0-step resumes on the backend and
# on the host (the same param_hash: one file format, staged through the
# host on cuda), and the other way round from a host-written file; a host
# resume of the backend's file to 8 steps ends within 1e-4 (relative) of
# the uninterrupted run's loss (its steps are the host's arithmetic). In a
# dry-run the backend's runs stage through host copies as cuda does (test
# fault ckpt_stage, base/test_fault.h), so that code runs from the bundle.
ckpt() {
    local B=$1 backend=$2 MPI=$3 dry=$4 D c bad=0 res="" stage=""
    D=$(mktemp -d) || die "mktemp"
    [ 1 = "$dry" ] && stage="-x STRATA_TEST_FAULT=ckpt_stage@1"
    c="--threads 2 --layers 2 --dim 64 --heads 4 --batch 8 --json --eval-n 8"
    ck_run() {  # ck_run NAME BACKEND ARGS...
        local name=$1 dev=$2 x=""; shift 2
        [ host = "$dev" ] || x=$stage
        timeout 120 $MPI -np 1 $x "$B/bin/train_gpt" $c --device "$dev" "$@" > "$OUT/ckpt-$name.log" 2>&1
    }
    ck_hash() { field "$(final_of "$OUT/ckpt-$1.log")" param_hash; }
    same() {    # same WHAT A B: the param_hashes of two runs agree
        local a b; a=$(ck_hash "$2"); b=$(ck_hash "$3")
        res="$res; $1: ${a:-none} vs ${b:-none}"
        [ -n "$a" ] && [ "$a" = "$b" ] || bad=1
    }
    ck_run full "$backend" --steps 8
    ck_run save "$backend" --steps 8 --stop-at 4 --ckpt-dir "$D/dev"
    cp -r "$D/dev" "$D/dev0"; cp -r "$D/dev" "$D/dev0h"; cp -r "$D/dev" "$D/devh"
    ck_run resume "$backend" --steps 8 --ckpt-dir "$D/dev" --resume
    same "$backend resume vs uninterrupted" full resume
    ck_run load0 "$backend" --steps 4 --ckpt-dir "$D/dev0" --resume
    ck_run load0-host host --steps 4 --ckpt-dir "$D/dev0h" --resume
    same "$backend file loaded on $backend vs host" load0 load0-host
    ck_run host-save host --steps 8 --stop-at 4 --ckpt-dir "$D/host"
    cp -r "$D/host" "$D/host0"
    ck_run host-load0 host --steps 4 --ckpt-dir "$D/host" --resume
    ck_run load0-from-host "$backend" --steps 4 --ckpt-dir "$D/host0" --resume
    same "host file loaded on host vs $backend" host-load0 load0-from-host
    ck_run resume-host host --steps 8 --ckpt-dir "$D/devh" --resume
    local a b; a=$(field "$(final_of "$OUT/ckpt-full.log")" loss); b=$(field "$(final_of "$OUT/ckpt-resume-host.log")" loss)
    res="$res; $backend file resumed on host: loss ${b:-none} vs ${a:-none}"
    [ -n "$a" ] && [ -n "$b" ] &&
        awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * a) }' || bad=1
    grep -q "resumed from .*step-00000004.h5 at step 4" "$OUT/ckpt-resume-host.log" || bad=1
    rm -rf "$D"
    if [ 0 = $bad ]; then summary "ok      ckpt (${res#; })"
    else summary "not ok  ckpt (${res#; }; see ckpt-*.log)"; failed=1; fi
}

run_checks() {
    local dir=$1 dry=$2 B
    B=$(mktemp -d) || die "mktemp"
    tar -C "$B" -xJf "$dir/bundle.tar.xz" || die "cannot unpack $dir/bundle.tar.xz"
    export OPAL_PREFIX="$B/ompi" PMIX_PREFIX="$B/ompi"
    export OPAL_LIBDIR="$B/ompi/lib/x86_64-linux-gnu/openmpi/lib"
    export LD_LIBRARY_PATH="$B/lib:$OPAL_LIBDIR:$B/ompi/lib/x86_64-linux-gnu/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # NCCL from PyTorch's wheel where the machine has no libnccl of its own
    local nccl; nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + "/lib")' 2>/dev/null)
    [ -n "$nccl" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl"
    export PATH="$B/ompi/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    local MPI="orterun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader"
    local backend=cuda; [ 1 = "$dry" ] && backend=host
    : > "$OUT/summary.txt"
    summary "# device-check $( [ 1 = "$dry" ] && echo dry-run || echo run ) on $(hostname), backend $backend, $(date -u +%FT%TZ)"
    nvidia-smi -L > "$OUT/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" > "$OUT/nvidia-smi.txt"

    # 1. unit tests: the CUDA ones skip without a device
    tap_step tiers_cuda "$B/bin/tiers_cuda.t"
    tap_step gpu_kernels_host "$B/bin/gpu_kernels_host.t"
    tap_step unit_nccl "$B/bin/unit_nccl.t"
    tap_step tiers_move "$B/bin/tiers_move.t"
    tap_step fsdp_errors $MPI -np 2 "$B/bin/fsdp_errors"
    # NCCL collectives on 1 GPU, and on 2 when present
    local ngpu; ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ 1 = "$dry" ] || [ "$ngpu" -lt 1 ]; then summary "skip    comm_nccl (no GPU)"
    else
        tap_step comm_nccl_np1 $MPI -np 1 "$B/bin/comm_nccl"
        [ "$ngpu" -ge 2 ] && tap_step comm_nccl_np2 $MPI -np 2 "$B/bin/comm_nccl"
    fi

    # 2. the GPT: 50 steps, host backend as the reference, then the backend
    # under test; f32 loss within 1e-4 relative, bf16 within 2%
    local small="--threads 2 --layers 2 --dim 64 --heads 4 --batch 8 --steps 50 --json --eval-n 8"
    local dt ref got rl gl
    for dt in f32 bf16; do
        $MPI -np 1 "$B/bin/train_gpt" $small --dtype $dt --device host > "$OUT/gpt-$dt-host.log" 2>&1
        timeout 180 $MPI -np 1 "$B/bin/train_gpt" $small --dtype $dt --device $backend \
            > "$OUT/gpt-$dt-$backend.log" 2>&1
        ref=$(final_of "$OUT/gpt-$dt-host.log"); got=$(final_of "$OUT/gpt-$dt-$backend.log")
        rl=$(field "$ref" loss); gl=$(field "$got" loss)
        local tol=1e-4; [ bf16 = $dt ] && tol=0.02
        if [ -n "$rl" ] && [ -n "$gl" ] &&
           awk -v a="$gl" -v b="$rl" -v t=$tol 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t * b) }'; then
            summary "ok      gpt-$dt: loss $gl on $backend vs $rl on host (tolerance $tol relative)"
        else summary "not ok  gpt-$dt: loss '${gl:-none}' on $backend vs '${rl:-none}' on host"; failed=1; fi
    done
    # every --act-policy gives one param_hash in f32
    local pol h first="" same=1 hashes=""
    for pol in "*=keep" "*=host" "*=storage" "*=recompute" auto; do
        timeout 120 $MPI -np 1 "$B/bin/train_gpt" ${small/--steps 50/--steps 4} --device $backend \
            --act-policy "$pol" --spill-dir "$B" > "$OUT/policy-${pol#\*=}.log" 2>&1
        h=$(field "$(final_of "$OUT/policy-${pol#\*=}.log")" param_hash)
        hashes="$hashes ${pol}:${h:-failed}"
        [ -z "$first" ] && first=$h
        [ -n "$h" ] && [ "$h" = "$first" ] || same=0
    done
    if [ 1 = $same ]; then summary "ok      act-policy: one param_hash ($first)"
    else summary "not ok  act-policy: param_hashes differ:$hashes"; failed=1; fi

    # 3. one step under compute-sanitizer memcheck
    if [ 1 = "$dry" ] || ! command -v compute-sanitizer > /dev/null; then
        summary "skip    memcheck ($( [ 1 = "$dry" ] && echo dry-run || echo no compute-sanitizer))"
    else
        step memcheck compute-sanitizer --tool memcheck --error-exitcode 9 "$B/bin/train_gpt" \
            ${small/--steps 50/--steps 1} --device cuda
    fi
    # 4. the offload experiment on the device's real link (no pacing)
    offload "$B" "$backend" "$MPI"
    # 5. copy engines vs cudaMemcpyAsync, tokens/s vs PyTorch eager,
    # checkpoints saved and resumed on the device and across backends
    copy_bw "$B"
    tokens "$B" "$backend" "$MPI" "$dry"
    ckpt "$B" "$backend" "$MPI" "$dry"
    rm -rf "$B"
    return $failed
}

case "${1:-}" in
--prepare) [ $# = 2 ] || die "usage: $0 --prepare DIR"; prepare "$2" ;;
--dry-run|--run)
    [ $# = 3 ] || die "usage: $0 $1 DIR OUT"
    [ -f "$2/bundle.tar.xz" ] || die "no $2/bundle.tar.xz: run --prepare first"
    OUT=$3; mkdir -p "$OUT" || die "cannot make $OUT"
    run_checks "$2" "$([ --dry-run = "$1" ] && echo 1 || echo 0)"; rc=$?
    echo "device-check: results in $OUT/summary.txt"; exit $rc ;;
*) die "usage: $0 --prepare DIR | --dry-run DIR OUT | --run DIR OUT" ;;
esac
