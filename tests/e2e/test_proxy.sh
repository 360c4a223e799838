#!/bin/sh
# test_proxy.sh - `ckube proxy` against the real kernel and a real `ckube server`, all
# inside a network namespace the test makes for itself (`unshare --net`): the machine's
# own interfaces, tables and services are never touched.
#
# The test's namespace plays the node: loopback, an interface with the node's
# address (192.168.77.1, on one end of a veth pair) and a default route over it. Three more namespaces (each held
# by a `sleep` made with `unshare --net`, so none is named in /run/netns) are the
# endpoints: a veth pair each (10.244.N.1 on the node, 10.244.N.2 inside), each running
# busybox httpd on port 8080, serving a file naming its endpoint. The server runs with
# --disable-agent in the node namespace; kubectl creates a selector-less Service and its
# EndpointSlice by hand, and the proxy programs them. Checked, through curl from the
# node namespace:
#   - a ClusterIP reaches all three endpoints over repeated requests;
#   - an endpoint made not ready drops out;
#   - sessionAffinity ClientIP sticks to one endpoint;
#   - a NodePort answers on the node's address;
#   - a Service without endpoints is rejected at once (not a timeout);
#   - a restarted proxy adopts its table (a second run still routes, and a table of
#     someone else's in the namespace is left alone);
#   - a deleted Service's chains leave the table;
#   - /healthz (kube-proxy's JSON) and /metrics answer.
# Processes are stopped by PID; the namespaces vanish with their processes.
#
# Usage: test_proxy.sh PATH/TO/ckube. Exits 77 (skipped, saying why) without root,
# unshare, ip, nsenter, busybox, curl, nft (working) or kubectl.
set -u
ckube=$1
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${CKUBE_PROXY_TEST_NETNS:-}" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "test_proxy.sh: needs root for network namespaces and nftables; skipping" >&2
        exit 77
    fi
    for tool in unshare ip nsenter busybox curl nft; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "test_proxy.sh: no $tool; skipping" >&2
            exit 77
        fi
    done
    if ! unshare --net true 2>/dev/null; then
        echo "test_proxy.sh: cannot make a network namespace; skipping" >&2
        exit 77
    fi
    CKUBE_PROXY_TEST_NETNS=1 exec unshare --net sh "$0" "$@"
fi

# ---- inside the node's namespace ------------------------------------------------------
. "$here/lib.sh"
holders=""
daemons=""
proxy_pid=""
proxy_cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
    for pid in $daemons $holders; do kill "$pid" 2>/dev/null; done
    for pid in $daemons $holders; do wait "$pid" 2>/dev/null; done
    cleanup
}
trap proxy_cleanup EXIT

ip link set lo up
ip link add node0 type veth peer name node0-peer
ip addr add 192.168.77.1/24 dev node0
ip link set node0 up
ip link set node0-peer up
ip route add default dev node0
echo 1 >/proc/sys/net/ipv4/ip_forward
# someone else's table, which the proxy must leave alone (and the probe of nftables)
if ! nft add table ip other-table 2>/dev/null; then
    echo "test_proxy.sh: nftables does not work here; skipping" >&2
    exit 77
fi

for n in 1 2 3; do
    unshare --net sleep 100000 &
    holder=$!
    holders="$holders $holder"
    sleep 0.1
    ip link add "veth$n" type veth peer name eth0 netns "$holder"
    ip addr add "10.244.$n.1/24" dev "veth$n"
    ip link set "veth$n" up
    mkdir -p "$work/www$n"
    echo "endpoint-$n" >"$work/www$n/index.html"
    nsenter -t "$holder" -n sh -c "ip link set lo up; ip addr add 10.244.$n.2/24 dev eth0;
        ip link set eth0 up; ip route add default via 10.244.$n.1"
    nsenter -t "$holder" -n busybox httpd -f -p 8080 -h "$work/www$n" &
    daemons="$daemons $!"
done

