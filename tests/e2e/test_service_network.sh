#!/bin/sh
# test_service_network.sh - the classic first program, end to end on real containers: a
# Deployment behind a Service, reached by name from another pod. Everything runs inside
# network and mount namespaces of the test's own (cri_lib.sh): a containerd, a
# `ckube server` (SQLite), `ckube agent` (its node n1 at 192.168.77.10 on a veth
# interface of the namespace, its pod range from the node-ipam-controller),
# `ckube proxy` and `ckube dns` (on the node's address, behind the kube-dns Service
# 10.96.0.10, which the test makes as an administrator deploys an add-on), and a second
# `ckube dns` on 127.0.0.2 as the node's upstream resolver (its own domain,
# outside.test). Checked with kubectl, from pods (busybox wget and nslookup) and from
# the node (dig):
#   - three web pods behind a Service answer http://web.default.svc.cluster.local/
#     from another pod, all three over repeated requests; a pod made unready drops
#     out; a ClientIP-affinity Service sticks to one pod;
#   - a NodePort answers on the node's address;
#   - a headless Service resolves to the pods' addresses, a StatefulSet's pods by
#     <pod>.<service>;
#   - an ExternalName Service is a CNAME, followed through the upstream;
#   - a name outside the cluster is forwarded to the upstream;
#   - the proxy stopped leaves traffic flowing; started again it removes the rules of
#     a Service deleted meanwhile.
# Processes are stopped by PID; outside, cri_lib.sh checks nothing was left.
#
# Usage: test_service_network.sh PATH/TO/ckube. Skips (77, saying why) as cri_lib.sh
# does (root, containerd, runc, CNI plugins, busybox, kubectl), and without nft or dig.
set -u
. "$(dirname "$0")/cri_lib.sh"

if [ "${1:-}" = "--inside" ]; then
    cri_e2e_inside "$@"
    node_ip=192.168.77.10
    # (a veth pair: the kernel may have no dummy interfaces)
    ip link add node0 type veth peer name node0-peer && ip addr add "$node_ip/24" dev node0 &&
        ip link set node0-peer up && ip link set node0 up ||
        fail "cannot give the namespace's node an address"
    ip addr add 127.0.0.2/8 dev lo 2>/dev/null || true
    cri_e2e_server
    dns_pid="" upstream_pid=""
    cri_e2e_cleanup='for p in $dns_pid $upstream_pid; do kill $p 2>/dev/null; wait $p 2>/dev/null; done'
    start_agent --node-ip "$node_ip"
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

    # the cluster DNS as an add-on: the kube-dns Service with an EndpointSlice of the
    # node's address, where ckube dns listens; its upstream, a second ckube dns
    k create namespace kube-system >/dev/null 2>&1
    k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: 10.96.0.10
  ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kube-dns-n1, namespace: kube-system, labels: {kubernetes.io/service-name: kube-dns}}
addressType: IPv4
endpoints: [{addresses: [192.168.77.10], conditions: {ready: true}, nodeName: n1}]
ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
EOF
    printf 'nameserver 127.0.0.9\n' >"$work/nowhere.conf"
    printf 'nameserver 127.0.0.2\n' >"$work/upstream.conf"
    "$ckube" dns --kubeconfig "$KUBECONFIG" --listen 127.0.0.2:53 --cluster-domain outside.test \
        --resolv-conf "$work/nowhere.conf" >"$work/upstream.log" 2>&1 &
    upstream_pid=$!
    "$ckube" dns --kubeconfig "$KUBECONFIG" --listen "$node_ip:53" \
        --resolv-conf "$work/upstream.conf" >"$work/dns.log" 2>&1 &
    dns_pid=$!
    start_proxy
    poll "the proxy programmed its table" nft list table ip ckube-proxy

    # three web pods, each serving its own name, ready while /www/ready is there
    python3 - "$busybox_image" <<'EOF' | k create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
      "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "web", "image": sys.argv[1],
        "command": ["sh", "-c", "mkdir -p /www && hostname >/www/index.html && touch /www/ready && exec httpd -f -p 8080 -h /www"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1, "failureThreshold": 1}}]}}}}))
EOF
    k create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: web}, spec: {selector: {app: web}, ports: [{port: 80, targetPort: http}]}}
