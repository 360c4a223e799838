#!/bin/sh
# test_upgrade_check_cli.sh - `featuregate upgrade-check` as an operator
# meets it: exit codes (0 nothing blocks, 1 something blocks, 2 bad usage or
# unreadable input with stdout empty), the JSON shape, the text table, a
# version without a shipped list (exit 2 and why), and NodeLogQuery's default
# as Kubernetes has it. The runs on the shipped lists are
# test_upgrade_check_shipped.sh, the documented example
# test_upgrade_check_example.sh.
# Usage: test_upgrade_check_cli.sh PATH/TO/featuregate DATA_DIR LISTS_DIR K8S_LIST
# (K8S_LIST: Kubernetes' own list, tests/data/kubernetes-versioned-feature-list.yaml)
set -u
fg=$1
data=$2
lists=$3
k8s=$4
up=$data/upgrade
. "$(dirname "$0")/cli_lib.sh"

# usage WORD ARGS... : exit 2, nothing on stdout, one line on stderr with WORD.
usage() {
    word=$1; shift
    run 2 "$@" || return
    if [ -s "$work/out" ]; then fail "upgrade-check $* wrote to stdout"; return; fi
    if [ "$(wc -l <"$work/err")" -ne 1 ]; then fail "upgrade-check $*: stderr not one line"; return; fi
    has "$work/err" "$word"
}

S="--previous $up/old.yaml --features $up/new.yaml --from 1.33 --to 1.34"

# Exit 0 and the JSON shape: nothing blocks.
run 0 $S --feature-gates Flip=false -o json && {
    has "$work/out" '{"from":"1.33","to":"1.34","blocking":[],"changes":[{"gate":"NewOn","reason":"DefaultChanged",'
    has "$work/out" '"source":"default","from":false,"to":true}],"warnings":[]}'
    [ "$(wc -l <"$work/out")" -eq 1 ] && pass || fail "json not one line"
}
# Exit 1: a removed gate from a config file, a lock from a flag.
run 1 $S --config "$up/kubelet-a.yaml" --feature-gates Lock=false -o json && {
    has "$work/out" "{\"gate\":\"Gone\",\"reason\":\"Removed\",\"message\":\"unrecognized feature gate: Gone (1.33 knows it: Alpha, default false)\",\"source\":\"$up/kubelet-a.yaml\"}"
    has "$work/out" '{"gate":"Lock","reason":"Locked","message":"cannot set feature gate Lock to false, feature is locked to true (locked since 1.34)","source":"--feature-gates"}'
}
# Text: a table with the sections, and the multi-minor note.
run 1 --previous "$up/old.yaml" --features "$up/new.yaml" --from 1.32 --to 1.34 \
    --feature-gates 'Gone=true' --feature-gates 'Old=true' && {
    has "$work/out" "Feature gates, upgrade 1.32 -> 1.34"
    has "$work/out" "Note: this step crosses several minor versions; Kubernetes supports one minor at a time."
    has "$work/out" "Blocking (the component will not start at 1.34):"
    has "$work/out" "  Gone  Removed  --feature-gates #1  unrecognized feature gate: Gone"
    has "$work/out" "  Old   Deprecated  --feature-gates #2"
    has "$work/out" "1 blocking, 2 changes, 1 warnings: fix the blocking settings before the upgrade"
}
# JSON with a multi-minor step: stdout stays exact, the note goes to stderr.
run 0 --previous "$up/old.yaml" --features "$up/new.yaml" --from 1.31 --to 1.34 -o json && {
    has "$work/out" '{"from":"1.31","to":"1.34",'
    has "$work/err" "more than one minor"
}
# An invalid setting blocks.
run 1 $S --feature-gates 'Flip=yes' && has "$work/out" "Flip  Invalid  --feature-gates  invalid value of Flip=yes"

# Bad usage and unreadable input: exit 2, stdout empty.
usage "--from is required" --to 1.34
usage "invalid --from : want X.Y" $S --from ""
usage "invalid --from 1.x: want X.Y" --from 1.x --to 1.34
usage "invalid --to 1.34.2: want X.Y" --from 1.33 --to 1.34.2
usage "--to is required" --from 1.33
usage "unknown output format (want text or json): yaml" $S -o yaml
usage "unknown flag: --bogus" $S --bogus
usage "unexpected argument: extra" $S extra
usage "nope.yaml" --previous "$up/nope.yaml" --features "$up/new.yaml" --from 1.33 --to 1.34
usage "missing.yaml" $S --config "$up/missing.yaml"
usage "config-malformed.yaml" $S --config "$data/config-malformed.yaml"
# ---- Versions without a shipped list: exit 2, and why ----------------------
# What the lists folder ships ("1.32, 1.34", or "none"), as the tool lists it.
shipped=$(cd "$lists" && ls | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\)\.yaml$/\1/p' |
          sort -t. -k1,1n -k2,2n | paste -sd, - | sed 's/,/, /g')
[ -n "$shipped" ] || shipped=none
why="ckube ships a release's list only when it is, byte for byte, the file that Kubernetes release carries"
usage "no shipped Kubernetes feature list for 1.20 (shipped: $shipped)" --from 1.20 --to 1.21
has "$work/err" "$why"
has "$work/err" "README.md says which releases are not yet verified, and why)"
for v in 1.31 1.32 1.33 1.34; do
    if [ -f "$lists/$v.yaml" ]; then continue; fi
    usage "no shipped Kubernetes feature list for $v (shipped: $shipped)" --from "$v" --to "$v"
    has "$work/err" "$why"
done

# ---- NodeLogQuery's default, as Kubernetes has it -------------------------
# Kubernetes registers NodeLogQuery off (Alpha 1.27, Beta 1.30); OpenShift's
# copies of the lists turn it on. On Kubernetes' own list the check sees no
# change from 1.32 to 1.34 and eval gives false at both.
nlq() { # nlq LIST X.Y : NodeLogQuery's value at X.Y, from eval
    "$fg" eval --features "$1" --binary-version "$2" | grep -o '"NodeLogQuery":[a-z]*'
}
[ "$(nlq "$k8s" 1.32)" = '"NodeLogQuery":false' ] && pass || fail "NodeLogQuery at 1.32: $(nlq "$k8s" 1.32)"
[ "$(nlq "$k8s" 1.34)" = '"NodeLogQuery":false' ] && pass || fail "NodeLogQuery at 1.34: $(nlq "$k8s" 1.34)"
run 0 --previous "$k8s" --features "$k8s" --from 1.32 --to 1.34 -o json &&
    if grep -q NodeLogQuery "$work/out"; then fail "NodeLogQuery reported: $(cat "$work/out")"; else pass; fi
# A 1.32 list with OpenShift's change: the check would report the default
# flipping off at 1.34, the wrong answer the shipped lists must not give.
awk '/^- name: /{g = ($3 == "NodeLogQuery")} g && /default: false/{sub(/false/, "true")} {print}' \
    "$k8s" >"$work/fork.yaml"
run 0 --previous "$work/fork.yaml" --features "$k8s" --from 1.32 --to 1.34 -o json &&
    has "$work/out" '{"gate":"NodeLogQuery","reason":"DefaultChanged","message":"on at 1.32 (Beta, default true), off at 1.34 (Beta, default false)","source":"default","from":true,"to":false}'
# Without a shipped pair the tool answers nothing rather than a guess.
for v in 1.32 1.34; do
    if [ ! -f "$lists/$v.yaml" ]; then
        usage "no shipped Kubernetes feature list for $v" --from 1.32 --to 1.34
        break
    fi
done

summary "upgrade-check"