start_server
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hz=$(free_port)
mp=$(free_port)
start_proxy() {
    "$ckube" proxy --kubeconfig "$KUBECONFIG" --hostname-override node-a \
        --cluster-cidr 10.244.0.0/16 --sync-period 5s \
        --healthz-bind-address "127.0.0.1:$hz" --metrics-bind-address "127.0.0.1:$mp" -v 2 \
        >>"$work/proxy.out" 2>>"$work/proxy.err" &
    proxy_pid=$!
}
start_proxy

k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.2], conditions: {ready: true}, nodeName: node-a}
- {addresses: [10.244.2.2], conditions: {ready: true}, nodeName: node-b}
- {addresses: [10.244.3.2], conditions: {ready: true}, nodeName: node-b}
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: default}
spec:
  ports: [{port: 80, protocol: TCP}]
EOF
cip=$(k get service web -o jsonpath='{.spec.clusterIP}')
empty_ip=$(k get service empty -o jsonpath='{.spec.clusterIP}')

# seen N: N requests to the ClusterIP; prints the sorted set of endpoints that answered
seen() {
    i=0
    while [ $i -lt "$1" ]; do
        curl -s -m 2 "http://$cip/" || true
        i=$((i + 1))
    done | sort -u | tr '\n' ' '
}
all_three() { [ "$(seen 30)" = "endpoint-1 endpoint-2 endpoint-3 " ]; }
poll "the ClusterIP $cip reaches all three endpoints" all_three

k patch endpointslice web-1 --type=json \
    -p '[{"op":"replace","path":"/endpoints/2/conditions/ready","value":false}]' >/dev/null
two_left() { [ "$(seen 30)" = "endpoint-1 endpoint-2 " ]; }
poll "an endpoint made not ready drops out" two_left

# kube-proxy's reject: refused at once, not a timeout
refused() {
    curl -s -m 5 "http://$empty_ip/" >/dev/null 2>&1
    [ $? -eq 7 ]
}
poll "a Service without endpoints is rejected" refused

k patch service web -p '{"spec":{"sessionAffinity":"ClientIP"}}' >/dev/null
sticky() { [ "$(seen 20 | wc -w)" -eq 1 ]; }
poll "sessionAffinity ClientIP sticks to one endpoint" sticky
k patch service web -p '{"spec":{"sessionAffinity":"None"}}' >/dev/null

k patch service web -p '{"spec":{"type":"NodePort"}}' >/dev/null
np=$(k get service web -o jsonpath='{.spec.ports[0].nodePort}')
nodeport() { curl -s -m 2 "http://192.168.77.1:$np/" | grep -q '^endpoint-[12]$'; }
poll "the NodePort $np answers on the node's address" nodeport

healthz() { curl -s -m 2 "http://127.0.0.1:$hz/healthz" | grep -q '"lastUpdated"'; }
poll "/healthz answers kube-proxy's JSON" healthz
metrics() {
    curl -s -m 2 "http://127.0.0.1:$mp/metrics" |
        grep -q '^kubeproxy_sync_proxy_rules_duration_seconds_count [1-9]'
}
poll "/metrics counts syncs" metrics

# a restart adopts the table: the new process rebuilds it and still routes
kill "$proxy_pid" && wait "$proxy_pid" 2>/dev/null
proxy_pid=""
k patch endpointslice web-1 --type=json \
    -p '[{"op":"replace","path":"/endpoints/2/conditions/ready","value":true}]' >/dev/null
start_proxy
poll "a restarted proxy adopts its table and routes to all three again" all_three
other_table() { nft list table ip other-table >/dev/null; }
check "the table of someone else is left alone" other_table

k delete service web >/dev/null
gone() { ! nft list table ip ckube-proxy | grep -q 'default/web/'; }
poll "a deleted Service's chains leave the table" gone
check "the proxy is still running" kill -0 "$proxy_pid"
if [ "$failures" -ne 0 ]; then
    echo "--- proxy log ---"; tail -n 30 "$work/proxy.err"
    echo "--- table ---"; nft list table ip ckube-proxy | head -80
fi
finish
