#!/bin/sh
# test_agent.sh - `ckube agent` with the real kubectl against a real `ckube server`: the
# node registers Ready with its lease; a pod's `sh -c` container runs as a local process
# with its env (values and fieldRefs) and writes its log in the CRI format; `kubectl
# logs` shows it; a crashing container restarts with back-off (restartCount, lastState,
# CrashLoopBackOff); a command that does not exist is RunContainerError; `kubectl delete
# pod` stops it within its grace period (SIGTERM, exit 143); a Deployment's pods run on
# the agent; the agent killed with SIGKILL and started again finds its containers (no
# second process); grpc probes against the tests' gRPC health server (its path in
# CKUBE_GRPC_HEALTH_SERVER); feature-gate precedence between the config file and the flag. No
# process is left behind (checked). Waits are `kubectl wait` or bounded polls.
#
# Usage: test_agent.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
process_pods=1
start_server
# a port of its own: agents of other runs on this host may hold the default 10250
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
start_agent() {
    "$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$root" \
        --port "$agent_port" "$@" \
        >>"$work/agent.out" 2>>"$work/agent.err" &
    agent_pid=$!
}
exists() {
    i=0
    until k get "$1" >/dev/null 2>&1 || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
}

# feature gates: the file's map, then --feature-gates on top
cat >"$work/kubelet.yaml" <<EOF2
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 50
featureGates:
  PodReadyToStartContainersCondition: false
  KubeletSeparateDiskGC: false
EOF2
start_agent --config "$work/kubelet.yaml" --feature-gates KubeletSeparateDiskGC=true
exists node/n1
wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'
check "maxPods from the config file" test "$(k get node n1 -o jsonpath='{.status.capacity.pods}')" = 50
check "a lease for n1" test "$(k get lease -n kube-node-lease n1 -o jsonpath='{.spec.holderIdentity}')" = n1
gates=$(grep "Effective feature gates" "$work/agent.err" | head -1)
case $gates in
*KubeletSeparateDiskGC=true*PodReadyToStartContainersCondition=false*) pass ;;
*) fail "effective gates: file then flag: $gates" ;;
esac

# pod NAME RESTART COMMAND [GRACE]: one container running sh -c COMMAND on n1
pod() {
    python3 - "$@" "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
name, restart, command, grace, mark = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[-1]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": name, "labels": {"app": name}},
  "spec": {"restartPolicy": restart,
           "terminationGracePeriodSeconds": int(grace) if grace != mark else 30,
           "volumes": [{"name": "scratch", "emptyDir": {}}],
           "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", command],
             "env": [{"name": "CKUBE_E2E_MARK", "value": mark},
                     {"name": "MY_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "MY_APP",
                      "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]}]}}))
EOF2
}
pod hello Always 'echo hello; echo pod=$MY_POD app=$MY_APP; sleep 1000'
wait_for "hello Running" pod/hello '{.status.phase}=Running'
wait_for "hello Ready" pod/hello '{.status.conditions[?(@.type=="Ready")].status}=True'
check "hello runs on n1" test "$(k get pod hello -o jsonpath='{.spec.nodeName}')" = n1
uid=$(k get pod hello -o jsonpath='{.metadata.uid}')
log="$root/pods/$uid/containers/c/0.log"
i=0
until grep -q "pod=hello app=hello" "$log" 2>/dev/null || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "the log has fieldRef env" grep -q " stdout F pod=hello app=hello$" "$log"
check "the CRI log format" grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z stdout F hello$' "$log"
check "emptyDir is a directory" test -d "$root/pods/$uid/volumes/scratch"
check "kubectl logs shows hello" sh -c "kubectl logs hello 2>&1 | grep -qx hello"
check "kubectl logs --tail=1" test "$(k logs hello --tail=1)" = "pod=hello app=hello"
check "kubectl logs --timestamps" sh -c "kubectl logs hello --timestamps | grep -Eqx '[0-9-]{10}T[0-9:.]{18}Z hello'"
check "kubectl logs --limit-bytes=3" test "$(k logs hello --limit-bytes=3)" = hel
# kubectl logs -f follows: lines written after it started arrive
pod ticker Always 'i=0; while true; do echo tick $i; i=$((i + 1)); sleep 0.2; done'
wait_for "ticker Running" pod/ticker '{.status.phase}=Running'
timeout 3 kubectl logs -f ticker >"$work/follow.txt" 2>&1
check "kubectl logs -f follows (got $(wc -l <"$work/follow.txt") lines)" test "$(grep -c '^tick' "$work/follow.txt")" -ge 10
check "one process for hello" test "$(leftovers | wc -l)" -ge 1

# the agent killed hard and started again: the container is found, not started twice
before=$(k get pod hello -o jsonpath='{.status.containerStatuses[0].containerID}')
kill -9 "$agent_pid"; wait "$agent_pid" 2>/dev/null; agent_pid=""
check "the container outlives the agent" kill -0 "${before#process://}"
start_agent
sleep 2
after=$(k get pod hello -o jsonpath='{.status.containerStatuses[0].containerID}')
check "the same container after a restart of the agent" test "$before" = "$after"
check "restartCount still 0" test "$(k get pod hello -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0

# crash loop
pod crash Always 'echo crashing; exit 3'
wait_for "crash restarted" pod/crash '{.status.containerStatuses[0].restartCount}=1'
wait_for "crash in CrashLoopBackOff" pod/crash \
    '{.status.containerStatuses[0].state.waiting.reason}=CrashLoopBackOff'
check "kubectl logs --previous" test "$(k logs crash --previous)" = crashing
check "lastState exit code 3" test \
    "$(k get pod crash -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')" = 3

# probes: readiness (exec) drives Ready; a failing liveness probe restarts the container
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
mark = sys.argv[1]
env = [{"name": "CKUBE_E2E_MARK", "value": mark}]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probed"},
   "spec": {"containers": [{"name": "c", "image": "x", "env": env,
     "command": ["sh", "-c", "sleep 2; touch ready; sleep 1000"],
     "readinessProbe": {"exec": {"command": ["test", "-f", "ready"]}, "periodSeconds": 1}}]}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unlively"},
   "spec": {"containers": [{"name": "c", "image": "x", "env": env,
     "command": ["sleep", "1000"],
     "livenessProbe": {"tcpSocket": {"port": 1}, "periodSeconds": 1,
                       "failureThreshold": 2}}]}}]}))
