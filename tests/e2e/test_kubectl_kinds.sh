#!/bin/sh
# test_kubectl_kinds.sh - the real kubectl with ConfigMaps, Secrets and
# Services on a real `ckube server`: apply of a typical application
# manifest (ConfigMap, Secret, Deployment, Services), kubectl's columns, the
# Services' cluster IPs and node ports (unique, kept by a second apply and
# after a restart), Kubernetes' validation messages, stringData, immutable
# ConfigMaps, field selectors, short names and discovery; EndpointSlices that
# follow the pods' readiness and go with their Service.
#
# Usage: test_kubectl_kinds.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-*

jp() { kubectl get "$1" -o "jsonpath=$2"; } # jp OBJECT JSONPATH

# --- apply of an application ---
k apply -f "$data/app.yaml" >"$work/out" 2>&1
check "apply creates every object" sh -c 'grep -q "configmap/web-config created" "$1" &&
    grep -q "secret/web-credentials created" "$1" && grep -q "deployment.apps/web created" "$1" &&
    grep -q "service/web created" "$1" && grep -q "service/web-nodeport created" "$1"' - "$work/out"
k apply -f "$data/app.yaml" >"$work/out" 2>&1
check "second apply leaves the ConfigMap and Services unchanged" sh -c 'grep -q "configmap/web-config unchanged" "$1" &&
    grep -q "service/web unchanged" "$1" && grep -q "service/web-nodeport unchanged" "$1"' - "$work/out"

# --- columns ---
k get cm web-config >"$work/out" 2>&1
check "configmap columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +DATA +AGE$" && grep -Eq "^web-config +2 " "$1"' - "$work/out"
k get secret web-credentials >"$work/out" 2>&1
check "secret columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +TYPE +DATA +AGE$" &&
    grep -Eq "^web-credentials +kubernetes.io/basic-auth +2 " "$1"' - "$work/out"
k get svc -o wide >"$work/out" 2>&1
check "service columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE +SELECTOR$"' - "$work/out"
check "the kubernetes service" sh -c 'grep -Eq "^kubernetes +ClusterIP +10\.96\.0\.1 +<none> +443/TCP " "$1"' - "$work/out"
check "a ClusterIP service row" sh -c 'grep -Eq "^web +ClusterIP +10\.(9[6-9]|10[0-9]|11[01])\.[0-9]+\.[0-9]+ +<none> +80/TCP +.* app=web$" "$1"' - "$work/out"
check "a NodePort service row" sh -c 'grep -Eq "^web-nodeport +NodePort +10\.[0-9.]+ +<none> +8080:30080/TCP " "$1"' - "$work/out"

# --- stringData went into data and is not stored as such ---
check "stringData merged into data" sh -c '[ "$(kubectl get secret web-credentials -o jsonpath={.data.password} | base64 -d)" = s3cr3t-Plaintext ]'
check "stringData is not kept" sh -c '[ -z "$(kubectl get secret web-credentials -o jsonpath={.stringData})" ]'
check "the service's target port by name" sh -c '[ "$(kubectl get svc web -o jsonpath={.spec.ports[0].targetPort})" = http ]'

# --- short names, field selectors, discovery ---
check "short names cm and svc" sh -c 'kubectl get cm,svc -o name | grep -q configmap/web-config'
check "secret field selector type" sh -c '[ "$(kubectl get secrets --field-selector type=kubernetes.io/basic-auth -o name)" = secret/web-credentials ]'
check "service field selector spec.type" sh -c '[ "$(kubectl get svc --field-selector spec.type=NodePort -o name)" = service/web-nodeport ]'
k api-resources --api-group= >"$work/out" 2>&1
check "discovery lists the kinds" sh -c 'grep -Eq "^configmaps +cm +v1 +true +ConfigMap" "$1" && grep -Eq "^secrets +v1 +true +Secret" "$1" &&
    grep -Eq "^services +svc +v1 +true +Service" "$1"' - "$work/out"
check "kubectl explain service.spec" sh -c 'kubectl explain service.spec.clusterIP | grep -q "virtual IP"'

# --- validation, as Kubernetes words it ---
cat >"$work/bad.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: clash}
spec:
  type: NodePort
  ports: [{port: 80, nodePort: 30080}]
YAML
k apply -f "$work/bad.yaml" >"$work/out" 2>&1
check "a node port taken" grep -q 'The Service "clash" is invalid: spec.ports\[0\].nodePort: Invalid value: 30080: provided port is already allocated' "$work/out"
cat >"$work/bad.yaml" <<'YAML'
apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {"bad key": eA==}
YAML
k apply -f "$work/bad.yaml" >"$work/out" 2>&1
check "secret keys and the tls type's keys" sh -c 'grep -q "data\[bad key\]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters" "$1" &&
    grep -q "data\[tls.crt\]: Required value" "$1" && grep -q "data\[tls.key\]: Required value" "$1"' - "$work/out"
