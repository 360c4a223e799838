#!/bin/sh
# test_storage_agent.sh - a claim of a local-path class mounted by `ckube agent` (process
# runtime) with the real kubectl against a real `ckube server`: the scheduler picks the
# node, the persistentvolume-binder provisions a hostPath volume under the class's
# nodePath (a scratch folder of the test) and binds it, the agent resolves the pod's
# persistentVolumeClaim volume to that path and makes the directory, the pod runs and
# writes into it; deleting the pod and the claim deletes the volume. No process is left
# behind.
#
# Usage: test_storage_agent.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
storage="$work/storage"
mkdir -p "$root"
agent_port=$(free_port)
start_server
start_process_node "$root" "$agent_port"

printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: scratch}\nprovisioner: rancher.io/local-path\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Delete\nparameters: {nodePath: "%s"}\n' \
    "$storage" | k apply -f - >/dev/null
printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {storageClassName: scratch, accessModes: [ReadWriteOnce], resources: {requests: {storage: 64Mi}}}\n' |
    k apply -f - >/dev/null
python3 - "$work" <<'EOF2' | k create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "writer"},
  "spec": {"terminationGracePeriodSeconds": 1,
    "containers": [{"name": "c", "image": "busybox",
    "command": ["sh", "-c", "sleep 1000"],
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}],
    "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}))
EOF2
wait_for "the claim is Bound" pvc/data '{.status.phase}=Bound'
pv=$(kubectl get pvc data -o jsonpath={.spec.volumeName})
check "on a volume under the class's nodePath" sh -c '
    [ "$(kubectl get pv "$1" -o jsonpath={.spec.hostPath.path})" = "$2/$1_default_data" ]' - "$pv" "$storage"
wait_for "the pod runs" pod/writer '{.status.phase}=Running'
check "the agent made the volume's directory" test -d "$storage/${pv}_default_data"
k delete pod writer --wait=true --timeout=60s >/dev/null 2>&1
k delete pvc data --wait=false >/dev/null 2>&1
poll "the claim goes with its pod" sh -c '! kubectl get pvc data >/dev/null 2>&1'
poll "and its volume is deleted" sh -c '! kubectl get pv "$1" >/dev/null 2>&1' - "$pv"
check "no process but the agent is left behind" sh -c '[ -z "$1" ]' - "$(leftovers | grep -vx "$agent_pid")"
stop_agent
finish
