#!/bin/sh
# test_gc.sh - the garbage collector and the namespace controller driven with the real
# kubectl against a real `ckube server` (controllers in process):
#   - kubectl delete rs --cascade=background: the owned pods go;
#   - --cascade=foreground held by a pod with a custom finalizer: the ReplicaSet stays
#     (deletionTimestamp, foregroundDeletion) until a patch removes the pod's finalizer;
#   - --cascade=orphan: the pods stay, without their ownerReference;
#   - the same three modes for a Deployment, through its ReplicaSet to its pods;
#   - a Frobber owned by a ReplicaSet goes with it (every kind, through discovery), and
#     one owned by a Namespace (a cluster-scoped owner) with it;
#   - an owner deleted and recreated with the same name while the collector was not
#     running: after a restart the old dependent is deleted (uid check), the new owner's
#     is kept; a foreground deletion started while it was away finishes;
#   - namespace deletion with pods, ReplicaSets, Deployments, Events and Frobbers inside
#     and one pod with a custom finalizer holding the namespace (its
#     NamespaceFinalizersRemaining condition says so) until the finalizer is removed;
#     kubectl delete namespace returns once the namespace is gone;
#   - the controllers killed (kill -9) in the middle of a foreground deletion and of a
#     namespace deletion, restarted: both finish.
# Every wait is `kubectl wait` with a timeout, failing with its message.
#
# Usage: test_gc.sh PATH/TO/ckube [STORE_URL] [inprocess|separate]
#   inprocess: the controllers run inside `ckube server` (the default);
#   separate:  the garbage collector and the namespace controller run in a separate
#              `ckube controller-manager --kubeconfig FILE` process.
set -u
mode=${3:-inprocess}
set -- "$1" "${2:-}"
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
cm_pid=""
stop_cm() { [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null && wait "$cm_pid" 2>/dev/null; cm_pid=""; }
trap 'stop_cm; cleanup' EXIT
# start_cm: the separate controller manager (with fewer GC workers than the default). It runs
# controllers the server does not, so it elects on a Lease of its own: the server's
# in-process controllers hold kube-controller-manager.
start_cm() {
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" --concurrent-gc-syncs 3 \
        --leader-elect-resource-name kube-controller-manager-gc \
        --controllers=garbagecollector,namespace >>"$work/cm.out" 2>>"$work/cm.err" &
    cm_pid=$!
}
# start [gc-off]: the server, and in separate mode the controller manager beside it
start() {
    if [ "$mode" = separate ]; then
        start_server --controllers=*,-garbagecollector,-namespace
        if [ "${1:-}" != gc-off ]; then start_cm; fi
    elif [ "${1:-}" = gc-off ]; then
        start_server --controllers=*,-garbagecollector
    else
        start_server
    fi
}
stop() { stop_cm; stop_server; }
# crash: kill -9 whatever runs the collector (the controller manager, or the server)
crash() {
    if [ "$mode" = separate ]; then
        kill -9 "$cm_pid" && wait "$cm_pid" 2>/dev/null
        cm_pid=""
    else
        kill -9 "$server_pid" && wait "$server_pid" 2>/dev/null
        server_pid=""
    fi
    return 0
}
start

wait_for() { # wait_for DESCRIPTION OBJECT CONDITION [NAMESPACE]
    if k wait "$2" --for="$3" --timeout=30s ${4:+-n "$4"} >/dev/null 2>"$work/wait.err"; then
        pass
    else
        fail "$1 ($(cat "$work/wait.err"))"
    fi
}
gone() { # gone DESCRIPTION OBJECT... : waits until none of them exists
    desc=$1; shift
    if k wait "$@" --for=delete --timeout=30s >/dev/null 2>"$work/wait.err"; then
        pass
    else
        fail "$desc ($(cat "$work/wait.err"))"
    fi
}
workload() { # workload KIND NAME REPLICAS [NAMESPACE]: creates one of app=NAME pods
    cat <<EOF | k create ${4:+-n "$4"} -f - >/dev/null
apiVersion: apps/v1
kind: $1
metadata: {name: $2}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec: {containers: [{name: c, image: nginx}]}
EOF
}
rs() { workload ReplicaSet "$@"; }     # rs NAME REPLICAS [NAMESPACE]
deploy() { workload Deployment "$@"; } # deploy NAME REPLICAS [NAMESPACE]
pods_of() { # pods_of APP [NAMESPACE]: names of the pods labelled app=APP
    k get pods -l "app=$1" ${2:+-n "$2"} -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}
ns() { # ns NAME: creates a namespace (kubectl create namespace sends protobuf)
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$1" | k create -f - >/dev/null
}
uid_of() { k get "$@" -o jsonpath='{.metadata.uid}'; }
# --- background: the pods go ---
check "create rs bg" rs bg 2
wait_for "rs bg has 2 pods" rs/bg jsonpath='{.status.replicas}'=2
bg_pods=$(pods_of bg)
bg_uid=$(uid_of rs bg)
cat <<EOF | k create -f - >/dev/null
apiVersion: example.ckube.io/v1
kind: Frobber
metadata:
  name: owned-by-bg
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: bg, uid: $bg_uid}]
spec: {height: 1}
EOF
check "kubectl delete rs --cascade=background" sh -c "kubectl delete rs bg --cascade=background >/dev/null"
# shellcheck disable=SC2086
gone "the pods of rs bg are deleted" $(printf 'pod/%s ' $bg_pods)
gone "a Frobber owned by rs bg is deleted" frobber/owned-by-bg

