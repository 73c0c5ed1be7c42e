#!/bin/sh
# libstrata.so exports the public API and nothing else: every symbol it
# defines (nm -D --defined-only) is a function declared in the installed
# headers, and every function declared there is defined. The declarations
# are read from the preprocessed strata.h (comments gone, every public
# header included), so a name mentioned only in a comment does not count.
set -u
lib="$top_builddir/.libs/libstrata.so"
if [ ! -f "$lib" ]; then echo "1..0 # SKIP no shared library built ($lib)"; exit 0; fi
if ! command -v nm >/dev/null; then echo "1..0 # SKIP nm not found"; exit 0; fi
d=$(mktemp -d "$top_builddir/t/lib-symbols.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
echo "1..5"
n=0
ok() {   # ok STATUS DESCRIPTION [FILE to show on failure]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"
    else echo "not ok $n - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
# undeclared EXPORTED DECLARED: the exported names not declared, one a line
undeclared() { sort -u "$1" | comm -23 - "$2"; }

nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort -u > "$d/exported"
test -s "$d/exported"; ok $? "nm -D --defined-only lists the symbols of $lib"

# function names: an identifier before '(' that is not a type (typedefs of
# function pointers read "strata_status_t (*fn)(...)")
${CC:-cc} -E -P -I"$top_srcdir/include" -I"$top_builddir/include" "$top_srcdir/include/strata.h" \
    > "$d/strata.i" 2> "$d/cpp.err"
grep -o '\bstrata_[A-Za-z0-9_]*[[:space:]]*(' "$d/strata.i" | sed 's/[[:space:](]//g' |
    grep -v '_t$' | sort -u > "$d/declared"
test "$(wc -l < "$d/declared")" -ge 50; ok $? "the preprocessed public headers declare the API ($(wc -l < "$d/declared") functions)" "$d/cpp.err"

undeclared "$d/exported" "$d/declared" > "$d/extra"
test ! -s "$d/extra"; ok $? "every exported symbol is declared in include/ ($(wc -l < "$d/exported") exported)" "$d/extra"

comm -23 "$d/declared" "$d/exported" > "$d/missing"
test ! -s "$d/missing"; ok $? "every declared function is exported" "$d/missing"

# the check itself catches an internal name
{ cat "$d/declared"; echo arena_init; } > "$d/bad"
test "$(undeclared "$d/bad" "$d/declared")" = arena_init
ok $? "an internal name among the exported ones (arena_init) is reported"
