#!/bin/sh
# test_readme_controllers.sh - README.md's table of controllers (the first column
# of the rows between the controllers:begin and controllers:end markers) names
# exactly the controllers of the controller manager's table, the `.name`s of
# `table[]` in lib/controllers/manager.c (which `--controllers` and the help's
# "known:" list come from): none missing, none extra, none twice.
#
# Usage: test_readme_controllers.sh PATH/TO/README.md PATH/TO/lib/controllers/manager.c
set -u
readme=$1
manager=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sed -n '/<!-- controllers:begin -->/,/<!-- controllers:end -->/p' "$readme" |
    sed -n 's/^| *`\([a-z-]*\)` *|.*/\1/p' >"$work/readme"
awk '/^static const struct ck_controller_descriptor table\[\] = \{/ { t = 1; next }
     t && /^\};/ { exit }
     t && match($0, /\.name = "[^"]*"/) { print substr($0, RSTART + 9, RLENGTH - 10) }' \
    "$manager" >"$work/code"

failures=0
if [ ! -s "$work/readme" ]; then
    echo "FAIL: no controller rows between the controllers markers in $readme"
    failures=$((failures + 1))
fi
if [ ! -s "$work/code" ]; then
    echo "FAIL: no .name in the table[] of $manager"
    failures=$((failures + 1))
fi
dups=$(sort "$work/readme" | uniq -d)
if [ -n "$dups" ]; then
    echo "FAIL: README.md names these controllers twice: $dups"
    failures=$((failures + 1))
fi
sort -u "$work/readme" >"$work/readme.sorted"
sort -u "$work/code" >"$work/code.sorted"
if ! cmp -s "$work/readme.sorted" "$work/code.sorted"; then
    echo "FAIL: README.md's controllers differ from the controller table (< README only, > table only):"
    diff "$work/readme.sorted" "$work/code.sorted" | grep '^[<>]'
    failures=$((failures + 1))
fi
echo "$(wc -l <"$work/code") controllers in the table, $(wc -l <"$work/readme") in README.md, $failures failures"
[ "$failures" -eq 0 ]
