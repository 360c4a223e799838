#!/bin/sh
# test_kubectl_apply_ssa.sh - the real kubectl's server-side apply on a real
# `ckube server`: `apply --server-side` creating and re-applying an object,
# metadata.managedFields (hidden by kubectl unless --show-managed-fields), a
# second field manager's conflict (409 naming the field and its manager) and
# --force-conflicts taking the field over, removal of a field the applier
# stops applying, apply of the status subresource, Update entries of
# non-apply writers, and the upgrade of an object made by client-side
# `kubectl apply` to server-side apply.
#
# Usage: test_kubectl_apply_ssa.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-* # ownership here is the appliers' alone

jp() { kubectl get "$1" -o "jsonpath=$2"; } # jp OBJECT JSONPATH
# managers OBJECT: "manager/operation[/subresource]" of each managedFields entry, one a line
managers() {
    kubectl get "$1" -o json --show-managed-fields | python3 -c '
import json, sys
for e in json.load(sys.stdin)["metadata"].get("managedFields", []):
    print("/".join([e["manager"], e["operation"]] + ([e["subresource"]] if e.get("subresource") else [])))'
}
has_manager() { managers "$1" | grep -qx "$2"; } # has_manager OBJECT manager/operation[/sub]
not() { ! "$@"; }
# owns OBJECT MANAGER PATH...: the manager's FieldsV1 has the path (f:spec f:replicas ...)
owns() {
    obj=$1; who=$2; shift 2
    kubectl get "$obj" -o json --show-managed-fields | python3 -c '
import json, sys
who, path = sys.argv[1], sys.argv[2:]
for e in json.load(sys.stdin)["metadata"].get("managedFields", []):
    if e["manager"] != who:
        continue
    node = e["fieldsV1"]
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    sys.exit(0 if node is not None else 1)
sys.exit(1)' "$who" "$@"
}

cat >"$work/web.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: fe}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
YAML

# --- apply --server-side creates, and again changes nothing ---
k apply --server-side -f "$work/web.yaml" >"$work/out" 2>&1
check "apply --server-side creates" grep -q "deployment.apps/web serverside-applied" "$work/out"
check "applied object is there" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 2 ]'
check "kubectl is the Apply manager" has_manager deploy/web kubectl/Apply
check "Apply entry owns .spec.replicas" owns deploy/web kubectl f:spec f:replicas
check "Apply entry owns the container by its key" owns deploy/web kubectl f:spec f:template f:spec f:containers 'k:{"name":"nginx"}' f:image
check "Apply entry has FieldsV1 and a time" sh -c "[ \"\$(kubectl get deploy web --show-managed-fields -o jsonpath='{.metadata.managedFields[0].fieldsType}')\" = FieldsV1 ] && [ -n \"\$(kubectl get deploy web --show-managed-fields -o jsonpath='{.metadata.managedFields[0].time}')\" ]"
rv=$(jp deploy/web '{.metadata.resourceVersion}')
k apply --server-side -f "$work/web.yaml" >"$work/out" 2>&1
check "apply again reports serverside-applied" grep -q "deployment.apps/web serverside-applied" "$work/out"
check "apply again writes nothing" sh -c "[ \"\$(kubectl get deploy web -o jsonpath={.metadata.resourceVersion})\" = $rv ]"

# --- managedFields hidden by kubectl unless asked for ---
k get deploy web -o yaml >"$work/out" 2>&1
check "get -o yaml hides managedFields" sh -c "! grep -q managedFields '$work/out'"
k get deploy web -o yaml --show-managed-fields >"$work/out" 2>&1
check "get -o yaml --show-managed-fields shows them" grep -q "managedFields:" "$work/out"
check "FieldsV1 keys in the YAML" grep -q "f:replicas: {}" "$work/out"

# --- a second manager setting the same field conflicts; --force-conflicts wins ---
cat >"$work/web5.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 5
YAML
k apply --server-side --field-manager=scaler -f "$work/web5.yaml" >"$work/out" 2>&1
check "second manager conflicts" grep -q 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' "$work/out"
check "conflict left the value alone" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 2 ]'
kurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "$url/apis/apps/v1/namespaces/default/deployments/web?fieldManager=scaler" \
    --data-binary '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}' \
    -o "$work/status.json" -w '%{http_code}' >"$work/code"
check "conflict is a 409" sh -c "[ \"\$(cat '$work/code')\" = 409 ]"
check "conflict cause names the field and manager" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
c = s["details"]["causes"][0]
assert s["reason"] == "Conflict", s
assert c == {"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\"", "field": ".spec.replicas"}, c' "$work/status.json"
k apply --server-side --field-manager=scaler --force-conflicts -f "$work/web5.yaml" >"$work/out" 2>&1
check "--force-conflicts applies" grep -q "deployment.apps/web serverside-applied" "$work/out"
check "forced value is set" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 5 ]'
check "forced field moved to the new manager" owns deploy/web scaler f:spec f:replicas
check "forced field left the old manager" not owns deploy/web kubectl f:spec f:replicas

