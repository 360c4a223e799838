# lib.sh - what the kubectl end-to-end scripts share: a scratch folder, a
# `ckube server` on a free loopback port that can be stopped and started
# again on the same store, a kubeconfig for it, pass/fail bookkeeping, `ckube
# fake-nodes` beside it, a `ckube agent` on the process runtime (and the
# pod processes it leaves), an HTTPS webhook server, and waiting for an object (or a bounded poll) and
# making a pod Ready.
# The server runs with --disable-agent --disable-dns: a test that does not test the
# node never starts a node, a containerd, containers, bridges, nftables rules or a DNS
# server on the host's address (tests/e2e/test_server_node.sh tests the server's own
# node, proxy and DNS, inside a network namespace of its own).
# The server speaks HTTPS with the PKI it creates in $work/data/pki: curl
# verifies it with --cacert "$ca"; kurl also authenticates as the admin.
#
# Source it with $1 = PATH/TO/ckube and optional $2 = STORE_URL (default: a
# fresh sqlite://<tmp>/state.db). It exits 77 (skipped) without kubectl.
if ! command -v kubectl >/dev/null 2>&1; then
    echo "$(basename "$0"): no kubectl on PATH (kubectl 1.32 is a prerequisite you install, see README.md); skipping" >&2
    exit 77
