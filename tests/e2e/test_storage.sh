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
    printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: %s}\nspec: {capacity: {storage: %s}, accessModes: [ReadWriteOnce], storageClassName: manual, hostPath: {path: /tmp/%s}}\n' \
        "${v%%:*}" "${v#*:}" "${v%%:*}" | k apply -f - >/dev/null
done
wait_for "a new volume becomes Available" pv/big '{.status.phase}=Available'
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
k delete pod user --grace-period=0 --force >/dev/null 2>&1
poll "the claim goes once the pod has gone" sh -c '! kubectl get pvc used >/dev/null 2>&1'
poll "then its volume, released, goes too" sh -c '! kubectl get pv small >/dev/null 2>&1'

k delete pvc data --wait=false >/dev/null 2>&1
wait_for "a Retain volume is Released when its claim goes" pv/medium '{.status.phase}=Released'

finish
