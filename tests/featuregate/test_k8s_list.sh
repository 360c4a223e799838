#!/bin/sh
# test_k8s_list.sh - the real Kubernetes versioned feature list (the copy in
# tests/data, see its README.md): lint is clean, eval works at several
# emulated versions and the list/docs outputs render. Exits 77 (skipped)
# only if the file is missing.
# Usage: test_k8s_list.sh PATH/TO/featuregate PATH/TO/list.yaml
set -u
fg=$1
list=$2
[ -r "$list" ] || { echo "skipped: $list not present"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$fg" lint --features "$list" >"$work/out" 2>&1 || fail "lint: $(head -3 "$work/out")"
for v in 1.31 1.32 1.33 1.34; do
    "$fg" eval --features "$list" --binary-version 1.34 --emulated-version "$v" \
        --feature-gates AllAlpha=true >"$work/$v.json" 2>"$work/err" || fail "eval $v: $(cat "$work/err")"
    grep -q '"AllAlpha":true' "$work/$v.json" || fail "eval $v output"
    tr ',' '\n' <"$work/$v.json" | wc -l >"$work/$v.count"
done
# Gates known at 1.31 are fewer than at 1.34 (V4: newer gates are PreAlpha).
[ "$(cat "$work/1.31.count")" -lt "$(cat "$work/1.34.count")" ] || fail "V4 at 1.31"
[ "$(cat "$work/1.34.count")" -gt 100 ] || fail "too few gates at 1.34"
"$fg" list --features "$list" -o markdown >"$work/md" || fail "list markdown"
echo "kubernetes list: $failures failures"
[ "$failures" -eq 0 ]
