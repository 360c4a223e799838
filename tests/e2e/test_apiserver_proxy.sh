#!/bin/sh
# test_apiserver_proxy.sh - the pods/proxy, services/proxy and nodes/proxy subresources
# with the real kubectl 1.32 against a real `ckube server` and `ckube agent
# --container-runtime process`: a pod runs a small HTTP server on its address that echoes
# what it was sent; kubectl get/create/replace/delete --raw reach it through
# pods/NAME:PORT/proxy/PATH (with the query, the body and the method, without the
# client's credentials, with X-Forwarded-Uri), through the pod's declared port, and
# through services/NAME:PORTNAME and NAME:PORTNUMBER; https:NAME:PORT to a pod serving TLS
# whose certificate is not checked; `kubectl proxy` in front; a bare
# .../proxy is redirected to .../proxy/, a redirect of the pod's is rewritten under the
# proxy path; nodes/n1/proxy reaches the agent's /healthz and /metrics/resource; and the
# errors: a Service with no endpoints (503 with Kubernetes' words), an unknown service
# port, a pod port where nothing listens, malformed names, a missing pod, a user without pods/proxy, and AlwaysDeny
# admission (the proxy is a CONNECT).
#
# Usage: test_apiserver_proxy.sh PATH/TO/ckube
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# four free ports, held at once so that they differ: the agent's, the echo server's, the
# TLS server's and one where nothing listens
set -- $(python3 -c 'import socket
held = [socket.socket() for _ in range(4)]
for s in held: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in held])')
agent_port=$1 web_port=$2 tls_port=$3 closed_port=$4
agent_pid=""
kp_pid=""
root="$work/agent-root"
mkdir -p "$root"
stop_all() {
    [ -n "$kp_pid" ] && kill "$kp_pid" 2>/dev/null && wait "$kp_pid" 2>/dev/null
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
}
trap 'stop_all; cleanup' EXIT
start_server -v 2
start_process_node "$root" "$agent_port"

