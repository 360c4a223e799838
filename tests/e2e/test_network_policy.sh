#!/bin/sh
# test_network_policy.sh - NetworkPolicies enforced on real containers by
# `ckube proxy --network-policy`. Inside network and mount namespaces of the test's own
# (cri_lib.sh): a containerd, a `ckube server` (SQLite), `ckube agent` (node n1) and the
# proxy. A busybox httpd pod "server" in namespace default (named port http, 8080), and
# busybox clients: "friend" (app=friend) and "stranger" (app=stranger) in default,
# "visitor" in namespace guests. Each client fetches http://SERVER-IP:8080/ (a new
# connection each time; the table judges its first packet). Checked:
#   - --network-policy=maybe is a usage error;
#   - without a policy every client gets the page;
#   - a default-deny ingress policy in default blocks all three, and the node itself
#     still reaches the pod (a pod cannot block its node);
#   - an allow rule with a podSelector (app=friend) on the named port lets friend in and
#     not stranger nor visitor;
#   - a rule with a namespaceSelector (kubernetes.io/metadata.name=guests) lets visitor in;
#   - an egress default-deny in guests stops visitor again;
#   - deleting the policies opens everything; `ckube proxy --cleanup` removes the table.
# Processes are stopped by PID; outside, cri_lib.sh checks nothing was left.
#
# Usage: test_network_policy.sh PATH/TO/ckube. Skips (77, saying why) as cri_lib.sh does
# (root, containerd, runc, CNI plugins, busybox, kubectl), and without nft or the
# kernel's bridge netfilter (bridged pod traffic must pass the forward hook).
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    # pods on one bridge talk at layer 2: br_netfilter hands their packets to the
    # forward hook (per network namespace; on by default where the module is loaded)
    [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
        skip "no bridge netfilter (the kernel module br_netfilter)"
    echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
    cri_e2e_server
    start_node
    check "--network-policy takes true or false only (a usage error)" sh -c \
        "\"$ckube\" proxy --kubeconfig \"$KUBECONFIG\" --network-policy=maybe >/dev/null 2>&1; [ \$? -eq 2 ]"
    start_proxy --network-policy
    poll "the proxy made the policies' table" nft list table ip ckube-netpol

    k create namespace guests >/dev/null
    create server "{'containers': [{'name': 'web', 'image': '$busybox_image',
        'command': ['sh', '-c', 'mkdir -p /www && echo hello >/www/index.html && exec httpd -f -p 8080 -h /www'],
        'ports': [{'name': 'http', 'containerPort': 8080}]}]}"
    for c in friend stranger visitor; do
        ns=""
        [ "$c" = visitor ] && ns=guests
        create "$c" "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}" "$ns"
    done
    k label pod server app=server >/dev/null
    k label pod friend app=friend >/dev/null
    k label pod stranger app=stranger >/dev/null
    k label -n guests pod visitor app=visitor >/dev/null
    for c in server friend stranger; do
        wait_for "$c Running" "pod/$c" '{.status.phase}=Running'
    done
    poll "visitor Running" sh -c \
        "[ \"\$(kubectl get pod -n guests visitor -o jsonpath='{.status.phase}')\" = Running ]"
    server_ip=$(jp pod/server '{.status.podIP}')

    # reaches CLIENT: CLIENT's fetch of the server's page succeeds
    reaches() {
        ns=default
        [ "$1" = visitor ] && ns=guests
        [ "$(k exec -n "$ns" "$1" -- timeout 3 wget -q -O- "http://$server_ip:8080/" 2>/dev/null)" = hello ]
    }
    blocked() { ! reaches "$1"; }
    for c in friend stranger visitor; do
        check "without a policy $c reaches the server" reaches "$c"
    done

    k apply -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: default}
spec: {podSelector: {}, policyTypes: [Ingress]}
EOF
    poll "default-deny: friend is blocked" blocked friend
    check "default-deny: stranger is blocked" blocked stranger
    check "default-deny: visitor is blocked" blocked visitor
    check "default-deny: the node still reaches the pod" sh -c \
        "[ \"\$(curl -s -m 3 http://$server_ip:8080/)\" = hello ]"
    check "the node's pods of default are isolated for ingress" sh -c \
        "nft list set ip ckube-netpol ingress-isolated | grep -q 'elements = '"

    k apply -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-friend, namespace: default}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: friend}}}]
    ports: [{port: http}]
EOF
    poll "a podSelector rule lets friend in" reaches friend
    check "and not stranger" blocked stranger
    check "nor visitor, of another namespace" blocked visitor

    k apply -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-guests, namespace: default}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: guests}}}]
    ports: [{protocol: TCP, port: 8080}]
EOF
    poll "a namespaceSelector rule lets visitor in" reaches visitor
    check "policies add up: friend still reaches the server" reaches friend
    check "stranger is still blocked" blocked stranger

    k apply -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: no-egress, namespace: guests}
spec: {podSelector: {}, policyTypes: [Egress]}
EOF
    poll "an egress default-deny in guests stops visitor" blocked visitor
    check "friend, in default, is not concerned" reaches friend

    k delete networkpolicy -n guests no-egress >/dev/null
    k delete networkpolicy default-deny allow-friend allow-guests >/dev/null
    poll "without policies stranger reaches the server again" reaches stranger
    check "and visitor" reaches visitor

    stop_proxy
    "$ckube" proxy --cleanup >>"$work/proxy.log" 2>&1
    check "ckube proxy --cleanup removes the policies' table" sh -c "! nft list table ip ckube-netpol"

    k delete pod server friend stranger --wait=false >/dev/null
    k delete pod -n guests visitor --wait=false >/dev/null
    poll "every pod of guests deleted" sh -c "[ -z \"\$(kubectl get pods -n guests -o name)\" ]"
    if [ "$failures" -ne 0 ]; then
        echo "--- proxy log ---"
        tail -n 20 "$work/proxy.log"
        nft list table ip ckube-netpol 2>&1 | head -60
    fi
    cri_e2e_finish
fi

command -v nft >/dev/null 2>&1 || skip "no nft (Debian package nftables)"
command -v curl >/dev/null 2>&1 || skip "no curl"
cri_e2e_outside "$@"
