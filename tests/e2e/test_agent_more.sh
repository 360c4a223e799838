#!/bin/sh
# test_agent_more.sh - more of `ckube agent` with the real kubectl against a real
# `ckube server`: log rotation by size (containerLogMaxSize/MaxFiles from the config
# file; N.log.<time> files, at most MaxFiles) with `kubectl logs` reading across the
# files; --since-time and --since combined with --tail; the resource-limit mode the agent
# chose, logged at start, and a memory limit that stops a big allocation; pressure
# conditions measured against evictionHard with their NoSchedule taints; ConfigMap and
# Secret references in env (a missing one: CreateContainerConfigError) and configMap,
# secret and downwardAPI volumes written as files, read by the agent with its node's
# credentials (the node authorizer allows what its pods reference, and no more); an
# emptyDir of medium Memory is a tmpfs of its sizeLimit the process sees (as root; else a
# FailedMount event saying why), gone with the pod. No process is left behind (checked).
#
# Usage: test_agent_more.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
process_pods=1
start_server

# a tiny log size, and memory "pressure" from a threshold no host meets
cat >"$work/kubelet.yaml" <<EOF2
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
nodeStatusUpdateFrequency: 1s
containerLogMaxSize: 8Ki
containerLogMaxFiles: 4
evictionHard:
  memory.available: "100Ti"
EOF2
# the agent runs as its node (system:node:n2): the node authorizer lets it read the
# Secrets and ConfigMaps its pods reference, and no others
"$ckube" certs client --data-dir "$work/data" --cn system:node:n2 --org system:nodes \
    --kubeconfig "$work/n2.kubeconfig" --server "$url" >/dev/null 2>&1
# its own log port: other tests' agents may run on this machine at the same time
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])')
"$ckube" agent --container-runtime process --kubeconfig "$work/n2.kubeconfig" --node-name n2 --root-dir "$root" \
    --config "$work/kubelet.yaml" --port "$agent_port" >>"$work/agent.out" 2>>"$work/agent.err" &
agent_pid=$!
i=0
until k get node n2 >/dev/null 2>&1 || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
wait_for "node n2 Ready" node/n2 '{.status.conditions[?(@.type=="Ready")].status}=True'

# limits: the mode chosen is logged; say which one this machine gives
mode=$(grep -m1 "Resource limits" "$work/agent.err")
check "the limits mode is logged at start" test -n "$mode"
case $mode in
*rlimits*) echo "SKIP (cgroup mode): no delegated cgroup v2 here: ${mode#*reason=}" ;;
esac

# pressure: MemoryPressure True with the kubelet's reason, and its taint
wait_for "MemoryPressure True" node/n2 '{.status.conditions[?(@.type=="MemoryPressure")].status}=True'
check "MemoryPressure reason" test \
    "$(k get node n2 -o jsonpath='{.status.conditions[?(@.type=="MemoryPressure")].reason}')" = KubeletHasInsufficientMemory
check "DiskPressure False" test \
    "$(k get node n2 -o jsonpath='{.status.conditions[?(@.type=="DiskPressure")].status}')" = False
i=0
until k get node n2 -o jsonpath='{.spec.taints[*].key}' | grep -q memory-pressure || [ $i -gt 50 ]; do
    i=$((i + 1)); sleep 0.2
done
check "memory-pressure NoSchedule taint" test \
    "$(k get node n2 -o jsonpath='{.spec.taints[?(@.key=="node.kubernetes.io/memory-pressure")].effect}')" = NoSchedule

# pods: bound to n2 directly (the taint keeps the scheduler away, as in Kubernetes)
k create configmap app-config --from-literal=greeting=hello --from-literal=color=blue \
    --from-literal=1bad=x --from-literal=0worse=y >/dev/null
k create secret generic app-secret --from-literal=password=s3cret >/dev/null
python3 - "$work" <<'EOF2' | k create --validate=false -f - >/dev/null
import json, sys
mark = sys.argv[1]
def pod(name, command, env=None, env_from=None, volumes=None, limits=None):
    c = {"name": "c", "image": "busybox", "command": ["sh", "-c", command],
         "env": [{"name": "CKUBE_E2E_MARK", "value": mark}] + (env or [])}
    if env_from: c["envFrom"] = env_from
    if limits: c["resources"] = {"limits": limits}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"nodeName": "n2", "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 1,
                     "containers": [c], "volumes": volumes or []}}
