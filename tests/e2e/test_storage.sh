#!/bin/sh
# test_storage.sh - persistent storage with the real kubectl on a real `ckube
# server`: the persistentvolume-binder binds a claim to the smallest volume
# that fits (annotations, phases, kubectl's columns), leaves a claim of
# another class Pending, keeps a claim a pod uses and a bound volume from going
# (the protection finalizers), releases a Retain volume when its claim goes; the
# local-path class provisions a hostPath volume on the node the scheduler
# chose for a simulated node's pod, and deletes it with its claim.
#
# Usage: test_storage.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

jp() { kubectl get "$1" -o "jsonpath=$2"; } # jp OBJECT JSONPATH

# --- static volumes ---
for v in small:1Gi big:10Gi medium:5Gi; do
    printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: %s}\nspec: {capacity: {storage: %s}, accessModes: [ReadWriteOnce], storageClassName: manual, hostPath: {path: /srv/volumes/%s}}\n' \
        "${v%%:*}" "${v#*:}" "${v%%:*}" | k apply -f - >/dev/null
done
for v in small big medium; do
    wait_for "a new volume becomes Available" "pv/$v" '{.status.phase}=Available'
done
printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {storageClassName: manual, accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}\n' |
    k apply -f - >/dev/null
wait_for "the claim is Bound" pvc/data '{.status.phase}=Bound'
check "to the smallest volume that fits" sh -c '[ "$(kubectl get pvc data -o jsonpath={.spec.volumeName})" = medium ]'
check "the claim carries the binder's annotations" sh -c '
    [ "$(kubectl get pvc data -o jsonpath={.metadata.annotations.pv\\.kubernetes\\.io/bind-completed})" = yes ] &&
    [ "$(kubectl get pvc data -o jsonpath={.metadata.annotations.pv\\.kubernetes\\.io/bound-by-controller})" = yes ]'
wait_for "the volume is Bound" pv/medium '{.status.phase}=Bound'
k get pvc data >"$work/out" 2>&1
check "kubectl get pvc shows the volume and its capacity" sh -c 'grep -Eq "^data +Bound +medium +5Gi +RWO +manual " "$1"' - "$work/out"
k get pv medium >"$work/out" 2>&1
check "kubectl get pv shows the claim" sh -c 'grep -Eq "^medium +5Gi +RWO +Retain +Bound +default/data +manual " "$1"' - "$work/out"

printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: gold}\nspec: {storageClassName: gold, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n' |
    k apply -f - >/dev/null
sleep 1
check "a claim of a class without volumes stays Pending" sh -c '[ "$(kubectl get pvc gold -o jsonpath={.status.phase})" = Pending ]'

# --- protection: a claim a pod uses, a bound volume ---
check "new claims and volumes carry the protection finalizers" sh -c '
    [ "$(kubectl get pvc data -o jsonpath={.metadata.finalizers[0]})" = kubernetes.io/pvc-protection ] &&
    [ "$(kubectl get pv medium -o jsonpath={.metadata.finalizers[0]})" = kubernetes.io/pv-protection ]'
printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: used}\nspec: {storageClassName: manual, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n' |
    k apply -f - >/dev/null
wait_for "a second claim is Bound" pvc/used '{.status.phase}=Bound'
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: user}\nspec: {nodeName: n1, containers: [{name: c, image: busybox}], volumes: [{name: d, persistentVolumeClaim: {claimName: used}}]}\n' |
    k apply -f - >/dev/null
k delete pvc used --wait=false >/dev/null 2>&1
k delete pv small --wait=false >/dev/null 2>&1
sleep 2
check "a claim a pod uses stays while the pod is there" sh -c '
    [ -n "$(kubectl get pvc used -o jsonpath={.metadata.deletionTimestamp})" ]'
