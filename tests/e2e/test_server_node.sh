#!/bin/sh
# test_server_node.sh - `ckube server`'s own node, with the real kubectl.
#
# 1. `--container-runtime process --node-name NAME`: a Node of that name registers
#    and becomes Ready, with a Lease, as system:node:NAME (its certificate in pki/);
#    the log warns that pods are not isolated; a pod (`kubectl run` of `sleep 300`, a
#    host command) runs as a process of this host; deleted, it stops; the server's
#    stop leaves no process behind (none of its children, none of the pod's).
# 2. `--disable-agent`: no Node registers, no agent or containerd directory is made;
#    nor with the default runtime when containerd is not on PATH and no endpoint is
#    given, and the log names the ways out.
# 3. With containerd (and ctr, runc, unshare, ip) installed, the default runtime (and
#    node name: the host's, lowercased) in a
#    network and mount namespace the test makes (`unshare --net --mount`, loopback up,
#    a tmpfs over /var/run/netns when it exists): the server starts containerd as its
#    child with config and socket under its data directory, the pause image is
#    imported (`ctr images ls`), and so are the build's web and busybox images; as
#    after `make run`, `kubectl create deployment web --image=ckube.local/web:1` runs a
#    real container that becomes available and serves its page at its pod IP (here a
#    tmpfs covers /run and an overlay /var/lib, as containerd and the CNI plugins
#    write there); containerd killed with SIGKILL is started again and the pod keeps
#    running; deleted, the pod leaves no container; the server's stop stops
#    containerd (no containerd of this data directory left) and the pod cgroup
#    directories the test's pod caused are gone; containerd holds none of the server's
#    TCP connections (its descriptors are not inherited). With the namespace's node address
#    (192.168.78.10 on a veth pair) the server runs its node's proxy and the cluster
#    DNS: the kube-dns Service (10.96.0.10) and its EndpointSlice name the server, the
#    Deployment exposed as a Service answers at its ClusterIP by the server's DNS name,
#    and a pod resolves the kubernetes Service through kube-dns.
# 4. A data directory whose path is too long for a unix socket: containerd's socket
#    goes under /run/ckube/<hash>/ (a tmpfs of the namespace's own), the same at every
#    start.
# Part 3 needs root (or the right to make namespaces): without containerd or the tools
# the test runs parts 1 and 2 and then exits 77 naming what is missing.
#
# Usage: test_server_node.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
node=srv-node-test
process_pods=1 # the server's own node runs them
# children PID: the processes whose parent is PID
children() { ps -e -o pid=,ppid= | awk -v p="$1" '$2 == p { print $1 }'; }
alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && echo "$p"; done; }
ns_pid=""
containerd_pids=""
# kill_node_leftovers: the containerd and the network namespace's holder of part 3
kill_node_leftovers() {
    for p in $containerd_pids; do kill -9 "$p" 2>/dev/null; done
    [ -n "$ns_pid" ] && kill -9 "$ns_pid" 2>/dev/null
}
trap 'kill_node_leftovers; cleanup' EXIT

# start_node_server DATA-DIR STORE ARGS...: the server with its node, until it serves
start_node_server() {
    dir=$1 st=$2
    shift 2
    # shellcheck disable=SC2086 # server_env is a list of NAME=VALUE words
    env ${server_env:-} "$ckube" server --listen "127.0.0.1:$port" --data-dir "$dir" \
        --store "$st" "$@" >>"$work/server.out" 2>>"$work/server.err" &
    server_pid=$!
    i=0
    until [ "$(curl -s -m 10 --cacert "$dir/pki/ca.crt" "$url/readyz" 2>/dev/null)" = ok ] &&
        [ -f "$dir/kubeconfig" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            echo "server did not become ready:"; cat "$work/server.err"; exit 1
        fi
        sleep 0.1
    done
}

# --- 1. the process runtime ------------------------------------------------------------
start_node_server "$work/data" "$store" --container-runtime process --node-name "$node" \
    --agent-port "$(free_port)" --disable-proxy --disable-dns
poll "node $node registers" k get node "$node"
wait_for "node $node Ready" "node/$node" '{.status.conditions[?(@.type=="Ready")].status}=True'
check "a lease for $node" test \
    "$(k get lease -n kube-node-lease "$node" -o jsonpath='{.spec.holderIdentity}')" = "$node"
check "its certificate in pki/" test -s "$work/data/pki/system-node-$node.crt"
if command -v openssl >/dev/null 2>&1; then
    subject=$(openssl x509 -noout -subject -nameopt RFC2253 -in "$work/data/pki/system-node-$node.crt")
    case $subject in
    *"CN=system:node:$node"*"O=system:nodes"* | *"O=system:nodes"*"CN=system:node:$node"*) pass ;;
    *) fail "the node's certificate: $subject" ;;
    esac