cat >"$work/frozen.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: frozen}
immutable: true
data: {a: b}
YAML
k apply -f "$work/frozen.yaml" >/dev/null 2>&1
k patch cm frozen --type merge -p '{"data":{"a":"c"}}' >"$work/out" 2>&1
check "an immutable ConfigMap keeps its data" grep -q 'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set' "$work/out"

# --- headless and ExternalName services ---
cat >"$work/more.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: upstream}
spec:
  type: ExternalName
  externalName: api.example.com
YAML
k apply -f "$work/more.yaml" >/dev/null 2>&1
k get svc db upstream >"$work/out" 2>&1
check "headless row" grep -Eq "^db +ClusterIP +None +<none> +5432/TCP " "$work/out"
check "ExternalName row" grep -Eq "^upstream +ExternalName +<none> +api.example.com +<none> " "$work/out"

# --- after a restart: same values, still taken ---
ip=$(jp svc/web '{.spec.clusterIP}')
stop_server
start_server --controllers=-*
check "cluster IP kept over a restart" sh -c '[ "$(kubectl get svc web -o jsonpath={.spec.clusterIP})" = "$1" ]' - "$ip"
cat >"$work/same-ip.yaml" <<YAML
apiVersion: v1
kind: Service
metadata: {name: same-ip}
spec:
  clusterIP: $ip
  ports: [{port: 80}]
YAML
k apply -f "$work/same-ip.yaml" >"$work/out" 2>&1
check "the IP is still taken after a restart" grep -q "failed to allocate IP $ip: provided IP is already allocated" "$work/out"

# --- delete gives the node port back ---
k delete svc web-nodeport >/dev/null 2>&1
cat >"$work/reuse.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: reuse}
spec:
  type: NodePort
  ports: [{port: 80, nodePort: 30080}]
YAML
check "a deleted service's node port is free again" sh -c 'kubectl apply -f "$1" | grep -q "service/reuse created"' - "$work/reuse.yaml"

# --- EndpointSlices follow the pods (controllers on) ---
stop_server
start_server
# set_pod POD IP READY: the pod Running with an IP, Ready or not, as a node agent reports it;
# read and replaced again when another writer (the scheduler, on a pod it cannot place)
# changed it in between (409), as a kubelet retries its status update
set_pod() {
    for _ in 1 2 3 4 5; do set_pod_once "$@" && return 0; sleep 0.2; done
    return 1
}
set_pod_once() {
    k get pod "$1" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
t = "2026-01-01T00:00:00Z"
p["status"] = {"phase": "Running", "podIP": sys.argv[1], "conditions": [
    {"type": "Ready", "status": sys.argv[2], "lastTransitionTime": t}]}
print(json.dumps(p))' "$2" "$3" | k replace --subresource=status -f - >/dev/null
}
i=0
until [ "$(kubectl get pods -l app=web -o name | wc -l)" -ge 2 ] || [ $i -gt 100 ]; do sleep 0.2; i=$((i + 1)); done
pods=$(kubectl get pods -l app=web -o jsonpath='{.items[*].metadata.name}')
n=1
for p in $pods; do set_pod "$p" "10.244.0.$n" True; n=$((n + 1)); done
slice=""
i=0
until [ -n "$slice" ] || [ $i -gt 100 ]; do
    slice=$(kubectl get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
    sleep 0.2; i=$((i + 1))
done
poll "the slice lists both ready pods" sh -c '[ "$(kubectl get endpointslice "$1" -o jsonpath="{.endpoints[*].conditions.ready}")" = "true true" ]' - "$slice"
check "the slice is owned by the service" sh -c '[ "$(kubectl get endpointslice "$1" -o jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name})" = Service/web ]' - "$slice"
check "the named target port resolved" sh -c '[ "$(kubectl get endpointslice "$1" -o jsonpath={.ports[0].port})" = 80 ]' - "$slice"
k get endpointslices -l kubernetes.io/service-name=web >"$work/out" 2>&1
check "endpointslice columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE$" && grep -Eq "IPv4 +80 +10\.244\.0\.[12],10\.244\.0\.[12] " "$1"' - "$work/out"
poll "the legacy Endpoints list both ready pods" sh -c 'kubectl get endpoints web | grep -Eq "^web +10\.244\.0\.[12]:80,10\.244\.0\.[12]:80 "'
first=$(echo "$pods" | cut -d" " -f1)
set_pod "$first" 10.244.0.1 False
poll "a pod turning unready is not ready in the slice" sh -c '[ "$(kubectl get endpointslice "$1" -o jsonpath="{.endpoints[?(@.targetRef.name==\"$2\")].conditions.ready}")" = false ]' - "$slice" "$first"
poll "an unready pod moves to notReadyAddresses" sh -c '[ "$(kubectl get endpoints web -o jsonpath={.subsets[0].notReadyAddresses[0].ip})" = 10.244.0.1 ]'
k delete svc web >/dev/null 2>&1
i=0
while kubectl get endpointslice "$slice" >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
check "the service's slices go with it (garbage collector)" sh -c '! kubectl get endpointslice "$1" >/dev/null 2>&1' - "$slice"
poll "its Endpoints go with it" sh -c '! kubectl get endpoints web'

finish