- {apiVersion: v1, kind: Service, metadata: {name: web-sticky}, spec: {selector: {app: web}, sessionAffinity: ClientIP, ports: [{port: 80, targetPort: 8080}]}}
- {apiVersion: v1, kind: Service, metadata: {name: web-np}, spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}}
- {apiVersion: v1, kind: Service, metadata: {name: web-headless}, spec: {clusterIP: None, selector: {app: web}, ports: [{port: 8080}]}}
- {apiVersion: v1, kind: Service, metadata: {name: ext}, spec: {type: ExternalName, externalName: web.default.svc.outside.test}}
EOF
    if k rollout status deployment/web --timeout=120s >/dev/null 2>"$work/rollout.err"; then
        pass
    else
        fail "web available ($(cat "$work/rollout.err"))"
    fi
    create client "{'containers': [{'name': 'c', 'image': '$busybox_image', 'command': ['sleep', '3600']}]}"
    wait_for "client Running" pod/client '{.status.phase}=Running'

    # Debian's static busybox cannot resolve names for wget (glibc's resolver, static,
    # without its NSS modules; and its wget -T crashes), so a pod looks a name up with
    # busybox's own nslookup (the pod's resolv.conf, the cluster DNS) and fetches from
    # the address it got.
    # in_pod SCRIPT: runs SCRIPT in the client pod with `get NAME` defined: the page
    # at http://ADDRESS-OF-NAME/
    in_pod() {
        k exec client -- sh -c 'addr() { nslookup "$1" 2>/dev/null | awk "/^Name:/ {n=1} n && /^Address/ {print \$2; exit}"; }
get() { a=$(addr "$1") && [ -n "$a" ] && timeout 5 wget -q -O- "http://$a/"; }
'"$1"
    }
    # seen NAME N: the pod names answering N requests to NAME, sorted, with counts
    seen() { in_pod "a=\$(addr $1); for i in \$(seq $2); do timeout 5 wget -q -O- http://\$a/; done" 2>&1 | sort | uniq -c; }
    web_pods=$(k get pods -l app=web -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | sort)
    web_ip=$(jp svc/web '{.spec.clusterIP}')
    check "a pod resolves the Service's name to its ClusterIP" \
        [ "$(in_pod 'addr web.default.svc.cluster.local')" = "$web_ip" ]
    check "and the short name through its search path" [ "$(in_pod 'addr web')" = "$web_ip" ]
    seen web.default.svc.cluster.local 30 >"$work/seen"
    check "by name from another pod, all three web pods answer ($(tr -s ' \n' ' ' <"$work/seen"))" \
        [ "$(awk '{print $2}' "$work/seen")" = "$web_pods" ]

    # one made unready drops out
    down=$(echo "$web_pods" | head -n 1)
    k exec "$down" -- rm /www/ready
    wait_for "$down unready" "pod/$down" '{.status.conditions[?(@.type=="Ready")].status}=False'
    poll "its endpoint not ready in the slice" sh -c \
        "kubectl get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[?(@.targetRef.name==\"$down\")].conditions.ready}' | grep -q false"
    sleep 1
    seen web.default.svc.cluster.local 20 >"$work/seen"
    check "the unready pod gets no traffic ($(tr -s ' \n' ' ' <"$work/seen"))" \
        [ "$(awk '{print $2}' "$work/seen")" = "$(echo "$web_pods" | sed 1d)" ]
    k exec "$down" -- touch /www/ready
    wait_for "$down ready again" "pod/$down" '{.status.conditions[?(@.type=="Ready")].status}=True'

    # ClientIP affinity
    seen web-sticky.default.svc.cluster.local 15 >"$work/seen"
    check "ClientIP affinity sticks to one pod ($(tr -s ' \n' ' ' <"$work/seen"))" \
        [ "$(wc -l <"$work/seen")" -eq 1 ]

    # a NodePort on the node's address, from the node
    node_port=$(jp svc/web-np '{.spec.ports[0].nodePort}')
    check "the NodePort $node_port answers on the node's address" sh -c \
        "curl -s -m 5 http://$node_ip:$node_port/ | grep -q '^web-'"

    # DNS: headless, a StatefulSet's pods, ExternalName, forwarding
    pod_ips=$(k get pods -l app=web -o jsonpath='{.items[*].status.podIP}' | tr ' ' '\n' | sort)
    check "the headless Service resolves to the pods' addresses" \
        [ "$(dig +short @"$node_ip" web-headless.default.svc.cluster.local | sort)" = "$pod_ips" ]
    check "a pod resolves the headless Service too" sh -c \
        "kubectl exec client -- nslookup web-headless.default.svc.cluster.local | grep -q '$(echo "$pod_ips" | head -n 1)'"
    python3 - "$busybox_image" <<'EOF' | k create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
   "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 80}]}},
  {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
   "spec": {"serviceName": "db", "replicas": 2, "selector": {"matchLabels": {"app": "db"}},
     "template": {"metadata": {"labels": {"app": "db"}},
       "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": sys.argv[1], "command": ["sleep", "3600"]}]}}}}]}))