fi
ckube=$1
work=$(mktemp -d)
store=${2:-sqlite://$work/state.db}
server_pid=""
watch_pid=""
fake_pid=""
agent_pid=""
process_pods=""
hook_pid=""
failures=0
passes=0
cleanup() {
    stop_hook
    stop_agent
    [ -n "$process_pods" ] && kill_leftovers
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
    [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data

pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
    desc=$1; shift
    if "$@"; then pass; else fail "$desc"; fi
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="https://127.0.0.1:$port"
ca="$work/data/pki/ca.crt"
# kurl ARGS...: curl against the server as the admin (the kubeconfig's certificate)
kurl() { curl -s --cacert "$ca" --cert "$work/data/pki/admin.crt" --key "$work/data/pki/admin.key" "$@"; }

# start_server [EXTRA ARGS...]: starts the server on $port and $store, waits until ready.
start_server() {
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" --store "$store" "$@" \
        >>"$work/server.out" 2>>"$work/server.err" &
    server_pid=$!
    i=0
    # ready, and the kubeconfig written (the server writes it once it serves); a probe
    # has 10 s (curl's own connect timeout is 300 s)
    until [ "$(kurl -m 10 "$url/readyz" 2>/dev/null)" = ok ] &&
        [ -f "$work/data/kubeconfig" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            echo "server did not become ready:"; readyz_why; cat "$work/server.err"; exit 1
        fi
        sleep 0.1
    done
}

# readyz_why: prints /readyz?verbose and, for each failing check, its reason (its own path)
readyz_why() {
    kurl -m 10 "$url/readyz?verbose" >"$work/readyz.out" 2>&1
    sed 's/^/  /' "$work/readyz.out"; echo
    sed -n 's/^\[-\]\([^ ]*\) failed.*/\1/p' "$work/readyz.out" | while read -r check; do
        echo "  /readyz/$check: $(kurl -m 10 "$url/readyz/$check" 2>&1)"
    done
}

# poll DESCRIPTION COMMAND...: retries COMMAND (quietly) for 60 s at most; passes or fails.
poll() {
    desc=$1; shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then fail "$desc"; return; fi
        sleep 0.2
    done
    pass
}

# start_fake_nodes ARGS...: `ckube fake-nodes` for the server with ARGS, in the
# background (output in $work/fake.out and fake.err); cleanup stops it first.
start_fake_nodes() {
    "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" "$@" >"$work/fake.out" 2>"$work/fake.err" &
    fake_pid=$!
}

# free_port: a TCP port free on every local address
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'
}

# Pods on the process runtime are host processes, and they outlive their agent (as
# containers outlive a kubelet). A test that runs them gives every container the
# environment variable CKUBE_E2E_MARK=$work and sets process_pods=1 (start_process_node
# does): cleanup then stops the agent and kills every process so marked.
# leftovers: the PIDs of the processes whose environment holds this run's marker
leftovers() {
    for p in /proc/[0-9]*; do
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CKUBE_E2E_MARK=$work" &&
            echo "${p#/proc/}"
    done
}
kill_leftovers() { for p in $(leftovers); do kill -9 "$p" 2>/dev/null; done; }

# stop_agent: stops the agent started as $agent_pid (SIGTERM) and waits for it to exit.
stop_agent() {
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    agent_pid=""
}

# start_process_node ROOT PORT: `ckube agent` for node n1 on the process runtime (its
# files under ROOT, its server on PORT, trusting the server's CA), as $agent_pid; then
# waits until n1 is registered and Ready. The test's pods are process pods.
start_process_node() {
    process_pods=1
    # marked too: a pod's supervisor is a fork of the agent, and outlives it when its
    # container does not stop (kill_leftovers finds it by the mark)
    CKUBE_E2E_MARK="$work" "$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name n1 \
        --root-dir "$1" --port "$2" --client-ca-file "$work/data/pki/ca.crt" \
        >>"$work/agent.out" 2>>"$work/agent.err" &
    agent_pid=$!
    i=0
    until k get node n1 >/dev/null 2>&1 || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'
}

# start_webhook SCRIPT CN DNS: the webhook server tests/e2e/SCRIPT (webhook_https.py) on
# a loopback port, as $hook_pid, with a certificate made here for CN, 127.0.0.1 and the
# name DNS ($cabundle: it, base64); sets $hook_port once it listens. Its reviews are
# logged to $work/reviews.log. Exits 77 (skipped) without openssl.
start_webhook() {
    if ! command -v openssl >/dev/null 2>&1; then
        echo "$(basename "$0"): no openssl to make the webhook's certificate; skipping" >&2
        exit 77
    fi
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj "/CN=$2" -addext "subjectAltName=IP:127.0.0.1,DNS:$3" \
        -keyout "$work/hook.key" -out "$work/hook.crt" 2>/dev/null
    cabundle=$(base64 -w0 <"$work/hook.crt")
    python3 -B "$here/$1" "$work/hook.crt" "$work/hook.key" "$work/hook.port" \
        "$work/reviews.log" 2>"$work/hook.err" &
    hook_pid=$!
    i=0
    until [ -f "$work/hook.port" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && { echo "webhook did not start"; cat "$work/hook.err"; exit 1; }
        sleep 0.1
    done
    hook_port=$(cat "$work/hook.port")
}

# stop_hook: stops the webhook server (the webhook is down from then on).
stop_hook() { [ -n "$hook_pid" ] && kill "$hook_pid" 2>/dev/null && wait "$hook_pid" 2>/dev/null; hook_pid=""; }

# stop_server: stops it cleanly (SIGTERM) and waits for it to exit.
stop_server() {
    kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    server_pid=""
}

# finish: prints the tally (and the server log on failure) and exits with the verdict.
finish() {
    echo "$passes passed, $failures failed"
    if [ "$failures" -ne 0 ]; then
        echo "--- server log ---"; tail -n 40 "$work/server.err"
    fi
    [ "$failures" -eq 0 ]
    exit
}

export KUBECONFIG="$work/data/kubeconfig"
export KUBECACHEDIR="$work/kube-cache" # fresh: the dispatcher caches /version per address
k() { kubectl --request-timeout=20s "$@"; }

# wait_for DESCRIPTION OBJECT JSONPATH=VALUE: kubectl wait watches the object until
# the condition holds (60 s at most); passes or fails DESCRIPTION.
wait_for() {
    if k wait "$2" --for=jsonpath="$3" --timeout=60s >/dev/null 2>"$work/wait.err"; then
        pass
    else
        fail "$1 ($(cat "$work/wait.err"))"
    fi
}

# mark_ready POD: marks the pod Running and Ready through the status subresource, as a
# node agent would (there is none yet).
mark_ready() {
    k get pod "$1" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin)
t = "2026-01-01T00:00:00Z"
p["status"] = {"phase": "Running", "conditions": [
    {"type": "Ready", "status": "True", "lastTransitionTime": t, "lastProbeTime": t}]}
print(json.dumps(p))' | k replace --subresource=status -f - >/dev/null
}

# header NAME FILE: the value of header NAME in a curl -D dump
header() { tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | tail -n 1; }

# burst FIRST LAST [CURL ARGS...]: creates configmaps cm-FIRST..cm-LAST in default at
# once (as the admin, or as the curl arguments say), each answer's status in
# $work/load/N.code, its body in N.body and its header in N.head
burst() {
    mkdir -p "$work/load"
    first=$1 last=$2
    shift 2
    pids=""
    for i in $(seq "$first" "$last"); do
        kurl "$@" -o "$work/load/$i.body" -D "$work/load/$i.head" -w '%{http_code}\n' \
            -X POST -H 'Content-Type: application/json' \
            -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-$i\"}}" \
            "$url/api/v1/namespaces/default/configmaps" >"$work/load/$i.code" &
        pids="$pids $!"
    done
    wait $pids
}

# check_burst_429 RETRY_AFTER: of the last burst, some were refused with
# kube-apiserver's 429 (its words, Retry-After RETRY_AFTER or, when "any", at least 1)
# and some served; sets $rejected_n to a refused one's number ("" when none).
check_burst_429() {
    cat "$work/load"/*.code | sort | uniq -c >"$work/codes"
    rejected=$(grep -l '^429$' "$work/load"/*.code | head -n 1)
    check "some parallel writes were rejected 429 ($(cat "$work/codes"))" test -n "$rejected"
    check "some parallel writes were served ($(cat "$work/codes"))" grep -q ' 201$' "$work/codes"
    rejected_n=""
    [ -n "$rejected" ] || return 0
    rejected_n=$(basename "$rejected" .code)
    check "the 429 says kube-apiserver's words ($(cat "$work/load/$rejected_n.body"))" \
        test "$(cat "$work/load/$rejected_n.body")" = "Too many requests, please try again later."
    retry=$(header Retry-After "$work/load/$rejected_n.head")
    if [ "$1" = any ]; then
        check "the 429 has Retry-After ($retry)" test "${retry:-0}" -ge 1
    else
        check "the 429 has Retry-After: $1 ($retry)" test "$retry" = "$1"
    fi
}
