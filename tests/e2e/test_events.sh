#!/bin/sh
# test_events.sh - Events with the real kubectl against a real `ckube server`: the
# ReplicaSet controller's SuccessfulCreate and SuccessfulDelete events, as `kubectl
# describe rs`, `kubectl get events --field-selector involvedObject.*` and `kubectl
# events --for` show them; then the event TTL: restarted with `--event-ttl 3s`, the
# server removes every event once it is three seconds past its last activity. Events
# about a Deployment and a pod, written by the test, show in `kubectl describe` and
# `kubectl events --for` too (no controller records them yet). Pods are
# made Ready through pods/status by the test (there is no node agent). Events are
# written asynchronously, so their checks poll (at most 30 s) instead of watching.
#
# Usage: test_events.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

# eventually DESCRIPTION COMMAND...: the command succeeds within 30 s
eventually() {
    desc=$1; shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 150 ]; then fail "$desc"; return; fi
        sleep 0.2
    done
    pass
}
# count_lines PATTERN COMMAND...: how many lines of the command's output match
count_lines() {
    pattern=$1; shift
    "$@" 2>/dev/null | grep -c -- "$pattern"
}


# --- SuccessfulCreate: one event per pod, on the ReplicaSet ---
check "create the ReplicaSet" sh -c "kubectl create -f '$data/replicaset.yaml' >/dev/null"
wait_for "status.replicas reaches 3" rs/web '{.status.replicas}=3'
for p in $(k get pods -l app=web -o jsonpath='{.items[*].metadata.name}'); do mark_ready "$p"; done
wait_for "readyReplicas reaches 3" rs/web '{.status.readyReplicas}=3'
uid=$(k get rs web -o jsonpath='{.metadata.uid}')
has_creates() { [ "$(count_lines SuccessfulCreate k get events --field-selector involvedObject.kind=ReplicaSet)" -eq 3 ]; }
eventually "three SuccessfulCreate events on the ReplicaSet" has_creates
k get events --field-selector involvedObject.kind=ReplicaSet >"$work/events.txt"
check "kubectl get events shows OBJECT replicaset/web and the pod names" sh -c "
    grep -E 'Normal +SuccessfulCreate +replicaset/web +Created pod: web-' '$work/events.txt' | grep -c . | grep -qx 3"
for p in $(k get pods -l app=web -o jsonpath='{.items[*].metadata.name}'); do
    check "an event names pod $p" grep -q "Created pod: $p\$" "$work/events.txt"
done
check "field selectors on the involved object's name, uid and namespace" sh -c "
    kubectl get events --field-selector 'involvedObject.name=web,involvedObject.uid=$uid,involvedObject.namespace=default' -o name | grep -c . | grep -qx 3"
check "a field selector that matches nothing" sh -c "
    kubectl get events --field-selector involvedObject.kind=Deployment 2>&1 | grep -q 'No resources found'"
k get events --field-selector reason=SuccessfulCreate -o json >"$work/events.json"
check "events carry source, reportingComponent, timestamps, count and the object's resourceVersion" python3 -c '
import json, sys
uid = sys.argv[2]
items = json.load(open(sys.argv[1]))["items"]
assert len(items) == 3, len(items)
for e in items:
    o = e["involvedObject"]
    assert o["kind"] == "ReplicaSet" and o["apiVersion"] == "apps/v1" and o["uid"] == uid, o
    assert o["name"] == "web" and o["namespace"] == "default" and o["resourceVersion"], o
    assert e["source"]["component"] == "replicaset-controller", e
    assert e["reportingComponent"] == "replicaset-controller", e
    assert e["type"] == "Normal" and e["count"] == 1, e
    assert e["firstTimestamp"] and e["firstTimestamp"] == e["lastTimestamp"], e
    assert e["metadata"]["name"].startswith("web."), e
' "$work/events.json" "$uid"
k describe rs web >"$work/describe.txt" 2>&1
check "kubectl describe rs lists the events" sh -c "
    grep -q '^Events:' '$work/describe.txt' &&
    grep -E 'Normal +SuccessfulCreate +.* replicaset-controller +Created pod: web-' '$work/describe.txt' | grep -c . | grep -qx 3"
