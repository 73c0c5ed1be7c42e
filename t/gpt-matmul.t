#!/bin/sh
# gpt-matmul.t - the matrix products do not depend on OpenBLAS's core
# type: train_gpt under OPENBLAS_CORETYPE=Prescott (OpenBLAS's SSE3
# fallback) reports the same matrix-product library and kernels as without
# it and ends with the same loss and parameters, and the thread count still
# changes no bit there; the banner and the --json line name what runs;
# STRATA_GEMM=openblas hands the products to OpenBLAS and says so.
set -u
. "$top_srcdir/t/tap.sh"
P="$top_builddir/examples/gpt/train_gpt"
tap_tmp gpt-matmul
echo "1..6"
cfg="--layers 2 --dim 64 --heads 4 --seq 32 --batch 8 --steps 3 --eval-n 8 --json"
# run OUT THREADS ENV...: train_gpt on one rank in the environment ENV
run() { out=$1 t=$2; shift 2; env "$@" "$L" 1 "$P" $cfg --threads "$t" > "$tmp/$out" 2>&1; }
run own 2 -u OPENBLAS_CORETYPE -u STRATA_GEMM
run pres 2 -u STRATA_GEMM OPENBLAS_CORETYPE=Prescott
run pres1 1 -u STRATA_GEMM OPENBLAS_CORETYPE=Prescott
run blas 2 -u OPENBLAS_CORETYPE STRATA_GEMM=openblas
# the products' library and kernels, from the --json line
path() { sed -n 's/^{"matmul":{"library":"\([^"]*\)","kernels":"\([^"]*\)".*/\1 \2/p' "$tmp/$1"; }
final() { grep '^{"final"' "$tmp/$1" | sed 's/"tokens_per_s.*//'; }
echo "# matmul: own pick: $(path own); OPENBLAS_CORETYPE=Prescott: $(path pres); STRATA_GEMM=openblas: $(path blas)"
grep -h '^train_gpt: ' "$tmp/own" "$tmp/pres" | sed 's/.*, matmul /# banner: matmul /'
check "the banner and the --json line name the products' library and kernels" \
    sh -c 'test -n "$1" && grep -qF ", matmul $(echo "$1" | cut -d" " -f1-2)" "$2"' _ "$(path own)" "$tmp/own"
if ! path own | grep -q '^oneDNN'; then
    for d in "the same path under OPENBLAS_CORETYPE=Prescott" "the same loss and parameters" \
        "thread count changes no bit under Prescott" "a fallback avoided is named"; do
        n=$((n + 1)); echo "ok $n # SKIP the products run on OpenBLAS here (no oneDNN with AVX2 kernels): $d"
    done
else
    check "OPENBLAS_CORETYPE=Prescott: the same library and kernels" test "$(path own)" = "$(path pres)"
    check "OPENBLAS_CORETYPE=Prescott: the same loss and parameters" \
        sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(final own)" "$(final pres)"
    check "under Prescott 1 and 2 threads: the same loss and parameters" \
        sh -c 'test -n "$1" && test "$1" = "$2"' _ "$(final pres)" "$(final pres1)"
    check "under Prescott the banner and --json say a fallback was avoided" \
        sh -c 'grep -q "Prescott kernels (OPENBLAS_CORETYPE=Prescott): a fallback avoided)" "$1" &&
               grep -q "\"fallback_avoided\":true" "$1"' _ "$tmp/pres"
fi
check "STRATA_GEMM=openblas: the products run on the CBLAS, named so" \
    sh -c 'test -n "$1" && ! echo "$2" | grep -q "^oneDNN" &&
           grep -q ", matmul OpenBLAS\|, matmul a CBLAS" "$3"' _ "$(final blas)" "$(path blas)" "$tmp/blas"
