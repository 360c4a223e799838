#!/bin/sh
# test_kubectl.sh - drives a real `ckube server` with the real kubectl, as a
# user would: version, api-resources, create -f (strict server-side field
# validation), get in every output form, apply twice, replace with a stale
# object, get -w while objects change, delete, and errors as Kubernetes
# prints them.
#
# Usage: test_kubectl.sh PATH/TO/ckube [STORE_URL]
#   STORE_URL defaults to a fresh sqlite://<tmp>/state.db; pass an etcd://
#   URL to run the same suite against etcd.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

# --- version and discovery ---
check "kubectl version shows the server" sh -c 'kubectl version 2>&1 | grep -q "Server Version: v1.32"'
k api-resources >"$work/out" 2>&1
check "api-resources lists pods" grep -Eq "^pods +po +v1 +true +Pod" "$work/out"
check "api-resources lists deployments" grep -Eq "^deployments +deploy +apps/v1 +true +Deployment" "$work/out"
# kubectl 1.32 asks for aggregated discovery first: from an empty cache, /api and /apis
# answer everything, and it lists what the legacy documents list
kubectl --cache-dir "$work/fresh-cache" api-resources -v=6 >"$work/apires.out" 2>"$work/apires.log"
check "kubectl discovers from /api and /apis alone (aggregated discovery)" sh -c "
    grep -q ' GET [^ ]*/apis?' '$work/apires.log' &&
    [ \$(grep -c ' GET [^ ]*/api' '$work/apires.log') -eq 2 ]"
for gv in $(kubectl get --raw /apis | python3 -c '
import json, sys
print(" ".join(v["groupVersion"] for g in json.load(sys.stdin)["groups"] for v in g["versions"]))'); do
    kubectl get --raw "/apis/$gv"
    echo
done >"$work/legacy.json"
kubectl get --raw /api/v1 >>"$work/legacy.json"
check "kubectl api-resources lists every resource of the legacy documents" python3 -c '
import json, sys
decoder, text, at, legacy = json.JSONDecoder(), open(sys.argv[1]).read(), 0, set()
while text[at:].strip():
    at += len(text[at:]) - len(text[at:].lstrip())
    doc, at = decoder.raw_decode(text, at)
    legacy |= {r["name"] for r in doc["resources"] if "/" not in r["name"]}
listed = {line.split()[0] for line in open(sys.argv[2]).read().splitlines()[1:]}
assert listed == legacy and len(listed) > 40, (sorted(legacy ^ listed), len(listed))' \
    "$work/legacy.json" "$work/apires.out"
# storageVersionHash, as kube-apiserver 1.32 serves it for pods; none on a subresource
kubectl get --raw /api/v1 >"$work/out" 2>&1
check "discovery gives pods kube-apiserver's storageVersionHash" python3 -c '
import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))["resources"]}
assert r["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8=", r["pods"]
assert "storageVersionHash" not in r["pods/status"], r["pods/status"]' "$work/out"
check "default namespace exists" sh -c 'kubectl get ns default -o name | grep -qx namespace/default'

# --- create -f with server-side strict validation ---
check "create -f pod" k create -f "$data/pod.yaml"
k create -f "$data/pod-unknown-field.yaml" >"$work/out" 2>&1
check "unknown field refused under strict validation" grep -q 'unknown field "spec.containers\[0\].imagePulPolicy"' "$work/out"
k create -f "$data/pod.yaml" >"$work/out" 2>&1
check "second create is AlreadyExists" grep -q 'Error from server (AlreadyExists).*pods "web-1" already exists' "$work/out"
k create -f "$data/namespace.yaml" >/dev/null 2>&1
check "namespace created" sh -c 'kubectl get ns team-a -o jsonpath="{.status.phase}" | grep -qx Active'

# --- get in every form ---
k get pods >"$work/out" 2>&1
check "get pods shows the Table columns" grep -Eq "^NAME +READY +STATUS +RESTARTS +AGE" "$work/out"
check "get pods shows the pod as Pending" grep -Eq "^web-1 +0/1 +Pending +0 +" "$work/out"
k get pods -o wide >"$work/out" 2>&1
check "get -o wide adds IP and NODE" grep -Eq "IP +NODE +NOMINATED NODE +READINESS GATES" "$work/out"
check "get -o yaml has defaults" sh -c 'kubectl get pod web-1 -o yaml | grep -q "restartPolicy: Always"'
check "get -o jsonpath reads a field" sh -c '[ "$(kubectl get pod web-1 -o jsonpath={.spec.containers[0].imagePullPolicy})" = IfNotPresent ]'
k get pods -A >"$work/out" 2>&1
check "get -A shows the namespace column" grep -Eq "^default +web-1 " "$work/out"
k get pods --show-labels >"$work/out" 2>&1
check "get --show-labels" grep -q "app=web,tier=fe" "$work/out"
check "get -l matches" sh -c 'kubectl get pods -l "tier in (fe,be)" -o name | grep -qx pod/web-1'
check "get -l excludes" sh -c '[ -z "$(kubectl get pods -l app!=web -o name)" ]'
check "get --field-selector" sh -c 'kubectl get pods --field-selector status.phase=Pending -o name | grep -qx pod/web-1'
k get pods --field-selector spec.foo=x >"$work/out" 2>&1
check "unsupported field selector is a BadRequest" grep -q "field label not supported: spec.foo" "$work/out"
k get pod nope >"$work/out" 2>&1
check "missing pod is NotFound" grep -q 'Error from server (NotFound): pods "nope" not found' "$work/out"
k -n missing create -f "$data/pod.yaml" >"$work/out" 2>&1
check "create in a missing namespace is NotFound" grep -q 'namespaces "missing" not found' "$work/out"

# --- apply twice: created, then unchanged ---
k apply -f "$data/deployment.yaml" >"$work/out" 2>&1
check "apply creates" grep -q "deployment.apps/web created" "$work/out"
k apply -f "$data/deployment.yaml" >"$work/out" 2>&1
check "apply again is unchanged" grep -q "deployment.apps/web unchanged" "$work/out"
k get deployments >"$work/out" 2>&1
check "get deployments columns" grep -Eq "^NAME +READY +UP-TO-DATE +AVAILABLE +AGE" "$work/out"
check "deployment defaults" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.strategy.rollingUpdate.maxSurge})" = "25%" ]'
check "deployment generation 1" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.generation})" = 1 ]'