# --- a cluster-scoped owner (a Namespace) of a namespaced dependent ---
check "create namespace owner-ns" ns owner-ns
owner_ns_uid=$(uid_of namespace owner-ns)
cat <<EOF | k create -f - >/dev/null
apiVersion: example.ckube.io/v1
kind: Frobber
metadata:
  name: owned-by-ns
  ownerReferences: [{apiVersion: v1, kind: Namespace, name: owner-ns, uid: $owner_ns_uid}]
spec: {height: 1}
EOF
check "delete the owning namespace" sh -c "kubectl delete namespace owner-ns --timeout=30s >/dev/null"
gone "a Frobber owned by a Namespace goes with it" frobber/owned-by-ns

# --- foreground: held by a pod with a custom finalizer ---
check "create rs fg" rs fg 2
wait_for "rs fg has 2 pods" rs/fg jsonpath='{.status.replicas}'=2
held=$(pods_of fg | head -n1)
free_pod=$(pods_of fg | tail -n1)
check "add a finalizer to one pod" sh -c "kubectl patch pod '$held' --type=merge -p '{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}' >/dev/null"
check "kubectl delete rs --cascade=foreground --wait=false" sh -c "kubectl delete rs fg --cascade=foreground --wait=false >/dev/null"
gone "the pod without finalizer goes" "pod/$free_pod"
wait_for "the held pod is being deleted" "pod/$held" jsonpath='{.metadata.deletionTimestamp}'
check "rs fg still there, with foregroundDeletion" sh -c "kubectl get rs fg -o jsonpath='{.metadata.finalizers}' | grep -q foregroundDeletion"
check "release the held pod" sh -c "kubectl patch pod '$held' --type=merge -p '{\"metadata\":{\"finalizers\":null}}' >/dev/null"
gone "rs fg goes once the held pod is gone" rs/fg "pod/$held"

# --- orphan: the pods stay ---
check "create rs orph" rs orph 2
wait_for "rs orph has 2 pods" rs/orph jsonpath='{.status.replicas}'=2
check "kubectl delete rs --cascade=orphan" sh -c "kubectl delete rs orph --cascade=orphan >/dev/null"
gone "rs orph is deleted" rs/orph
check "its two pods stay" sh -c "[ \$(kubectl get pods -l app=orph --no-headers | grep -c .) -eq 2 ]"
check "without ownerReferences" sh -c "[ -z \"\$(kubectl get pods -l app=orph -o jsonpath='{.items[*].metadata.ownerReferences}')\" ]"
check "delete the orphans" sh -c "kubectl delete pods -l app=orph >/dev/null"

# --- Deployments: the three modes, through the ReplicaSet to its pods ---
check "create deployment dbg" deploy dbg 2
wait_for "deployment dbg has 2 replicas" deploy/dbg jsonpath='{.status.replicas}'=2
dbg_rs=$(k get rs -l app=dbg -o name)
dbg_pods=$(pods_of dbg)
check "kubectl delete deployment --cascade=background" sh -c "kubectl delete deployment dbg --cascade=background >/dev/null"
# shellcheck disable=SC2086
gone "its ReplicaSet and pods are deleted" $dbg_rs $(printf 'pod/%s ' $dbg_pods)

