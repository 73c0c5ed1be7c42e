#!/bin/sh
# The installed package is usable from outside the tree: make install into
# a temporary prefix (prefix= given to make install, as packagers do), then
# t/install_prog.c compiled by the plain C compiler (not the MPI wrapper)
# with nothing but `pkg-config --cflags --libs strata`, and run on 1 rank.
set -u
pc=${PKG_CONFIG:-pkg-config}
hostcc=${STRATA_TEST_CC:-cc}
for tool in "$pc" "$hostcc"; do
    command -v "$tool" >/dev/null || { echo "1..0 # SKIP $tool not found"; exit 0; }
done
d=$(mktemp -d "$top_builddir/t/install-pkgconfig.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
echo "1..6"
n=0
check() {   # check DESCRIPTION COMMAND...
    desc=$1; shift
    n=$((n + 1))
    if "$@" > "$d/out.log" 2>&1; then echo "ok $n - $desc"
    else echo "not ok $n - $desc"; tail -n 40 "$d/out.log" | sed 's/^/# /'; fi
}
p="$d/prefix"
check "make install prefix=$p" ${MAKE:-make} -C "$top_builddir" install prefix="$p"
pcdir=$(dirname "$(find "$p" -name strata.pc | head -n 1)")
PKG_CONFIG_PATH="$pcdir"; export PKG_CONFIG_PATH
check "the installed strata.pc names the prefix it was installed to" \
    test "$("$pc" --variable=prefix strata)" = "$p"
check "pkg-config --cflags --libs strata" "$pc" --cflags --libs strata
printf '#include <strata.h>\n' > "$d/inc.c"
# shellcheck disable=SC2046
check "strata.h and the mpi.h it includes compile with the .pc's --cflags alone" \
    "$hostcc" -E $("$pc" --cflags strata) "$d/inc.c" -o "$d/inc.i"
flags=$("$pc" --cflags --libs strata)
# shellcheck disable=SC2086
check "$hostcc builds t/install_prog.c with \`pkg-config --cflags --libs strata\`" \
    "$hostcc" -o "$d/prog" "$top_srcdir/t/install_prog.c" $flags
libdir=$("$pc" --variable=libdir strata)
check "it runs on 1 rank against the installed libstrata.so" \
    env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    sh -c '"$1"/t/launch 1 "$2" && ldd "$2" | grep -q "$3/libstrata.so"' sh "$top_srcdir" "$d/prog" "$libdir"
