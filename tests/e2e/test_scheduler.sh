#!/bin/sh
# test_scheduler.sh - the scheduler, simulated nodes and the node lifecycle controller
# with the real kubectl against a real `ckube server` and `ckube fake-nodes`: new nodes
# lose the not-ready taint they are created with once they are Ready; pods placed
# by node selector, required node affinity, taints and tolerations, and resources; an
# unschedulable pod with its PodScheduled condition and FailedScheduling event, scheduled
# once a node is labelled; a Deployment spread across nodes; cordon, drain (through
# pods/eviction) and uncordon; a node whose simulator stops goes Unknown, is tainted, its
# pods are evicted and replaced on other nodes, and it is untainted when it comes back;
# a higher-priority pod preempts a lower one, and one that may not preempt says why.
# Waits are `kubectl wait` (a watch) or bounded polls, never fixed sleeps.
#
# Usage: test_scheduler.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
fake_a="" fake_b=""
stop_fakes() {
    [ -n "$fake_a" ] && kill "$fake_a" 2>/dev/null && wait "$fake_a" 2>/dev/null
    [ -n "$fake_b" ] && kill "$fake_b" 2>/dev/null && wait "$fake_b" 2>/dev/null
}
trap 'stop_fakes; cleanup' EXIT
start_server --node-monitor-grace-period 5s
fakes() { # fakes PREFIX COUNT: starts simulated nodes, prints the pid
    "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" --count "$2" --prefix "$1" --cpu 2 \
        --memory 4Gi --renew-interval 1s >>"$work/fake-$1.out" 2>>"$work/fake-$1.err" &
    echo $!
}
# exists OBJECT: waits (10 s at most) until the object exists, as kubectl wait needs it to
exists() {
    i=0
    until k get "$1" >/dev/null 2>&1 || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
}
fake_a=$(fakes a- 3)
exists node/a-2
wait_for "node a-2 Ready" node/a-2 '{.status.conditions[?(@.type=="Ready")].status}=True'
# created with TaintNodesByCondition's not-ready:NoSchedule, which goes once Ready
i=0
until [ -z "$(k get nodes -o jsonpath='{.items[*].spec.taints[*].key}')" ] || [ $i -gt 50 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "Ready nodes lose the not-ready taint they were created with" \
    test -z "$(k get nodes -o jsonpath='{.items[*].spec.taints[*].key}')"
check "nodes have the fake labels" \
    test "$(k get nodes -l type=fake,kubernetes.io/os=linux -o name | wc -l)" -eq 3
check "a lease per node in kube-node-lease" \
    test "$(k get leases -n kube-node-lease -o jsonpath='{.items[*].spec.holderIdentity}')" = "a-0 a-1 a-2"
k label node a-0 disk=ssd >/dev/null
k label node a-1 zone=z1 >/dev/null
k taint node a-2 dedicated=gpu:NoSchedule >/dev/null

# pod NAME [SPEC-JSON-MEMBERS]: creates a pod with one container and those spec members
pod() {
    cat <<EOF2 | k create -f - >/dev/null
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "$1"},
 "spec": {"containers": [{"name": "c", "image": "nginx"}]${2:+, $2}}}
EOF2
}
node_of() { k get pod "$1" -o jsonpath='{.spec.nodeName}'; }
running() { wait_for "$1 Running" "pod/$1" '{.status.phase}=Running'; }
unschedulable() { # unschedulable POD MESSAGE-PART
    wait_for "$1 Unschedulable" "pod/$1" \
        '{.status.conditions[?(@.type=="PodScheduled")].reason}=Unschedulable'
    msg=$(k get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
    case $msg in
    *"$2"*) pass ;;
    *) fail "$1: condition message \"$msg\" lacks \"$2\"" ;;
    esac
}

pod by-selector '"nodeSelector": {"disk": "ssd"}'
running by-selector
check "node selector picks a-0" test "$(node_of by-selector)" = a-0
check "a pod IP from a-0's range" \
    sh -c "k() { kubectl \"\$@\"; }; k get pod by-selector -o jsonpath='{.status.podIP}' | grep -q '^10\.64\.0\.'"
pod by-affinity '"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
  {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}]}}}'
running by-affinity
check "required node affinity picks a-1" test "$(node_of by-affinity)" = a-1
pod tolerant '"nodeSelector": {"kubernetes.io/hostname": "a-2"},
  "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]'
running tolerant
check "a toleration lets a pod onto a-2" test "$(node_of tolerant)" = a-2
pod intolerant '"nodeSelector": {"kubernetes.io/hostname": "a-2"}'
unschedulable intolerant "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
pod greedy '"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "3"}}}]'
unschedulable greedy "2 Insufficient cpu"
check "a FailedScheduling event for greedy" sh -c \
    "kubectl get events --field-selector involvedObject.name=greedy,reason=FailedScheduling -o name | grep -q ."
check "a Scheduled event for by-selector" sh -c \
    "kubectl get events --field-selector involvedObject.name=by-selector,reason=Scheduled -o jsonpath='{.items[0].message}' | grep -q 'Successfully assigned default/by-selector to a-0'"

# unschedulable until a node gets the label
pod gold '"nodeSelector": {"tier": "gold"}'
unschedulable gold "didn't match Pod's node affinity/selector"
k label node a-1 tier=gold >/dev/null
running gold
check "the labelled node takes the waiting pod" test "$(node_of gold)" = a-1
k delete pod intolerant greedy --wait=false >/dev/null

