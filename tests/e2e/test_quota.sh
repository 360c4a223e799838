#!/bin/sh
# test_quota.sh - ResourceQuota with the real kubectl against a real `ckube
# server` (its controllers on): `kubectl create quota`, the resourcequota
# controller filling status.hard and status.used, `kubectl get quota` and
# `kubectl describe quota`, the admission plugin refusing in Kubernetes' words
# (exceeded quota, must specify), usage charged at create and released by the
# controller after a deletion and when a pod terminates, service node ports and
# load balancers, and creates racing for the last unit (one wins).
#
# Usage: test_quota.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

start_server --disable-admission-plugins ServiceAccount --resource-quota-sync-period 30s
k create namespace team >/dev/null 2>&1
k config set-context --current --namespace=team >/dev/null 2>&1 # for wait_for

# pod NAME CPU: a pod of one container asking for CPU
pod() {
    k run "$1" -n team --image=x --restart=Never \
        --overrides="{\"spec\":{\"containers\":[{\"name\":\"$1\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"$2\"}}}]}}"
}

k create quota compute -n team --hard=pods=2,requests.cpu=1,count/secrets=9 >"$work/out" 2>&1
check "kubectl create quota" grep -q 'resourcequota/compute created' "$work/out"
wait_for "the controller fills status.hard" resourcequota/compute '{.status.hard.pods}=2'
wait_for "and status.used" resourcequota/compute '{.status.used.pods}=0'

k run bare -n team --image=x --restart=Never >"$work/out" 2>&1
check "a pod without a cpu request is refused" grep -q \
    'pods "bare" is forbidden: failed quota: compute: must specify requests.cpu for: bare' "$work/out"
pod p1 300m >/dev/null 2>&1
pod p2 200m >/dev/null 2>&1
check "two pods charged" sh -c '[ "$(kubectl get quota compute -n team -o jsonpath={.status.used.pods}/{.status.used.requests\\.cpu})" = 2/500m ]'
pod p3 100m >"$work/out" 2>&1
check "the third is refused in Kubernetes' words" grep -q \
    'Error from server (Forbidden): pods "p3" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2' \
    "$work/out"
check "and not stored" sh -c '! kubectl get pod p3 -n team >/dev/null 2>&1'

k get quota -n team >"$work/out" 2>&1
check "kubectl get quota: columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +AGE +REQUEST +LIMIT$"' - "$work/out"
check "kubectl get quota: used/hard" grep -Eq \
    '^compute +[0-9]+[smh] +count/secrets: [0-9]+/9, pods: 2/2, requests.cpu: 500m/1 *$' "$work/out"
k describe quota compute -n team >"$work/out" 2>&1
check "kubectl describe quota" sh -c 'grep -Eq "^Resource +Used +Hard" "$1" &&
    grep -Eq "^pods +2 +2" "$1" && grep -Eq "^requests.cpu +500m +1" "$1"' - "$work/out"

k delete pod p1 -n team --wait=false >/dev/null 2>&1
poll "a deletion releases the usage" sh -c \
    '[ "$(kubectl get quota compute -n team -o jsonpath={.status.used.pods}/{.status.used.requests\\.cpu})" = 1/200m ]'
pod p3 100m >"$work/out" 2>&1
check "then a pod fits again" grep -q 'pod/p3 created' "$work/out"
k patch pod p2 -n team --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null 2>&1
poll "a terminated pod uses nothing" sh -c \
    '[ "$(kubectl get quota compute -n team -o jsonpath={.status.used.pods}/{.status.used.requests\\.cpu})" = 1/100m ]'

# --- services ---
k create quota svc -n team --hard=services=3,services.loadbalancers=0,services.nodeports=1 >/dev/null 2>&1
wait_for "the services quota is counted" resourcequota/svc '{.status.used.services}=0'
k create service clusterip web -n team --tcp=80 >/dev/null 2>&1
k create service loadbalancer lb -n team --tcp=80 >"$work/out" 2>&1
check "a load balancer over the quota is refused" grep -q \
    'services "lb" is forbidden: exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0' \
    "$work/out"
k patch service web -n team --type=merge -p '{"spec":{"type":"NodePort"}}' >/dev/null 2>&1
check "a type change is charged its node port" sh -c \
    '[ "$(kubectl get quota svc -n team -o jsonpath={.status.used.services}/{.status.used.services\\.nodeports})" = 1/1 ]'

# --- the last unit, raced for ---
k create namespace race >/dev/null 2>&1
k config set-context --current --namespace=race >/dev/null 2>&1
k create quota one -n race --hard=count/secrets=1 >/dev/null 2>&1
wait_for "the race quota is counted" resourcequota/one '{.status.used.count/secrets}=0'
racers=""
for i in 1 2 3 4 5 6; do
    k create secret generic "s$i" -n race --from-literal=a=b >"$work/race$i.out" 2>&1 &
    racers="$racers $!"
done
for pid in $racers; do wait "$pid"; done # not the server's
won=$(cat "$work"/race*.out | grep -c 'created')
refused=$(cat "$work"/race*.out | grep -c 'exceeded quota: one, requested: count/secrets=1, used: count/secrets=1, limited: count/secrets=1')
check "six creates race for the last unit: one wins ($won), five are refused ($refused)" \
    sh -c "[ $won = 1 ] && [ $refused = 5 ]"
check "and the quota says so" sh -c \
    '[ "$(kubectl get quota one -n race -o jsonpath={.status.used.count/secrets})" = 1 ]'
finish
