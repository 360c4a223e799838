#!/bin/sh
# test_agent_portforward.sh - `kubectl port-forward` with the real kubectl 1.32 against a
# real `ckube server` and `ckube agent --container-runtime process` (whose pods share the
# host's network): the bytes of a small and a 2 MiB file arrive whole through the local
# port, a second connection works as well, 8 MiB sent to the pod arrive whole and the
# end of kubectl's side reaches the port, both over kubectl's default (SPDY tunnelled in
# a WebSocket) and over direct SPDY (KUBECTL_PORT_FORWARD_WEBSOCKETS=false), which the
# server's log tells apart; a port where nothing listens gives kubectl the kubelet's
# error, after which kubectl drops the session as it does with a kubelet; a pod that does
# not run and a missing pod are refused.
#
# Usage: test_agent_portforward.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
pf_pid=""
root="$work/agent-root"
mkdir -p "$root"
agent_port=$(free_port)
web_port=$(free_port)
closed_port=$(free_port)
pod=web # the pod port_forward forwards to
stop_pf() {
    [ -n "$pf_pid" ] && kill "$pf_pid" 2>/dev/null && wait "$pf_pid" 2>/dev/null
    pf_pid=""
}
trap 'stop_pf; cleanup' EXIT
start_server -v 2
start_process_node "$root" "$agent_port"

# a web server in the pod's directory, on the host's network
python3 - "$web_port" "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
  "spec": {"containers": [{"name": "c", "image": "busybox",
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[2]}],
    "command": ["sh", "-c", "echo hello from web >index.html; head -c 2097152 /dev/urandom >big; "
                "exec python3 -m http.server " + sys.argv[1] + " --bind 127.0.0.1"]}]}}))
EOF2
wait_for "web Running" pod/web '{.status.phase}=Running'
poddir="$root/pods/$(k get pod web -o jsonpath='{.metadata.uid}')"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$web_port/index.html" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done

# port_forward NAME :REMOTE [ENV...]: kubectl port-forward in the background, ready, on the
# local port kubectl chose ($local)
port_forward() {
    name=$1 ports=$2
    shift 2
    : >"$work/$name.out"
    env "$@" kubectl port-forward "pod/$pod" "$ports" >"$work/$name.out" 2>"$work/$name.err" &
    pf_pid=$!
    i=0
    until grep -q '^Forwarding from' "$work/$name.out" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
    local=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$work/$name.out" | head -n 1)
}

# fetch_checks NAME LOCAL: two connections, a small and a big answer, byte for byte
fetch_checks() {
    name=$1 local=$2
    got=$(curl -s -m 10 "http://127.0.0.1:$local/index.html")
    check "$name: the pod's page through the forwarded port ($got)" test "$got" = "hello from web"
    curl -s -m 60 -o "$work/big.$name" "http://127.0.0.1:$local/big"
    check "$name: 2 MiB arrive whole on a second connection" cmp -s "$work/big.$name" "$poddir/big"
    got=$(curl -s -m 10 "http://127.0.0.1:$local/index.html")
    check "$name: a third connection ($got)" test "$got" = "hello from web"
    check "$name: kubectl handled 3 connections" test "$(grep -c '^Handling connection' "$work/$name.out")" -eq 3
    check "$name: kubectl still runs" kill -0 "$pf_pid"
}

# kubectl's default: SPDY tunnelled in a WebSocket
port_forward ws ":$web_port"
fetch_checks ws "$local"
stop_pf
check "the API server saw a WebSocket port-forward" grep -q '"Port forward".*transport="websocket"' "$work/server.err"

# the fallback kubectl takes without WebSockets: a direct SPDY/3.1 upgrade
port_forward spdy ":$web_port" KUBECTL_PORT_FORWARD_WEBSOCKETS=false
fetch_checks spdy "$local"
stop_pf
check "the API server saw a direct SPDY port-forward" grep -q '"Port forward".*transport="spdy"' "$work/server.err"