EOF
    poll "db-1 made" k get pod db-1
    wait_for "db-1 Running" pod/db-1 '{.status.phase}=Running'
    poll "db-1 resolves by <pod>.<service>" sh -c \
        "[ \"\$(dig +short @$node_ip db-1.db.default.svc.cluster.local)\" = \"\$(kubectl get pod db-1 -o jsonpath='{.status.podIP}')\" ]"
    check "db-0 resolves from a pod" sh -c \
        "kubectl exec client -- nslookup db-0.db.default.svc.cluster.local | grep -q \"\$(kubectl get pod db-0 -o jsonpath='{.status.podIP}')\""
    check "a name outside the cluster is forwarded upstream" \
        [ "$(dig +short @"$node_ip" web.default.svc.outside.test)" = "$web_ip" ]
    check "and from a pod" sh -c \
        "kubectl exec client -- nslookup web.default.svc.outside.test | grep -q '$web_ip'"
    dig @"$node_ip" ext.default.svc.cluster.local >"$work/ext.dig"
    check "ExternalName: a CNAME to its name" grep -q 'CNAME.*web.default.svc.outside.test' "$work/ext.dig"
    check "ExternalName: followed through the upstream" grep -q "A.*$web_ip" "$work/ext.dig"
    in_pod 'get ext.default.svc.cluster.local' >"$work/ext.page" 2>&1
    check "ExternalName from a pod, then HTTP through it" grep -q '^web-' "$work/ext.page"

    # the proxy stopped: traffic flows on its rules; started again, it removes the
    # rules of a Service deleted meanwhile
    stop_proxy
    check "with the proxy stopped the Service still answers" sh -c \
        "[ \"\$(kubectl exec client -- timeout 5 wget -q -O- http://$web_ip/)\" != '' ]"
    k delete svc web-np >/dev/null
    check "the deleted NodePort still in the table while no proxy runs" sh -c \
        "nft list table ip ckube-proxy | grep -q web-np"
    start_proxy
    poll "the restarted proxy removes the deleted Service's rules" sh -c \
        "! nft list table ip ckube-proxy | grep -q web-np"
    check "its NodePort no longer answers" sh -c "! curl -s -m 3 http://$node_ip:$node_port/ | grep -q '^web-'"
    check "and the Service answers through the restarted proxy" sh -c \
        "[ \"\$(kubectl exec client -- timeout 5 wget -q -O- http://$web_ip/)\" != '' ]"

    k delete deployment web >/dev/null
    k delete statefulset db >/dev/null
    k delete pod client --wait=false >/dev/null
    poll "every pod deleted" sh -c "[ -z \"\$(kubectl get pods -o name)\" ]"
    poll "no container left in containerd" sh -c \
        "[ -z \"\$(ctr -a $cri_sock -n k8s.io containers ls -q)\" ]"
    if [ "$failures" -ne 0 ]; then
        for f in agent.err proxy.log dns.log; do
            echo "--- $f ---"
            tail -n 30 "$work/$f"
        done
        nft list table ip ckube-proxy 2>&1 | head -60
    fi
    finish
fi

command -v nft >/dev/null 2>&1 || skip "no nft (Debian package nftables)"
command -v dig >/dev/null 2>&1 || skip "no dig (Debian package bind9-dnsutils)"
cri_e2e_outside "$@"