EOF2
wait_for "probed Running" pod/probed '{.status.phase}=Running'
check "probed not Ready before its readiness probe succeeds" test \
    "$(k get pod probed -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = False
wait_for "probed Ready through its readiness probe" pod/probed \
    '{.status.conditions[?(@.type=="Ready")].status}=True'
wait_for "unlively restarted by its liveness probe" pod/unlively \
    '{.status.containerStatuses[0].restartCount}=1'
check "unlively's lastState was killed (137)" test \
    "$(k get pod unlively -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')" = 137

# grpc probes: a gRPC health server of the tests as the container, probed at the pod's
# address (the host's, with this runtime); its "ok" service is SERVING, "down" is not
if [ -x "${CKUBE_GRPC_HEALTH_SERVER:-}" ]; then
    grpc_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
    cat <<EOF2 | k create --validate=false -f - >/dev/null
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "grpcprobed"},
 "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "c", "image": "x",
   "env": [{"name": "CKUBE_E2E_MARK", "value": "$work"}],
   "command": ["$CKUBE_GRPC_HEALTH_SERVER", "$grpc_port"],
   "readinessProbe": {"grpc": {"port": $grpc_port, "service": "ok"}, "periodSeconds": 1},
   "livenessProbe": {"grpc": {"port": $grpc_port, "service": "down"}, "periodSeconds": 1,
                     "failureThreshold": 100}}]}}
EOF2
    wait_for "grpcprobed Ready through its grpc readiness probe" pod/grpcprobed \
        '{.status.conditions[?(@.type=="Ready")].status}=True'
    poll "an Unhealthy event with the kubelet's words for NOT_SERVING" sh -c \
        "kubectl get events --field-selector involvedObject.name=grpcprobed,reason=Unhealthy -o jsonpath='{.items[*].message}' | grep -qF 'Liveness probe failed: service unhealthy (responded with \"NOT_SERVING\")'"
    k delete pod grpcprobed --wait=false >/dev/null
else
    echo "grpc probes: skipped: CKUBE_GRPC_HEALTH_SERVER names no test_grpc_health_server" >&2
fi

# init containers run in order, to completion, before the containers
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
env = [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "inits"},
  "spec": {"volumes": [{"name": "v", "emptyDir": {}}],
    "initContainers": [
      {"name": "one", "image": "x", "env": env, "command": ["sh", "-c", "echo one >order"]},
      {"name": "two", "image": "x", "env": env, "command": ["sh", "-c", "echo two >>order"]}],
    "containers": [{"name": "main", "image": "x", "env": env,
      "command": ["sh", "-c", "cat order; sleep 1000"]}]}}))
EOF2
wait_for "inits Running" pod/inits '{.status.phase}=Running'
poll "inits' main wrote its log" sh -c "kubectl logs inits -c main | grep -q two"
check "the init containers ran in order before main" test "$(k logs inits -c main | tr '\n' ' ')" = "one two "
check "the init containers are Completed" test \
    "$(k get pod inits -o jsonpath='{.status.initContainerStatuses[*].state.terminated.reason}')" = "Completed Completed"
wait_for "inits Initialized" pod/inits '{.status.conditions[?(@.type=="Initialized")].status}=True'

