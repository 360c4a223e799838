#!/bin/sh
# test_hpa.sh - HorizontalPodAutoscalers with the real kubectl 1.32 against a real
# `ckube server` (its controllers on, the autoscaler's sync period 1 s, its downscale
# stabilization 3 s): `kubectl autoscale` (which writes autoscaling/v1 in protobuf),
# `kubectl get hpa` and its columns in both versions, the object read in autoscaling/v2
# and autoscaling/v1 (targetCPUUtilizationPercentage <-> the CPU metric; behavior in
# the annotation), `kubectl get all`, validation in Kubernetes' words, the controller's
# conditions and events when no pod has metrics; then, with a node agent on the process
# runtime, a Deployment whose pods burn more CPU than they request is scaled up by its
# autoscaler on the metrics the server's metrics.k8s.io reads from the agent, and down
# again once the target is raised.
#
# Usage: test_hpa.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
start_server --horizontal-pod-autoscaler-sync-period 1s \
    --horizontal-pod-autoscaler-downscale-stabilization 3s

# ---- the kind, without a node --------------------------------------------------------
k create deployment web --image=nginx --replicas=1 >/dev/null 2>&1
k autoscale deployment web --min=1 --max=5 --cpu-percent=50 >"$work/out" 2>&1
check "kubectl autoscale ($(cat "$work/out"))" grep -q '^horizontalpodautoscaler.autoscaling/web autoscaled$' "$work/out"
k get hpa >"$work/out" 2>&1
check "kubectl get hpa: columns ($(head -1 "$work/out"))" \
    sh -c 'head -1 "$1" | grep -Eq "^NAME +REFERENCE +TARGETS +MINPODS +MAXPODS +REPLICAS +AGE$"' - "$work/out"
check "kubectl get hpa: the row ($(sed -n 2p "$work/out"))" \
    grep -Eq '^web +Deployment/web +cpu: <unknown>/50% +1 +5 +[0-9]+ +[0-9]+[sm]$' "$work/out"
k get horizontalpodautoscalers.v1.autoscaling web >"$work/out1" 2>&1
check "the v1 table is the same" sh -c 'sed -n 2p "$1" | grep -Eq "^web +Deployment/web +cpu: <unknown>/50% +1 +5 "' - "$work/out1"
check "read in v2: the CPU metric" test \
    "$(k get horizontalpodautoscalers.v2.autoscaling web -o jsonpath='{.apiVersion} {.spec.metrics[0].type} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.averageUtilization}')" \
    = "autoscaling/v2 Resource cpu 50"
check "read in v1: targetCPUUtilizationPercentage" test \
    "$(k get horizontalpodautoscalers.v1.autoscaling web -o jsonpath='{.apiVersion} {.spec.targetCPUUtilizationPercentage} {.spec.minReplicas}')" \
    = "autoscaling/v1 50 1"
k api-resources --api-group=autoscaling --no-headers >"$work/out" 2>&1
check "api-resources: hpa, preferred autoscaling/v2 ($(cat "$work/out"))" \
    grep -Eq '^horizontalpodautoscalers +hpa +autoscaling/v2 +true +HorizontalPodAutoscaler$' "$work/out"
check "api-versions: both versions" sh -c 'kubectl api-versions | grep -qx autoscaling/v1 && kubectl api-versions | grep -qx autoscaling/v2'
k get all >"$work/out" 2>&1
check "kubectl get all lists it" grep -q '^horizontalpodautoscaler.autoscaling/web ' "$work/out"

# the controller, with no metrics to read (no node)
poll "the controller says why it cannot compute" sh -c \
    "kubectl get hpa web -o jsonpath='{.status.conditions[?(@.type==\"ScalingActive\")].reason}' | grep -qx FailedGetResourceMetric"
k describe hpa web >"$work/out" 2>&1
check "describe: AbleToScale True SucceededGetScale" grep -Eq '^ +AbleToScale +True +SucceededGetScale +the HPA controller was able to get the target.s current scale$' "$work/out"
check "describe: the metric API's words" grep -q 'unable to get metrics for resource cpu: no metrics returned from resource metrics API' "$work/out"
check "describe: the FailedComputeMetricsReplicas event" grep -Eq 'Warning +FailedComputeMetricsReplicas +.*invalid metrics \(1 invalid out of 1\), first error is: failed to get cpu resource metric value' "$work/out"

# a v2 object with a behavior: v1 keeps what it cannot say in annotations
cat <<'EOF' | k create -f - >"$work/out" 2>&1
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: mem}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
EOF
check "create a v2 autoscaler ($(cat "$work/out"))" grep -q 'horizontalpodautoscaler.autoscaling/mem created' "$work/out"
check "v2 defaults: minReplicas 1, the scale-up rules, the scale-down policy" test \
    "$(k get horizontalpodautoscalers.v2.autoscaling mem -o jsonpath='{.spec.minReplicas} {.spec.behavior.scaleUp.policies[0].type}/{.spec.behavior.scaleUp.policies[0].value} {.spec.behavior.scaleDown.selectPolicy} {.spec.behavior.scaleDown.policies[0].type}/{.spec.behavior.scaleDown.policies[0].value}')" \
    = "1 Pods/4 Max Percent/100"