# kubectl's half-close reaches the port: a server that answers once its input ended gets
# all of 8 MiB sent at once (more than the relay buffers: back-pressure, not a drop)
sink_port=$(free_port)
python3 - "$sink_port" "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
server = ("import hashlib, socket, sys\n"
          "l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "l.bind(('127.0.0.1', int(sys.argv[1]))); l.listen(8)\n"
          "while True:\n"
          "    c, _ = l.accept(); h = hashlib.md5(); n = 0\n"
          "    while True:\n"
          "        b = c.recv(65536)\n"
          "        if not b: break\n"
          "        h.update(b); n += len(b)\n"
          "    c.sendall(('%d %s' % (n, h.hexdigest())).encode()); c.close()\n")
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sink"},
  "spec": {"containers": [{"name": "c", "image": "busybox",
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[2]}],
    "command": ["python3", "-c", server, sys.argv[1]]}]}}))
EOF2
wait_for "sink Running" pod/sink '{.status.phase}=Running'
for mode in true false; do
    pod=sink
    port_forward sink.$mode ":$sink_port" KUBECTL_PORT_FORWARD_WEBSOCKETS=$mode
    pod=web
    got=$(timeout 60 python3 - "$local" <<'EOF2'
import hashlib, os, socket, sys
data = os.urandom(8 << 20)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(data); s.shutdown(socket.SHUT_WR)
answer = b""
while True:
    b = s.recv(65536)
    if not b: break
    answer += b
print(answer.decode() == "%d %s" % (len(data), hashlib.md5(data).hexdigest()))
EOF2
)
    check "websockets=$mode: 8 MiB to the port arrive whole, and its end ($got)" test "$got" = True
    stop_pf
done

# nothing listens: the kubelet's error on the error stream; kubectl reports it and, since
# client-go 1.29, drops the session ("lost connection to pod") as with a kubelet
for mode in true false; do
    port_forward closed.$mode ":$closed_port" KUBECTL_PORT_FORWARD_WEBSOCKETS=$mode
    curl -s -m 10 -o /dev/null "http://127.0.0.1:$local/" 2>/dev/null
    i=0
    while kill -0 "$pf_pid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
    check "closed port ($mode): kubectl reports the kubelet's error" \
        grep -q "error forwarding port $closed_port to pod web, uid .*: failed to connect to localhost:$closed_port: Connection refused" "$work/closed.$mode.err"
    check "closed port ($mode): kubectl ends, as with a kubelet" sh -c "! kill -0 $pf_pid 2>/dev/null"
    wait "$pf_pid" 2>/dev/null
    pf_pid=""
done

# a pod that does not run, a missing pod
python3 - <<'EOF2' | k create --validate=false -f - >/dev/null
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"},
  "spec": {"nodeSelector": {"no": "such-node"},
           "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}))
EOF2
kubectl port-forward pod/nowhere :80 >/dev/null 2>"$work/pending.err"
check "a pending pod: kubectl refuses" grep -q 'unable to forward port because pod is not running. Current status=Pending' "$work/pending.err"
code=$(kurl -o "$work/nohost.json" -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' \
    -H 'X-Stream-Protocol-Version: portforward.k8s.io' -X POST "$url/api/v1/namespaces/default/pods/nowhere/portforward")
check "a pod without a node: 400 (got $code)" test "$code" = 400
check "a pod without a node: the Status says why" grep -q '"message": *"pod nowhere does not have a host assigned"' "$work/nohost.json"
kubectl port-forward pod/nosuchpod :80 >/dev/null 2>"$work/nopod.err"
check "a missing pod: NotFound" grep -q 'pods "nosuchpod" not found' "$work/nopod.err"
got=$(kurl -o /dev/null -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: SPDY/3.1' -X POST "$url/api/v1/namespaces/default/pods/nosuchpod/portforward")
check "a missing pod: 404 from the API ($got)" test "$got" = 404
code=$(kurl -o "$work/noupgrade.json" -w '%{http_code}' "$url/api/v1/namespaces/default/pods/web/portforward")
check "no upgrade: 400 (got $code)" test "$code" = 400
check "no upgrade: the Status says why" grep -q 'Upgrade request required' "$work/noupgrade.json"

k delete pod web sink nowhere --wait=true --timeout=60s >/dev/null 2>&1
stop_agent
[ "$failures" -ne 0 ] && { for f in "$work"/*.err; do case $f in */server.err|*/agent.err) ;; *) echo "--- $f ---"; cat "$f";; esac; done; echo "--- agent log ---"; tail -n 40 "$work/agent.err"; echo "--- server log ---"; grep -E 'Port forward|portforward' "$work/server.err" | tail -n 20; }
finish
