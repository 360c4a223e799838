#!/bin/sh
# test_aggregation.sh - API aggregation with the real kubectl against a real `ckube
# server`: the local APIServices of the server's own groups (`kubectl get apiservices`
# as Kubernetes shows them), APIService validation in Kubernetes' words, and a small
# aggregated API server (tests/e2e/aggregated_api.py, HTTPS on loopback, its certificate
# made here) registered by an APIService and a Service without selector whose
# EndpointSlice points at it: the APIService becomes Available, kubectl api-resources
# lists its group, kubectl get returns the backend's list, the backend is told who asks
# (X-Remote-User, X-Remote-Group), RBAC rules apply to its resources, and once the
# backend is gone the APIService is Available=False (FailedDiscoveryCheck) and its
# requests are 503. The built-in metrics.k8s.io/v1beta1 has a local APIService, which
# metrics-server's APIService (applied over it, naming kube-system/metrics-server, here
# the same backend) takes over: its answers come from the backend, discovery lists the
# group once, and once it is deleted the local one is back and the built-in answers, as
# it does once the APIService's service is dropped (Available, Local).
#
# Usage: test_aggregation.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_webhook aggregated_api.py api api.wardle.svc
start_server --controllers=-*

# --- the local APIServices ---
poll "the local APIService of apps/v1 is made" kubectl get apiservice v1.apps
k get apiservices >"$work/out" 2>&1
check "kubectl get apiservices shows NAME SERVICE AVAILABLE AGE" sh -c "head -1 '$work/out' | grep -Eq '^NAME +SERVICE +AVAILABLE +AGE'"
check "the core group's APIService is v1., Local and Available" grep -Eq '^v1\. +Local +True ' "$work/out"
check "apps/v1 is Local and Available" grep -Eq '^v1\.apps +Local +True ' "$work/out"
check "apiregistration.k8s.io/v1 itself is listed" grep -Eq '^v1\.apiregistration\.k8s\.io +Local +True ' "$work/out"
check "a local APIService has Kubernetes' priorities and no service" sh -c \
    '[ "$(kubectl get apiservice v1.apps -o jsonpath="{.spec.groupPriorityMinimum}/{.spec.versionPriority}/{.spec.service}/{.status.conditions[0].reason}")" = "17800/15//Local" ]'

# --- validation ---
cat >"$work/bad.json" <<EOT
{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
 "metadata": {"name": "v1.wrong.example.com"},
 "spec": {"group": "wardle.example.com", "version": "v1alpha1", "groupPriorityMinimum": 20001,
          "versionPriority": 0, "insecureSkipTLSVerify": true, "caBundle": "$cabundle",
          "service": {"namespace": "wardle"}}}
EOT
k create -f "$work/bad.json" >"$work/out" 2>&1
check "the name must be version.group" grep -q 'metadata.name: Invalid value: "v1.wrong.example.com": must be `spec.version+"."+spec.group`: "v1alpha1.wardle.example.com"' "$work/out"
check "groupPriorityMinimum is at most 20000" grep -q 'spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000' "$work/out"
check "versionPriority is positive" grep -q 'spec.versionPriority: Invalid value: 0: must be positive and less than 1000' "$work/out"
check "the service needs a name" grep -q 'spec.service.name: Required value' "$work/out"
check "insecureSkipTLSVerify goes without a caBundle" grep -q 'spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present' "$work/out"

# --- an aggregated API ---
cat >"$work/api.json" <<EOT
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}},
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
  "spec": {"ports": [{"port": 443, "targetPort": $hook_port}]}},
 {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "api-1", "namespace": "wardle", "labels": {"kubernetes.io/service-name": "api"}},
  "addressType": "IPv4", "ports": [{"name": "", "port": $hook_port, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]},
 {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
  "metadata": {"name": "v1alpha1.wardle.example.com"},
  "spec": {"group": "wardle.example.com", "version": "v1alpha1", "groupPriorityMinimum": 1000,
           "versionPriority": 15, "caBundle": "$cabundle",
           "service": {"namespace": "wardle", "name": "api"}}}]}
