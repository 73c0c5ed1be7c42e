#!/bin/sh
# t/gpu/nccl-check.sh - device check of the NCCL backend; not part of make check.
#
# Run on a machine with at least one CUDA GPU, from anywhere:
#     sh t/gpu/nccl-check.sh [BUILD_DIR]
# It builds with CUDA (needs CUDA + NCCL + nvcc under /usr/local/cuda, or
# CUDA_DIR=...): in the source tree when that is configured already, else
# out of tree in BUILD_DIR (default build-gpu). Without autoreconf on the
# device machine, carry the generated files there: configure, Makefile.in,
# aclocal.m4, config.h.in, build-aux, m4. Then it runs:
#   1. the host tests of that build (the CUDA build must not break them);
#   2. t/unit_nccl.t (pure logic) and t/comm_nccl on 1 rank: every collective,
#      every dtype, on device buffers, world + shard/replica groups;
#   3. t/comm_nccl on 2 ranks with shard sizes 1 and 2, when 2 GPUs exist
#      (NCCL wants one GPU per rank).
# A skipped device test counts as a failure here: this script exists to run them.
# Logs go to $OUT/ when OUT is set (the device tool brings them back).
# Exit status 0 only when everything ran and passed.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${1:-}" ] && [ -f "$src/config.status" ]; then build=$src; else build=${1:-$src/build-gpu}; fi
cuda=${CUDA_DIR:-/usr/local/cuda}
log=${OUT:-$build}
mkdir -p "$build" "$log"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "nccl-check: $ngpu GPU(s); source $src; build $build"
nvidia-smi -L 2>/dev/null || true
[ "$ngpu" -ge 1 ] || { echo "nccl-check: no GPU here: nothing to check" >&2; exit 1; }

[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null)
cd "$build"
[ -f Makefile ] || "$src/configure" -q --with-cuda="$cuda" >"$log/configure.out" 2>&1 \
    || { tail -30 "$log/configure.out"; exit 1; }
grep -q '^#define HAVE_NCCL 1' config.h || { echo "nccl-check: configure did not enable NCCL" >&2; exit 1; }
make -j"$(nproc)" >"$log/make.out" 2>&1 || { tail -40 "$log/make.out"; exit 1; }
make -j"$(nproc)" check TESTS= >>"$log/make.out" 2>&1 || { tail -40 "$log/make.out"; exit 1; }

status=0
export top_srcdir="$src" top_builddir="$build" STRATA_TEST_TIMEOUT=300
run() {  # run NAME CMD... : one TAP run, logged; fails on not ok, bail-out or skip
    name=$1; shift
    "$@" >"$log/$name.tap" 2>&1; rc=$?
    if [ $rc -ne 0 ] || grep -Eq '^not ok|^Bail out|# SKIP' "$log/$name.tap"; then
        echo "FAIL $name (rc $rc)"; grep -E '^not ok|^Bail out|# SKIP|^#' "$log/$name.tap" | head -20
        status=1
    else
        echo "PASS $name: $(grep -c '^ok' "$log/$name.tap") ok"
    fi
}
set +e
make check TESTS="t/unit_config.t t/unit_dtype.t t/unit_group.t t/comm-errors.t t/comm-np2.t" \
    >"$log/host-tests.out" 2>&1 && echo "PASS host tests" || { echo "FAIL host tests"; status=1; }
grep -E '^(PASS|FAIL|SKIP|ERROR|# )' "$log/host-tests.out" | head -20
run unit_nccl ./t/unit_nccl.t
run comm_nccl-np1 "$src/t/launch" 1 ./t/comm_nccl --max-bytes 64M --shards 1
if [ "$ngpu" -ge 2 ]; then
    run comm_nccl-np2 "$src/t/launch" 2 ./t/comm_nccl --max-bytes 64M --shards 1,2
else
    echo "note: 1 GPU: the 2-rank NCCL run needs 2 GPUs and was not run"
fi
echo "nccl-check: $([ $status -eq 0 ] && echo PASSED || echo FAILED)"
exit $status
