#!/bin/sh
# test_kubectl_gates.sh - feature-gated API fields with the real kubectl,
# across restarts of `ckube server` on the same store with different
# --feature-gates: the Frobber example (spec.width behind Frobber2D,
# restartPolicy OnTuesday behind FrobberRestartPolicyOnTuesday) and pods'
# spec.resources behind PodLevelResources.
#
# Usage: test_kubectl_gates.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
on=Frobber2D=true,FrobberRestartPolicyOnTuesday=true,PodLevelResources=true
off=Frobber2D=false,FrobberRestartPolicyOnTuesday=false,PodLevelResources=false
field() { kubectl get frobber "$1" -o "jsonpath=$2"; } # field NAME JSONPATH

# --- the gates on: the fields are taken ---
start_server --feature-gates=$on
k create -f "$data/frobber.yaml" >"$work/out" 2>&1
check "create with the gates on" grep -q "frobber.example.ckube.io/tall created" "$work/out"
check "width kept with the gate on" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.width})" = 3 ]'
check "OnTuesday accepted with the gate on" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.restartPolicy})" = OnTuesday ]'
k get frobbers >"$work/out" 2>&1
check "get frobbers prints the Table" grep -Eq "^tall +2 +3 +OnTuesday " "$work/out"
sed 's/name: web-1/name: plr/; s/^spec:/spec:\n  resources:\n    limits:\n      cpu: "1"/' "$data/pod.yaml" | k create -f - >/dev/null
check "pod-level resources kept with the gate on" sh -c '[ "$(kubectl get pod plr -o jsonpath={.spec.resources.limits.cpu})" = 1 ]'
stop_server

# --- restarted with the gates off: what is in use survives, nothing new gets in ---
start_server --feature-gates=$off
check "width survives the restart" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.width})" = 3 ]'
sed 's/height: 2/height: 5/' "$data/frobber.yaml" | k apply -f - >"$work/out" 2>&1
check "apply of a changed manifest" grep -q "frobber.example.ckube.io/tall configured" "$work/out"
check "the update took the new height" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.height})" = 5 ]'
check "width survives an update with the gate off" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.width})" = 3 ]'
check "OnTuesday survives an update with the gate off" sh -c '[ "$(kubectl get frobber tall -o jsonpath={.spec.restartPolicy})" = OnTuesday ]'
k label pod plr x=y >/dev/null
check "pod-level resources survive an update with the gate off" sh -c '[ "$(kubectl get pod plr -o jsonpath={.spec.resources.limits.cpu})" = 1 ]'
sed 's/name: tall/name: flat/' "$data/frobber.yaml" | sed '/restartPolicy/d' | k create -f - >/dev/null 2>&1
check "a new object loses width with the gate off" sh -c '[ -z "$(kubectl get frobber flat -o jsonpath={.spec.width})" ]'
sed 's/name: tall/name: tuesday/' "$data/frobber.yaml" | k create -f - >"$work/out" 2>&1
check "OnTuesday refused on create with the gate off" grep -q 'spec.restartPolicy: Unsupported value: "OnTuesday": supported values: "Always", "Never"' "$work/out"
k patch frobber flat --type merge -p '{"spec":{"width":8}}' >/dev/null 2>&1
check "an update cannot add width with the gate off" sh -c '[ -z "$(kubectl get frobber flat -o jsonpath={.spec.width})" ]'
stop_server

# --- on again: the same update now takes ---
start_server --feature-gates=$on
k patch frobber flat --type merge -p '{"spec":{"width":8}}' >/dev/null 2>&1
check "an update adds width with the gate on" sh -c '[ "$(kubectl get frobber flat -o jsonpath={.spec.width})" = 8 ]'
k explain frobber.spec.width >"$work/out" 2>&1
check "explain names the gate" grep -q "Frobber2D" "$work/out"
stop_server

"$ckube" server --disable-agent --disable-dns --feature-gates=Nope=true --data-dir "$work/bad" >"$work/out" 2>&1
check "an unknown gate is a usage error" grep -q 'unrecognized feature gate: Nope' "$work/out"

finish
