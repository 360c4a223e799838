#!/bin/sh
# test_agent_cri_podcidr.sh - the node's pod range on containerd's CRI when the Node's
# spec.podCIDR comes after the agent registered: the real kubectl against a real `ckube
# server` (SQLite, whose controller manager's node-ipam-controller gives node n1 a range of
# 10.244.0.0/16 once the Node is there) and `ckube agent --pod-cidr 10.99.0.0/24` driving a
# containerd of the test's own, in namespaces of its own (tests/lib/containerd.sh). Pods
# bound to n1 are there before the agent starts, so the agent has pods to start before the
# Node has a range. Checked:
#
# - those pods and one created afterwards run, each with an address from the Node's range,
#   none from --pod-cidr's (which serves only when the Node gets no range);
# - the agent's CNI configuration is written for the Node's range only, never the flag's;
# - the bridge has the Node's range's gateway address;
# - a sandbox refused before the Node had its range was refused for that reason only;
# - the pods and their containers are gone afterwards.
#
# Usage: test_agent_cri_podcidr.sh PATH/TO/ckube
set -u
. "$(dirname "$0")/cri_lib.sh"

# in_range IP CIDR: the address is in the /24 CIDR
in_range() {
    case $1 in "${2%.0/24}".*) return 0 ;; esac
    return 1
}

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    cri_e2e_server
    sleeper="{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    create early-a "$sleeper"
    create early-b "$sleeper"
    start_agent --pod-cidr 10.99.0.0/24
    poll "node n1 registered" k get node n1
    poll "the node has a pod range" sh -c "[ -n \"\$(kubectl get node n1 -o jsonpath='{.spec.podCIDR}')\" ]"
    pod_cidr=$(jp node/n1 '{.spec.podCIDR}')
    case $pod_cidr in 10.244.*.0/24) pass ;; *) fail "n1's spec.podCIDR from --cluster-cidr: '$pod_cidr'" ;; esac
    wait_for "early-a Running" pod/early-a '{.status.phase}=Running'
    wait_for "early-b Running" pod/early-b '{.status.phase}=Running'
    create late "$sleeper"
    wait_for "late Running" pod/late '{.status.phase}=Running'
    for p in early-a early-b late; do
        ip=$(jp "pod/$p" '{.status.podIP}')
        check "$p's address $ip is from the Node's range $pod_cidr" in_range "$ip" "$pod_cidr"
    done
    check "the CNI configuration is for the Node's range" \
        grep -q "\"$pod_cidr\"" "$cri_dir/cni/net.d/10-ckube.conflist"
    check "the flag's range is not in the CNI configuration" \
        sh -c "! grep -q '10\.99\.' '$cri_dir/cni/net.d/10-ckube.conflist'"
    check "the flag's range was never given to the runtime" \
        sh -c "! grep -q 'Updating runtime config.*10\.99\.' '$work/agent.err'"
    gateway="${pod_cidr%.0/24}.1/24"
    check "the bridge has the Node's range's gateway $gateway ($(ip -4 -o addr show ckube0 2>&1))" \
        sh -c "ip -4 -o addr show ckube0 | grep -q ' $gateway '"
    # a sandbox refused before the range came says why; none failed for another reason
    k get events -o jsonpath='{range .items[?(@.reason=="FailedCreatePodSandBox")]}{.message}{"\n"}{end}' \
        >"$work/sandbox-events"
    check "sandboxes refused only for want of the Node's range ($(head -c 300 "$work/sandbox-events"))" \
        sh -c "! grep -v 'no pod CIDR for the node yet' '$work/sandbox-events' | grep -q ."
    k delete pod early-a early-b late --wait=false >/dev/null
    cri_e2e_finish
fi

cri_e2e_outside "$@"