EOT
k create -f "$work/api.json" >"$work/out" 2>&1
check "the APIService is created" grep -q 'apiservice.apiregistration.k8s.io/v1alpha1.wardle.example.com created' "$work/out"
check "its port defaults to 443" sh -c \
    '[ "$(kubectl get apiservice v1alpha1.wardle.example.com -o jsonpath="{.spec.service.port}")" = 443 ]'
available() { kubectl get apiservice v1alpha1.wardle.example.com -o jsonpath='{.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Available")].reason}' | grep -qx "$1"; }
poll "the APIService becomes Available (Passed)" available True/Passed
k get apiservice v1alpha1.wardle.example.com >"$work/out" 2>&1
check "kubectl get shows its service and True" grep -Eq '^v1alpha1\.wardle\.example\.com +wardle/api +True ' "$work/out"
poll "aggregated discovery lists the group" sh -c 'kubectl api-resources --api-group=wardle.example.com | grep -Eq "^flunders +fl +wardle.example.com/v1alpha1 +true +Flunder"'
kurl "$url/apis" >"$work/out" 2>&1
check "/apis lists the group" grep -Eq '"name": "wardle.example.com"' "$work/out"
: >"$work/reviews.log"
k get flunders >"$work/out" 2>&1
check "kubectl get returns the backend's list" sh -c "grep -Eq '^one ' '$work/out' && grep -Eq '^two ' '$work/out'"
k get fl two -n wardle -o jsonpath='{.metadata.namespace}/{.metadata.name}' >"$work/out" 2>&1
check "one object through the short name, in a namespace" grep -qx 'wardle/two' "$work/out"
me=$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}' 2>/dev/null)
check "the backend was told who asks (X-Remote-User, X-Remote-Group)" python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
r = [x for x in rs if x["path"].startswith("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")]
assert r, rs
assert r[0]["user"] == sys.argv[2] and sys.argv[2], (r[0], sys.argv[2])
assert "system:masters" in r[0]["groups"], r[0]
' "$work/reviews.log" "$me"
k get flunders --as=nobody >"$work/out" 2>&1
check "RBAC applies to the aggregated resource, read from its path" grep -q \
    'flunders.wardle.example.com is forbidden: User "nobody" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default"' "$work/out"

# --- metrics-server's APIService takes over metrics.k8s.io ---
check "the built-in metrics.k8s.io has a local APIService" sh -c \
    '[ "$(kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath="{.spec.groupPriorityMinimum}/{.spec.versionPriority}/{.spec.service}/{.status.conditions[0].reason}")" = "100/100//Local" ]'
k get --raw /apis/metrics.k8s.io/v1beta1/nodes >"$work/out" 2>&1
check "the built-in answers NodeMetrics" sh -c "grep -q NodeMetricsList '$work/out' && ! grep -q from-metrics-backend '$work/out'"
k create namespace kube-system >/dev/null 2>&1
cat >"$work/metrics.json" <<EOT
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics-server", "namespace": "kube-system"},
  "spec": {"ports": [{"name": "https", "port": 443, "targetPort": $hook_port}]}},
 {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "metrics-server-1", "namespace": "kube-system",
               "labels": {"kubernetes.io/service-name": "metrics-server"}},
  "addressType": "IPv4", "ports": [{"name": "https", "port": $hook_port, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]},
 {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
  "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
  "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
           "versionPriority": 100, "insecureSkipTLSVerify": true,
           "service": {"namespace": "kube-system", "name": "metrics-server"}}}]}
