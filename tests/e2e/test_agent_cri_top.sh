#!/bin/sh
# test_agent_cri_top.sh - `kubectl top` on the CRI runtime: the real kubectl against a
# real `ckube server` (SQLite) and `ckube agent` driving a containerd of the test's own,
# in namespaces of its own (tests/lib/containerd.sh), with no metrics-server. The
# agent's /metrics/resource takes the containers' CPU and working set from containerd's
# ListContainerStats; the server's metrics.k8s.io turns two scrapes into rates. Checked:
# the burning container's CPU seconds and the idle one's working set above 0 in
# /metrics/resource, the pod's own figures (ListPodSandboxStats) at least its containers', `kubectl top pod` (and --containers) with CPU above 0, the
# PodMetrics' memory above 0, `kubectl top node` showing n1.
#
# Usage: test_agent_cri_top.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_start "$@"

    create burn "{'containers': [
        {'name': 'loop', 'image': '$busybox_image', 'command': ['sh', '-c', 'while :; do :; done']},
        {'name': 'idle', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    wait_for "burn Running" pod/burn '{.status.phase}=Running'
    sleep 1

    node_ip=$(jp node/n1 '{.status.addresses[?(@.type=="InternalIP")].address}')
    curl -s -k --cert "$work/data/pki/admin.crt" --key "$work/data/pki/admin.key" \
        "https://$node_ip:$agent_port/metrics/resource" >"$work/resource.txt"
    value_of() { awk -v p="$1" 'index($0, p) == 1 { print $2; exit }' "$work/resource.txt"; }
    cpu=$(value_of 'container_cpu_usage_seconds_total{container="loop",namespace="default",pod="burn"} ')
    check "/metrics/resource: the burning container's CPU seconds above 0 ($cpu)" \
        awk -v v="${cpu:-0}" 'BEGIN { exit !(v + 0 > 0) }'
    mem=$(value_of 'container_memory_working_set_bytes{container="idle",namespace="default",pod="burn"} ')
    check "/metrics/resource: the idle container's working set above 0 ($mem)" \
        awk -v v="${mem:-0}" 'BEGIN { exit !(v + 0 > 0) }'
    check "/metrics/resource: no scrape error" grep -q '^resource_scrape_error 0$' "$work/resource.txt"
    # the pod's own figures (ListPodSandboxStats: its cgroup, the sandbox's included) hold
    # at least its containers'
    pod_mem=$(value_of 'pod_memory_working_set_bytes{namespace="default",pod="burn"} ')
    loop_mem=$(value_of 'container_memory_working_set_bytes{container="loop",namespace="default",pod="burn"} ')
    check "/metrics/resource: the pod's working set ($pod_mem) at least its containers' ($mem + $loop_mem)" \
        awk -v p="${pod_mem:-0}" -v a="${mem:-0}" -v b="${loop_mem:-0}" 'BEGIN { exit !(p + 0 > 0 && p + 0 >= a + b) }'
    pod_cpu=$(value_of 'pod_cpu_usage_seconds_total{namespace="default",pod="burn"} ')
    check "/metrics/resource: the pod's CPU seconds at least the loop's ($pod_cpu >= $cpu)" \
        awk -v p="${pod_cpu:-0}" -v c="${cpu:-0}" 'BEGIN { exit !(p + 0 > 0 && p + 0 >= c + 0) }'

    above_zero() { awk -v n="$2" '{ v = $n; sub(/m$/, "", v); sub(/Mi$|Ki$|Gi$/, "", v); exit !(v + 0 > 0) }' "$1"; }
    poll "kubectl top node shows n1" sh -c "kubectl top node --no-headers >'$work/top-node.txt' 2>&1 && grep -q '^n1 ' '$work/top-node.txt'"
    check "kubectl top node: n1's CPU above 0 ($(cat "$work/top-node.txt"))" above_zero "$work/top-node.txt" 2
    poll "kubectl top pod shows burn" sh -c "kubectl top pod --no-headers >'$work/top-pod.txt' 2>&1 && grep -q '^burn ' '$work/top-pod.txt'"
    check "kubectl top pod: burn's CPU above 0 ($(cat "$work/top-pod.txt"))" above_zero "$work/top-pod.txt" 2
    # busybox's working sets are a few hundred KiB, which kubectl prints as 0Mi: the object's
    k get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn >"$work/burn.json"
    check "PodMetrics burn: both containers' memory above 0 ($(cat "$work/burn.json"))" python3 - "$work/burn.json" <<'PY'
import json, sys
units = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
def quantity(q):
    n = q.rstrip("KMGi")
    return int(n) * units[q[len(n):]]
o = json.load(open(sys.argv[1]))
mem = {c["name"]: quantity(c["usage"]["memory"]) for c in o["containers"]}
assert sorted(mem) == ["idle", "loop"] and all(v > 0 for v in mem.values()), mem
PY
    kubectl top pod burn --containers --no-headers >"$work/top-containers.txt" 2>&1
    check "kubectl top pod --containers: the loop's CPU above 0 ($(tr '\n' ' ' <"$work/top-containers.txt"))" \
        sh -c "grep '^burn *loop ' '$work/top-containers.txt' | awk '{ v = \$3; sub(/m\$/, \"\", v); exit !(v + 0 > 0) }'"
    check "kubectl top pod --containers: the idle container" grep -q '^burn *idle ' "$work/top-containers.txt"

    k delete pod burn --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