# the echo server: every method answers JSON with what arrived; /redirect answers 302
cat >"$work/echo.py" <<'EOF2'
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        if self.path.startswith("/redirect"):
            self.send_response(302); self.send_header("Location", "/landed?from=redirect")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", "0"); self.end_headers(); return
        n = int(self.headers.get("Content-Length") or 0)
        body = json.dumps({"method": self.command, "path": self.path,
                           "body": self.rfile.read(n).decode(),
                           "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", "yes"); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer((os.environ["POD_IP"], int(sys.argv[1])), H).serve_forever()
EOF2
python3 - "$web_port" "$work/echo.py" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
  "spec": {"containers": [{"name": "c", "image": "busybox",
    "command": ["python3", sys.argv[2], sys.argv[1]],
    "ports": [{"containerPort": int(sys.argv[1])}],
    "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}]}}))
EOF2
wait_for "web Running" pod/web '{.status.phase}=Running'
ip=$(k get pod web -o jsonpath='{.status.podIP}')
case $ip in
127.*|"") echo "the pods' address is $ip (no non-loopback interface): kube-apiserver refuses it; skipping"; exit 77 ;;
esac
i=0
until curl -s -o /dev/null "http://$ip:$web_port/" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done

pods=/api/v1/namespaces/default/pods
services=/api/v1/namespaces/default/services
# field FILE KEY...: a value of the echo's JSON answer
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v=v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@"; }

# pods/NAME:PORT/proxy/PATH with the query (plain kubectl: k's --request-timeout adds
# ?timeout=20s, which goes on as the rest of the query does)
kubectl get --raw "$pods/web:$web_port/proxy/some/path?a=1&b=two" >"$work/get.json" 2>"$work/get.err"
check "GET through pods/proxy ($(cat "$work/get.err"))" test "$(field "$work/get.json" method)" = GET
check "the path and the query went on" test "$(field "$work/get.json" path)" = "/some/path?a=1&b=two"
check "X-Forwarded-Uri names the proxy path" \
    test "$(field "$work/get.json" headers x-forwarded-uri)" = "$pods/web:$web_port/proxy/some/path"
check "the client's credentials stay with the server" test -z "$(field "$work/get.json" headers authorization)"
check "X-Forwarded-For names the client" test "$(field "$work/get.json" headers x-forwarded-for)" = 127.0.0.1
# the declared port, and the http: scheme prefix
got=$(kubectl get --raw "$pods/web/proxy/p" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
check "the pod's declared port ($got)" test "$got" = /p
got=$(kubectl get --raw "$pods/http:web:$web_port/proxy/s" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
check "the http: scheme prefix ($got)" test "$got" = /s

# the other methods, with their bodies
echo '{"hello": "pod"}' >"$work/body.json"
k create --raw "$pods/web:$web_port/proxy/post" -f "$work/body.json" >"$work/post.json" 2>&1
check "POST with its body ($(cat "$work/post.json"))" \
    test "$(field "$work/post.json" method) $(field "$work/post.json" body)" = 'POST {"hello": "pod"}'
k replace --raw "$pods/web:$web_port/proxy/put" -f "$work/body.json" >"$work/put.json" 2>&1
check "PUT ($(cat "$work/put.json"))" test "$(field "$work/put.json" method)" = PUT
k delete --raw "$pods/web:$web_port/proxy/del" >"$work/del.json" 2>&1
check "DELETE ($(cat "$work/del.json"))" test "$(field "$work/del.json" method)" = DELETE
got=$(kurl -X PATCH -H 'Content-Type: text/plain' --data-binary 'x=1' "$url$pods/web:$web_port/proxy/patch")
check "PATCH ($got)" test "$(echo "$got" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["method"], d["body"], d["headers"]["content-type"])')" = "PATCH x=1 text/plain"

# https: to a pod serving TLS with a certificate nobody checks (the server's own pair)
cat >"$work/tls.py" <<'EOF2'
import http.server, os, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"tls " + self.path.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s = http.server.HTTPServer((os.environ["POD_IP"], int(sys.argv[1])), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
EOF2
python3 - "$tls_port" "$work/tls.py" "$work/data/pki/apiserver.crt" "$work/data/pki/apiserver.key" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tls"},
  "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["python3"] + sys.argv[2:3] + [sys.argv[1]] + sys.argv[3:],
    "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}]}}))
EOF2
wait_for "tls Running" pod/tls '{.status.phase}=Running'
poll "https: to a pod whose certificate is not checked" \
    sh -c "[ \"\$(kubectl get --raw '$pods/https:tls:$tls_port/proxy/secure')\" = 'tls /secure' ]"

# the answer's own fields; the root redirect; a redirect rewritten under the proxy path
kurl -D "$work/h.txt" -o /dev/null "$url$pods/web:$web_port/proxy/x"
check "the pod's header fields come back" grep -qi '^X-Echo: yes' "$work/h.txt"
got=$(kurl -o /dev/null -w '%{http_code} %{redirect_url}' "$url$pods/web:$web_port/proxy?q=1")
check "a bare proxy path is redirected ($got)" test "$got" = "301 $url$pods/web:$web_port/proxy/?q=1"
kurl -D "$work/r.txt" -o /dev/null "$url$pods/web:$web_port/proxy/redirect"
check "a redirect to the pod stays under the proxy path ($(grep -i '^location' "$work/r.txt"))" \
    grep -qi "^Location: $pods/web:$web_port/proxy/landed?from=redirect" "$work/r.txt"
check "CORS fields of the pod are dropped" sh -c "! grep -qi '^Access-Control-Allow-Origin' '$work/r.txt'"

# services/NAME:PORT/proxy: by port name and by port number, to a ready endpoint
k create -f - >/dev/null <<EOF2
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: $web_port}]
---
apiVersion: v1
kind: Service
metadata: {name: empty}
spec:
  selector: {app: nothing}
  ports: [{port: 80}]
EOF2
poll "the web Service's endpoint" sh -c "kubectl get --raw '$services/web:http/proxy/ready' | grep -q ready"
got=$(kubectl get --raw "$services/web:http/proxy/by-name?x=y" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
check "services/proxy by port name ($got)" test "$got" = "/by-name?x=y"
got=$(kubectl get --raw "$services/web:80/proxy/by-number" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
check "services/proxy by port number ($got)" test "$got" = /by-number
got=$(k get --raw "$services/web:81/proxy/" 2>&1)
check "an unknown service port is 503 ($got)" \
    test "$got" = 'Error from server (ServiceUnavailable): no service port 81 found for service "web"'
got=$(k get --raw "$services/empty/proxy/" 2>&1)
check "no endpoints is 503 with Kubernetes' words ($got)" \
    test "$got" = 'Error from server (ServiceUnavailable): no endpoints available for service "empty"'
check "the 503's code" test "$(kurl -o /dev/null -w '%{http_code}' "$url$services/empty/proxy/")" = 503

# kubectl proxy in front of the server
kubectl proxy --port=0 >"$work/kp.out" 2>"$work/kp.err" &
kp_pid=$!
i=0
until grep -q 'Starting to serve on' "$work/kp.out" || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
kp=$(sed -n 's/^Starting to serve on //p' "$work/kp.out")
got=$(curl -s -m 10 "http://$kp$services/web:http/proxy/through-kubectl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])' 2>&1)
check "kubectl proxy to services/proxy ($got)" test "$got" = /through-kubectl

# nodes/NAME/proxy: the agent, with the server's kubelet client certificate
got=$(k get --raw /api/v1/nodes/n1/proxy/healthz 2>&1)
check "nodes/n1/proxy/healthz ($got)" test "$got" = ok
check "nodes/n1/proxy/metrics/resource" sh -c "kubectl get --raw /api/v1/nodes/n1/proxy/metrics/resource | grep -q '^node_cpu_usage_seconds_total'"
got=$(k get --raw "/api/v1/nodes/n1:$agent_port/proxy/healthz" 2>&1)
check "nodes/n1:KUBELETPORT/proxy ($got)" test "$got" = ok

# the errors
got=$(k get --raw "$pods/a:b:c:d/proxy/" 2>&1)
check "four parts are 400 ($got)" test "$got" = 'Error from server (BadRequest): invalid pod request "a:b:c:d"'
got=$(k get --raw "$pods/ftp:web:80/proxy/" 2>&1)
check "an unknown scheme is 400 ($got)" test "$got" = 'Error from server (BadRequest): invalid pod request "ftp:web:80"'
got=$(k get --raw "$pods/web:$closed_port/proxy/" 2>&1)
case $got in
"Error from server (ServiceUnavailable): error trying to reach service: "*) pass ;;
*) fail "a port where nothing listens is 503 ($got)" ;;
esac
got=$(k get --raw "$pods/nope/proxy/" 2>&1)
check "a missing pod is 404 ($got)" test "$got" = 'Error from server (NotFound): pods "nope" not found'
got=$(k get --raw "$pods/web:$web_port/proxy/" --as=jane 2>&1)
check "a user without pods/proxy is refused ($got)" \
    sh -c "echo '$got' | grep -q 'cannot get resource \"pods/proxy\" in API group \"\" in the namespace \"default\"'"
got=$(kubectl get --raw /api/v1 | python3 -c '
import json, sys
r = {x["name"]: x for x in json.load(sys.stdin)["resources"]}
print(r["pods/proxy"]["kind"], ",".join(r["services/proxy"]["verbs"]), "nodes/proxy" in r)')
check "discovery lists the proxy subresources ($got)" test "$got" = "PodProxyOptions create,delete,get,patch,update True"

# the admission chain is asked (a CONNECT): AlwaysDeny refuses the proxy
stop_server
start_server --enable-admission-plugins=AlwaysDeny
got=$(k get --raw /api/v1/nodes/n1/proxy/healthz 2>&1)
check "AlwaysDeny refuses nodes/proxy ($got)" \
    test "$got" = 'Error from server (Forbidden): nodes "n1" is forbidden: admission control is denying all modifications'

stop_all
agent_pid=""
kp_pid=""
finish
