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
# EndpointSlice by hand, and the proxy programs them. A client namespace (192.168.77.2,
# outside the cluster CIDR) sits behind the node's interface. Checked, through curl:
#   - a ClusterIP reaches all three endpoints over repeated requests; UDP too (a
#     Python responder on each endpoint), and a UDP flow whose endpoint goes away has
#     its conntrack entry deleted, so it moves to the other endpoint;
#   - an endpoint made not ready drops out;
#   - sessionAffinity ClientIP sticks to one endpoint;
#   - traffic from outside the cluster CIDR is masqueraded; hairpin traffic works;
#   - traffic from outside the cluster CIDR is masqueraded; hairpin traffic works;
#   - a NodePort answers on the node's address;
#   - externalTrafficPolicy Local: only the node's endpoint, the client address kept,
#     and the health check node port (200 / 503 with the local endpoint count);
#   - externalTrafficPolicy Local: only the node's endpoint, the client address kept,
#     and the health check node port (200 / 503 with the local endpoint count);
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
# the client: a namespace outside the cluster CIDR, behind node0
unshare --net sleep 100000 &
client=$!
holders="$client"
sleep 0.1
ip link add node0 type veth peer name eth0 netns "$client"
ip addr add 192.168.77.1/24 dev node0
ip link set node0 up
ip route add default dev node0
echo 1 >/proc/sys/net/ipv4/ip_forward
nsenter -t "$client" -n sh -c "ip link set lo up; ip addr add 192.168.77.2/24 dev eth0;
    ip link set eth0 up; ip route add default via 192.168.77.1"
# someone else's table, which the proxy must leave alone (and the probe of nftables)
if ! nft add table ip other-table 2>/dev/null; then
    echo "test_proxy.sh: nftables does not work here; skipping" >&2
    exit 77
fi

for n in 1 2 3; do
    unshare --net sleep 100000 &
    holder=$!
    holders="$holders $holder"
    eval "ep$n=$holder"
    sleep 0.1
    ip link add "veth$n" type veth peer name eth0 netns "$holder"
    ip addr add "10.244.$n.1/24" dev "veth$n"
    ip link set "veth$n" up
    mkdir -p "$work/www$n/cgi-bin"
    echo "endpoint-$n" >"$work/www$n/index.html"
    # /cgi-bin/ip answers the client address the endpoint sees
    printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\n%%s\\n" "$REMOTE_ADDR"\n' \
        >"$work/www$n/cgi-bin/ip"
    chmod +x "$work/www$n/cgi-bin/ip"
    nsenter -t "$holder" -n sh -c "ip link set lo up; ip addr add 10.244.$n.2/24 dev eth0;
        ip link set eth0 up; ip route add default via 10.244.$n.1"
    nsenter -t "$holder" -n busybox httpd -f -p 8080 -h "$work/www$n" &
    daemons="$daemons $!"
    # a UDP endpoint on port 5353 answering every datagram with its name
    nsenter -t "$holder" -n python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5353))
