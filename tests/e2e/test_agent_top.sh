#!/bin/sh
# test_agent_top.sh - `kubectl top` with the real kubectl 1.32 against a real `ckube
# server` and `ckube agent --container-runtime process`, with no metrics-server: the
# agent's /metrics/resource (kubelet's resource metrics, client certificate required)
# reports a pod that burns a CPU, metrics.k8s.io/v1beta1 is in discovery, and `kubectl
# top node` and `kubectl top pod` (all namespaces, by label, by name, --containers) show
# the node and the pod with CPU and memory above zero; a user with the view role runs
# `kubectl top pod` in its namespace only; nodes whose agents cannot be reached are left
# out without holding kubectl top up; NodeMetrics and PodMetrics read whole have
# their window and timestamp; a missing pod is NotFound, a write refused.
#
# Usage: test_agent_top.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
agent_port=$(free_port)
start_server -v 2
start_process_node "$root" "$agent_port"

cat <<EOF | k create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: burn, labels: {app: burn}}
spec:
  containers:
  - {name: loop, image: busybox, command: ["sh", "-c", "while :; do :; done"], env: [{name: CKUBE_E2E_MARK, value: "$work"}]}
  - {name: idle, image: busybox, command: ["sleep", "3600"], env: [{name: CKUBE_E2E_MARK, value: "$work"}]}
EOF
wait_for "burn Running" pod/burn '{.status.phase}=Running'
sleep 1

