#!/bin/sh
# test_events_flowcontrol.sh - two API groups with the real kubectl against a real
# `ckube server`: events.k8s.io/v1 Event, the same objects as core/v1 Event (a core
# event read through events.k8s.io and an events.k8s.io event read through core,
# `kubectl events`, the strict rules of an events.k8s.io write); and
# flowcontrol.apiserver.k8s.io/v1, with the bootstrap FlowSchemas and
# PriorityLevelConfigurations the server keeps as kube-apiserver does: listed with
# kubectl's columns, a mandatory object deleted or changed is put back, a suggested one
# is put back only while its apf.kubernetes.io/autoupdate-spec annotation says "true",
# and a bad FlowSchema gets Kubernetes' errors. The server's keeper runs every 10 s, so
# the checks that wait for it poll (at most 60 s).
#
# Usage: test_events_flowcontrol.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

# --- events: one store, two representations ---
cat >"$work/core-event.yaml" <<'YAML'
apiVersion: v1
kind: Event
metadata:
  name: web.1
  namespace: default
involvedObject: {kind: Pod, name: web, namespace: default, apiVersion: v1}
reason: Pulled
message: Container image pulled
source: {component: kubelet, host: node-1}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:01:00Z"
count: 3
type: Normal
YAML
check "create a core/v1 Event" sh -c "kubectl create -f '$work/core-event.yaml' >/dev/null"
k get events.v1.events.k8s.io web.1 -o json >"$work/ev1.json" 2>&1
check "the core event reads as events.k8s.io/v1 ($(head -c 300 "$work/ev1.json"))" python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
assert e["apiVersion"] == "events.k8s.io/v1", e
assert e["note"] == "Container image pulled" and e["regarding"]["name"] == "web", e
assert e["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}, e
assert e["deprecatedCount"] == 3 and e["deprecatedLastTimestamp"] == "2026-01-01T00:01:00Z", e
for gone in ("message", "involvedObject", "source", "count", "firstTimestamp"):
    assert gone not in e, gone
' "$work/ev1.json"
k get events.v1.events.k8s.io >"$work/ev1.txt" 2>&1
check "kubectl get events.v1.events.k8s.io prints kubectl's event columns" sh -c "
    grep -Eq '^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE\$' '$work/ev1.txt' &&
    grep -Eq ' +Normal +Pulled +pod/web +Container image pulled\$' '$work/ev1.txt'"

cat >"$work/v1-event.yaml" <<'YAML'
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: web.2
  namespace: default
eventTime: "2026-12-07T10:00:00.000000Z"
regarding: {kind: Pod, name: web, namespace: default, apiVersion: v1}
reportingController: example.com/prober
reportingInstance: prober-1
action: Probing
reason: Unhealthy
note: Readiness probe failed
type: Warning
YAML
check "create an events.k8s.io/v1 Event" sh -c "kubectl create -f '$work/v1-event.yaml' >/dev/null"
check "it reads back through core/v1 as involvedObject, message and reportingComponent" sh -c "
    [ \"\$(kubectl get events.v1. web.2 -o jsonpath='{.apiVersion} {.involvedObject.name} {.message} {.reportingComponent}')\" = \
      'v1 web Readiness probe failed example.com/prober' ]"
check "and through events.k8s.io/v1 as written" sh -c "
    [ \"\$(kubectl get events.v1.events.k8s.io web.2 -o jsonpath='{.note}|{.reportingController}|{.action}')\" = \
      'Readiness probe failed|example.com/prober|Probing' ]"
k events >"$work/kevents.txt" 2>&1
check "kubectl events lists both ($(cat "$work/kevents.txt"))" sh -c "
    grep -Eq 'Normal +Pulled +Pod/web +Container image pulled' '$work/kevents.txt' &&
    grep -Eq 'Warning +Unhealthy +Pod/web +Readiness probe failed' '$work/kevents.txt'"
sed -e 's/name: web.2/name: web.3/' -e '/^action:/d' -e 's/^type: Warning/type: Bad/' \
    "$work/v1-event.yaml" >"$work/bad-event.yaml"
kubectl create -f "$work/bad-event.yaml" >"$work/bad-event.out" 2>&1
check "an events.k8s.io/v1 event without action and with a bad type is refused ($(cat "$work/bad-event.out"))" sh -c "
    grep -q 'The Event \"web.3\" is invalid' '$work/bad-event.out' &&
    grep -q 'action: Required value' '$work/bad-event.out' &&
    grep -q 'type: Invalid value: \"\": has invalid value: Bad' '$work/bad-event.out'"

# --- flowcontrol: the bootstrap configuration ---
k get flowschemas >"$work/fs.txt" 2>&1
check "kubectl get flowschemas prints kube-apiserver's columns" \
    grep -Eq '^NAME +PRIORITYLEVEL +MATCHINGPRECEDENCE +DISTINGUISHERMETHOD +AGE +MISSINGPL$' "$work/fs.txt"
for fs in exempt probes system-leader-election endpoint-controller workload-leader-election \
    system-node-high system-nodes kube-controller-manager kube-scheduler \
    kube-system-service-accounts service-accounts global-default catch-all; do
    check "the bootstrap FlowSchema $fs is listed" grep -Eq "^$fs " "$work/fs.txt"
done
check "exempt: level exempt, precedence 1, no distinguisher, its level found" \
    grep -Eq '^exempt +exempt +1 +<none> +[0-9a-z]+ +False$' "$work/fs.txt"
check "catch-all: precedence 10000, ByUser" \
    grep -Eq '^catch-all +catch-all +10000 +ByUser +[0-9a-z]+ +False$' "$work/fs.txt"
k get prioritylevelconfigurations >"$work/pl.txt" 2>&1
check "kubectl get prioritylevelconfigurations prints kube-apiserver's columns" \
    grep -Eq '^NAME +TYPE +NOMINALCONCURRENCYSHARES +QUEUES +HANDSIZE +QUEUELENGTHLIMIT +AGE$' "$work/pl.txt"
check "the eight levels, exempt and catch-all as kube-apiserver has them" sh -c "
    [ \$(grep -c . '$work/pl.txt') -eq 9 ] &&
    grep -Eq '^exempt +Exempt +<none> +<none> +<none> +<none> ' '$work/pl.txt' &&
    grep -Eq '^catch-all +Limited +5 +<none> +<none> +<none> ' '$work/pl.txt' &&
    grep -Eq '^workload-low +Limited +100 +128 +6 +50 ' '$work/pl.txt'"

cat >"$work/bad-fs.yaml" <<'YAML'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: bad}
spec:
  priorityLevelConfiguration: {name: global-default}
  matchingPrecedence: 1
  rules:
  - subjects: [{kind: Robot}]
    resourceRules: [{verbs: [fly], apiGroups: ["*"], resources: ["*"]}]
YAML
kubectl apply -f "$work/bad-fs.yaml" >"$work/bad-fs.out" 2>&1
check "a bad FlowSchema gets Kubernetes' errors ($(cat "$work/bad-fs.out"))" sh -c "
    grep -q 'The FlowSchema \"bad\" is invalid' '$work/bad-fs.out' &&
    grep -q \"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1\" '$work/bad-fs.out' &&
    grep -q 'spec.rules\[0\].subjects\[0\].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"' '$work/bad-fs.out' &&
    grep -q 'spec.rules\[0\].resourceRules\[0\].verbs: Unsupported value: \[\]string{\"fly\"}' '$work/bad-fs.out' &&
    grep -q 'spec.rules\[0\].resourceRules\[0\].namespaces: Required value' '$work/bad-fs.out'"
kubectl patch flowschema catch-all --type=merge -p '{"spec":{"matchingPrecedence":9000}}' >"$work/patch.out" 2>&1
check "a mandatory FlowSchema's spec is fixed ($(cat "$work/patch.out"))" \
    grep -q "spec of 'catch-all' must equal the fixed value" "$work/patch.out"

# what the keeper does on its next pass
exempt_rv=$(k get flowschema exempt -o jsonpath='{.metadata.resourceVersion}')
check "delete the mandatory FlowSchema catch-all" sh -c "kubectl delete flowschema catch-all >/dev/null"
check "change the suggested global-default (autoupdate-spec true)" sh -c "
    kubectl patch flowschema global-default --type=merge -p '{\"spec\":{\"matchingPrecedence\":9800}}' >/dev/null"
check "change the suggested service-accounts and set autoupdate-spec false" sh -c "
    kubectl annotate flowschema service-accounts --overwrite apf.kubernetes.io/autoupdate-spec=false >/dev/null &&
    kubectl patch flowschema service-accounts --type=merge -p '{\"spec\":{\"matchingPrecedence\":8000}}' >/dev/null"
check "delete the suggested level workload-high" sh -c "kubectl delete prioritylevelconfiguration workload-high >/dev/null"
poll "catch-all comes back" sh -c "[ \"\$(kubectl get flowschema catch-all -o jsonpath='{.spec.matchingPrecedence}')\" = 10000 ]"
poll "workload-high comes back" kubectl get prioritylevelconfiguration workload-high
check "global-default's spec is put back" sh -c "
    [ \"\$(kubectl get flowschema global-default -o jsonpath='{.spec.matchingPrecedence}')\" = 9900 ]"
check "service-accounts keeps the user's spec" sh -c "
    [ \"\$(kubectl get flowschema service-accounts -o jsonpath='{.spec.matchingPrecedence}')\" = 8000 ]"
check "a pass that finds nothing to do writes nothing (exempt is unchanged)" sh -c "
    [ \"\$(kubectl get flowschema exempt -o jsonpath='{.metadata.resourceVersion}')\" = '$exempt_rv' ]"

finish
