#!/bin/sh
# test_upgrade_check_example.sh - the worked example of `featuregate
# upgrade-check` that docs/featuregate-upgrade-check.md and README.md show,
# run as they show it and compared with what they print: the kubelet
# configuration is taken from the doc, and every output line the doc and the
# README show (the exit status, the text table, the JSON line) must be the
# tool's, in order; a line of only "…" (or the README's closing "...") stands
# for rows the docs leave out, and "…" inside a line for any text.
# The lists are excerpts of Kubernetes' own: the 1.32 side is
# tests/data/featuregate-upgrade-example/1.32.yaml (tests/data/README.md says
# where it comes from), the 1.34 side is cut here from Kubernetes' list of
# the 1.34 cycle (tests/data/kubernetes-versioned-feature-list.yaml). Both
# are checked against that list first: the gates the two share have the same
# history up to 1.32, and CPUManager is gone from it.
# Usage: test_upgrade_check_example.sh PATH/TO/featuregate DOC README EXAMPLE_DIR K8S_LIST
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
fg=$(abs "$1")
doc=$(abs "$2")
readme=$(abs "$3")
old=$(abs "$4")/1.32.yaml
k8s=$(abs "$5")
. "$(dirname "$0")/cli_lib.sh"

# block FILE MARKER: the lines of the first fenced block of FILE that holds MARKER.
block() {
    awk -v m="$2" '
        /^```/ {
            if (inb) { if (hit) { for (i = 1; i <= n; i++) print l[i]; exit } inb = 0; next }
            inb = 1; n = 0; hit = 0; next
        }
        inb { l[++n] = $0; if (index($0, m)) hit = 1 }' "$1"
}

# specs LIST: one line per versioned spec, "gate default lock stage version".
specs() {
    awk '/^- name: / { g = $3 }
         /^  - default: / { d = $3 }
         /^    lockToDefault: / { k = $2 }
         /^    preRelease: / { p = $2 }
         /^    version: / { v = $2; gsub(/"/, "", v); print g, d, k, p, v }' "$1"
}

# match OUT WANT: every line of WANT is a line of OUT, in order and
# consecutive, except that a line of only "…" or "..." matches any run of
# lines (none included) and "…" inside a line matches any text. Prints the
# first line of WANT that does not match.
match() {
    awk -v want="$2" '
        function wm(s, p,    parts, n, i, at) {
            n = split(p, parts, "…")
            if (n == 1) return s == p
            if (substr(s, 1, length(parts[1])) != parts[1]) return 0
            s = substr(s, length(parts[1]) + 1)
            for (i = 2; i < n; i++) {
                at = index(s, parts[i]); if (!at) return 0
                s = substr(s, at + length(parts[i]))
            }
            return length(s) >= length(parts[n]) &&
                   substr(s, length(s) - length(parts[n]) + 1) == parts[n]
        }
        { out[++no] = $0 }
        END {
            o = 1; gap = 0
            while ((getline w < want) > 0) {
                if (w ~ /^[ \t]*(…|\.\.\.)[ \t]*$/) { gap = 1; continue }
                while (o <= no && !wm(out[o], w) && gap) o++
                if (o > no || !wm(out[o], w)) { print w; exit 1 }
                o++; gap = 0
            }
            if (!gap && o <= no) { print "(end of output; the tool goes on with: " out[o] ")"; exit 1 }
        }' "$1"
}

# ---- The lists: excerpts of Kubernetes' own ------------------------------
gates=$(sed -n 's/^- name: //p' "$old")
[ -n "$gates" ] && pass || fail "no gates in $old"
for g in $gates; do
    specs "$old" | awk -v g="$g" '$1 == g' >"$work/a"
    specs "$k8s" | awk -v g="$g" '$1 == g' >"$work/b"
    if [ "$g" = CPUManager ]; then
        [ ! -s "$work/b" ] && pass || fail "CPUManager is in Kubernetes' 1.34-cycle list: $(cat "$work/b")"
        continue
    fi
    # The history up to 1.32 that Kubernetes' 1.34-cycle list records.
    awk '{ split($5, v, "."); if (v[1] * 1000 + v[2] <= 1032) print }' "$work/b" >"$work/b32"
    if [ -s "$work/a" ] && cmp -s "$work/a" "$work/b32"; then pass; else
        fail "$g: $old has $(cat "$work/a"), Kubernetes' list up to 1.32 $(cat "$work/b32")"
    fi
done
awk -v gs=" $(echo $gates) " '/^- name: / { on = index(gs, " " $3 " ") > 0 } on' "$k8s" >"$work/1.34.yaml"
[ "$(sed -n 's/^- name: //p' "$work/1.34.yaml" | wc -l)" -eq "$(($(echo $gates | wc -w) - 1))" ] &&
    pass || fail "the 1.34 excerpt: $(sed -n 's/^- name: //p' "$work/1.34.yaml" | paste -sd' ')"

# ---- The doc's worked example ---------------------------------------------
block "$doc" "KubeletTracing: true" >"$work/kubelet-config.yaml"
grep -q '^  CPUManager: true$' "$work/kubelet-config.yaml" && pass ||
    fail "the doc's kubelet configuration: $(cat "$work/kubelet-config.yaml")"
# The session: its output lines (not the commands), and the status echoed last.
block "$doc" '$ featuregate upgrade-check --from 1.32 --to 1.34' >"$work/session"
awk '/^\$ echo \$\?$/ { getline; print > "/dev/stderr"; exit }
     /^\$ / || cont { cont = /\\$/; next }
     { print }' "$work/session" >"$work/want" 2>"$work/want-rc"
[ "$(wc -l <"$work/want")" -ge 5 ] && pass || fail "the doc's session: $(cat "$work/session")"
cd "$work" || exit 1
"$fg" upgrade-check --from 1.32 --to 1.34 --previous "$old" --features 1.34.yaml \
    --config kubelet-config.yaml >out 2>err
rc=$?
[ "$rc" = "$(cat want-rc)" ] && pass || fail "exit $rc, the doc says $(cat want-rc): $(cat err)"
if miss=$(match out want); then pass; else
    fail "the doc's line not in the output: '$miss'"; cat out
fi
# The README's shorter version of the same run.
block "$readme" '$ featuregate upgrade-check --from 1.32 --to 1.34' | sed '/^\$ /d' >want-readme
[ "$(wc -l <want-readme)" -ge 3 ] && pass || fail "the README's example: $(cat want-readme)"
if miss=$(match out want-readme); then pass; else fail "the README's line not in the output: '$miss'"; fi
# -o json: the doc's one line.
block "$doc" '{"from":"1.32","to":"1.34"' >want-json
"$fg" upgrade-check --from 1.32 --to 1.34 --previous "$old" --features 1.34.yaml \
    --config kubelet-config.yaml -o json >out-json 2>err
[ $? -eq 1 ] && pass || fail "-o json: $(cat err)"
if [ "$(wc -l <want-json)" -eq 1 ] && miss=$(match out-json want-json); then pass; else
    fail "the doc's JSON: $(cat want-json); the tool's: $(cat out-json)"
fi
# "Remove CPUManager from the file and run the check again: it exits 0."
grep -v '^  CPUManager:' kubelet-config.yaml >fixed.yaml
"$fg" upgrade-check --from 1.32 --to 1.34 --previous "$old" --features 1.34.yaml \
    --config fixed.yaml >out 2>err
[ $? -eq 0 ] && pass || fail "without CPUManager: $(cat out err)"
grep -q 'KubeletTracing  WillBeRemoved' out && pass || fail "KubeletTracing's warning: $(cat out)"

summary "upgrade-check worked example"