# a sidecar (an init container with restartPolicy Always): the next init container once it
# started, restarted after it ended though the pod's policy is Never, stopped once the
# app container completed (killed after the grace period when it ignores SIGTERM), the
# pod then Succeeded
env='[{"name": "CKUBE_E2E_MARK", "value": "'"$work"'"}]'
ready='{"exec": {"command": ["test", "-f", "ready"]}, "periodSeconds": 1}'
cat <<EOF2 | k create --validate=false -f - >/dev/null
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sidecars"},
 "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 5,
  "initContainers": [
   {"name": "side", "image": "x", "env": $env, "restartPolicy": "Always", "startupProbe": $ready,
    "command": ["sh", "-c", "trap 'exit 0' TERM; echo side >>order; sleep 1; touch ready; while true; do sleep 1; done"]},
   {"name": "check", "image": "x", "env": $env, "command": ["sh", "-c", "test -f ready && echo check >>order"]},
   {"name": "stubborn", "image": "x", "env": $env, "restartPolicy": "Always",
    "command": ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]}],
  "containers": [{"name": "main", "image": "x", "env": $env,
   "command": ["sh", "-c", "echo main >>order; cat order; while [ ! -f done ]; do sleep 1; done"]}]}}
EOF2
wait_for "sidecars Running" pod/sidecars '{.status.phase}=Running'
poll "sidecars' main wrote its log" sh -c "kubectl logs sidecars -c main | grep -q main"
check "the sidecar started, then the init container, then main" \
    test "$(k logs sidecars -c main | tr '\n' ' ')" = "side check main "
check "the sidecar is started and running" test \
    "$(k get pod sidecars -o jsonpath='{.status.initContainerStatuses[0].started} {.status.conditions[?(@.type=="Initialized")].status}')" = "true True"
side_pid=$(k get pod sidecars -o jsonpath='{.status.initContainerStatuses[0].containerID}')
kill "${side_pid#process://}" 2>/dev/null
wait_for "the sidecar restarted (policy Never)" pod/sidecars '{.status.initContainerStatuses[0].restartCount}=1'
wait_for "the sidecar started again" pod/sidecars '{.status.initContainerStatuses[0].started}=true'
touch "$root/pods/$(k get pod sidecars -o jsonpath='{.metadata.uid}')/done"
wait_for "sidecars Succeeded once main completed" pod/sidecars '{.status.phase}=Succeeded'
check "the sidecar that ignores SIGTERM was killed after the grace period (137)" test \
    "$(k get pod sidecars -o jsonpath='{.status.initContainerStatuses[2].state.terminated.exitCode}')" = 137
side_state=$(k get pod sidecars -o jsonpath='{.status.initContainerStatuses[0].state}')
check "the sidecar was stopped (its trap: exit 0): $side_state" test \
    "$(k get pod sidecars -o jsonpath='{.status.initContainerStatuses[0].state.terminated.exitCode}')" = 0

# a command that does not exist
cat <<EOF2 | k create --validate=false -f - >/dev/null
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nocmd"},
 "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x", "command": ["/nonexistent/cmd"]}]}}
EOF2
wait_for "nocmd RunContainerError" pod/nocmd \
    '{.status.containerStatuses[0].state.waiting.reason}=RunContainerError'

# a pod that runs to completion
pod once Never 'exit 0'
wait_for "once Succeeded" pod/once '{.status.phase}=Succeeded'

# deletion runs the preStop hook first (in the pod's directory and environment)
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hooked"},
  "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "c", "image": "x",
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}],
    "command": ["sleep", "1000"],
    "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo stopped >$CKUBE_E2E_MARK/prestop"]}}}}]}}))
EOF2
wait_for "hooked Running" pod/hooked '{.status.phase}=Running'
k delete pod hooked --wait=true --timeout=30s >/dev/null 2>&1
check "the preStop hook ran before the stop" test "$(cat "$work/prestop" 2>/dev/null)" = stopped

# graceful delete: SIGTERM, the container exits 143 or by its trap; gone within the grace period
pod slow Always 'sleep 1000' 3
wait_for "slow Running" pod/slow '{.status.phase}=Running'
start=$(date +%s)
k delete pod slow --wait=true --timeout=30s >/dev/null 2>&1
took=$(($(date +%s) - start))
check "slow gone within its grace period plus a few seconds (took ${took}s)" test "$took" -le 8
k delete pod hello --wait=true --timeout=30s >/dev/null 2>&1
check "hello deleted" sh -c "! kubectl get pod hello >/dev/null 2>&1"

# a Deployment's pods run on the agent
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "web", "image": "busybox",
        "command": ["sh", "-c", "echo web; sleep 1000"],
        "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}]}]}}}}))
EOF2
if k rollout status deployment/web --timeout=60s >/dev/null 2>&1; then pass; else fail "deployment web available"; fi
check "two web pods Running on n1" test \
    "$(k get pods -l app=web --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c n1)" -eq 2
check "kubectl logs deploy/web" test "$(k logs deploy/web)" = web
k delete deployment web >/dev/null
k delete pods --all --wait=true --timeout=60s >/dev/null 2>&1

stop_agent
i=0
until [ -z "$(leftovers)" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "no process left behind" test -z "$(leftovers)"
[ "$failures" -ne 0 ] && { echo "--- agent log ---"; tail -n 40 "$work/agent.err"; }
finish
