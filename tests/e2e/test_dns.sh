#!/bin/sh
# test_dns.sh - `ckube dns` against a real `ckube server`, asked with dig (BIND's client):
# a ClusterIP Service's A and PTR records, a headless Service with hand-made
# EndpointSlices (ready and not ready endpoints, hostnames as StatefulSet pods get them),
# its SRV records, a pod name, NXDOMAIN and NODATA, an ExternalName Service, a Service's
# removal seen through the watch. A second `ckube dns` serving another cluster domain is
# the first one's upstream (its resolv.conf names it with a port), so forwarding over UDP
# and TCP and an ExternalName target resolved through the forwarder are checked too.
# Everything runs on loopback; both DNS servers are started here and stopped by PID.
#
# Usage: test_dns.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! command -v dig >/dev/null 2>&1; then
    echo "test_dns.sh: no dig (Debian's dnsutils, in scripts/install-deps); skipping" >&2
    exit 77
fi
dns_pid="" up_pid=""
stop_dns() {
    [ -n "$dns_pid" ] && kill "$dns_pid" 2>/dev/null && wait "$dns_pid" 2>/dev/null
    [ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
}
trap 'stop_dns; cleanup' EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
start_server

# the upstream: a second instance for the domain upstream.test, whose own upstream is a
# closed port (it answers SERVFAIL for anything else)
up_port=$(free_port)
echo "nameserver 127.0.0.1:1" >"$work/resolv-up.conf"
"$ckube" dns --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$up_port" \
    --cluster-domain upstream.test --resolv-conf "$work/resolv-up.conf" \
    >"$work/dns-up.out" 2>"$work/dns-up.err" &
up_pid=$!
dns_port=$(free_port)
echo "nameserver 127.0.0.1:$up_port" >"$work/resolv.conf"
"$ckube" dns --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$dns_port" \
    --resolv-conf "$work/resolv.conf" >"$work/dns.out" 2>"$work/dns.err" &
dns_pid=$!

# ask [DIG ARGS...]: the answers' data, one a line, sorted
ask() { dig @127.0.0.1 -p "$dns_port" +time=3 +tries=1 +short "$@" | sort; }
# status NAME [TYPE]: the answer's status and its number of answers ("NOERROR 0")
status() {
    dig @127.0.0.1 -p "$dns_port" +time=3 +tries=1 "$@" >"$work/dig.out"
    s=$(sed -n 's/.*status: \([A-Z]*\),.*/\1/p' "$work/dig.out")
    n=$(sed -n 's/.*ANSWER: \([0-9]*\),.*/\1/p' "$work/dig.out")
    echo "$s $n"
}

k create service clusterip web --tcp=80:8080 >/dev/null
k create service externalname ext --external-name web.default.svc.upstream.test >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  clusterIP: None
  ports:
  - name: pg
    port: 5432
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: db-1
  labels:
    kubernetes.io/service-name: db
addressType: IPv4
ports:
- name: pg
  protocol: TCP
  port: 5432
endpoints:
- addresses: ["10.244.0.5"]
  hostname: db-0
  conditions: {ready: true}
- addresses: ["10.244.0.6"]
  hostname: db-1
  conditions: {ready: true}
- addresses: ["10.244.0.7"]
  hostname: db-2
  conditions: {ready: false}
EOF
web_ip=$(k get service web -o jsonpath='{.spec.clusterIP}')
check "web has a cluster IP" test -n "$web_ip"

poll "the DNS server answers web's name" test "$(ask web.default.svc.cluster.local)" = "$web_ip"
check "over TCP too" test "$(ask +tcp web.default.svc.cluster.local)" = "$web_ip"
check "no AAAA for an IPv4 service: NODATA" \
    test "$(status web.default.svc.cluster.local AAAA)" = "NOERROR 0"
check "an unknown service: NXDOMAIN" \
    test "$(status nope.default.svc.cluster.local)" = "NXDOMAIN 0"
check "an unknown namespace: NXDOMAIN" test "$(status nowhere.svc.cluster.local)" = "NXDOMAIN 0"
check "a namespace: NODATA" test "$(status default.svc.cluster.local)" = "NOERROR 0"
check "the answer is authoritative" grep -q 'flags: qr aa' "$work/dig.out"
check "the PTR of the cluster IP names the service" \
    test "$(ask -x "$web_ip")" = "web.default.svc.cluster.local."
poll "the headless service answers its ready endpoints" \
    test "$(ask db.default.svc.cluster.local | tr '\n' ' ')" = "10.244.0.5 10.244.0.6 "
check "an endpoint's hostname" test "$(ask db-1.db.default.svc.cluster.local)" = "10.244.0.6"
check "a not ready endpoint has no name" \
    test "$(status db-2.db.default.svc.cluster.local)" = "NXDOMAIN 0"
check "SRV of the named port: one record per endpoint" \
    test "$(ask _pg._tcp.db.default.svc.cluster.local SRV | tr '\n' ' ')" = \
    "0 50 5432 db-0.db.default.svc.cluster.local. 0 50 5432 db-1.db.default.svc.cluster.local. "
dig @127.0.0.1 -p "$dns_port" +time=3 +tries=1 _pg._tcp.db.default.svc.cluster.local SRV \
    >"$work/srv.out"
check "SRV answers carry the endpoints' addresses" \
    grep -Eq '^db-0\.db\.default\.svc\.cluster\.local\.[[:space:]]+30[[:space:]]+IN[[:space:]]+A[[:space:]]+10\.244\.0\.5$' \
    "$work/srv.out"
check "the PTR of an endpoint names its hostname" \
    test "$(ask -x 10.244.0.6)" = "db-1.db.default.svc.cluster.local."
check "a pod name (pods insecure)" test "$(ask 10-1-2-3.default.pod.cluster.local)" = "10.1.2.3"
check "the zone's SOA" \
    test "$(ask cluster.local SOA | cut -d' ' -f1,2)" = "ns.dns.cluster.local. hostmaster.cluster.local."

# forwarding: the upstream instance answers its own domain
check "a name outside the cluster domain is forwarded" \
    test "$(ask web.default.svc.upstream.test)" = "$web_ip"
check "and forwarded over TCP" test "$(ask +tcp web.default.svc.upstream.test)" = "$web_ip"
check "an upstream NXDOMAIN is relayed" \
    test "$(status nope.default.svc.upstream.test)" = "NXDOMAIN 0"
check "the ExternalName service: its CNAME, then the target resolved upstream" \
    test "$(ask ext.default.svc.cluster.local | tr '\n' ' ')" = \
    "$web_ip web.default.svc.upstream.test. "

k delete service web >/dev/null
poll "a deleted service's name goes away" \
    test "$(status web.default.svc.cluster.local)" = "NXDOMAIN 0"

stop_dns
dns_pid="" up_pid=""
finish