fi
check "the log warns that pods are not isolated" grep -q "not isolated" "$work/server.err"
check "no containerd for the process runtime" test ! -e "$work/data/containerd"
k run sleeper --image=none --env="CKUBE_E2E_MARK=$work" --command -- sleep 300 >/dev/null
wait_for "the pod runs on $node" pod/sleeper '{.status.phase}=Running'
check "the pod is bound to $node" test "$(k get pod sleeper -o jsonpath='{.spec.nodeName}')" = "$node"
check "its command runs as a host process" test -n "$(leftovers)"
pod_pids=$(leftovers)
k delete pod sleeper --wait=true --timeout=60s >/dev/null 2>&1
no_leftovers() { [ -z "$(alive $pod_pids)" ] && [ -z "$(leftovers)" ]; }
poll "the deleted pod's process is gone" no_leftovers
kids=$(children "$server_pid")
stop_server
sleep 0.5
check "the server's stop leaves none of its children ($(alive $kids))" test -z "$(alive $kids)"
check "nor any pod process" no_leftovers

# --- 2. --disable-agent ----------------------------------------------------------------
mv "$work/server.err" "$work/server-process.err"
start_node_server "$work/data2" "sqlite://$work/state2.db" --disable-agent --disable-dns
KUBECONFIG="$work/data2/kubeconfig"
sleep 2 # the agent would have registered well within this
check "--disable-agent registers no node" test -z "$(k get nodes -o name 2>&1)"
check "--disable-agent makes no agent directory" test ! -e "$work/data2/agent"
check "--disable-agent starts no containerd" test ! -e "$work/data2/containerd"
check "--disable-agent: no node agent in the log" sh -c "! grep -q 'Node agent' '$work/server.err'"
stop_server

# --- 2b. cri without containerd on PATH and without an endpoint: no node, and why -----------
mv "$work/server.err" "$work/server-disabled.err"
server_env="PATH=/nonexistent" start_node_server "$work/data2b" "sqlite://$work/state2b.db" \
    --disable-dns
KUBECONFIG="$work/data2b/kubeconfig"
poll "without containerd: an error naming the ways out" grep -q \
    "containerd is not installed.*--container-runtime-endpoint.*--container-runtime process.*--disable-agent" \
    "$work/server.err"
sleep 2
check "without containerd: no node" test -z "$(k get nodes -o name 2>&1)"
check "without containerd: no containerd directory" test ! -e "$work/data2b/containerd"
stop_server
KUBECONFIG="$work/data/kubeconfig"

# --- 3. the supervised containerd, in namespaces of the test's own ---------------------
missing=""
for tool in containerd ctr runc unshare ip nsenter nft dig; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -z "$missing" ] && ! unshare --net --mount --propagation private true 2>/dev/null; then
    missing=" the right to make network and mount namespaces (root)"
fi
if [ -n "$missing" ]; then
    echo "$passes passed, $failures failed"
    [ "$failures" -eq 0 ] || finish
    echo "test_server_node: the supervised containerd part skipped: missing$missing" >&2
    exit 77