k events --for replicaset/web >"$work/kevents.txt" 2>&1
check "kubectl events --for replicaset/web" sh -c "
    grep -E 'Normal +SuccessfulCreate +ReplicaSet/web +Created pod: web-' '$work/kevents.txt' | grep -c . | grep -qx 3"

# --- SuccessfulDelete ---
k scale rs web --replicas=1 >/dev/null 2>&1 || fail "scale to 1"
wait_for "replicas drops to 1" rs/web '{.status.replicas}=1'
has_deletes() { [ "$(count_lines SuccessfulDelete k describe rs web)" -eq 2 ]; }
eventually "kubectl describe rs shows two SuccessfulDelete events" has_deletes
k describe rs web >"$work/describe2.txt" 2>&1
check "the delete events name the pods" sh -c "
    grep -E 'Normal +SuccessfulDelete +.*Deleted pod: web-' '$work/describe2.txt' | grep -c . | grep -qx 2"
check "kubectl events --for replicaset/web shows the deletes" sh -c "
    kubectl events --for replicaset/web | grep -c SuccessfulDelete | grep -qx 2"

# --- events about a Deployment and a pod (as the deployment controller and the
# scheduler will record them), written by hand: describe and `kubectl events` ---
# write_event NAME KIND APIVERSION OBJECT UID REASON MESSAGE [COMPONENT]
write_event() {
    ts=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    cat >"$work/event.yaml" <<YAML
apiVersion: v1
kind: Event
metadata:
  name: $1
involvedObject: {kind: $2, apiVersion: $3, name: $4, namespace: default, uid: "$5"}
reason: $6
message: "$7"
type: Normal
source: {component: ${8:-test}}
reportingComponent: ${8:-test}
firstTimestamp: "$ts"
lastTimestamp: "$ts"
count: 1
YAML
    k create -f "$work/event.yaml" >/dev/null
}
cat >"$work/deploy.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: site
spec:
  replicas: 3
  selector:
    matchLabels: {app: site}
  template:
    metadata:
      labels: {app: site}
    spec:
      containers:
      - name: nginx
        image: nginx
YAML
check "create a Deployment" sh -c "kubectl create -f '$work/deploy.yaml' >/dev/null"
duid=$(k get deployment site -o jsonpath='{.metadata.uid}')
check "an event on the Deployment" write_event site.1 Deployment apps/v1 site "$duid" \
    ScalingReplicaSet "Scaled up replica set site-7d4b9c from 0 to 3" deployment-controller
check "kubectl describe deployment shows it" sh -c "kubectl describe deployment site |
    grep -Eq 'Normal +ScalingReplicaSet +.* deployment-controller +Scaled up replica set site-7d4b9c from 0 to 3'"
check "kubectl events --for deployment/site shows it" sh -c "kubectl events --for deployment/site |
    grep -Eq 'ScalingReplicaSet +Deployment/site +Scaled up replica set site-7d4b9c from 0 to 3'"
pod=$(k get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
puid=$(k get pod "$pod" -o jsonpath='{.metadata.uid}')
check "an event on a pod" write_event "$pod.1" Pod v1 "$pod" "$puid" Scheduled \
    "Successfully assigned default/$pod to node-1" default-scheduler
check "kubectl describe pod shows it" sh -c "kubectl describe pod '$pod' |
    grep -Eq 'Normal +Scheduled +.* default-scheduler +Successfully assigned default/$pod to node-1'"

# --- the event TTL: restarted with --event-ttl 3s ---
stop_server
start_server --event-ttl 3s
check "create an event by hand" write_event manual.1 ReplicaSet apps/v1 web "$uid" Manual \
    "written by the test"
check "the new event is there at once" sh -c "kubectl get event manual.1 -o name >/dev/null"
no_events() { [ "$(k get events -o name | grep -c .)" -eq 0 ]; }
eventually "every event is gone after its TTL" no_events
check "the controller's events are gone from describe" sh -c "
    ! kubectl describe rs web | grep -q SuccessfulCreate"
check "the ReplicaSet itself stays" sh -c "kubectl get rs web -o name | grep -qx replicaset.apps/web"

echo "test_events:"
finish
