#!/bin/sh
# test_agent_ephemeral.sh - pods/ephemeralcontainers with the real kubectl against a real
# `ckube server` and a process-runtime `ckube agent`: `kubectl debug POD --image=...
# --container=dbg -- CMD` adds an ephemeral container that the agent runs once in the
# pod, reported in status.ephemeralContainerStatuses, whose output `kubectl logs -c dbg`
# reads; `kubectl debug -i` reaches a shell's stdin and output (no terminal here); the subresource refuses to change or remove an existing ephemeral container with
# Kubernetes' messages, and a plain pod update may not add one.
#
# Usage: test_agent_ephemeral.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
agent_pid=""
stop_agent() {
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
    agent_pid=""
}
trap 'k delete pod box --grace-period=0 --force >/dev/null 2>&1; stop_agent; cleanup' EXIT
start_server
start_process_node "$root" "$agent_port"

k run box --image=busybox --restart=Never --command -- sh -c 'echo started; sleep 1000' >/dev/null
wait_for "box Running" pod/box '{.status.phase}=Running'

k debug box --image=busybox --container=dbg -- sh -c 'echo hi from dbg' >"$work/debug.out" 2>&1
check "kubectl debug adds the ephemeral container ($(cat "$work/debug.out"))" \
    test "$(k get pod box -o jsonpath='{.spec.ephemeralContainers[0].name}')" = dbg
check "its defaults: terminationMessagePath" \
    test "$(k get pod box -o jsonpath='{.spec.ephemeralContainers[0].terminationMessagePath}')" = /dev/termination-log
poll "the agent ran it once: terminated with exit code 0" sh -c \
    "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[0].state.terminated.exitCode}' | grep -qx 0"
check "never restarted" \
    test "$(k get pod box -o jsonpath='{.status.ephemeralContainerStatuses[0].restartCount}')" = 0
check "kubectl logs -c dbg" test "$(k logs box -c dbg)" = "hi from dbg"
check "the pod's own container still runs" \
    test "$(k get pod box -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')" != ""
check "GET pods/box/ephemeralcontainers is the pod" \
    sh -c "kubectl get --raw /api/v1/namespaces/default/pods/box/ephemeralcontainers | grep -q '\"kind\":\"Pod\"'"

# -i: kubectl attaches to the new container's stdin and output
(sleep 3; printf 'echo hello-$((6*7))\n'; sleep 2; printf 'exit\n') |
    timeout 60 kubectl debug -i box --image=busybox --container=shell -- sh >"$work/shell.out" 2>&1
code=$?
check "debug -i: the shell's answer comes back ($(cat "$work/shell.out"))" grep -qx hello-42 "$work/shell.out"
check "debug -i: kubectl exits 0 (got $code)" test "$code" -eq 0
poll "debug -i: the shell ended, reported" sh -c \
    "kubectl get pod box -o jsonpath='{.status.ephemeralContainerStatuses[?(@.name==\"shell\")].state.terminated.exitCode}' | grep -qx 0"

# a change of an existing one, and its removal, are refused with Kubernetes' messages
k get pod box -o json >"$work/pod.json"
python3 - "$work/pod.json" >"$work/changed.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
pod["spec"]["ephemeralContainers"][0]["image"] = "other"
print(json.dumps(pod))
PY
k replace --raw /api/v1/namespaces/default/pods/box/ephemeralcontainers -f "$work/changed.json" \
    >"$work/changed.out" 2>&1
check "changing it is refused ($(cat "$work/changed.out"))" grep -q \
    'spec.ephemeralContainers\[dbg\]: Forbidden: existing ephemeral containers \\*"dbg\\*" may not be changed' \
    "$work/changed.out"
python3 - "$work/pod.json" >"$work/removed.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
del pod["spec"]["ephemeralContainers"]
print(json.dumps(pod))
PY
k replace --raw /api/v1/namespaces/default/pods/box/ephemeralcontainers -f "$work/removed.json" \
    >"$work/removed.out" 2>&1
check "removing it is refused ($(cat "$work/removed.out"))" grep -q \
    'existing ephemeral containers \\*"dbg\\*" may not be removed' "$work/removed.out"
# a plain update of the pod may not add one
python3 - "$work/pod.json" >"$work/added.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
pod["spec"]["ephemeralContainers"].append({"name": "dbg2", "image": "busybox"})
print(json.dumps(pod))
PY
k replace -f "$work/added.json" >"$work/added.out" 2>&1
check "a pod update may not add one ($(cat "$work/added.out"))" grep -q \
    'pod updates may not change fields' "$work/added.out"

k delete pod box --wait=true --timeout=60s >/dev/null 2>&1
stop_agent
[ "$failures" -ne 0 ] && { echo "--- agent log ---"; tail -n 40 "$work/agent.err"; }
finish