k describe pvc used >"$work/out" 2>&1
check "kubectl describe shows it Terminating, used by the pod" sh -c 'grep -Eq "^Status: +Terminating" "$1" && grep -Eq "^Used By: +user" "$1"' - "$work/out"
check "a bound volume stays while bound" sh -c '[ -n "$(kubectl get pv small -o jsonpath={.metadata.deletionTimestamp})" ]'
k get pvc used >"$work/out" 2>&1
k get pv small >>"$work/out" 2>&1
check "kubectl get shows both Terminating" sh -c 'grep -Eq "^used +Terminating +small " "$1" && grep -Eq "^small +1Gi +RWO +Retain +Terminating +default/used " "$1"' - "$work/out"
k delete pod user --grace-period=0 --force >/dev/null 2>&1
poll "the claim goes once the pod has gone" sh -c '! kubectl get pvc used >/dev/null 2>&1'
poll "then its volume, released, goes too" sh -c '! kubectl get pv small >/dev/null 2>&1'

k delete pvc data --wait=false >/dev/null 2>&1
wait_for "a Retain volume is Released when its claim goes" pv/medium '{.status.phase}=Released'

# --- the local-path class, on a simulated node ---
check "the server creates the default local-path class" sh -c '
    kubectl get sc local-path -o jsonpath="{.provisioner}/{.volumeBindingMode}/{.reclaimPolicy}/{.metadata.annotations.storageclass\\.kubernetes\\.io/is-default-class}" |
    grep -qx "rancher.io/local-path/WaitForFirstConsumer/Delete/true"'
printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: local}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 128Mi}}}\n' |
    k apply -f - >/dev/null
check "a claim without a class gets local-path" sh -c '[ "$(kubectl get pvc local -o jsonpath={.spec.storageClassName})" = local-path ]'
sleep 1
k describe pvc local >"$work/out" 2>&1
check "it waits for its first consumer" sh -c '[ "$(kubectl get pvc local -o jsonpath={.status.phase})" = Pending ] &&
    grep -q "waiting for first consumer to be created before binding" "$1"' - "$work/out"
start_fake_nodes --count 1 --prefix sim- --renew-interval 1s
poll "the simulated node registers" kubectl get node sim-0
wait_for "the simulated node is Ready" node/sim-0 '{.status.conditions[?(@.type=="Ready")].status}=True'
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: consumer}\nspec: {containers: [{name: c, image: busybox}], volumes: [{name: d, persistentVolumeClaim: {claimName: local}}]}\n' |
    k apply -f - >/dev/null
wait_for "the consumer is scheduled" pod/consumer '{.spec.nodeName}=sim-0'
check "the claim names the chosen node" sh -c '
    [ "$(kubectl get pvc local -o jsonpath={.metadata.annotations.volume\\.kubernetes\\.io/selected-node})" = sim-0 ]'
wait_for "the claim is Bound to a provisioned volume" pvc/local '{.status.phase}=Bound'
pv=$(kubectl get pvc local -o jsonpath={.spec.volumeName})
check "the volume is a hostPath on that node" sh -c '
    [ "$(kubectl get pv "$1" -o jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]})" = sim-0 ] &&
    kubectl get pv "$1" -o jsonpath={.spec.hostPath.path} | grep -q "^/var/lib/ckube/storage/$1_default_local$" &&
    [ "$(kubectl get pv "$1" -o jsonpath={.metadata.annotations.pv\\.kubernetes\\.io/provisioned-by})" = rancher.io/local-path ]' - "$pv"
k get events --field-selector involvedObject.name=local >"$work/out" 2>&1
check "the provisioner's events" sh -c 'grep -q ProvisioningSucceeded "$1" && grep -q ExternalProvisioning "$1"' - "$work/out"
printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: immediate}\nspec: {storageClassName: manual, accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}\n' |
    k apply -f - >/dev/null
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: stuck}\nspec: {containers: [{name: c, image: busybox}], volumes: [{name: d, persistentVolumeClaim: {claimName: immediate}}]}\n' |
    k apply -f - >/dev/null
sleep 1
k describe pod stuck >"$work/out" 2>&1
check "a pod with an unbound immediate claim is not scheduled" sh -c 'grep -q "pod has unbound immediate PersistentVolumeClaims" "$1"' - "$work/out"
k delete pod consumer >/dev/null 2>&1
k delete pvc local >/dev/null 2>&1
poll "deleting the claim deletes its provisioned volume" sh -c '! kubectl get pv "$1" >/dev/null 2>&1' - "$pv"

finish
