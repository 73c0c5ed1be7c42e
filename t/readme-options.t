#!/bin/sh
# readme-options.t - the documented option table (docs/options.md, which
# README.md links to) against the option table itself (`strata config -v`,
# from base/config.c): every option has exactly one row with the same
# default, and every row is an option, so the two cannot drift apart.
strata="$top_builddir/tools/strata"
readme="$top_srcdir/docs/options.md"
. "$top_srcdir/t/tap.sh"
tap_tmp readme-options

if ! "$strata" config -v > "$tmp/cfg" 2> "$tmp/err"; then
    echo "Bail out! strata config -v failed: $(cat "$tmp/err")"
    exit 1
fi
# NAME<TAB>DEFAULT per option: the doc line "# ... [default D, env STRATA_X]"
# comes right before "NAME = VALUE"
awk '/^# .*\[default .*, env STRATA_[A-Z0-9_]+\]$/ {
         d = $0; sub(/.*\[default /, "", d); sub(/, env STRATA_[A-Z0-9_]+\]$/, "", d); have = 1; next }
     have && /^[a-z0-9_]+ +=/ { print $1 "\t" d; have = 0 }' "$tmp/cfg" > "$tmp/opts"
# NAME<TAB>DEFAULT per documented row, from the table headed "| option | default | meaning |";
# backticks dropped, "(empty)" is the empty string
awk -F'|' '/^\| option \| default \| meaning \|$/ { t = 1; next }
     t && /^\|---/ { next }
     t && /^\|/ { n = $2; d = $3; gsub(/^ +| +$/, "", n); gsub(/^ +| +$|`/, "", d);
                  if (d == "(empty)") d = ""; print n "\t" d; next }
     t { exit }' "$readme" > "$tmp/readme"

nopt=$(wc -l < "$tmp/opts")
echo "1..$((nopt + 2))"
n=1
if [ "$nopt" -ge 20 ]; then echo "ok $n - strata config -v lists $nopt options with defaults"
else echo "not ok $n - strata config -v lists only $nopt options with defaults"; fi
tab=$(printf '\t')
while IFS="$tab" read -r name dflt; do
    n=$((n + 1))
    rows=$(awk -F'\t' -v o="$name" '$1 == o' "$tmp/readme")
    count=$(awk -F'\t' -v o="$name" '$1 == o' "$tmp/readme" | wc -l)
    if [ "$count" -eq 1 ] && [ "$rows" = "$name$tab$dflt" ]; then
        echo "ok $n - docs/options.md row for $name, default '$dflt'"
    elif [ "$count" -eq 0 ]; then
        echo "not ok $n - docs/options.md's option table has no row for $name (default '$dflt')"
    else
        echo "not ok $n - docs/options.md says $(echo "$rows" | tr '\t\n' '= '); strata config: $name=$dflt"
    fi
done < "$tmp/opts"
n=$((n + 1))
extra=$(cut -f1 "$tmp/readme" | while read -r r; do cut -f1 "$tmp/opts" | grep -qx -- "$r" || echo "$r"; done)
if [ -z "$extra" ]; then echo "ok $n - every docs/options.md row is an option"
else echo "not ok $n - docs/options.md rows that are not options: $extra"; fi