items = [
  pod("chatty", "i=0; while [ $i -lt 400 ]; do echo \"line $i $(printf '%060d' 0)\"; i=$((i + 1)); "
      "[ $((i % 100)) -eq 0 ] && sleep 1.2; done; sleep 1000"),
  pod("refs", "echo greeting=$GREETING password=$PASSWORD cfg_color=$CFG_color; "
      "cat /proc/self/cwd/volumes/cfg/greeting; echo; cat volumes/sec/pw; echo; "
      "cat volumes/info/name; echo; stat -c %a volumes/sec/pw; sleep 1000",
      env=[{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "greeting"}}},
           {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "app-secret", "key": "password"}}},
           {"name": "NOPE", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}}}],
      env_from=[{"prefix": "CFG_", "configMapRef": {"name": "app-config"}},
                {"configMapRef": {"name": "app-config"}}],
      volumes=[{"name": "cfg", "configMap": {"name": "app-config"}},
               {"name": "sec", "secret": {"secretName": "app-secret", "defaultMode": 0o400,
                                          "items": [{"key": "password", "path": "pw"}]}},
               {"name": "info", "downwardAPI": {"items": [{"path": "name",
                                                "fieldRef": {"fieldPath": "metadata.name"}}]}}]),
  pod("missing", "echo never", env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "no-such-secret", "key": "k"}}}]),
  pod("hungry", "awk 'BEGIN { s = \"x\"; while (length(s) < 80000000) s = s s; print length(s) }'",
      limits={"memory": "32Mi"}),
]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
EOF2

# rotation: four bursts of 100 lines of ~80 bytes over an 8 KiB limit, a second apart
wait_for "chatty Running" pod/chatty '{.status.phase}=Running'
uid=$(k get pod chatty -o jsonpath='{.metadata.uid}')
i=0
until k logs chatty --tail=1 2>/dev/null | grep -q "^line 399 " || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.2; done
dir="$root/pods/$uid/containers/c"
check "0.log is the current log" test -f "$dir/0.log"
rotated=$(ls "$dir" | grep -c '^0\.log\.[0-9]\{8\}-[0-9]\{6\}\(\.[0-9]\{3\}\)\{0,1\}$')
check "rotated files named 0.log.<time>[.NNN], containerLogMaxFiles - 1 kept (got $rotated)" \
    test "$rotated" -eq 3 -a "$(ls "$dir" | grep -c '^0\.log\.')" -eq 3
big=$(find "$dir" -name '0.log*' -size +9k | wc -l)
check "no file far past containerLogMaxSize ($big)" test "$big" -eq 0
all=$(k logs chatty | wc -l)
current=$(grep -c . "$dir/0.log")
check "kubectl logs reads across the rotated files ($all lines, $current in 0.log)" test "$all" -gt "$current"
check "kubectl logs ends with the last line" sh -c "kubectl logs chatty | tail -n 1 | grep -q '^line 399 '"
check "--tail across files" test "$(k logs chatty --tail=150 | wc -l)" -eq 150
# since: the last burst only (records carry their times; the bursts are 1.2 s apart)
last_time=$(grep ' line 300 ' "$dir/0.log" "$dir"/0.log.* 2>/dev/null | head -1 | sed 's/^[^:]*://; s/ .*//')
check "the time of line 300 found" test -n "$last_time"
since=$(python3 -c "import sys,datetime; t=sys.argv[1][:19]; print(t+'Z')" "$last_time")
n=$(k logs chatty --since-time="$since" | grep -c '^line')
check "--since-time keeps the records since then (got $n)" test "$n" -ge 100 -a "$n" -le 200
check "--since-time with --tail=5" test "$(k logs chatty --since-time="$since" --tail=5 | wc -l)" -eq 5
check "--since=1h keeps all" test "$(k logs chatty --since=1h | wc -l)" -eq "$all"

# ConfigMap and Secret references
wait_for "refs Running" pod/refs '{.status.phase}=Running'
i=0
until k logs refs 2>/dev/null | grep -q '^[0-9]' || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
out=$(k logs refs)
check "env from configMapKeyRef, secretKeyRef and envFrom with a prefix" \
    test "$(echo "$out" | head -1)" = "greeting=hello password=s3cret cfg_color=blue"
