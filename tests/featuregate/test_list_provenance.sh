#!/bin/sh
# test_list_provenance.sh - every Kubernetes list in a data folder matches its
# provenance row: the folder's README.md has a table row whose first cell is
# the file name (`X.yaml`), whose cells hold its size in bytes and then its
# sha256. A list without a row, a row without its file, or a file whose size
# or sha256 differs from its row fails; so does any drift of a single byte
# (checked first on a scratch copy that drifts on purpose).
# Usage: test_list_provenance.sh DIR...   (data/kubernetes-feature-lists, tests/data)
set -u
. "$(dirname "$0")/cli_lib.sh"

# rows DIR: "name bytes sha256" for each README.md row that carries a sha256.
rows() {
    awk -F'|' '/^\| *`[^`]*\.yaml`/ {
        name = $2; gsub(/[ `]/, "", name)
        for (i = 3; i <= NF; i++) {
            c = $i; gsub(/[ `]/, "", c)
            if (c ~ /^[0-9a-f]+$/ && length(c) == 64) {
                b = $(i - 1); gsub(/[ `]/, "", b)
                print name, b, c
            }
        }
    }' "$1/README.md"
}

# check DIR: prints one line per problem; the status is 0 only without any.
check() {
    bad=0
    rows "$1" >"$work/rows"
    while read -r name bytes sum; do
        f=$1/$name
        if [ ! -f "$f" ]; then echo "$f: in the provenance table, not in the folder"; bad=1; continue; fi
        got=$(wc -c <"$f" | tr -d ' ')
        [ "$got" = "$bytes" ] || { echo "$f: $got bytes, the table says $bytes"; bad=1; }
        got=$(sha256sum "$f" | cut -d' ' -f1)
        [ "$got" = "$sum" ] || { echo "$f: sha256 $got, the table says $sum"; bad=1; }
    done <"$work/rows"
    for f in "$1"/*.yaml; do
        [ -f "$f" ] || continue
        awk -v n="$(basename "$f")" '$1 == n {found = 1} END {exit !found}' "$work/rows" ||
            { echo "$f: no provenance row in $1/README.md"; bad=1; }
    done
    return $bad
}

# The checker catches drift: a scratch folder with one listed file, then the
# same file one byte longer, then a second file without a row.
mkdir "$work/d"
printf -- '- name: A\n' >"$work/d/1.99.yaml"
sum=$(sha256sum "$work/d/1.99.yaml" | cut -d' ' -f1)
printf '| file | bytes | sha256 |\n| --- | --- | --- |\n| `1.99.yaml` | 10 | `%s` |\n' "$sum" >"$work/d/README.md"
check "$work/d" >"$work/out" && pass || fail "a matching folder: $(cat "$work/out")"
printf '\n' >>"$work/d/1.99.yaml"
if check "$work/d" >"$work/out"; then fail "a drifted file passed"; else
    grep -q "11 bytes, the table says 10" "$work/out" && grep -q "sha256 .*, the table says $sum" "$work/out" &&
        pass || fail "drift: $(cat "$work/out")"
fi
printf -- '- name: A\n' >"$work/d/1.99.yaml"
cp "$work/d/1.99.yaml" "$work/d/1.98.yaml"
if check "$work/d" >"$work/out"; then fail "a file without a row passed"; else
    grep -q "1.98.yaml: no provenance row" "$work/out" && pass || fail "no row: $(cat "$work/out")"
fi

# The real folders.
for dir in "$@"; do
    if check "$dir" >"$work/out"; then pass; else fail "$(cat "$work/out")"; fi
    echo "$dir: $(wc -l <"$work/rows" | tr -d ' ') list(s) with a provenance row"
done
[ "$#" -gt 0 ] && pass || fail "no folder given"

summary "list provenance"
