#!/bin/sh
# lib-deps.t - libstrata.so is the runtime and nothing of the command-line
# tools: it does not need jansson (the planner's and the trace reader's JSON
# are tools-side, plan/libplan.a and tools/libtrace.a), holds none of the
# planner's code, and carries no path of the source or build tree, so an
# installed copy does not depend on where it was built. Each check is also
# shown something it must catch: tools/strata needs jansson, libplan.a
# holds plan_ functions and the build tree's path.
set -u
. "$top_srcdir/t/tap.sh"
lib="$top_builddir/.libs/libstrata.so"
plan="$top_builddir/plan/libplan.a"
[ -f "$lib" ] || tap_skip_all "no shared library built ($lib)"
for tool in objdump nm; do
    command -v "$tool" >/dev/null || tap_skip_all "$tool not found"
done
# needs_jansson FILE: its dynamic section names libjansson
needs_jansson() { objdump -p "$1" | grep -q 'NEEDED.*libjansson'; }
# has_plan FILE: it defines a plan_ function
has_plan() { nm "$1" 2>/dev/null | grep -q ' [Tt] plan_'; }
# has_path FILE: it holds the path of the source or build tree
has_path() { grep -q -a -F -e "$top_builddir" -e "$top_srcdir" "$1"; }
not() { ! "$@"; }

echo "1..6"
check "the check sees tools/strata need jansson" needs_jansson "$top_builddir/tools/strata"
check "libstrata.so does not need jansson" not needs_jansson "$lib"
check "the check sees plan_ functions in plan/libplan.a" has_plan "$plan"
check "libstrata.so holds none of the planner (plan_*)" not has_plan "$lib"
check "the check sees the build tree's path in plan/libplan.a" has_path "$plan"
check "libstrata.so carries no path of the source or build tree" not has_path "$lib"