fi
cat >"$work/netns.sh" <<'EOF'
ip link set lo up || exit 1
if [ -n "${NODE_IP:-}" ]; then # the node's address, on a veth pair of the namespace's own,
    # and a default route over it (a ClusterIP is routed before the proxy's DNAT)
    ip link add node0 type veth peer name node0-peer && ip addr add "$NODE_IP/24" dev node0 &&
        ip link set node0-peer up && ip link set node0 up && ip route add default dev node0 ||
        exit 1
fi
if [ -n "${RUN_TMPFS:-}" ]; then mount -t tmpfs tmpfs /run || exit 1; fi
if [ -n "${VARLIB:-}" ]; then
    mkdir -p "$VARLIB/upper" "$VARLIB/work"
    mount -t overlay ckube-test-varlib \
        -o "lowerdir=/var/lib,upperdir=$VARLIB/upper,workdir=$VARLIB/work" /var/lib || exit 1
fi
if [ -d /var/run/netns ]; then mount -t tmpfs tmpfs /var/run/netns || exit 1; fi
exec "$@"
EOF
d3="$work/data3"
mv "$work/server.err" "$work/server-nocontainerd.err"
# the pod cgroups the server's node makes go under /kubepods, as kubelet's: which of
# its directories are this test's to remove afterwards
kubepods_before=$(ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null)
node_ip=192.168.78.10
NODE_IP=$node_ip RUN_TMPFS=1 VARLIB="$work/varlib" unshare --net --mount --propagation private sh "$work/netns.sh" \
    "$ckube" server --listen "127.0.0.1:$port" --data-dir "$d3" --store "sqlite://$work/state3.db" \
    >>"$work/server.out" 2>>"$work/server.err" &
ns_pid=$!
logged() { grep -q "$1" "$work/server.err"; }
poll "containerd answers" logged '"containerd: ready"'
sock=$(sed -n 's/.*"containerd: started" pid="[0-9]*" socket="\([^"]*\)".*/\1/p' "$work/server.err" | head -1)
host=$(tr 'A-Z' 'a-z' </proc/sys/kernel/hostname)
check "the node is named after the host ($host)" logged "\"Node agent starting\" node=\"$host\""
check "containerd's socket is under the data directory" test "$sock" = "$d3/containerd/containerd.sock"
check "its config under the data directory" \
    grep -q '^  sandbox_image = "ckube.local/pause:1"' "$d3/containerd/config.toml"
check "its log under the data directory" test -s "$d3/containerd/containerd.log"
first=$(children "$ns_pid" | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = containerd ] && echo "$p"; done)
containerd_pids=$first
check "containerd is the server's child" test -n "$first"
pause_imported() { ctr -a "$sock" -n k8s.io images ls -q | grep -qx 'ckube.local/pause:1'; }
poll "the pause image is imported" pause_imported
web_imported() { ctr -a "$sock" -n k8s.io images ls -q | grep -qx 'ckube.local/web:1'; }
poll "the web image is imported" web_imported

# as after `make run`: a Deployment of a local image runs a real container; the server
# listens on the namespace's loopback, so kubectl runs in its network namespace
KUBECONFIG="$d3/kubeconfig"
inns() { nsenter --net="/proc/$ns_pid/ns/net" "$@"; }
kn() { inns kubectl --request-timeout=20s "$@"; }
poll "the node registers" kn get node "$host"
# the server's descriptors stay its own: containerd holds none of its connections
check "containerd holds none of the server's connections" \
    sh -c "! nsenter --net=/proc/$ns_pid/ns/net ss -tnpH | grep -q '\"containerd\"'"
kn create deployment web --image=ckube.local/web:1 >/dev/null
if kn rollout status deployment/web --timeout=120s >/dev/null 2>"$work/rollout.err"; then
    pass
else
    fail "web available on the server's node ($(cat "$work/rollout.err"))"
fi
web_ip=$(kn get pods -l app=web -o jsonpath='{.items[0].status.podIP}')
web_cid=$(kn get pods -l app=web -o jsonpath='{.items[0].status.containerStatuses[0].containerID}')
case $web_cid in containerd://?*) pass ;; *) fail "web's containerID: '$web_cid'" ;; esac
page() {
    inns python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode(), end="")' "$1"
}
check "web serves its page at its pod IP ($web_ip)" \
    test "$(page "http://$web_ip:8080/index.html" 2>/dev/null)" = "ckube web"