k get horizontalpodautoscalers.v1.autoscaling mem -o json >"$work/v1.json" 2>&1
check "v1: the memory metric and the behavior in annotations" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
a = o["metadata"]["annotations"]
m = json.loads(a["autoscaling.alpha.kubernetes.io/metrics"])
b = json.loads(a["autoscaling.alpha.kubernetes.io/behavior"])
assert "targetCPUUtilizationPercentage" not in o["spec"], o["spec"]
assert m == [{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}], m
assert b["scaleDown"]["stabilizationWindowSeconds"] == 60, b
' "$work/v1.json"
k get hpa mem >"$work/out" 2>&1
check "the TARGETS of an average value ($(sed -n 2p "$work/out"))" grep -Eq '^mem +Deployment/web +memory: <unknown>/100Mi +1 +4 ' "$work/out"
# a v1 update (kubectl's read-modify-write) keeps the v2-only fields
k patch horizontalpodautoscalers.v1.autoscaling mem --type=merge -p '{"spec":{"maxReplicas":6}}' >/dev/null 2>&1
check "a v1 patch keeps the metric and behavior" test \
    "$(k get horizontalpodautoscalers.v2.autoscaling mem -o jsonpath='{.spec.maxReplicas} {.spec.metrics[0].resource.name} {.spec.behavior.scaleDown.stabilizationWindowSeconds}')" \
    = "6 memory 60"

# validation in Kubernetes' words
cat <<'EOF' | k create -f - >"$work/out" 2>&1
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  minReplicas: 0
  maxReplicas: 2
  behavior:
    scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 1801}]}
EOF
check "minReplicas 0 refused ($(cat "$work/out"))" grep -q 'spec.minReplicas: Invalid value: 0: must be greater than or equal to 1' "$work/out"
check "a policy's period above 1800 refused" grep -q 'spec.behavior.scaleUp.policies\[0\].periodSeconds: Invalid value: 1801: must be less than or equal to 1800' "$work/out"
k delete hpa mem >/dev/null 2>&1
k delete deployment web >/dev/null 2>&1
k delete hpa web >/dev/null 2>&1

# ---- scaling on real metrics: a node agent on the process runtime ---------------------
start_process_node "$root" "$(free_port)"
# pods asking for 10m of CPU and using more: a little work every 50 ms
cat <<EOF | k create -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: busy}
spec:
  replicas: 1
  selector: {matchLabels: {app: busy}}
  template:
    metadata: {labels: {app: busy}}
    spec:
      containers:
      - name: work
        image: busybox
        command: ["sh", "-c", "while :; do head -c 200000 /dev/urandom | cksum >/dev/null; sleep 0.05; done"]
        resources: {requests: {cpu: 10m}}
        env: [{name: CKUBE_E2E_MARK, value: "$work"}]
EOF
wait_for "busy available" deployment/busy '{.status.availableReplicas}=1'
k autoscale deployment busy --min=1 --max=2 --cpu-percent=50 >/dev/null 2>&1
i=0
until [ "$(k get deployment busy -o jsonpath='{.spec.replicas}' 2>/dev/null)" = 2 ] || [ $i -gt 120 ]; do
    i=$((i + 1)); sleep 1
done
k get hpa busy >"$work/out" 2>&1
check "the autoscaler scales busy up on its pods' CPU ($(sed -n 2p "$work/out"))" \
    test "$(k get deployment busy -o jsonpath='{.spec.replicas}')" = 2
check "its TARGETS show the measured utilization" grep -Eq '^busy +Deployment/busy +cpu: [0-9]+%/50% +1 +2 ' "$work/out"
k get events --field-selector reason=SuccessfulRescale -o jsonpath='{.items[*].message}' >"$work/out" 2>&1
check "the SuccessfulRescale event ($(cat "$work/out"))" grep -q 'New size: 2; reason: cpu resource utilization (percentage of request) above target' "$work/out"
check "the status: the current CPU utilization above the target" sh -c \
    "[ \"\$(kubectl get horizontalpodautoscalers.v2.autoscaling busy -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}')\" -gt 50 ]"
check "and lastScaleTime" sh -c "kubectl get hpa busy -o jsonpath='{.status.lastScaleTime}' | grep -q T"
# a target far above the usage: down again once the stabilization window (3 s) passes
k patch horizontalpodautoscalers.v1.autoscaling busy --type=merge -p '{"spec":{"targetCPUUtilizationPercentage":100000}}' >/dev/null 2>&1
i=0
until [ "$(k get deployment busy -o jsonpath='{.spec.replicas}' 2>/dev/null)" = 1 ] || [ $i -gt 120 ]; do
    i=$((i + 1)); sleep 1
done
check "and scales it down when its pods use less than the target" \
    test "$(k get deployment busy -o jsonpath='{.spec.replicas}')" = 1
k get events --field-selector reason=SuccessfulRescale -o jsonpath='{.items[*].message}' >"$work/out" 2>&1
check "the scale-down event ($(cat "$work/out"))" grep -q 'New size: 1; reason: All metrics below target' "$work/out"
k delete deployment busy --wait=false >/dev/null 2>&1
stop_agent
finish
