#!/bin/sh
# test_agent_exec.sh - `kubectl exec` and the agent's HTTPS endpoint, with the real kubectl
# against a real `ckube server` and `ckube agent`: exec gives stdout, stderr and the exit
# code; `exec -i` carries stdin to its end; `exec -it` runs a shell on a pseudo-terminal
# (driven from a pty by Python); a bad container name and a missing pod are refused with
# Kubernetes' messages; an exec'd process is killed when kubectl goes away; `kubectl
# logs` still works over TLS; a client without a certificate is refused by the agent. No
# process is left behind (checked).
#
# Usage: test_agent_exec.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
agent_pid=""
root="$work/agent-root"
mkdir -p "$root"
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
stop_agent() {
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    agent_pid=""
}
leftovers() {
    for p in /proc/[0-9]*; do
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CKUBE_E2E_MARK=$work" &&
            echo "${p#/proc/}"
    done
}
kill_leftovers() { for p in $(leftovers); do kill -9 "$p" 2>/dev/null; done; }
trap 'stop_agent; kill_leftovers; cleanup' EXIT
start_server
"$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$root" --port "$agent_port" \
    --client-ca-file "$work/data/pki/ca.crt" >>"$work/agent.out" 2>>"$work/agent.err" &
agent_pid=$!
i=0
until k get node n1 >/dev/null 2>&1 || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box"},
  "spec": {"containers": [{"name": "c", "image": "busybox",
    "command": ["sh", "-c", "echo started; sleep 1000"],
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]},
            {"name": "GREETING", "value": "hello from the pod"}]}]}}))
EOF2
wait_for "box Running" pod/box '{.status.phase}=Running'

# stdout, stderr and the exit code
k exec box -- sh -c 'echo out; echo err >&2; exit 3' >"$work/exec.out" 2>"$work/exec.err"
code=$?
check "exec exit code 3 (got $code)" test "$code" -eq 3
check "exec stdout" test "$(cat "$work/exec.out")" = out
check "exec stderr" grep -qx err "$work/exec.err"
check "exec in the pod's environment" test "$(k exec box -- sh -c 'echo $GREETING')" = "hello from the pod"
check "exec in the pod's directory" test "$(k exec box -- pwd)" = "$(cd "$root" && pwd -P)/pods/$(k get pod box -o jsonpath='{.metadata.uid}')"
check "exec success exits 0" k exec box -- true
# every byte of an output larger than the relay's buffers arrives, before the close
check "exec output of 4 MiB arrives whole" \
    test "$(k exec box -- head -c 4194304 /dev/zero | wc -c)" -eq 4194304

# stdin through -i, to its end
got=$(printf 'one\ntwo\n' | k exec -i box -- sh -c 'cat; echo done')
check "exec -i carries stdin ($got)" test "$got" = "one
two
done"

# a shell on a pseudo-terminal
python3 "$here/pty_shell.py" box >"$work/tty.out" 2>&1
check "exec -it: the shell computes 42" grep -q '^42' "$work/tty.out"
check "exec -it: on a pseudo-terminal" grep -q '/dev/pts/' "$work/tty.out"
check "exec -it: the terminal's size" grep -q '^33 101' "$work/tty.out"
check "exec -it: exits 0" grep -q '^EXIT 0' "$work/tty.out"

# errors before the upgrade, with Kubernetes' messages
k exec box -c nope -- true 2>"$work/bad.err"
check "exec into a bad container fails" grep -q 'container nope is not valid for pod box' "$work/bad.err"
k exec nosuchpod -- true 2>"$work/nopod.err"
check "exec into a missing pod: NotFound" grep -q 'pods "nosuchpod" not found' "$work/nopod.err"

# kubectl goes away: its process is killed
kubectl exec box -- sh -c 'echo $$ >pid.exec; exec sleep 1000' &
kpid=$!
poddir="$root/pods/$(k get pod box -o jsonpath='{.metadata.uid}')"
i=0
until [ -s "$poddir/pid.exec" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
epid=$(cat "$poddir/pid.exec" 2>/dev/null)
check "the exec'd sleep runs" kill -0 "${epid:-0}"
kill "$kpid"
wait "$kpid" 2>/dev/null
i=0
while kill -0 "${epid:-0}" 2>/dev/null && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "the exec'd process is killed when kubectl goes away" sh -c "! kill -0 ${epid:-0} 2>/dev/null"

# logs over TLS; the agent refuses a client without a certificate
check "kubectl logs over TLS" test "$(k logs box)" = started
code=$(curl -sk -o /dev/null -w '%{http_code}' "https://$(k get node n1 -o jsonpath='{.status.addresses[0].address}'):$agent_port/containerLogs/default/box/c")
check "the agent refuses a client without a certificate (got $code)" test "$code" = 401
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$(k get node n1 -o jsonpath='{.status.addresses[0].address}'):$agent_port/containerLogs/default/box/c")
check "the agent does not speak plain HTTP (got $code)" test "$code" != 200

k delete pod box --wait=true --timeout=60s >/dev/null 2>&1
stop_agent
i=0
until [ -z "$(leftovers)" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "no process left behind" test -z "$(leftovers)"
[ "$failures" -ne 0 ] && { echo "--- agent log ---"; tail -n 40 "$work/agent.err"; }
finish