check "configMap volume file" test "$(echo "$out" | sed -n 2p)" = hello
check "secret volume item, decoded" test "$(echo "$out" | sed -n 3p)" = s3cret
check "downwardAPI volume file" test "$(echo "$out" | sed -n 4p)" = refs
check "secret defaultMode 0400" test "$(echo "$out" | sed -n 5p)" = 400
i=0
until k get events --field-selector reason=InvalidEnvironmentVariableNames -o name 2>/dev/null | grep -q . || [ $i -gt 50 ]; do
    i=$((i + 1)); sleep 0.2
done
check "envFrom keys that are no variable names: skipped, with the kubelet's event" test \
    "$(k get events --field-selector reason=InvalidEnvironmentVariableNames -o jsonpath='{.items[0].message}')" = \
    "Keys [0worse, 1bad] from the EnvFrom configMap default/app-config were skipped since they are considered invalid environment variable names."
asnode() { kubectl --request-timeout=20s --kubeconfig "$work/n2.kubeconfig" "$@"; }
check "the node may get a Secret its pod references" asnode get secret app-secret -o name
k create secret generic other --from-literal=a=b >/dev/null
asnode get secret other >"$work/out" 2>&1
check "... not another: $(cat "$work/out")" grep -q "secrets \"other\" is forbidden: User \"system:node:n2\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n2' and this object" "$work/out"
asnode get secrets >"$work/out" 2>&1
check "... nor list them: $(cat "$work/out")" grep -q 'is forbidden' "$work/out"
wait_for "missing: CreateContainerConfigError" pod/missing \
    '{.status.containerStatuses[0].state.waiting.reason}=CreateContainerConfigError'
check "the kubelet's message" test \
    "$(k get pod missing -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')" = 'secret "no-such-secret" not found'
i=0
until k get events --field-selector involvedObject.name=missing,reason=Failed -o name 2>/dev/null | grep -q . || [ $i -gt 50 ]; do
    i=$((i + 1)); sleep 0.2
done
check "... and its Failed event" test \
    "$(k get events --field-selector involvedObject.name=missing,reason=Failed -o jsonpath='{.items[0].message}')" = 'Error: secret "no-such-secret" not found'
check "a NodeHasInsufficientMemory event" sh -c \
    "kubectl get events --field-selector reason=NodeHasInsufficientMemory -o jsonpath='{.items[0].message}' | grep -qx 'Node n2 status is now: NodeHasInsufficientMemory'"

# a memory limit: the 128 MiB allocation fails (rlimit) or is OOM-killed (cgroup)
wait_for "hungry Failed" pod/hungry '{.status.phase}=Failed'
case $mode in
*rlimits*) check "the allocation failed under RLIMIT_DATA" test \
    "$(k get pod hungry -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" -ne 0 ;;
*) check "OOMKilled, exit 137" test \
    "$(k get pod hungry -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}/{.status.containerStatuses[0].state.terminated.exitCode}')" = OOMKilled/137 ;;
esac

# a memory-backed emptyDir: a tmpfs at the volume's directory (mounting needs root)
python3 - "$work" <<'EOF2' | k create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "memvol"},
  "spec": {"nodeName": "n2", "terminationGracePeriodSeconds": 1,
    "volumes": [{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "4Mi"}}],
    "containers": [{"name": "c", "image": "none", "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}],
      "command": ["sh", "-c", "grep \" $PWD/volumes/m tmpfs \" /proc/mounts; sleep 300"]}]}}))
EOF2
if [ "$(id -u)" = 0 ]; then
    wait_for "memvol Running" pod/memvol '{.status.phase}=Running'
    poll "memory emptyDir: the process sees a tmpfs of its sizeLimit" sh -c \
        "kubectl logs memvol | grep -q 'tmpfs .*size=4096k'"
else
    poll "memory emptyDir without root: FailedMount saying why" sh -c \
        "kubectl get events --field-selector involvedObject.name=memvol,reason=FailedMount -o jsonpath='{.items[*].message}' | grep -q 'needs the agent to run as root'"
fi

k delete pods --all --wait=true --timeout=60s >/dev/null 2>&1
poll "memory emptyDir: unmounted with its pod" sh -c "! grep -q ' $root/' /proc/mounts"
stop_agent
i=0
until [ -z "$(leftovers)" ] || [ $i -gt 50 ]; do i=$((i + 1)); sleep 0.2; done
check "no process left behind" test -z "$(leftovers)"
[ "$failures" -ne 0 ] && { echo "--- agent log ---"; tail -n 40 "$work/agent.err"; }
finish