# the agent's endpoint on the node's address, as the API server's kubelet client reads it
node_ip=$(k get node n1 -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
acurl() { curl -s -k --cert "$work/data/pki/admin.crt" --key "$work/data/pki/admin.key" "$@"; }
acurl "https://$node_ip:$agent_port/metrics/resource" >"$work/resource.txt"
# value_of PATTERN: the value of the first sample line matching PATTERN
value_of() { awk -v p="$1" 'index($0, p) == 1 { print $2; exit }' "$work/resource.txt"; }
cpu=$(value_of 'container_cpu_usage_seconds_total{container="loop",namespace="default",pod="burn"} ')
check "/metrics/resource: the burning container's CPU seconds above 0 ($cpu)" \
    awk -v v="${cpu:-0}" 'BEGIN { exit !(v + 0 > 0) }'
mem=$(value_of 'container_memory_working_set_bytes{container="idle",namespace="default",pod="burn"} ')
check "/metrics/resource: the idle container's working set above 0 ($mem)" \
    awk -v v="${mem:-0}" 'BEGIN { exit !(v + 0 > 0) }'
check "/metrics/resource: the pod's CPU" grep -q '^pod_cpu_usage_seconds_total{namespace="default",pod="burn"} [0-9.e+]* [0-9]*$' "$work/resource.txt"
check "/metrics/resource: the node's CPU with its time" grep -q '^node_cpu_usage_seconds_total [0-9.e+]* [0-9]*$' "$work/resource.txt"
check "/metrics/resource: the node's working set" grep -q '^node_memory_working_set_bytes [0-9.e+]* [0-9]*$' "$work/resource.txt"
check "/metrics/resource: no scrape error" grep -q '^resource_scrape_error 0$' "$work/resource.txt"
check "/metrics/resource: the families' TYPE lines" grep -q '^# TYPE container_cpu_usage_seconds_total counter$' "$work/resource.txt"
code=$(curl -s -k -o /dev/null -w '%{http_code}' "https://$node_ip:$agent_port/metrics/resource")
check "/metrics/resource without a client certificate: 401 (got $code)" test "$code" = 401

# discovery: the built-in group (its APIService is a local one)
check "api-versions lists metrics.k8s.io/v1beta1" sh -c 'kubectl api-versions | grep -qx metrics.k8s.io/v1beta1'
kubectl api-resources --api-group=metrics.k8s.io --no-headers >"$work/resources.txt" 2>&1
check "api-resources: nodes (NodeMetrics) and pods (PodMetrics) of metrics.k8s.io" \
    sh -c "grep -q '^nodes .*metrics.k8s.io/v1beta1 *false *NodeMetrics' '$work/resources.txt' && grep -q '^pods .*metrics.k8s.io/v1beta1 *true *PodMetrics' '$work/resources.txt'"

# millicores CPU(cores) of a `kubectl top` line's column N above 0
above_zero() { awk -v n="$2" '{ v = $n; sub(/m$/, "", v); sub(/Mi$|Ki$|Gi$/, "", v); exit !(v + 0 > 0) }' "$1"; }

# kubectl top node: n1 with CPU and memory
poll "kubectl top node shows n1" sh -c "kubectl top node --no-headers >'$work/top-node.txt' 2>&1 && grep -q '^n1 ' '$work/top-node.txt'"
check "kubectl top node: n1's CPU above 0 ($(cat "$work/top-node.txt"))" above_zero "$work/top-node.txt" 2
check "kubectl top node: n1's memory above 0" above_zero "$work/top-node.txt" 4

# kubectl top pod: the burning pod
poll "kubectl top pod shows burn" sh -c "kubectl top pod --no-headers >'$work/top-pod.txt' 2>&1 && grep -q '^burn ' '$work/top-pod.txt'"
check "kubectl top pod: burn's CPU above 0 ($(cat "$work/top-pod.txt"))" above_zero "$work/top-pod.txt" 2
check "kubectl top pod: burn's memory above 0" above_zero "$work/top-pod.txt" 3
kubectl top pod burn --containers --no-headers >"$work/top-containers.txt" 2>&1
check "kubectl top pod --containers: both containers ($(tr '\n' ' ' <"$work/top-containers.txt"))" \
    sh -c "grep -q '^burn *loop ' '$work/top-containers.txt' && grep -q '^burn *idle ' '$work/top-containers.txt'"
check "kubectl top pod --containers: the loop's CPU above 0" sh -c "grep '^burn *loop ' '$work/top-containers.txt' | awk '{ v = \$3; sub(/m\$/, \"\", v); exit !(v + 0 > 0) }'"
kubectl top pod -A -l app=burn --no-headers >"$work/top-all.txt" 2>&1
check "kubectl top pod -A -l app=burn: default/burn" grep -q '^default *burn ' "$work/top-all.txt"
kubectl top pod -l app=nothing >"$work/top-none.txt" 2>&1
check "kubectl top pod -l app=nothing: no resources ($(cat "$work/top-none.txt"))" grep -q 'No resources found' "$work/top-none.txt"

# a user who may view the namespace may run kubectl top there (the view role aggregates
# metrics-server's reader), and nowhere else
"$ckube" certs client --data-dir "$work/data" --cn jane --kubeconfig "$work/jane.kubeconfig" \
    --server "$url" >/dev/null 2>&1
k create rolebinding jane-view --clusterrole=view --user=jane >/dev/null
poll "jane (view in default) runs kubectl top pod" sh -c "kubectl --kubeconfig '$work/jane.kubeconfig' top pod --no-headers 2>&1 | grep -q '^burn '"
kubectl --kubeconfig "$work/jane.kubeconfig" top pod -n kube-system >"$work/jane-other.txt" 2>&1
check "jane: kubectl top pod in another namespace is forbidden ($(cat "$work/jane-other.txt"))" \
    grep -q 'forbidden' "$work/jane-other.txt"

# nodes whose agents cannot be scraped (simulated ones: their addresses time out, or, on a
# network whose gateway answers everything, give no metrics) are left out, scraped at once
# rather than one after the other, and not asked again at once
start_fake_nodes --count 4 --prefix ghost- --renew-interval 1s
poll "the simulated nodes registered" sh -c "[ \$(kubectl get nodes -o name | grep -c ghost-) -eq 4 ]"
start=$(date +%s)
kubectl top node --no-headers >"$work/top-ghosts.txt" 2>&1
took=$(($(date +%s) - start))
check "kubectl top node with unreachable nodes: n1's figures, <unknown> for the others ($(tr '\n' ' ' <"$work/top-ghosts.txt"))" \
    sh -c "grep -q '^n1 *[0-9]*m ' '$work/top-ghosts.txt' && [ \$(grep -c '^ghost-[0-9] *<unknown>' '$work/top-ghosts.txt') -eq 4 ]"
check "kubectl top node with 4 nodes that cannot be scraped took ${took}s (under 9 s: at most one connect timeout)" test "$took" -lt 9
start=$(date +%s)
kubectl top node --no-headers >/dev/null 2>&1
took=$(($(date +%s) - start))
check "kubectl top node again at once: the failed ones wait their retry (${took}s)" test "$took" -lt 3

# the objects themselves
k get --raw /apis/metrics.k8s.io/v1beta1/nodes/n1 >"$work/node.json"
check "NodeMetrics n1: kind, labels, window and timestamp" python3 - "$work/node.json" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["kind"] == "NodeMetrics" and o["apiVersion"] == "metrics.k8s.io/v1beta1", o
assert o["metadata"]["name"] == "n1" and o["metadata"]["labels"]["kubernetes.io/hostname"] == "n1", o
assert o["window"].endswith("s") and o["timestamp"].endswith("Z"), o
assert set(o["usage"]) == {"cpu", "memory"}, o
EOF
k get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods >"$work/pods.json"
check "PodMetricsList: burn with its labels and containers" python3 - "$work/pods.json" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["kind"] == "PodMetricsList", o
burn = [p for p in o["items"] if p["metadata"]["name"] == "burn"][0]
assert burn["metadata"]["namespace"] == "default" and burn["metadata"]["labels"] == {"app": "burn"}, burn
assert sorted(c["name"] for c in burn["containers"]) == ["idle", "loop"], burn
EOF
k get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nosuch >/dev/null 2>"$work/nosuch.err"
check "a missing pod: NotFound ($(cat "$work/nosuch.err"))" grep -q 'podmetrics.metrics.k8s.io "nosuch" not found' "$work/nosuch.err"
code=$(kurl -o /dev/null -w '%{http_code}' -X DELETE "$url/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn")
check "a delete of PodMetrics: 405 (got $code)" test "$code" = 405

k delete pod burn --wait=true --timeout=60s >/dev/null 2>&1
stop_agent
[ "$failures" -ne 0 ] && { echo "--- /metrics/resource ---"; cat "$work/resource.txt"; echo "--- agent log ---"; tail -n 40 "$work/agent.err"; }
finish
