#!/bin/sh
# test_replicaset.sh - the ReplicaSet controller driven with the real kubectl against a
# real `ckube server`: replicas 5 gives five owned pods; a deleted pod is replaced; a
# relabeled pod is released and replaced; a matching orphan is adopted; scale to 0 and
# back. Pods are marked Running/Ready through the status subresource by the test, as
# there is no node agent yet. Waits are `kubectl wait` (a watch), never sleeps.
#
# Usage: test_replicaset.sh PATH/TO/ckube inprocess|separate
#   inprocess: the controllers run inside `ckube server` (the default);
#   separate:  `ckube server --controllers=-replicaset` plus a separate
#              `ckube controller-manager --kubeconfig FILE` process.
set -u
mode=${2:-inprocess}
# lib.sh's server takes an optional store URL as $2: ours is the mode
set -- "$1"
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
cm_pid=""
stop_cm() { [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null && wait "$cm_pid" 2>/dev/null; }
trap 'stop_cm; cleanup' EXIT
if [ "$mode" = separate ]; then
    start_server --controllers=-replicaset
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" >"$work/cm.out" 2>"$work/cm.err" &
    cm_pid=$!
else
    start_server
fi
rs_uid() { k get rs web -o jsonpath='{.metadata.uid}'; }
# names of the live pods controlled by the ReplicaSet web
owned() {
    k get pods -o json | python3 -c '
import json, sys
uid = sys.argv[1]
for p in json.load(sys.stdin)["items"]:
    refs = [r for r in p["metadata"].get("ownerReferences", []) if r.get("controller")]
    if refs and refs[0]["uid"] == uid and "deletionTimestamp" not in p["metadata"]:
        print(p["metadata"]["name"])' "$(rs_uid)"
}

cat >"$work/rs.yaml" <<EOF
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx
EOF

# --- replicas 5: five owned pods ---
check "create the ReplicaSet" sh -c "kubectl create -f '$work/rs.yaml' >/dev/null"
wait_for "status.replicas reaches 5" rs/web '{.status.replicas}=5'
owned >"$work/pods"
check "five owned pods listed" sh -c "[ \$(grep -c . '$work/pods') -eq 5 ]"
first=$(head -n1 "$work/pods")
check "pods are named from generateName" sh -c "grep -q '^web-' '$work/pods'"
k get pod "$first" -o json >"$work/pod.json"
check "ownerReference is controller and blocks owner deletion" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["metadata"]["ownerReferences"][0]
assert r["kind"] == "ReplicaSet" and r["name"] == "web" and r["controller"] and r["blockOwnerDeletion"]
' "$work/pod.json"
for p in $(cat "$work/pods"); do mark_ready "$p"; done
wait_for "readyReplicas reaches 5" rs/web '{.status.readyReplicas}=5'
wait_for "availableReplicas reaches 5" rs/web '{.status.availableReplicas}=5'
check "kubectl get rs shows READY 5" sh -c "kubectl get rs web --no-headers | grep -Eq '^web +5 +5 +5 '"

# --- delete a pod: replaced ---
check "delete a pod" sh -c "kubectl delete pod '$first' --wait=false >/dev/null"
wait_for "readyReplicas drops to 4" rs/web '{.status.readyReplicas}=4'
wait_for "replicas back at 5" rs/web '{.status.replicas}=5'
owned >"$work/pods2"
check "deleted pod is not owned any more" sh -c "! grep -qx '$first' '$work/pods2'"
check "five owned pods after the deletion" sh -c "[ \$(grep -c . '$work/pods2') -eq 5 ]"

# --- relabel a pod: released and replaced ---
second=$(sed -n 2p "$work/pods")
# kubectl label where the server has PATCH, else a replace with the new label
relabel() {
    k label pod "$1" app=elsewhere --overwrite >/dev/null 2>&1 && return 0
    k get pod "$1" -o json | python3 -c '
import json, sys
d = json.load(sys.stdin); d["metadata"]["labels"]["app"] = "elsewhere"; print(json.dumps(d))' |
        k replace -f - >/dev/null
}
check "relabel a pod" relabel "$second"
wait_for "readyReplicas drops to 3" rs/web '{.status.readyReplicas}=3'
check "relabeled pod released" sh -c "[ -z \"\$(kubectl get pod '$second' -o jsonpath='{.metadata.ownerReferences}')\" ]"
wait_for "replicas back at 5 after the release" rs/web '{.status.replicas}=5'

# --- a matching orphan: adopted (then one surplus not-ready pod goes) ---
check "create an orphan" sh -c "kubectl run stray --image=nginx --labels=app=web >/dev/null"
wait_for "the orphan is adopted or deleted as surplus" rs/web '{.status.replicas}=5'
owned >"$work/pods3"
check "five owned pods after the adoption" sh -c "[ \$(grep -c . '$work/pods3') -eq 5 ]"
ready_kept=0
for p in $(sed -n '3,5p' "$work/pods"); do grep -qx "$p" "$work/pods3" && ready_kept=$((ready_kept + 1)); done
check "ready pods are kept, a not-ready one is deleted" [ "$ready_kept" -eq 3 ]
# one read: the stray pod may be the surplus one deleted at any moment
if stray_owner=$(k get pod stray -o jsonpath='{.metadata.ownerReferences[0].name}' 2>/dev/null); then
    check "stray pod controlled by web" [ "$stray_owner" = web ]
fi

# --- scale to 0 and back ---
# kubectl scale where the server has the scale subresource, else a replace of spec.replicas
set_replicas() {
    k scale rs web --replicas="$1" >/dev/null 2>&1 && return 0
    k get rs web -o json | python3 -c '
import json, sys
d = json.load(sys.stdin); d["spec"]["replicas"] = int(sys.argv[1]); print(json.dumps(d))' "$1" |
        k replace -f - >/dev/null
}
check "scale to 0" set_replicas 0
wait_for "replicas 0" rs/web '{.status.replicas}=0'
owned >"$work/pods0"
check "no owned pods at 0" sh -c "[ \$(grep -c . '$work/pods0') -eq 0 ]"
check "scale back to 3" set_replicas 3
wait_for "replicas back to 3" rs/web '{.status.replicas}=3'
owned >"$work/pods4"
check "three owned pods" sh -c "[ \$(grep -c . '$work/pods4') -eq 3 ]"

echo "test_replicaset ($mode):"
[ "$failures" -ne 0 ] && [ -n "$cm_pid" ] && { echo "--- controller-manager log"; tail -20 "$work/cm.err"; }
finish
