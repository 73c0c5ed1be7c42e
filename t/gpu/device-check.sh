#!/bin/bash
# device-check.sh - the GPU check, in one script that fits one lent H200
# (at most 8 minutes). The lent machine is bare and offline: driver, nvcc,
# the CUDA libraries and a Python with PyTorch, but no Open MPI, HDF5,
# OpenBLAS, jansson or autotools. So:
#
#   t/gpu/device-check.sh --prepare DIR    here, after a CUDA build (configure
#       found /usr/local/cuda): the real binaries (not libtool wrappers),
#       libstrata, and every shared library they need that the lent machine
#       lacks (Open MPI with its plugins and help files, PMIx, HDF5, OpenBLAS,
#       jansson, xxhash, ...) packed into DIR/bundle.tar.xz; DIR stays under
#       60 MiB (checked with du) and every library a binary needs resolves
#       inside the bundle or from the machine's base/CUDA libraries.
#   t/gpu/device-check.sh --dry-run DIR OUT   here: the whole device run, from
#       the bundle, on the host backend (GPU steps report SKIP).
#   t/gpu/device-check.sh --run DIR OUT       on the GPU machine.
#
# Results: OUT/summary.txt (one line per step: ok / not ok / skip, with the
# numbers), OUT/offload.txt (the offload experiment), and each step's log
# in OUT/. Exit status 0 when no step failed.
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
       t/comm_nccl t/tiers_move.t"
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
        real="$here/$(dirname "$p")/.libs/$(basename "$p")"
        [ -x "$real" ] || real="$here/$p"
        [ -x "$real" ] || die "missing program $p"
        cp "$real" "$stage/bin/"
    done
    cp -L "$here"/.libs/libstrata.so.? "$stage/lib/"
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
    # 5. not measured yet
    summary "todo    copy-engine bandwidth vs cudaMemcpyAsync, tokens/s vs PyTorch eager"
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