# the node's Service routing and the cluster DNS, in the server's process: the kube-dns
# Service on the server's address, the web Deployment behind a Service reached by name
check "the proxy runs in the server" logged '"Proxy running"'
check "the cluster DNS serves on the advertise address" logged "\"Cluster DNS serving\" address=\"$node_ip:53\""
poll "the kube-dns Service at the tenth Service address" \
    sh -c "[ \"\$(nsenter --net=/proc/$ns_pid/ns/net kubectl -n kube-system get svc kube-dns -o jsonpath='{.spec.clusterIP}')\" = 10.96.0.10 ]"
dns_slice=kube-dns-$(echo "$node_ip" | tr . -)
poll "its EndpointSlice lists the server" sh -c \
    "nsenter --net=/proc/$ns_pid/ns/net kubectl -n kube-system get endpointslice $dns_slice -o jsonpath='{.endpoints[0].addresses[0]}' | grep -qx $node_ip"
# a kube-dns endpoint of a server that is not live goes; this server's own comes back
kn apply -f - >/dev/null <<'EOF'
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-192-168-78-99
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: ckube-server}
addressType: IPv4
endpoints: [{addresses: [192.168.78.99], conditions: {ready: true}}]
ports: [{name: dns, port: 53, protocol: UDP}]
EOF
kn -n kube-system delete endpointslice "$dns_slice" >/dev/null
poll "a dead server's kube-dns endpoint is removed" sh -c \
    "! nsenter --net=/proc/$ns_pid/ns/net kubectl -n kube-system get endpointslice kube-dns-192-168-78-99 >/dev/null 2>&1"
poll "the server's own kube-dns endpoint is made again" \
    nsenter --net="/proc/$ns_pid/ns/net" kubectl -n kube-system get endpointslice "$dns_slice"
kn expose deployment web --port 80 --target-port 8080 >/dev/null
svc_ip=$(kn get svc web -o jsonpath='{.spec.clusterIP}')
poll "the server's DNS answers the Service's name" \
    sh -c "[ \"\$(nsenter --net=/proc/$ns_pid/ns/net dig +short @$node_ip web.default.svc.cluster.local)\" = $svc_ip ]"
poll "the Service answers at its ClusterIP through the proxy" \
    sh -c "[ \"\$(nsenter --net=/proc/$ns_pid/ns/net curl -s -m 3 http://$svc_ip/index.html)\" = 'ckube web' ]"
web_pod=$(kn get pods -l app=web -o jsonpath='{.items[0].metadata.name}')
check "a pod resolves the kubernetes Service through kube-dns" sh -c \
    "nsenter --net=/proc/$ns_pid/ns/net kubectl exec $web_pod -- nslookup kubernetes.default.svc.cluster.local | grep -q 10.96.0.1\$"
# the proxy and the DNS server read the controllers' caches: one of EndpointSlices and
# one of Namespaces in the process (the server's /metrics census)
census=$(kn get --raw /metrics | grep '^ckube_informer_caches')
for res in endpointslices namespaces; do
    case $census in
    *"resource=\"$res\"} 1"*) pass ;;
    *) fail "one cache of $res in the server's process: $(echo "$census" | grep "\"$res\"")" ;;
    esac
done

# NetworkPolicies: the node's proxy enforces them from the controllers' caches (the table
# ip ckube-netpol); a pod reaches web until a default-deny ingress policy selects web
poll "the node's proxy has its policy table" inns nft list table ip ckube-netpol
kn run np-client --image=ckube.local/busybox:1 --restart=Never --command -- sleep 3600 >/dev/null
kn wait pod/np-client --for=condition=Ready --timeout=60s >/dev/null 2>&1
fetch_web() { kn exec np-client -- timeout 3 wget -q -O- "http://$web_ip:8080/index.html" 2>/dev/null; }
reaches_web() { [ "$(fetch_web)" = "ckube web" ]; }
blocked_from_web() { ! fetch_web >/dev/null; }
poll "a pod reaches web's page" reaches_web
if [ "$(inns cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" = 1 ]; then
    kn apply -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-deny}
