#!/bin/sh
# test_agent_exec.sh - `kubectl exec` and the agent's HTTPS endpoint, with the real kubectl
# against a real `ckube server` and `ckube agent`: exec gives stdout, stderr and the exit
# code; `exec -i` carries stdin to its end; `exec -it` runs a shell on a pseudo-terminal
# (driven from a pty by Python); a bad container name and a missing pod are refused with
# Kubernetes' messages; an exec'd process is killed when kubectl goes away; `kubectl
# logs` still works over TLS; a client without a certificate is refused by the agent.
# `kubectl attach` to host processes: -i writes into the stdin FIFO of a container with
# `stdin: true` and its answer comes back from the log, twice to the same process; without
# -i only new output arrives; `kubectl run -i --rm` gets its answer and deletes its pod.
# No process is left behind (checked).
#
# Usage: test_agent_exec.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
agent_port=$(free_port)
start_server
start_process_node "$root" "$agent_port"

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

# attach: stdin through the container's FIFO, output from its log
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
env = [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}]
for name, stdin, command in (
        ("reader", True, 'n=0; while read l; do n=$((n+1)); echo "got $l $n"; done'),
        ("ticker", False, 'i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.3; done')):
    print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
      "spec": {"containers": [{"name": "c", "image": "busybox", "stdin": stdin, "env": env,
        "command": ["sh", "-c", command]}]}}))
EOF2
for p in reader ticker; do wait_for "$p Running" pod/$p '{.status.phase}=Running'; done
check "a container with stdin reads a FIFO" test -p "$root/pods/$(k get pod reader -o jsonpath='{.metadata.uid}')/containers/c/0/stdin"
start=$(date +%s)
printf 'one\n' | timeout 60 kubectl attach -i reader >"$work/attach.out" 2>"$work/attach.err"
code=$?
took=$(($(date +%s) - start))
check "attach -i: the answer comes back ($(cat "$work/attach.out"))" grep -qx 'got one 1' "$work/attach.out"
check "attach -i: the end of stdin ends it with exit 0 (exit $code in ${took}s: $(cat "$work/attach.err"))" \
    test "$code" -eq 0
printf 'two\n' | k attach -i reader >"$work/attach2.out" 2>&1
check "attach -i again: the same process answers ($(cat "$work/attach2.out"))" grep -qx 'got two 2' "$work/attach2.out"
check "attach -i: the container's log has both" test "$(k logs reader | tr '\n' ' ')" = "got one 1 got two 2 "
sleep 2
timeout 6 kubectl attach ticker >"$work/ticker.out" 2>"$work/ticker.err"
n=$(grep -c '^tick-' "$work/ticker.out")
check "attach: the looping container's output arrives ($n lines)" test "$n" -ge 3
check "attach: only new output, not the first lines" sh -c "! grep -qx tick-1 '$work/ticker.out'"
k attach reader -c nope 2>"$work/attach-nope.err"
check "attach to an unknown container is refused" grep -q 'container nope not found in pod reader' "$work/attach-nope.err"
echo world | k run hello -i --rm --restart=Never --image=busybox --env="CKUBE_E2E_MARK=$work" \
    --overrides='{"spec": {"nodeName": "n1"}}' --command -- sh -c 'read x; echo got $x' \
    >"$work/run.out" 2>"$work/run.err"
code=$?
check "run -i: the answer comes back ($(cat "$work/run.out"); $(cat "$work/run.err"))" grep -qx 'got world' "$work/run.out"
check "run -i: exit 0 (got $code)" test "$code" -eq 0
poll "run -i --rm: the pod is gone" sh -c '! kubectl get pod hello >/dev/null 2>&1'
k delete pod reader ticker --wait=true --timeout=60s >/dev/null 2>&1

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