check "create deployment dfg" deploy dfg 2
wait_for "deployment dfg has 2 replicas" deploy/dfg jsonpath='{.status.replicas}'=2
dfg_rs=$(k get rs -l app=dfg -o name)
held=$(pods_of dfg | head -n1)
free_pod=$(pods_of dfg | tail -n1)
check "add a finalizer to one of its pods" sh -c "kubectl patch pod '$held' --type=merge -p '{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}' >/dev/null"
check "kubectl delete deployment --cascade=foreground --wait=false" sh -c "kubectl delete deployment dfg --cascade=foreground --wait=false >/dev/null"
gone "its pod without finalizer goes" "pod/$free_pod"
wait_for "its ReplicaSet is deleted in the foreground too" "$dfg_rs" jsonpath='{.metadata.finalizers[0]}'=foregroundDeletion
check "deployment dfg still there, with foregroundDeletion" sh -c "kubectl get deployment dfg -o jsonpath='{.metadata.finalizers}' | grep -q foregroundDeletion"
check "release the held pod" sh -c "kubectl patch pod '$held' --type=merge -p '{\"metadata\":{\"finalizers\":null}}' >/dev/null"
gone "the deployment goes once its ReplicaSet and pods are gone" deployment/dfg "$dfg_rs" "pod/$held"

check "create deployment dorph" deploy dorph 2
wait_for "deployment dorph has 2 replicas" deploy/dorph jsonpath='{.status.replicas}'=2
dorph_rs=$(k get rs -l app=dorph -o name)
check "kubectl delete deployment --cascade=orphan" sh -c "kubectl delete deployment dorph --cascade=orphan >/dev/null"
gone "deployment dorph is deleted" deployment/dorph
check "its ReplicaSet stays, without ownerReferences" sh -c "[ -z \"\$(kubectl get $dorph_rs -o jsonpath='{.metadata.ownerReferences}')\" ]"
check "its pods stay, owned by the ReplicaSet" sh -c "[ \$(kubectl get pods -l app=dorph -o jsonpath='{.items[*].metadata.ownerReferences[0].kind}' | wc -w) -eq 2 ]"
dorph_pods=$(pods_of dorph)
check "delete the orphaned ReplicaSet" sh -c "kubectl delete $dorph_rs --wait=false >/dev/null"
# shellcheck disable=SC2086
gone "then its pods go" "$dorph_rs" $(printf 'pod/%s ' $dorph_pods)

# --- an owner recreated under the same name while the collector was away ---
stop
start gc-off
check "create Frobber twin" sh -c "kubectl create -f - >/dev/null <<EOF
apiVersion: example.ckube.io/v1
kind: Frobber
metadata: {name: twin}
spec: {height: 1}
EOF"
old_uid=$(uid_of frobber twin)
check "create a pod owned by twin" sh -c "kubectl run old-dep --image=nginx --overrides='{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"example.ckube.io/v1\",\"kind\":\"Frobber\",\"name\":\"twin\",\"uid\":\"$old_uid\"}]}}' >/dev/null"
check "delete and recreate twin" sh -c "kubectl delete frobber twin >/dev/null && kubectl create -f - >/dev/null <<EOF
apiVersion: example.ckube.io/v1
kind: Frobber
metadata: {name: twin}
spec: {height: 2}
EOF"
new_uid=$(uid_of frobber twin)
check "create rs mid" rs mid 2
wait_for "rs mid has 2 pods" rs/mid jsonpath='{.status.replicas}'=2
mid_pods=$(pods_of mid)
check "delete rs mid in foreground while the collector is away" sh -c "kubectl delete rs mid --cascade=foreground --wait=false >/dev/null"
check "create a pod owned by the new twin" sh -c "kubectl run new-dep --image=nginx --overrides='{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"example.ckube.io/v1\",\"kind\":\"Frobber\",\"name\":\"twin\",\"uid\":\"$new_uid\"}]}}' >/dev/null"
stop
start
gone "the old twin's dependent is deleted after the restart" pod/old-dep
check "the new twin's dependent stays" sh -c "kubectl get pod new-dep >/dev/null"
# shellcheck disable=SC2086
gone "the interrupted foreground deletion finishes after the restart" rs/mid $(printf 'pod/%s ' $mid_pods)