# --- a field the applier stops applying is removed when nobody else owns it ---
# (without .spec.replicas too, which scaler owns now: applying 2 would conflict)
sed 's/labels: {app: web, tier: fe}/labels: {app: web}/; /replicas: 2/d' "$work/web.yaml" >"$work/web-notier.yaml"
check "label present before" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.labels.tier})" = fe ]'
k apply --server-side -f "$work/web-notier.yaml" >"$work/out" 2>&1
check "apply without the label" grep -q "deployment.apps/web serverside-applied" "$work/out"
check "label no longer applied is removed" sh -c '[ -z "$(kubectl get deploy web -o jsonpath={.metadata.labels.tier})" ]'
check "field another manager owns stays" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 5 ]'
check "field another manager owns stays" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.labels.app})" = web ]'

# --- non-apply writers get Update entries named by fieldManager or User-Agent ---
k label deploy web team=a >/dev/null 2>&1
check "kubectl label is an Update of kubectl-label" owns deploy/web kubectl-label f:metadata f:labels f:team
kurl -X PATCH -H 'Content-Type: application/merge-patch+json' -A 'mytool/1.0 (linux)' \
    "$url/apis/apps/v1/namespaces/default/deployments/web" -d '{"metadata":{"annotations":{"x":"y"}}}' >/dev/null
check "a manager without fieldManager is the User-Agent's prefix" owns deploy/web mytool f:metadata f:annotations f:x

# --- kubectl scale writes through the scale subresource: an Update entry on "scale" ---
k scale deploy web --replicas=6 >/dev/null 2>&1
check "kubectl scale is an Update of kubectl on scale" has_manager deploy/web kubectl/Update/scale
k apply --server-side --field-manager=scaler -f "$work/web5.yaml" >"$work/out" 2>&1
check "applying over a scale names the subresource" grep -q 'conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas' "$work/out"
k apply --server-side --field-manager=scaler --force-conflicts -f "$work/web5.yaml" >/dev/null 2>&1

# --- apply on the status subresource ---
kurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "$url/apis/apps/v1/namespaces/default/deployments/web/status?fieldManager=statusbot&force=true" \
    --data-binary '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{"observedGeneration":7}}' \
    -o /dev/null -w '%{http_code}' >"$work/code"
check "status apply is 200" sh -c "[ \"\$(cat '$work/code')\" = 200 ]"
check "status applied" sh -c '[ "$(kubectl get deploy web -o jsonpath={.status.observedGeneration})" = 7 ]'
check "status apply entry has subresource status" has_manager deploy/web statusbot/Apply/status

# --- an apply body in YAML creates an object ---
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: yamlweb\nspec:\n  selector: {matchLabels: {app: y}}\n  template:\n    metadata: {labels: {app: y}}\n    spec:\n      containers:\n      - {name: c, image: "nginx:1.25"}\n' >"$work/y.yaml"
kurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "$url/apis/apps/v1/namespaces/default/deployments/yamlweb?fieldManager=yamlbot" \
    --data-binary @"$work/y.yaml" -o /dev/null -w '%{http_code}' >"$work/code"
check "a YAML apply of a new object is 201" sh -c "[ \"\$(cat '$work/code')\" = 201 ]"
check "the YAML apply's manager owns the container" owns deploy/yamlweb yamlbot f:spec f:template f:spec f:containers 'k:{"name":"c"}' f:image

# --- apply requires a field manager; force only on apply ---
kurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "$url/apis/apps/v1/namespaces/default/deployments/web" \
    --data-binary '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}' -o "$work/status.json"
check "apply without fieldManager is 422" grep -q 'fieldManager: Required value: is required for apply patch' "$work/status.json"

kurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "$url/apis/apps/v1/namespaces/default/deployments/web?fieldManager=x" \
    --data-binary '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other"}}' -o "$work/status.json"
check "apply naming another object is 400" grep -q 'the name of the object (other) does not match the name on the URL (web)' "$work/status.json"

# --- the upgrade from client-side apply ---
sed 's/name: web$/name: legacy/' "$work/web.yaml" >"$work/legacy.yaml"
k apply -f "$work/legacy.yaml" >/dev/null 2>&1
check "client-side apply records kubectl-client-side-apply" owns deploy/legacy kubectl-client-side-apply f:spec f:replicas
sed 's/replicas: 2/replicas: 3/' "$work/legacy.yaml" >"$work/legacy3.yaml"
k apply --server-side -f "$work/legacy3.yaml" >"$work/out" 2>&1
check "server-side apply over client-side apply succeeds" grep -q "deployment.apps/legacy serverside-applied" "$work/out"
check "the upgraded object has the new value" sh -c '[ "$(kubectl get deploy legacy -o jsonpath={.spec.replicas})" = 3 ]'
check "kubectl owns the fields after the upgrade" owns deploy/legacy kubectl f:spec f:replicas
check "kubectl-client-side-apply no longer owns them" not owns deploy/legacy kubectl-client-side-apply f:spec f:replicas
check "the last-applied annotation follows" sh -c "kubectl get deploy legacy -o jsonpath='{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}' | grep -q '\"replicas\":3'"

finish
