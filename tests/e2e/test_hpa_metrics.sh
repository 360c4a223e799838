#!/bin/sh
# test_hpa_metrics.sh - the HorizontalPodAutoscaler controller reading an External metric
# through API aggregation, with the real kubectl against a real `ckube server` (its
# controllers on, the autoscaler's sync period 1 s): a small external metrics adapter
# (tests/e2e/aggregated_api.py, HTTPS on loopback; every metric is 3) registered as
# v1beta1.external.metrics.k8s.io behind a Service without selector, and an autoscaler
# of a Deployment with an External metric whose averageValue target is 1: the
# controller asks the adapter for the metric with its selector, scales the Deployment
# to 3 and says which metric it used; once the APIService is gone the autoscaler says
# it cannot get the metric (FailedGetExternalMetric). Then an Object metric from a custom
# metrics adapter that serves only custom.metrics.k8s.io/v1beta1 (the same test server):
# the controller finds the version in discovery, asks in it and scales on the answer.
#
# Usage: test_hpa_metrics.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_webhook aggregated_api.py api api.wardle.svc
start_server --horizontal-pod-autoscaler-sync-period 1s

cat >"$work/adapter.json" <<EOF
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "adapter"}},
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "adapter"},
  "spec": {"ports": [{"port": 443, "targetPort": $hook_port}]}},
 {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "api-1", "namespace": "adapter", "labels": {"kubernetes.io/service-name": "api"}},
  "addressType": "IPv4", "ports": [{"name": "", "port": $hook_port, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]},
 {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
  "metadata": {"name": "v1beta1.external.metrics.k8s.io"},
  "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
           "versionPriority": 100, "insecureSkipTLSVerify": true,
           "service": {"namespace": "adapter", "name": "api"}}}]}
EOF
k create -f "$work/adapter.json" >"$work/out" 2>&1
check "the adapter's APIService is created ($(cat "$work/out"))" grep -q 'v1beta1.external.metrics.k8s.io created' "$work/out"
poll "the adapter's APIService becomes Available" sh -c \
    "kubectl get apiservice v1beta1.external.metrics.k8s.io -o jsonpath='{.status.conditions[?(@.type==\"Available\")].status}' | grep -qx True"

# autoscale NAME METRIC: a Deployment NAME of 1 replica and an autoscaler NAME of it (1 to
# 5) with the one metric METRIC (a JSON MetricSpec); checked created
autoscale() {
    k create deployment "$1" --image=nginx --replicas=1 >/dev/null 2>&1
    printf '%s' "{\"apiVersion\": \"autoscaling/v2\", \"kind\": \"HorizontalPodAutoscaler\",
        \"metadata\": {\"name\": \"$1\"}, \"spec\": {\"scaleTargetRef\": {\"apiVersion\": \"apps/v1\",
        \"kind\": \"Deployment\", \"name\": \"$1\"}, \"minReplicas\": 1, \"maxReplicas\": 5,
        \"metrics\": [$2]}}" | k create -f - >"$work/out" 2>&1
    check "the autoscaler $1 is created ($(cat "$work/out"))" \
        grep -q "horizontalpodautoscaler.autoscaling/$1 created" "$work/out"
}

autoscale web '{"type": "External", "external": {"metric": {"name": "queue_messages_ready",
    "selector": {"matchLabels": {"queue": "worker"}}},
    "target": {"type": "AverageValue", "averageValue": "1"}}}'
poll "the Deployment is scaled to 3 (3 against 1 per pod)" sh -c \
    "[ \"\$(kubectl get deployment web -o jsonpath='{.spec.replicas}')\" = 3 ]"
check "the adapter was asked for the metric with its selector" \
    grep -q '"/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready?labelSelector=queue%3Dworker"' "$work/reviews.log"
poll "ScalingActive: ValidMetricFound from the external metric" sh -c \
    "kubectl get hpa web -o jsonpath='{.status.conditions[?(@.type==\"ScalingActive\")].message}' | grep -q 'the HPA was able to successfully calculate a replica count from external metric queue_messages_ready(&LabelSelector{MatchLabels:map\[string\]string{queue: worker,}'"
check "the status has the external metric's average" sh -c \
    "kubectl get hpa web -o jsonpath='{.status.currentMetrics[0].type}/{.status.currentMetrics[0].external.metric.name}' | grep -qx External/queue_messages_ready"

# an Object metric from a custom metrics adapter that serves only v1beta1: the controller
# finds the version in discovery and reads v1beta1's MetricValue
sed -e 's/v1beta1.external.metrics.k8s.io/v1beta1.custom.metrics.k8s.io/' \
    -e 's/"group": "external.metrics.k8s.io"/"group": "custom.metrics.k8s.io"/' \
    "$work/adapter.json" | python3 -c 'import json, sys; l = json.load(sys.stdin); print(json.dumps(l["items"][-1]))' \
    | k create -f - >"$work/out" 2>&1
check "the custom metrics adapter's APIService is created ($(cat "$work/out"))" grep -q 'v1beta1.custom.metrics.k8s.io created' "$work/out"
autoscale api '{"type": "Object", "object": {"describedObject": {"apiVersion": "v1",
    "kind": "Service", "name": "api"}, "metric": {"name": "requests"},
    "target": {"type": "AverageValue", "averageValue": "1"}}}'
poll "the Deployment api is scaled to 3 (3 against 1 per pod)" sh -c \
    "[ \"\$(kubectl get deployment api -o jsonpath='{.spec.replicas}')\" = 3 ]"
check "the v1beta1 adapter was asked in v1beta1" \
    grep -q '"/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/services/api/requests"' "$work/reviews.log"
check "the status has the object metric" sh -c \
    "kubectl get hpa api -o jsonpath='{.status.currentMetrics[0].type}/{.status.currentMetrics[0].object.metric.name}/{.status.currentMetrics[0].object.current.averageValue}' | grep -qx Object/requests/3"

k delete apiservice v1beta1.external.metrics.k8s.io >/dev/null 2>&1
poll "without the adapter: FailedGetExternalMetric" sh -c \
    "kubectl get hpa web -o jsonpath='{.status.conditions[?(@.type==\"ScalingActive\")].reason}' | grep -qx FailedGetExternalMetric"
k describe hpa web >"$work/out" 2>&1
check "describe: the external metrics client's words" grep -q 'unable to get external metric default/queue_messages_ready/&LabelSelector{MatchLabels:map\[string\]string{queue: worker,},MatchExpressions:\[\]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API' "$work/out"
finish