# --- namespace deletion ---
check "create namespace demo" ns demo
check "create rs in demo" rs web 2 demo
wait_for "rs web in demo has 2 pods" rs/web jsonpath='{.status.replicas}'=2 demo
check "create a deployment in demo" deploy dweb 2 demo
wait_for "deployment dweb in demo has 2 replicas" deploy/dweb jsonpath='{.status.replicas}'=2 demo
check "create a pod with a custom finalizer in demo" sh -c "kubectl run held -n demo --image=nginx --overrides='{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}' >/dev/null"
check "create a Frobber in demo" sh -c "kubectl create -n demo -f - >/dev/null <<EOF
apiVersion: example.ckube.io/v1
kind: Frobber
metadata: {name: f1}
spec: {height: 1}
EOF"
check "create an Event in demo" sh -c "kubectl create -n demo -f - >/dev/null <<EOF
apiVersion: v1
kind: Event
metadata: {name: ev1}
involvedObject: {kind: Pod, name: held, namespace: demo}
reason: Test
message: an event to delete
type: Normal
EOF"
check "delete namespace demo (no wait)" sh -c "kubectl delete namespace demo --wait=false >/dev/null"
wait_for "the finalizer holds the namespace and its condition says so" ns/demo \
    "jsonpath={.status.conditions[?(@.type==\"NamespaceFinalizersRemaining\")].message}=Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
check "the other content is gone" sh -c "[ -z \"\$(kubectl get deployments,rs,frobbers,events -n demo -o name)\" ] && [ \"\$(kubectl get pods -n demo -o name)\" = pod/held ]"
check "the namespace is still Terminating" sh -c "kubectl get ns demo -o jsonpath='{.status.phase}' | grep -qx Terminating"
check "remove the finalizer" sh -c "kubectl patch pod held -n demo --type=merge -p '{\"metadata\":{\"finalizers\":null}}' >/dev/null"
check "kubectl delete namespace returns once it is gone" sh -c "kubectl delete namespace demo --ignore-not-found --timeout=30s >/dev/null"
check "namespace demo is gone" sh -c "! kubectl get namespace demo >/dev/null 2>&1"
check "create namespace demo2" ns demo2
check "create a pod in demo2" sh -c "kubectl run p -n demo2 --image=nginx >/dev/null"
check "kubectl delete namespace waits until it is gone" sh -c "kubectl delete namespace demo2 --timeout=30s >/dev/null && ! kubectl get namespace demo2 >/dev/null 2>&1"
check "demo can be created again" ns demo

# --- killed (kill -9) in the middle of two deletions, restarted: both finish ---
check "create rs crash" rs crash 2
wait_for "rs crash has 2 pods" rs/crash jsonpath='{.status.replicas}'=2
crash_held=$(pods_of crash | head -n1)
crash_free=$(pods_of crash | tail -n1)
check "hold one of its pods with a finalizer" sh -c "kubectl patch pod '$crash_held' --type=merge -p '{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}' >/dev/null"
check "create namespace crashns" ns crashns
check "create a deployment in crashns" deploy cweb 2 crashns
check "create a held pod in crashns" sh -c "kubectl run held -n crashns --image=nginx --overrides='{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}' >/dev/null"
wait_for "deployment cweb has 2 replicas" deploy/cweb jsonpath='{.status.replicas}'=2 crashns
check "delete rs crash in the foreground" sh -c "kubectl delete rs crash --cascade=foreground --wait=false >/dev/null"
check "delete namespace crashns" sh -c "kubectl delete namespace crashns --wait=false >/dev/null"
gone "the free pod of rs crash goes" "pod/$crash_free"
wait_for "namespace crashns is held by the finalizer" ns/crashns \
    "jsonpath={.status.conditions[?(@.type==\"NamespaceFinalizersRemaining\")].status}=True"
check "the deployment in crashns is gone already" sh -c "[ -z \"\$(kubectl get deployments,rs -n crashns -o name)\" ]"
check "kill -9 the controllers mid-deletion" crash
release() { # release the two held pods
    kubectl patch pod "$crash_held" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null &&
        kubectl patch pod held -n crashns --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
}
if [ "$mode" = separate ]; then
    # released while no collector runs: the restarted one finds the work by listing
    check "release the held pods while the controllers are down" release
    start_cm
else
    start
    check "release the held pods after the restart" release
fi
gone "the foreground deletion finishes after kill -9 and restart" rs/crash "pod/$crash_held"
gone "the namespace deletion finishes after kill -9 and restart" ns/crashns

echo "test_gc ($mode):"
[ "$failures" -ne 0 ] && [ -n "$cm_pid" ] && { echo "--- controller-manager log"; tail -20 "$work/cm.err"; }
finish