EOT
k apply -f "$work/metrics.json" >"$work/out" 2>&1
check "metrics-server's APIService is applied over the local one" grep -q 'apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io configured' "$work/out"
metrics_available() { kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Available")].reason}' | grep -qx "$1"; }
poll "metrics-server's APIService becomes Available (Passed)" metrics_available True/Passed
k get apiservice v1beta1.metrics.k8s.io >"$work/out" 2>&1
check "kubectl get shows kube-system/metrics-server and True" grep -Eq '^v1beta1\.metrics\.k8s\.io +kube-system/metrics-server +True ' "$work/out"
k get --raw /apis/metrics.k8s.io/v1beta1/nodes >"$work/out" 2>&1
check "metrics.k8s.io is answered by the backend" grep -Eq '"name": *"from-metrics-backend"' "$work/out"
kurl "$url/apis" >"$work/out" 2>&1
check "/apis lists metrics.k8s.io/v1beta1 once" python3 -c '
import json, sys
g = [x for x in json.load(open(sys.argv[1]))["groups"] if x["name"] == "metrics.k8s.io"]
assert len(g) == 1 and [v["version"] for v in g[0]["versions"]] == ["v1beta1"], g
' "$work/out"
# metrics_discovery CATEGORIES: aggregated discovery lists metrics.k8s.io/v1beta1 once, nodes
# and pods, nodes in those categories (a JSON value: the backend's, or null for the built-in)
metrics_discovery() {
    kurl -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$url/apis" >"$work/disc" 2>&1 &&
        python3 -c '
import json, sys
g = [x for x in json.load(open(sys.argv[1]))["items"] if x["metadata"]["name"] == "metrics.k8s.io"]
assert len(g) == 1 and len(g[0]["versions"]) == 1, g
rs = g[0]["versions"][0]["resources"]
assert sorted(r["resource"] for r in rs) == ["nodes", "pods"], g
assert [r.get("categories") for r in rs if r["resource"] == "nodes"] == [json.loads(sys.argv[2])], g
' "$work/disc" "$1"
}
poll "aggregated discovery lists the backend's metrics.k8s.io/v1beta1 (once)" metrics_discovery '["from-metrics-backend"]'
k delete apiservice v1beta1.metrics.k8s.io >"$work/out" 2>&1
check "metrics-server's APIService is deleted" grep -q 'deleted' "$work/out"
builtin_metrics() { kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes 2>&1 | grep -q NodeMetricsList && ! kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes 2>&1 | grep -q from-metrics-backend; }
check "then the built-in answers again" builtin_metrics
poll "and the local APIService is back" sh -c '[ "$(kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath="{.spec.service}/{.status.conditions[0].reason}")" = "/Local" ]'
poll "and aggregated discovery lists the built-in metrics.k8s.io again" metrics_discovery null
k apply -f "$work/metrics.json" >/dev/null 2>&1
poll "applied again, it takes the group over again" metrics_available True/Passed
k patch apiservice v1beta1.metrics.k8s.io --type=json \
    -p '[{"op": "remove", "path": "/spec/service"}, {"op": "remove", "path": "/spec/insecureSkipTLSVerify"}]' >"$work/out" 2>&1
check "its service is dropped ($(cat "$work/out"))" grep -q patched "$work/out"
poll "then it is Local and Available" metrics_available True/Local
check "and the built-in answers" builtin_metrics

# --- the backend goes ---
stop_hook
poll "without its backend the APIService is Available=False" available False/FailedDiscoveryCheck
k get apiservice v1alpha1.wardle.example.com >"$work/out" 2>&1
check "kubectl get shows False (FailedDiscoveryCheck)" grep -Eq 'wardle/api +False \(FailedDiscoveryCheck\)' "$work/out"
kurl -o /dev/null -w '%{http_code}' "$url/apis/wardle.example.com/v1alpha1/flunders" >"$work/out" 2>&1
check "its requests are 503" grep -qx 503 "$work/out"
k delete apiservice v1alpha1.wardle.example.com >"$work/out" 2>&1
check "the APIService is deleted" grep -q 'deleted' "$work/out"
kurl -o /dev/null -w '%{http_code}' "$url/apis/wardle.example.com/v1alpha1/flunders" >"$work/out" 2>&1
check "then its group is not found" grep -qx 404 "$work/out"
finish