# a Deployment spread over the two schedulable nodes
cat >"$work/web.yaml" <<EOF2
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
EOF2
k apply -f "$work/web.yaml" >/dev/null
wait_for "web available" deployment/web '{.status.availableReplicas}=6'
on_node() { k get pods -l app=web --field-selector "spec.nodeName=$1" -o name | wc -l; }
check "web spread evenly: 3 on a-0" test "$(on_node a-0)" -eq 3
check "web spread evenly: 3 on a-1" test "$(on_node a-1)" -eq 3

# cordon and drain a-0: its pods are evicted and replaced on a-1
k cordon a-0 >/dev/null
check "cordoned a-0 is SchedulingDisabled" sh -c "kubectl get node a-0 | grep -q SchedulingDisabled"
check "drain a-0" k drain a-0 --ignore-daemonsets --force --grace-period=1 --timeout=60s
wait_for "web available after the drain" deployment/web '{.status.availableReplicas}=6'
check "no web pod left on a-0" test "$(on_node a-0)" -eq 0
check "evicted by-selector is gone" sh -c "! kubectl get pod by-selector 2>/dev/null"
k uncordon a-0 >/dev/null
# pods/eviction directly: 201 with a Success Status, 404 for no pod, 400 for a wrong name
evict() { # evict POD NAME-IN-BODY: prints the HTTP code
    kurl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/$1/eviction" \
        -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$2\"},\"deleteOptions\":{\"gracePeriodSeconds\":0}}"
}
check "eviction of a missing pod is 404" test "$(evict nosuch nosuch)" = 404
check "eviction with another name is 400" test "$(evict gold other)" = 400
check "eviction is 201" test "$(evict gold gold)" = 201
i=0
until ! k get pod gold >/dev/null 2>&1 || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "the evicted pod is gone" sh -c "! kubectl get pod gold 2>/dev/null"

# a node that stops renewing its lease
k cordon a-0 >/dev/null
k cordon a-1 >/dev/null
fake_b=$(fakes b- 1)
exists node/b-0
wait_for "node b-0 Ready" node/b-0 '{.status.conditions[?(@.type=="Ready")].status}=True'
k scale deployment web --replicas=8 >/dev/null
wait_for "web available with b-0" deployment/web '{.status.availableReplicas}=8'
check "two web pods on b-0" test "$(on_node b-0)" -eq 2
k uncordon a-0 >/dev/null
k uncordon a-1 >/dev/null
kill "$fake_b" && wait "$fake_b" 2>/dev/null
fake_b=""
wait_for "b-0 goes Unknown" node/b-0 '{.status.conditions[?(@.type=="Ready")].status}=Unknown'
wait_for "b-0 gets the unreachable NoExecute taint" node/b-0 \
    '{.spec.taints[?(@.effect=="NoExecute")].key}=node.kubernetes.io/unreachable'
live_on_b0() {
    k get pods -l app=web --field-selector spec.nodeName=b-0 -o json | python3 -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin)["items"] if "deletionTimestamp" not in p["metadata"]))'
}
i=0
until [ "$(live_on_b0)" -eq 0 ] || [ $i -gt 60 ]; do i=$((i + 1)); sleep 0.5; done
check "no live web pod left on b-0" test "$(live_on_b0)" -eq 0
wait_for "web replaced its pods elsewhere" deployment/web '{.status.availableReplicas}=8'
check "web's pods all on a-0 and a-1" test "$(($(on_node a-0) + $(on_node a-1)))" -eq 8
check "a TaintManagerEviction event" sh -c \
    "kubectl get events --field-selector reason=TaintManagerEviction -o name | grep -q ."
fake_b=$(fakes b- 1)
wait_for "b-0 Ready again" node/b-0 '{.status.conditions[?(@.type=="Ready")].status}=True'
i=0
until [ -z "$(k get node b-0 -o jsonpath='{.spec.taints[*].key}')" ] || [ $i -gt 100 ]; do
    i=$((i + 1)); sleep 0.2
done
check "b-0 untainted once back" test -z "$(k get node b-0 -o jsonpath='{.spec.taints[*].key}')"

# preemption: a pod of a higher priority evicts a lower one from the only node that fits
k cordon a-0 >/dev/null
k cordon a-1 >/dev/null
k create priorityclass high --value=1000 >/dev/null
pod low '"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1500m"}}}]'
running low
check "low runs on b-0" test "$(node_of low)" = b-0
low_uid=$(k get pod low -o jsonpath='{.metadata.uid}')
pod vip '"priorityClassName": "high",
  "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1500m"}}}]'
running vip
check "vip runs on b-0 in low's place" test "$(node_of vip)" = b-0
check "vip was nominated to b-0" \
    test "$(k get pod vip -o jsonpath='{.status.nominatedNodeName}')" = b-0
i=0
until ! k get pod low >/dev/null 2>&1 || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "low was deleted" sh -c "! kubectl get pod low 2>/dev/null"
vip_uid=$(k get pod vip -o jsonpath='{.metadata.uid}')
check "a Preempted event on low names vip and the node" sh -c \
    "kubectl get events --field-selector involvedObject.uid=$low_uid,reason=Preempted \
        -o jsonpath='{.items[0].message}' | grep -qx 'Preempted by pod $vip_uid on node b-0'"
# a pod that may not preempt waits, and says why
k create priorityclass high-polite --value=1000 --preemption-policy=Never >/dev/null
pod polite '"priorityClassName": "high-polite",
  "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1500m"}}}]'
unschedulable polite "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) were unschedulable. not eligible due to preemptionPolicy=Never."
k delete pod vip polite --wait=false >/dev/null
k uncordon a-0 >/dev/null
k uncordon a-1 >/dev/null

# the simulator survives a restart of the server
stop_server
start_server --node-monitor-grace-period 5s
pod after-restart
running after-restart
finish