while True:
    data, peer = s.recvfrom(512)
    s.sendto(sys.argv[1].encode(), peer)' "endpoint-$n" &
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
# remote PID URL: the client address the endpoint saw, asked from PID's namespace
# (busybox httpd gives it as [::ffff:a.b.c.d])
remote() { nsenter -t "$1" -n curl -s -m 2 "$2" | sed 's/^\[::ffff://; s/\]$//'; }
# poll_few DESCRIPTION COMMAND...: poll for checks that take seconds a try (20 tries)
poll_few() {
    desc=$1; shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 20 ]; then fail "$desc"; return; fi
        sleep 0.5
    done
    pass
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
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: default}
spec:
  ports: [{name: dns, port: 53, targetPort: 5353, protocol: UDP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: dns-1
  namespace: default
  labels: {kubernetes.io/service-name: dns}
addressType: IPv4
ports: [{name: dns, port: 5353, protocol: UDP}]
endpoints:
- {addresses: [10.244.2.2], conditions: {ready: true}, nodeName: node-b}
- {addresses: [10.244.3.2], conditions: {ready: true}, nodeName: node-b}
EOF
cip=$(k get service web -o jsonpath='{.spec.clusterIP}')
dns_ip=$(k get service dns -o jsonpath='{.spec.clusterIP}')
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
poll_few "the ClusterIP $cip reaches all three endpoints" all_three

# masquerading: a client outside the cluster CIDR is seen as the node; an endpoint
# reaching itself through the Service (hairpin) gets an answer
from_client() { remote "$client" "http://$cip/cgi-bin/ip" | grep -q "^10\.244\.[123]\.1$"; }
poll_few "traffic from outside the cluster CIDR is masqueraded" from_client
hairpin() {
    out=$(i=0; while [ $i -lt 20 ]; do nsenter -t "$ep1" -n curl -s -m 2 "http://$cip/"; i=$((i + 1)); done)
    [ "$(echo "$out" | grep -c '^endpoint-')" -eq 20 ] && echo "$out" | grep -q '^endpoint-1$'
}
poll_few "an endpoint reaches itself through its Service (hairpin)" hairpin

# UDP: datagrams to the ClusterIP reach both endpoints (a new source port each time,
# so each is a new conntrack entry and a new choice)
udp_both() {
    [ "$(python3 -c '
import socket, sys
seen = set()
for _ in range(30):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    try:
        s.sendto(b"?", (sys.argv[1], 53))
        seen.add(s.recv(512).decode())
    except OSError:
        pass
    s.close()
print(" ".join(sorted(seen)))' "$dns_ip")" = "endpoint-2 endpoint-3" ]
}
poll_few "UDP to the ClusterIP $dns_ip reaches both endpoints" udp_both
# a UDP flow keeps its endpoint (one conntrack entry) until that endpoint goes: then
# the proxy deletes the entry and the same flow reaches the other endpoint
udp_from_40000() {
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 40000))
s.settimeout(1)
s.sendto(b"?", (sys.argv[1], 53))
print(s.recv(512).decode())' "$dns_ip" 2>/dev/null
}
first=$(udp_from_40000)
same=$(udp_from_40000)
stays() { [ -n "$first" ] && [ "$first" = "$same" ]; }
check "a UDP flow stays with its endpoint ($first, then $same)" stays
if [ "$first" = endpoint-2 ]; then gone=0 other=endpoint-3; else gone=1 other=endpoint-2; fi
k patch endpointslice dns-1 --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/endpoints/$gone/conditions/ready\",\"value\":false}]" >/dev/null
udp_moved() { [ "$(udp_from_40000)" = "$other" ]; }
poll_few "the UDP flow moves to $other once its endpoint is gone (conntrack entry deleted)" udp_moved

k patch endpointslice web-1 --type=json \
    -p '[{"op":"replace","path":"/endpoints/2/conditions/ready","value":false}]' >/dev/null
two_left() { [ "$(seen 30)" = "endpoint-1 endpoint-2 " ]; }
poll_few "an endpoint made not ready drops out" two_left

# kube-proxy's reject: refused at once, not a timeout
refused() {
    curl -s -m 5 "http://$empty_ip/" >/dev/null 2>&1
    [ $? -eq 7 ]
}
poll "a Service without endpoints is rejected" refused

k patch service web -p '{"spec":{"sessionAffinity":"ClientIP"}}' >/dev/null
sticky() { [ "$(seen 20 | wc -w)" -eq 1 ]; }
poll_few "sessionAffinity ClientIP sticks to one endpoint" sticky
k patch service web -p '{"spec":{"sessionAffinity":"None"}}' >/dev/null

k patch service web -p '{"spec":{"type":"NodePort"}}' >/dev/null
np=$(k get service web -o jsonpath='{.spec.ports[0].nodePort}')
nodeport() { curl -s -m 2 "http://192.168.77.1:$np/" | grep -q '^endpoint-[12]$'; }
poll "the NodePort $np answers on the node's address" nodeport

# externalTrafficPolicy Local: only this node's endpoint (endpoint-1), the client's own
# address kept, and the health check node port counting local endpoints
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: local, namespace: default}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  healthCheckNodePort: 32100
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: local-1
  namespace: default
  labels: {kubernetes.io/service-name: local}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.2], conditions: {ready: true}, nodeName: node-a}
- {addresses: [10.244.2.2], conditions: {ready: true}, nodeName: node-b}
EOF
lnp=$(k get service local -o jsonpath='{.spec.ports[0].nodePort}')
local_only() {
    out=$(i=0; while [ $i -lt 10 ]; do remote "$client" "http://192.168.77.1:$lnp/cgi-bin/ip"; i=$((i + 1)); done)
    [ "$(echo "$out" | grep -c '^192\.168\.77\.2$')" -eq 10 ]
}
poll_few "externalTrafficPolicy Local keeps the client's address" local_only
local_ep() { [ "$(nsenter -t "$client" -n curl -s -m 2 "http://192.168.77.1:$lnp/")" = endpoint-1 ]; }
poll "externalTrafficPolicy Local reaches only the node's own endpoint" local_ep
hc_ok() {
    curl -s -m 2 -w ' %{http_code}' "http://192.168.77.1:32100/" | grep -q '"localEndpoints":1.* 200$'
}
poll "the health check node port answers 200 with one local endpoint" hc_ok
k patch endpointslice local-1 --type=json \
    -p '[{"op":"replace","path":"/endpoints/0/nodeName","value":"node-c"}]' >/dev/null
hc_none() {
    curl -s -m 2 -w ' %{http_code}' "http://192.168.77.1:32100/" | grep -q '"localEndpoints":0.* 503$'
}
poll "the health check node port answers 503 without a local endpoint" hc_none

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
poll_few "a restarted proxy adopts its table and routes to all three again" all_three
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