spec: {podSelector: {matchLabels: {app: web}}, policyTypes: [Ingress]}
EOF
    poll "a default-deny ingress policy on web blocks the pod" blocked_from_web
    kn delete networkpolicy web-deny >/dev/null
    poll "the policy deleted, the pod reaches web again" reaches_web
else
    echo "skipped the policy's block: no bridge netfilter in the kernel (br_netfilter)"
fi
kn delete pod np-client --now >/dev/null 2>&1

# killed, it is started again
[ -n "$first" ] && kill -9 $first
restarted() {
    second=$(children "$ns_pid" | while read -r p; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = containerd ] && echo "$p"; done)
    [ -n "$second" ] && [ "$second" != "$first" ] && ctr -a "$sock" version >/dev/null 2>&1
}
poll "containerd killed with SIGKILL is started again" restarted
restarted
containerd_pids="$first $second"
# its exit status may have gone to the agent, which reaps every child of the process
check "the restart is logged" logged "containerd exited ("

check "the image is still there after the restart" pause_imported
check "web still serves after containerd's restart" \
    test "$(page "http://$web_ip:8080/index.html" 2>/dev/null)" = "ckube web"
kn delete deployment web --wait=false >/dev/null
poll "web's pod deleted" inns sh -c "[ -z \"\$(kubectl get pods -o name)\" ]"
poll "no container left in containerd" sh -c "[ -z \"\$(ctr -a '$sock' -n k8s.io containers ls -q)\" ]"
KUBECONFIG="$work/data/kubeconfig"
kill "$ns_pid" 2>/dev/null && wait "$ns_pid" 2>/dev/null
ns_pid=""
check "the server's stop stops containerd ($(alive $containerd_pids))" test -z "$(alive $containerd_pids)"
ours() { ps -e -o args= | grep -F "$d3/containerd/config.toml" | grep -v grep; }
check "no containerd of this data directory is left" test -z "$(ours)"
check "the stop is logged" logged '"containerd: stopped"'
# the pod's cgroups went with it; the QoS directories above them are this test's when
# /kubepods was not there before
left=$(find /sys/fs/cgroup/*/kubepods -name 'pod*' -type d 2>/dev/null | head -3)
check "no pod cgroup left ($left)" test -z "$left"
if [ -z "$kubepods_before" ]; then
    for h in /sys/fs/cgroup/*/kubepods; do
        [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
    done
fi

# --- 4. a data directory too long for a unix socket's path -----------------------------
# the socket goes under /run/ckube/<hash>/, the same at every start; /run is a tmpfs of
# the namespace's own here
long="$work/$(printf '%0100d' 0)/data"
mkdir -p "$(dirname "$long")"
sockets=""
for run in 1 2; do
    mv "$work/server.err" "$work/server-$run.err"
    RUN_TMPFS=1 unshare --net --mount --propagation private sh "$work/netns.sh" \
        "$ckube" server --listen "127.0.0.1:$port" --data-dir "$long" \
        --store "sqlite://$work/state4.db" --node-name "$node" \
        >>"$work/server.out" 2>>"$work/server.err" &
    ns_pid=$!
    poll "containerd answers on a short socket (start $run)" logged '"containerd: ready"'
    sockets="$sockets $(sed -n 's/.*"containerd: started" pid="[0-9]*" socket="\([^"]*\)".*/\1/p' \
        "$work/server.err" | head -1)"
    kill "$ns_pid" 2>/dev/null && wait "$ns_pid" 2>/dev/null
    ns_pid=""
done
set -- $sockets
case ${1:-} in
/run/ckube/????????????????/containerd.sock) pass ;;
*) fail "the socket of a long data directory: ${1:-none}" ;;
esac
check "the same socket at every start ($*)" test "${1:-}" = "${2:-}"
check "the choice is logged" logged "too long for a unix socket"
finish
