#!/bin/sh
# test_kubectl_delete.sh - deletion with the real kubectl on a real `ckube
# server`: --cascade=orphan|foreground|background and the finalizers they
# leave visible until the garbage collector (here: a patch) clears them, a
# custom finalizer holding an object while `kubectl delete` waits, pods'
# graceful deletion and --grace-period=0 --force, --dry-run=server, and a
# namespace's termination through namespaces/finalize. The server runs without
# the garbage collector and the namespace controller, which would clear those
# finalizers themselves (tests/e2e/test_gc.sh covers them).
#
# Usage: test_kubectl_delete.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=*,-garbagecollector,-namespace

field() { kubectl get "$1" "$2" -o "jsonpath=$3" 2>/dev/null; } # field KIND NAME JSONPATH
gone() { ! kubectl get "$1" "$2" >/dev/null 2>&1; }
drop_finalizers() { k patch "$1" "$2" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null; }

# --- cascade options: the finalizer each leaves, until it is removed ---
for cascade in orphan foreground; do
    k apply -f "$data/deployment.yaml" >/dev/null 2>&1
    k delete deploy web --cascade=$cascade --wait=false >"$work/out" 2>&1
    check "delete --cascade=$cascade answers" grep -q 'deployment.apps "web" deleted' "$work/out"
    want=$([ $cascade = orphan ] && echo orphan || echo foregroundDeletion)
    check "--cascade=$cascade leaves the $want finalizer" sh -c "[ \"\$(kubectl get deploy web -o jsonpath={.metadata.finalizers})\" = '[\"$want\"]' ]"
    check "--cascade=$cascade sets deletionTimestamp" sh -c '[ -n "$(kubectl get deploy web -o jsonpath={.metadata.deletionTimestamp})" ]'
    drop_finalizers deploy web
    check "--cascade=$cascade: gone once the finalizer is cleared" gone deploy web
done
k apply -f "$data/deployment.yaml" >/dev/null 2>&1
k delete deploy web --cascade=background >"$work/out" 2>&1
check "delete --cascade=background" grep -q 'deployment.apps "web" deleted' "$work/out"
check "background: gone at once" gone deploy web

# --- dry run on the server ---
k apply -f "$data/deployment.yaml" >/dev/null 2>&1
k delete deploy web --dry-run=server >"$work/out" 2>&1
check "delete --dry-run=server says so" grep -q 'deployment.apps "web" deleted (server dry run)' "$work/out"
check "dry run kept the object" sh -c '[ -z "$(kubectl get deploy web -o jsonpath={.metadata.deletionTimestamp})" ]'

# --- a custom finalizer holds the object while kubectl delete waits ---
sed 's/name: web-1/name: held\n  finalizers: ["example.com\/hold"]/' "$data/pod.yaml" | k create -f - >/dev/null
k delete pod held --timeout=60s >"$work/delete.out" 2>&1 &
delete_pid=$!
i=0
until [ -n "$(field pod held '{.metadata.deletionTimestamp}')" ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "held pod is Terminating" sh -c 'kubectl get pod held | grep -Eq "^held +0/1 +Terminating"'
check "kubectl delete is still waiting" kill -0 $delete_pid
k label pod held still=here >/dev/null 2>&1
check "a held object still takes updates" sh -c '[ "$(kubectl get pod held -o jsonpath={.metadata.labels.still})" = here ]'
k patch pod held --type merge -p '{"metadata":{"finalizers":["example.com/hold","example.com/new"]}}' >"$work/out" 2>&1
check "no new finalizers once deleting" grep -q "no new finalizers can be added if the object is being deleted" "$work/out"
drop_finalizers pod held
wait $delete_pid
check "kubectl delete returned once the finalizer went" grep -q 'pod "held" deleted' "$work/delete.out"
check "held pod gone" gone pod held

# --- graceful pod deletion: a bound pod waits for its node, --force does not ---
sed 's/name: web-1/name: bound/; s/^spec:/spec:\n  nodeName: node-1/' "$data/pod.yaml" | k create -f - >/dev/null
k delete pod bound --wait=false >/dev/null 2>&1
check "bound pod gets its grace period" sh -c '[ "$(kubectl get pod bound -o jsonpath={.metadata.deletionGracePeriodSeconds})" = 30 ]'
k delete pod bound --grace-period=0 --force >"$work/out" 2>&1
check "force delete warns as kubectl does" grep -q "Immediate deletion does not wait for confirmation" "$work/out"
check "force delete removes it" gone pod bound
k create -f "$data/pod.yaml" >/dev/null
k delete pod web-1 >"$work/out" 2>&1
check "an unbound pod goes at once" gone pod web-1

# --- namespace termination ---
sed "s/team-a/doomed/" "$data/namespace.yaml" | k create -f - >/dev/null
sed 's/name: web-1/name: inside/' "$data/pod.yaml" | k -n doomed create -f - >/dev/null
k delete namespace doomed --wait=false >/dev/null 2>&1
check "namespace is Terminating" sh -c '[ "$(kubectl get ns doomed -o jsonpath={.status.phase})" = Terminating ]'
sed 's/name: web-1/name: late/' "$data/pod.yaml" | k -n doomed create -f - >"$work/out" 2>&1
check "no creation in a terminating namespace" grep -q 'Error from server (Forbidden).*unable to create new content in namespace doomed because it is being terminated' "$work/out"
k -n doomed delete pod inside >/dev/null 2>&1
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"doomed"},"spec":{"finalizers":[]}}' >"$work/finalize.json"
k replace --raw /api/v1/namespaces/doomed/finalize -f "$work/finalize.json" >/dev/null
check "finalize removes the namespace" gone ns doomed

finish
