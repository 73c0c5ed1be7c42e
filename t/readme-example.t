#!/bin/sh
# readme-example.t - the library example of README.md (its first ```c block)
# compiles warning-free with -Wall -Wextra against the headers of this tree,
# links with libstrata, and learns w = 3 on 1 and 2 ranks; docs/api.md
# carries the same program.
. "$top_srcdir/t/tap.sh"
tap_tmp readme-example
readme="$top_srcdir/README.md"
# first_c FILE: the first ```c block of FILE
first_c() { awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' "$1"; }
first_c "$readme" > "$tmp/fit.c"
first_c "$top_srcdir/docs/api.md" > "$tmp/api.c"
cc=$(sed -n 's/^CC = //p' "$top_builddir/Makefile" | head -1)
# absolute: the program runs in $tmp
build=$(cd "$top_builddir" && pwd); launch=$(cd "$top_srcdir/t" && pwd)/launch
echo 1..5
check "README.md has a C example" test -s "$tmp/fit.c"
check "docs/api.md's example is the README's" cmp -s "$tmp/fit.c" "$tmp/api.c"
# shellcheck disable=SC2086
${cc:-mpicc} -std=gnu11 -Wall -Wextra -Werror -I"$top_srcdir/include" -I"$build/include" \
    -o "$tmp/fit" "$tmp/fit.c" -L"$build/.libs" -Wl,-rpath,"$build/.libs" -lstrata \
    > "$tmp/cc.log" 2>&1
rc=$?
check "it compiles and links with -Wall -Wextra -Werror" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/cc.log" | head -20
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for np in 1 2; do
    # shellcheck disable=SC2046
    (cd "$tmp" && timeout "${STRATA_TEST_TIMEOUT:-600}" "${MPIRUN:-mpirun}" -np $np $("$launch" --flags) ./fit) \
        > "$tmp/out$np" 2>&1
    check "on $np rank(s) it learns w = 3 and saves a checkpoint" \
        grep -q "^w = 3.000[0-9] after 200 steps, $np rank(s), saved ckpt/step-00000200.h5$" "$tmp/out$np"
    grep -q '^w = ' "$tmp/out$np" || sed 's/^/# /' "$tmp/out$np" | head -10
done
