#!/bin/sh
# libstrata.so exports the public API and nothing else: every symbol it
# defines (nm -D --defined-only) is a function declared in the installed
# headers, and every function declared there is defined. The declarations
# are read from the preprocessed strata.h (comments gone, every public
# header included), so a name mentioned only in a comment does not count.
set -u
. "$top_srcdir/t/tap.sh"
lib="$top_builddir/.libs/libstrata.so"
[ -f "$lib" ] || tap_skip_all "no shared library built ($lib)"
command -v nm >/dev/null || tap_skip_all "nm not found"
tap_tmp lib-symbols "$top_builddir/t"
echo "1..5"
# undeclared EXPORTED DECLARED: the exported names not declared, one a line
undeclared() { sort -u "$1" | comm -23 - "$2"; }

nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort -u > "$tmp/exported"
test -s "$tmp/exported"; ok $? "nm -D --defined-only lists the symbols of $lib"

# function names: an identifier before '(' that is not a type (typedefs of
# function pointers read "strata_status_t (*fn)(...)")
${CC:-cc} -E -P -I"$top_srcdir/include" -I"$top_builddir/include" "$top_srcdir/include/strata.h" \
    > "$tmp/strata.i" 2> "$tmp/cpp.err"
grep -o '\bstrata_[A-Za-z0-9_]*[[:space:]]*(' "$tmp/strata.i" | sed 's/[[:space:](]//g' |
    grep -v '_t$' | sort -u > "$tmp/declared"
test "$(wc -l < "$tmp/declared")" -ge 50; ok $? "the preprocessed public headers declare the API ($(wc -l < "$tmp/declared") functions)" "$tmp/cpp.err"

undeclared "$tmp/exported" "$tmp/declared" > "$tmp/extra"
test ! -s "$tmp/extra"; ok $? "every exported symbol is declared in include/ ($(wc -l < "$tmp/exported") exported)" "$tmp/extra"

comm -23 "$tmp/declared" "$tmp/exported" > "$tmp/missing"
test ! -s "$tmp/missing"; ok $? "every declared function is exported" "$tmp/missing"

# the check itself catches an internal name
{ cat "$tmp/declared"; echo arena_init; } > "$tmp/bad"
test "$(undeclared "$tmp/bad" "$tmp/declared")" = arena_init
ok $? "an internal name among the exported ones (arena_init) is reported"
