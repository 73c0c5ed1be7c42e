#!/bin/sh
# The installed package is usable from outside the tree: make install into
# a temporary prefix (prefix= given to make install, as packagers do), then
# t/install_prog.c compiled by the plain C compiler (not the MPI wrapper,
# with -Wall -Wextra -Werror: the public headers and their initialisers
# compile cleanly) with nothing but `pkg-config --cflags --libs strata`,
# and run without LD_LIBRARY_PATH: the .pc's rpath finds libstrata.so in
# whatever prefix it was installed to.
set -u
. "$top_srcdir/t/tap.sh"
pc=${PKG_CONFIG:-pkg-config}
hostcc=${STRATA_TEST_CC:-cc}
for tool in "$pc" "$hostcc"; do
    command -v "$tool" >/dev/null || { echo "1..0 # SKIP $tool not found"; exit 0; }
done
tap_tmp install-pkgconfig
echo "1..8"
# logged CMD...: CMD's output shown as diagnostics when it fails
logged() {
    "$@" > "$tmp/out.log" 2>&1 && return 0
    tail -n 40 "$tmp/out.log" | sed 's/^/# /'
    return 1
}
p="$tmp/prefix"
check "make install prefix=$p" logged ${MAKE:-make} -C "$top_builddir" install prefix="$p"
pcdir=$(dirname "$(find "$p" -name strata.pc | head -n 1)")
PKG_CONFIG_PATH="$pcdir"; export PKG_CONFIG_PATH
check "the installed strata.pc names the prefix it was installed to" \
    test "$("$pc" --variable=prefix strata)" = "$p"
check "pkg-config --cflags --libs strata" logged "$pc" --cflags --libs strata
libdir=$("$pc" --variable=libdir strata)
check "its link flags carry an rpath to the installed libdir ($libdir)" \
    sh -c '"$1" --libs strata | grep -q -- "-Wl,-rpath,$2"' sh "$pc" "$libdir"
printf '#include <strata.h>\n' > "$tmp/inc.c"
# shellcheck disable=SC2046
check "strata.h and the mpi.h it includes compile with the .pc's --cflags alone" \
    logged "$hostcc" -E $("$pc" --cflags strata) "$tmp/inc.c" -o "$tmp/inc.i"
flags=$("$pc" --cflags --libs strata)
# shellcheck disable=SC2086
check "$hostcc -Wall -Wextra -Werror builds t/install_prog.c with \`pkg-config --cflags --libs strata\`" \
    logged "$hostcc" -Wall -Wextra -Werror -o "$tmp/prog" "$top_srcdir/t/install_prog.c" $flags
check "with LD_LIBRARY_PATH unset it loads libstrata.so from $libdir" \
    sh -c 'env -u LD_LIBRARY_PATH ldd "$1" | grep -q "libstrata.so.* => $2/libstrata.so"' \
    sh "$tmp/prog" "$libdir"
check "and runs on 1 rank" logged env -u LD_LIBRARY_PATH "$top_srcdir/t/launch" 1 "$tmp/prog"
