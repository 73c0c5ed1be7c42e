#!/bin/sh
# fuzz-classify.t - fuzz/run sets aside a crash inside HDF5 itself (a known
# upstream bug, fuzz/README.md) and fails on one in strata's code: its
# classifier on sanitizer reports of each kind, as libFuzzer logs them.
set -u
. "$top_srcdir/t/tap.sh"
run="$top_srcdir/fuzz/run"
tap_tmp fuzz-classify
echo "1..5"
is() { n=$((n + 1)); got=$("$run" --classify "$tmp/$1"); if [ "$got" = "$2" ]; then echo "ok $n - $3"
       else echo "not ok $n - $3 (got $got)"; fi; }
H=/usr/lib/x86_64-linux-gnu/hdf5/openmpi/libhdf5.so.103
B=/work/x/build-fuzz/src
cat > "$tmp/alloc" <<LOG
INFO: Seed: 1
==1==ERROR: AddressSanitizer: requested allocation size 0xe40000000060 exceeds maximum supported size of 0x10000000000 (thread T0)
    #0 0x4c170f in malloc (/work/x/build-fuzz/fuzz-ckpt+0x4c170f)
    #1 0x7f5c93ad in H5MM_malloc ($H+0x2c93ad)
    #2 0x7f5c6b0d in H5C_protect ($H+0x2c6b0d)
    #3 0x7f58386f in H5Fopen ($H+0x28386f)
    #4 0x55a1 in ckpt_open $B/io/ckpt_h5.c:248:16
SUMMARY: AddressSanitizer: allocation-size-too-big
LOG
is alloc hdf5 "allocation-size-too-big under H5C_protect: HDF5's"
cat > "$tmp/segv" <<LOG
==2==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000010 (pc 0x7f3 T0)
    #0 0x7f3 in __memcpy_avx_unaligned_erms (/lib/x86_64-linux-gnu/libc.so.6+0x16d8f3)
    #1 0x7f4 in H5C_protect ($H+0x2c6b0d)
    #2 0x55a2 in ckpt_open $B/io/ckpt_h5.c:248:16
LOG
is segv hdf5 "a SEGV in libc called from HDF5: HDF5's"
cat > "$tmp/strata" <<LOG
==3==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x55a3
READ of size 1 at 0x602 thread T0
    #0 0x55a3 in __interceptor_strlen (/work/x/build-fuzz/fuzz-ckpt+0x55a3)
    #1 0x55a4 in ckpt_attr_get_str $B/io/ckpt_h5.c:120:9
    #2 0x7f5 in H5Aiterate2 ($H+0x1000)
LOG
is strata strata "an overflow in strata's code called back from HDF5: strata's"
cat > "$tmp/ubsan" <<LOG
$B/sched/program.c:88:12: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'
    #0 0x55a5 in parse_line $B/sched/program.c:88:12
    #1 0x55a6 in LLVMFuzzerTestOneInput $B/fuzz/program.c:20:5
LOG
is ubsan strata "a UBSan report in strata's parser: strata's"
printf 'INFO: Seed: 1\nDone 100 runs in 5 second(s)\n' > "$tmp/none"
is none unknown "a log without a report: unknown (never excluded)"
