#!/bin/sh
# bench-json.t - every benchmark runs at a tiny size, and with --json its
# standard output is nothing but JSON objects, one per line, carrying the
# fields README.md documents (people pipe it into jq and dashboards). Timings
# are not checked here: they live in bench/ and are measured as ratios.
. "$top_srcdir/t/tap.sh"
run="$top_srcdir/bench/run"
command -v jq > /dev/null 2>&1 || tap_skip_all "jq is not installed"
tap_tmp bench-json
export STRATA_BUILDDIR="$top_builddir"
# the offload and kernels benchmarks run train_gpt, which a build without
# CBLAS does not have: their checks are skipped there, and said so
gpt="$top_builddir/examples/gpt/train_gpt"
skip=""
# check, or a SKIP line while $skip is set; a failure shows the benchmark's stderr
bench_check() { if [ -n "$skip" ]; then skip "$1" "$skip"; else check "$@" || sed 's/^/# /' "$tmp/err" | tail -5; fi; }
# only_objects FILE: every line a JSON object, and at least one line
only_objects() { [ -s "$1" ] && jq -e -s 'length > 0 and all(.[]; type == "object")' "$1" > /dev/null 2>&1; }
# rows_have FILE SELECT FIELDS...: every object that SELECT keeps has FIELDS, and there is one
rows_have() {
    f=$1 sel=$2; shift 2
    keys=$(printf '"%s",' "$@"); keys="[${keys%,}]"
    jq -e -s "[.[] | select($sel)] as \$r | (\$r | length > 0) and all(\$r[]; . as \$o | all($keys[]; . as \$k | \$o | has(\$k)))" \
        "$f" > /dev/null 2>&1
}

echo 1..20

"$run" comm --json --ranks 2 --max 64K --repeats 2 > "$tmp/comm" 2> "$tmp/err"
bench_check "comm: exit 0" test $? -eq 0
comm_ok() { only_objects "$tmp/comm" && rows_have "$tmp/comm" 'true' op ranks bytes_per_rank ratio; }
bench_check "comm: --json prints only JSON objects with op, ranks, ratio" comm_ok

"$run" tiers --json --max 1M --repeats 1 --storage-budget 4M --dir "$tmp" > "$tmp/tiers" 2> "$tmp/err"
bench_check "tiers: exit 0" test $? -eq 0
tiers_ok() { only_objects "$tmp/tiers" && rows_have "$tmp/tiers" 'has("path")' path bytes gbs ref_gbs ratio; }
bench_check "tiers: --json prints only JSON objects with path, bytes, gbs, ratio" tiers_ok

"$run" fsdp --json --ranks "1 2" --rounds 2 > "$tmp/fsdp" 2> "$tmp/err"
bench_check "fsdp: exit 0" test $? -eq 0
fsdp_ok() {
    only_objects "$tmp/fsdp" &&
        rows_have "$tmp/fsdp" 'has("prefetch")' ranks prefetch recorder step_s compute_s exposed_comm_s optim_s &&
        rows_have "$tmp/fsdp" 'has("compare")' ranks pairs step_ratio half_iqr &&
        jq -e -s '[.[] | select(has("prefetch"))] | length == 6 and all(.[]; (.prefetch | type == "boolean") and (.recorder | type == "boolean"))' "$tmp/fsdp" > /dev/null
}
bench_check "fsdp: --json prints only JSON objects, one per (ranks, prefetch, recorder), booleans, and the recorder on/off ratio" fsdp_ok

"$run" ckpt --json --ranks 2 --bytes 16M --repeats 2 --dir "$tmp" > "$tmp/ckpt" 2> "$tmp/err"
bench_check "ckpt: exit 0" test $? -eq 0
ckpt_ok() {
    only_objects "$tmp/ckpt" &&
        rows_have "$tmp/ckpt" 'true' ranks bytes save_gbs raw_write_gbs save_ratio load_gbs raw_read_gbs load_ratio sync_save_s async_stall_s stall_ratio async_cost_s cost_ratio
}
bench_check "ckpt: --json prints only JSON objects with the save and load ratios" ckpt_ok

