#!/bin/sh
# rs_scale.sh - a ReplicaSet from 0 to N pods: time until every pod is created
# (status.replicas = N) and until status.readyReplicas = N after a helper marks them
# Ready, with `ckube server --controllers=-replicaset` and a separate
# `ckube controller-manager` whose client rate limit is raised; then the RSS of both;
# then the reference: the same number of pods created directly by 16 client threads.
#
#   bench/controllers/rs_scale.sh [N] [QPS]       (defaults: 10000, 2000)
#
# Builds a RelWithDebInfo tree (-O2, no sanitizers) in build-bench-rs/ (the store does not
# build at -O3 with -Werror today).
set -eu
n=${1:-10000}
qps=${2:-2000}
server_controllers=-replicaset
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
url=https://127.0.0.1:$port/apis/apps/v1/namespaces/default/replicasets/big
field() { kurl "$url" | python3 -c "import json,sys; print(json.load(sys.stdin).get('status',{}).get('$1',0))"; }
create_big ReplicaSet nginx
start=$(now)
until [ "$(field replicas)" = "$n" ]; do sleep 0.2; done
created=$(now)
"$build/bench/bench_pods" "$KUBECONFIG" default ready app=big 8 >"$work/mark.out"
marked=$(now)
until [ "$(field readyReplicas)" = "$n" ]; do sleep 0.2; done
ready=$(now)
echo "replicas: $n, controller-manager --kube-api-qps $qps --kube-api-burst $qps"
echo "all created (status.replicas = $n): $(echo "$created - $start" | bc) s"
echo "bench helper marked them Ready:     $(echo "$marked - $created" | bc) s ($(cat "$work/mark.out"))"
echo "status.readyReplicas = $n after:    $(echo "$ready - $marked" | bc) s more ($(echo "$ready - $start" | bc) s in all)"
echo "RSS: server $(rss "$server_pid"), controller-manager $(rss "$cm_pid")"
# the reference: the same number of pods created straight through the REST client by
# 16 threads, in another namespace of the same server (after the measurement above)
printf "apiVersion: v1\nkind: Namespace\nmetadata: {name: ref}\n" | kubectl create -f - >/dev/null
t0=$(now)
"$build/bench/bench_pods" "$KUBECONFIG" ref create "$n" 16 >"$work/ref.out"
t1=$(now)
echo "reference, $n pods created directly by 16 client threads: $(echo "$t1 - $t0" | bc) s ($(cat "$work/ref.out"))"