# --- get -w while objects change ---
k get pods -w --output-watch-events >"$work/watch.out" 2>&1 &
watch_pid=$!
sleep 1
kubectl get pod web-1 -o json | python3 -c '
import json, sys
pod = json.load(sys.stdin)
pod["metadata"]["labels"]["stage"] = "two"
json.dump(pod, sys.stdout)' >"$work/web-1.json"
check "replace with the current resourceVersion" k replace -f "$work/web-1.json"
k replace -f "$work/web-1.json" >"$work/out" 2>&1
check "replace with a stale resourceVersion is a Conflict" grep -q 'Error from server (Conflict).*the object has been modified; please apply your changes to the latest version and try again' "$work/out"
sed 's/web-1/web-2/' "$data/pod.yaml" | k create -f - >/dev/null
check "delete pod" k delete pod web-2
i=0
until grep -Eq "^DELETED +web-2" "$work/watch.out" || [ $i -gt 50 ]; do sleep 0.2; i=$((i + 1)); done
kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null; watch_pid=""
check "watch table has the EVENT column" grep -Eq "^EVENT +NAME +READY +STATUS" "$work/watch.out"
check "watch saw the modification" grep -Eq "^MODIFIED +web-1 " "$work/watch.out"
check "watch saw the creation" grep -Eq "^ADDED +web-2 " "$work/watch.out"
check "watch saw the deletion" grep -Eq "^DELETED +web-2 " "$work/watch.out"
check "the deleted pod is gone" sh -c '! kubectl get pod web-2 >/dev/null 2>&1'

# --- describe reads events with field selectors ---
check "describe pod" sh -c 'kubectl describe pod web-1 | grep -q "^Name: *web-1"'

# --- deletes ---
k delete deployment web >"$work/out" 2>&1
check "delete deployment" grep -q 'deployment.apps "web" deleted' "$work/out"
check "delete -l" sh -c 'kubectl delete pods -l app=web | grep -q "pod \"web-1\" deleted"'

finish
