#!/bin/sh
# test_informer_census.sh - `ckube server` keeps one cache of each resource for all the
# components it runs: its controllers and its scheduler, though elected on Leases of
# their own, read the same informers, so a ReplicaSet's pods are cached once in the
# process, and the census on /metrics (ckube_informer_caches,
# ckube_informer_cached_objects) says so, before and after a restart. The pods name a
# scheduler that does not exist, so nothing but their creation loads the run, and the
# in-process controllers create them with no client-side limit.
#
# Usage: test_informer_census.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
replicas=${CKUBE_CENSUS_PODS:-1000}

# gauge NAME RESOURCE: the value of the census gauge for the core group's RESOURCE
gauge() {
    kurl "$url/metrics" | sed -n "s/^$1{group=\"\",resource=\"$2\"} \\([0-9]*\\)\$/\\1/p"
}
# census CACHES: waits until the pods' caches hold CACHES copies of every pod, then checks
census() {
    want=$(($1 * replicas))
    i=0
    until [ "$(gauge ckube_informer_cached_objects pods)" = "$want" ] || [ $i -gt 150 ]; do
        i=$((i + 1)); sleep 0.2
    done
    caches=$(gauge ckube_informer_caches pods)
    objects=$(gauge ckube_informer_cached_objects pods)
    check "$1 cache(s) of pods in the process (ckube_informer_caches $caches)" test "$caches" = "$1"
    check "$want pods cached (ckube_informer_cached_objects $objects, $replicas pods)" \
        test "$objects" = "$want"
}

start_server
cat <<EOF | k create -f - >/dev/null
{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "many"},
 "spec": {"replicas": $replicas, "selector": {"matchLabels": {"app": "many"}},
  "template": {"metadata": {"labels": {"app": "many"}},
   "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]}}}}
EOF
i=0
until [ "$(k get rs many -o jsonpath='{.status.replicas}')" = "$replicas" ] || [ $i -gt 600 ]; do
    i=$((i + 1)); sleep 0.5
done
check "the ReplicaSet made $replicas pods" \
    test "$(k get rs many -o jsonpath='{.status.replicas}')" = "$replicas"
stored=$(kurl "$url/metrics" | sed -n 's/^apiserver_storage_objects{resource="pods"} //p')
check "the server stores $replicas pods ($stored)" test "$stored" = "$replicas"
census 1
# the scheduler, the node lifecycle and the daemonset controllers all read nodes
check "one cache of nodes" test "$(gauge ckube_informer_caches nodes)" = 1

stop_server
start_server
census 1
check "no census row for a resource nothing caches" \
    sh -c "! curl -s --cacert '$ca' --cert '$work/data/pki/admin.crt' \
        --key '$work/data/pki/admin.key' '$url/metrics' | grep -q 'resource=\"bindings\"'"

finish
