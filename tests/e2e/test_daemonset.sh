#!/bin/sh
# test_daemonset.sh - the DaemonSet controller with the real kubectl against a real
# `ckube server` and `ckube fake-nodes` (nodes, and pods Running and Ready): a DaemonSet
# runs one pod on each node its selector picks, placed by the scheduler through the
# matchFields affinity the controller writes; it follows node labels appearing and going
# and a NoExecute taint; an image change rolls out (`kubectl rollout status ds`),
# `kubectl rollout history ds` lists the ControllerRevisions and `kubectl rollout undo ds`
# takes the previous template back; OnDelete leaves pods until they are deleted; deleting
# the DaemonSet deletes its pods. Waits are `kubectl wait` (a watch) or bounded polls.
#
# Usage: test_daemonset.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server
start_fake_nodes --count 3 --prefix n- --cpu 4 --memory 8Gi --renew-interval 1s
# nodes_of: the nodes of the DaemonSet's pods not being deleted, sorted, space-separated
nodes_of() {
    k get pods -l app=agent -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
print(" ".join(sorted(p["spec"].get("nodeName", "-") for p in pods if not p["metadata"].get("deletionTimestamp"))))'
}
# images_of: the distinct images of the DaemonSet's live pods
images_of() {
    k get pods -l app=agent -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
print(" ".join(sorted({p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")})))'
}
nodes_are() { [ "$(nodes_of)" = "$1" ]; }
images_are() { [ "$(images_of)" = "$1" ]; }
poll "node n-2 registered" k get node/n-2
wait_for "node n-2 Ready" node/n-2 '{.status.conditions[?(@.type=="Ready")].status}=True'
check "label two nodes" sh -c "kubectl label node n-0 n-1 role=agent >/dev/null"

cat >"$work/ds.yaml" <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {role: agent}
      terminationGracePeriodSeconds: 1 # fake nodes keep a deleted pod this long
      containers: [{name: a, image: "agent:1"}]
YAML
check "apply a DaemonSet" sh -c "kubectl apply -f '$work/ds.yaml' >/dev/null"

# --- one pod per selected node, placed by the scheduler ---
wait_for "two desired" ds/agent '{.status.desiredNumberScheduled}=2'
wait_for "two available" ds/agent '{.status.numberAvailable}=2'
check "the pods are on the labelled nodes" test "$(nodes_of)" = "n-0 n-1"
pod=$(k get pods -l app=agent -o jsonpath='{.items[0].metadata.name}')
check "the pod carries the matchFields affinity for its node" test \
    "$(k get pod "$pod" -o jsonpath='{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}')" = \
    "$(k get pod "$pod" -o jsonpath='{.spec.nodeName}')"
check "the pod tolerates not-ready nodes" sh -c \
    "kubectl get pod '$pod' -o jsonpath='{.spec.tolerations[*].key}' | grep -q 'node.kubernetes.io/not-ready'"
check "the pod has the template generation" \
    test "$(k get pod "$pod" -o jsonpath='{.metadata.labels.pod-template-generation}')" = 1
check "the DaemonSet has the template generation annotation" \
    test "$(k get ds agent -o jsonpath='{.metadata.annotations.deprecated\.daemonset\.template\.generation}')" = 1
check "the pod has the revision hash" \
    test -n "$(k get pod "$pod" -o jsonpath='{.metadata.labels.controller-revision-hash}')"
check "the pod is owned by the DaemonSet" \
    test "$(k get pod "$pod" -o jsonpath='{.metadata.ownerReferences[0].kind}')" = DaemonSet
check "kubectl get ds columns" sh -c \
    "kubectl get ds agent --no-headers | grep -q '^agent *2 *2 *2 *2 *2 *role=agent '"

# --- nodes: a new label, a label gone, a NoExecute taint ---
check "label the third node" sh -c "kubectl label node n-2 role=agent >/dev/null"
wait_for "three available" ds/agent '{.status.numberAvailable}=3'
check "a pod on each node" test "$(nodes_of)" = "n-0 n-1 n-2"
check "unlabel the first node" sh -c "kubectl label node n-0 role- >/dev/null"
wait_for "two desired again" ds/agent '{.status.desiredNumberScheduled}=2'
poll "the first node's pod is gone" nodes_are "n-1 n-2"
check "taint n-1 NoExecute" sh -c "kubectl taint node n-1 dedicated=db:NoExecute >/dev/null"
poll "the tainted node's pod is gone" nodes_are n-2
wait_for "one desired" ds/agent '{.status.desiredNumberScheduled}=1'
check "untaint n-1, label n-0" sh -c \
    "kubectl taint node n-1 dedicated- >/dev/null && kubectl label node n-0 role=agent >/dev/null"
wait_for "three available again" ds/agent '{.status.numberAvailable}=3'

# --- a rolling update, history and undo ---
check "rollout status of the settled DaemonSet" sh -c \
    "kubectl rollout status ds/agent --timeout=60s >/dev/null"
check "set a new image" sh -c "kubectl set image ds/agent a=agent:2 >/dev/null"
check "kubectl rollout status ds waits for the rollout" sh -c \
    "kubectl rollout status ds/agent --timeout=120s >'$work/rollout.out' 2>&1"
grep -q 'daemon set "agent" successfully rolled out' "$work/rollout.out" && pass ||
    fail "rollout status message: $(cat "$work/rollout.out")"
poll "every pod runs the new image" images_are agent:2
check "three updated" test "$(k get ds agent -o jsonpath='{.status.updatedNumberScheduled}')" = 3
check "the new pods have template generation 2" sh -c \
    "[ \"\$(kubectl get pods -l app=agent -o jsonpath='{.items[*].metadata.labels.pod-template-generation}' | tr ' ' '\n' | sort -u)\" = 2 ]"
check "two ControllerRevisions owned by the DaemonSet" \
    test "$(k get controllerrevisions -l app=agent -o jsonpath='{.items[*].revision}' | tr ' ' '\n' | sort | tr '\n' ' ')" = "1 2 "
k rollout history ds/agent >"$work/history.out" 2>&1
check "kubectl rollout history ds lists both revisions" sh -c \
    "grep -q '^1 ' '$work/history.out' && grep -q '^2 ' '$work/history.out'"
k rollout history ds/agent --revision=1 >"$work/rev1.out" 2>&1
check "kubectl rollout history ds --revision=1 shows the old image" grep -q 'agent:1' "$work/rev1.out"
check "kubectl rollout undo ds" sh -c "kubectl rollout undo ds/agent >'$work/undo.out' 2>&1"
grep -q 'rolled back' "$work/undo.out" && pass || fail "undo message: $(cat "$work/undo.out")"
check "the template is the old one" \
    test "$(k get ds agent -o jsonpath='{.spec.template.spec.containers[0].image}')" = agent:1
check "kubectl rollout status after undo" sh -c \
    "kubectl rollout status ds/agent --timeout=120s >/dev/null 2>&1"
poll "every pod runs the old image again" images_are agent:1
check "the old revision became revision 3" \
    test "$(k get controllerrevisions -l app=agent -o jsonpath='{.items[*].revision}' | tr ' ' '\n' | sort | tr '\n' ' ')" = "2 3 "

# --- OnDelete ---
check "switch to OnDelete with a new image" sh -c \
    "kubectl patch ds agent --type=merge -p '{\"spec\":{\"updateStrategy\":{\"type\":\"OnDelete\",\"rollingUpdate\":null},\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"agent:3\"}]}}}}' >/dev/null"
wait_for "the change is observed" ds/agent '{.status.observedGeneration}='"$(k get ds agent -o jsonpath='{.metadata.generation}')"
sleep 2
check "OnDelete leaves the old pods" test "$(images_of)" = "agent:1"
check "delete one pod" sh -c "kubectl delete pod -l app=agent --field-selector spec.nodeName=n-2 --wait=false >/dev/null"
poll "the replacement runs the new image" sh -c \
    "kubectl get pods -l app=agent --field-selector spec.nodeName=n-2 -o jsonpath='{.items[*].spec.containers[0].image}' | grep -qx 'agent:3'"
check "one updated" sh -c "[ \"\$(kubectl get ds agent -o jsonpath='{.status.updatedNumberScheduled}')\" = 1 ]"

# --- deleting the DaemonSet deletes its pods ---
check "delete the DaemonSet" sh -c "kubectl delete ds agent --wait=false >/dev/null"
poll "its pods are gone" sh -c '[ -z "$(kubectl get pods -l app=agent -o name)" ]'
finish
