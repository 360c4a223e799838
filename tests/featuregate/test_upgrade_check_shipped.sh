#!/bin/sh
# test_upgrade_check_shipped.sh - `featuregate upgrade-check` end to end on
# the Kubernetes lists ckube ships, found without --previous/--features:
# NodeLogQuery off at 1.32 and 1.34 as Kubernetes has it, a removed gate and
# a locked one blocking, a default that changes, a downgrade, and lint on both
# lists. It needs the shipped 1.32 and 1.34 lists; while either is missing it
# exits 77 (skipped) and says so.
# Usage: test_upgrade_check_shipped.sh PATH/TO/featuregate LISTS_DIR
set -u
fg=$1
lists=$2
. "$(dirname "$0")/cli_lib.sh"

# What the lists folder ships ("1.32, 1.34", or "none"), as the tool lists it.
shipped=$(cd "$lists" && ls | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\)\.yaml$/\1/p' |
          sort -t. -k1,1n -k2,2n | paste -sd, - | sed 's/,/, /g')
[ -n "$shipped" ] || shipped=none
if [ ! -f "$lists/1.32.yaml" ] || [ ! -f "$lists/1.34.yaml" ]; then
    echo "skip: upgrade-check on the shipped lists needs both 1.32 and 1.34 (shipped: $shipped; the README.md beside the lists says why)"
    exit 77
fi

nlq() { # nlq LIST X.Y : NodeLogQuery's value at X.Y, from eval
    "$fg" eval --features "$1" --binary-version "$2" | grep -o '"NodeLogQuery":[a-z]*'
}

[ "$(nlq "$lists/1.32.yaml" 1.32)" = '"NodeLogQuery":false' ] && pass || fail "shipped 1.32: $(nlq "$lists/1.32.yaml" 1.32)"
[ "$(nlq "$lists/1.34.yaml" 1.34)" = '"NodeLogQuery":false' ] && pass || fail "shipped 1.34: $(nlq "$lists/1.34.yaml" 1.34)"
run 0 --from 1.32 --to 1.34 -o json &&
    if grep -q NodeLogQuery "$work/out"; then fail "NodeLogQuery reported: $(cat "$work/out")"; else pass; fi
cat >"$work/kubelet.yaml" <<'EOF'
kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
featureGates:
  CPUManager: true
  ConsistentListFromCache: false
  NodeSwap: true
EOF
run 1 --from 1.32 --to 1.34 --config "$work/kubelet.yaml" -o json && {
    # CPUManager (GA, locked since 1.26) is gone from the 1.34 list.
    has "$work/out" "{\"gate\":\"CPUManager\",\"reason\":\"Removed\",\"message\":\"unrecognized feature gate: CPUManager (1.32 knows it: GA, locked to true)\",\"source\":\"$work/kubelet.yaml\"}"
    # ConsistentListFromCache: Beta in 1.32, GA and locked to true in 1.34.
    has "$work/out" '"gate":"ConsistentListFromCache","reason":"Locked","message":"cannot set feature gate ConsistentListFromCache to false, feature is locked to true (locked since 1.34)"'
    # NodeSwap: GA locked in 1.34, set to its locked value: a removal warning.
    has "$work/out" '"gate":"NodeSwap","reason":"WillBeRemoved"'
    # DynamicResourceAllocation: Beta off in 1.32, GA on in 1.34.
    has "$work/out" '{"gate":"DynamicResourceAllocation","reason":"DefaultChanged","message":"off at 1.32 (Beta, default false), on at 1.34 (GA, default true)","source":"default","from":false,"to":true}'
}
# The same setting that blocks at 1.34 is fine at 1.32 (a downgrade to it).
run 0 --from 1.34 --to 1.32 --feature-gates ConsistentListFromCache=false && {
    has "$work/out" "Feature gates, downgrade 1.34 -> 1.32"
    has "$work/out" "Blocking (the component will not start at 1.32): none"
}
# 1.34's list lints clean; the 1.32 one breaks only rules added in 1.33 (and
# the alpha-default policy that exempts WindowsHostNetwork).
"$fg" lint --features "$lists/1.34.yaml" >"$work/lint" 2>&1 && pass || fail "lint 1.34: $(head -3 "$work/lint")"
"$fg" lint --features "$lists/1.32.yaml" >"$work/lint" 2>&1
if grep -v -e "introduced as deprecated must provide a 1.0 entry" -e "WindowsHostNetwork: alpha" "$work/lint" | grep -q .; then
    fail "lint 1.32: $(head -3 "$work/lint")"
else
    pass
fi

summary "upgrade-check on the shipped lists"
