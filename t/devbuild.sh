#!/bin/sh
# t/devbuild.sh DIR CONFIGURE-ARGS... - a second build of this tree with
# other compiler flags (the sanitizer and fuzzer builds), kept apart from
# the main one: the working tree's sources (git's tracked and untracked,
# not ignored, files, plus the generated configure and Makefile.in) are
# synced into DIR/src, which is configured out of tree in DIR/obj. A copy
# rather than a VPATH build of the checkout itself, because configure
# refuses a VPATH build of a source tree that is also configured in place.
# Reconfigures only when the arguments change; make then rebuilds only what
# changed (the copy keeps the sources' times). Needs a git checkout.
set -eu
dir=${1:?usage: t/devbuild.sh DIR CONFIGURE-ARGS...}; shift
top=$(cd "$(dirname "$0")/.." && pwd)
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "devbuild: $top is not a git checkout (needed to list the sources)" >&2; exit 1; }
[ -f "$top/configure" ] || (cd "$top" && ./bootstrap --no-deps >/dev/null)
mkdir -p "$dir/src" "$dir/obj"
dir=$(cd "$dir" && pwd)
{ git -C "$top" ls-files -co --exclude-standard
  cd "$top" && ls configure Makefile.in aclocal.m4 config.h.in build-aux/* m4/*
} | sort -u | (cd "$top" && while read -r f; do [ -f "$f" ] && echo "$f"; done) |
    (cd "$top" && tar -cf - -T -) | (cd "$dir/src" && tar -xf -)
args="$*"
if [ ! -f "$dir/obj/Makefile" ] || [ "$(cat "$dir/obj/.args" 2>/dev/null)" != "$args" ]; then
    (cd "$dir/obj" && "$dir/src/configure" "$@" >configure.out 2>&1) ||
        { tail -20 "$dir/obj/configure.out" >&2; exit 1; }
    printf '%s\n' "$args" > "$dir/obj/.args"
fi