[ -x "$gpt" ] || skip="train_gpt is not built (configure found no CBLAS)"
# the rows that need no budget search: keep@m runs, keep@4m ends oom
[ -n "$skip" ] || "$run" offload --json --layers 2 --steps 3 --skip 1 --rounds 1 --rows "keep@m keep@4m" > "$tmp/off" 2> "$tmp/err"
bench_check "offload: exit 0" test $? -eq 0
bench_check "offload: --json prints only JSON objects" only_objects "$tmp/off"
off_ok() {
    rows_have "$tmp/off" 'has("config")' config status micro_batch step_s tokens_per_s peak_device_bytes \
        peak_host_bytes peak_storage_bytes transfer_s exposed_transfer_s overlap_frac link_gbs &&
        jq -e -s 'any(.[]; .config == "keep@m" and .status == "ok") and
                  any(.[]; .config == "keep@4m" and .status == "oom")' "$tmp/off" > /dev/null
}
bench_check "offload: keep@m ok and keep@4m oom, with the documented fields" off_ok
# its own seq-64 workload (nothing outside the repository), and the ideal
# line: keep@m and keep@4m unbounded measured, host-lhs@4m (not run) null
ideal_ok() {
    jq -e -s 'any(.[]; .kind == "setup" and .seq == 64) and
              any(.[]; .kind == "ideal" and (.keep_m_tokens_per_s | type == "number") and
                       (.keep_4m_unbounded_tokens_per_s | type == "number") and
                       .keep_4m_unbounded_tokens_per_s > 0 and .host_lhs_over_keep_m == null and
                       has("host_lhs_over_keep_4m_unbounded") and has("host_lhs_over_recompute"))' \
        "$tmp/off" > /dev/null
}
bench_check "offload: a generated seq-64 workload, and the ideal line" ideal_ok
# with a core left to the copy engines (ranks: cores - 1, 1..4), then 4
# ranks where that was not 4 already; every line says which
cores=$(nproc 2>/dev/null || echo 1)
first=$((cores - 1)); [ "$first" -le 4 ] || first=4; [ "$first" -ge 1 ] || first=1
want="[$first]"; [ "$first" = 4 ] || want="[$first,4]"
placements_ok() {
    jq -e -s --argjson want "$want" --argjson cores "$cores" \
        '[.[] | select(.kind == "setup") | .ranks] == $want and
         all(.[]; (.ranks | type == "number") and .cores == $cores)' "$tmp/off" > /dev/null
}
bench_check "offload: ranks $want on $cores cores (a core left to the copy engines, then 4), on every line" placements_ok
skip=""

# peers without PyTorch (a torch that fails to import stands in for none):
# it says how to install it, prints nothing on stdout and exits 0
mkdir -p "$tmp/notorch/torch"
echo 'raise ImportError("no torch in this test")' > "$tmp/notorch/torch/__init__.py"
PYTHONPATH="$tmp/notorch" "$run" peers --json > "$tmp/peers" 2> "$tmp/err"
rc=$?
bench_check "peers: skips with exit 0 when torch does not import" test $rc -eq 0
bench_check "peers: the skip says why and how to install torch, stdout stays empty" \
    sh -c "[ ! -s '$tmp/peers' ] && grep -q 'no torch in this test' '$tmp/err' && grep -q 'pip install torch' '$tmp/err'"
"$run" peers --rounds 0 > /dev/null 2> "$tmp/err"
rc=$?
bench_check "peers: --rounds 0 is refused with a message" sh -c "[ $rc -eq 2 ] && grep -q -- '--rounds' '$tmp/err'"
"$run" peers --configs "small huge" > /dev/null 2> "$tmp/err"
rc=$?
bench_check "peers: an unknown config is refused, named" sh -c "[ $rc -eq 2 ] && grep -q huge '$tmp/err'"

[ -x "$gpt" ] || skip="train_gpt is not built (configure found no CBLAS)"
[ -n "$skip" ] || "$run" kernels --json --configs tiny --steps 2 > "$tmp/kern" 2> "$tmp/err"
bench_check "kernels: exit 0" test $? -eq 0
kern_ok() {
    only_objects "$tmp/kern" &&
        rows_have "$tmp/kern" 'has("config")' config ranks threads dtype tokens_per_s model_gflops sgemm_gflops peak ratio matmul &&
        rows_have "$tmp/kern" 'has("candidate")' candidate coretype kernels sgemm_gflops &&
        jq -e -s '[.[] | select(has("config"))] as $s | [.[] | select(has("candidate"))] as $c |
            ($s | length) == 3 and all($s[]; .tokens_per_s > 0 and .sgemm_gflops > 0) and
            ($c | length) >= 1 and ($c | length) + ($s | length) == length' "$tmp/kern" > /dev/null
}
bench_check "kernels: --json prints only JSON objects: each matrix-product candidate, then one per setup with the ratio to the best" kern_ok
skip=""

"$run" nonesuch > "$tmp/out" 2> "$tmp/err"
rc=$?
bench_check "an unknown benchmark fails and says so" sh -c "[ $rc -ne 0 ] && grep -q nonesuch '$tmp/err'"
