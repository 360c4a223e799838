#!/bin/sh
# deploy_scale.sh - a Deployment of N replicas: time from create until it is Available
# with N available pods, then a rolling update of it (maxSurge 25%, maxUnavailable 25%,
# the defaults) until every replica is updated and available; pods are made Ready by
# the bench helper, pass after pass, as they appear. `ckube server --controllers=-*`
# and a separate `ckube controller-manager` (replicaset and deployment) with a raised
# client rate limit; its RSS and CPU seconds after each phase; then the reference: the
# same number of pods created directly by 16 client threads and made Ready by the same
# helper, timed to N Ready (the Deployment's end state), and the creates alone.
#
#   bench/controllers/deploy_scale.sh [N] [QPS]       (defaults: 10000, 2000)
#
# Builds a RelWithDebInfo tree (-O2, no sanitizers) in build-bench-rs/, shared with
# rs_scale.sh.
set -eu
n=${1:-10000}
qps=${2:-2000}
server_controllers='-*'
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
url=https://127.0.0.1:$port/apis/apps/v1/namespaces/default/deployments/big
# done when generation observed and replicas, updatedReplicas and availableReplicas are N;
# leaves updatedReplicas in $work/updated
complete() {
    kurl "$url" | python3 -c '
import json, sys
d, n = json.load(sys.stdin), int(sys.argv[1])
s = d.get("status", {})
ok = s.get("observedGeneration", 0) >= d["metadata"]["generation"] and all(
    s.get(f, 0) == n for f in ("replicas", "updatedReplicas", "availableReplicas"))
open(sys.argv[2], "w").write("%d\n" % s.get("updatedReplicas", 0))
sys.exit(0 if ok else 1)' "$n" "$work/updated"
}
# marks what is new, pass after pass, until the Deployment is complete
mark_until_complete() {
    passes=0
    all_there=""
    until complete; do
        # when every pod of the new template exists (the creates are done, Ready is not)
        [ -z "$all_there" ] && [ "$(cat "$work/updated")" = "$n" ] && all_there=$(now)
        if ! kill -0 "$cm_pid" 2>/dev/null; then
            echo "the controller-manager exited:"; tail -5 "$work/cm.err"; exit 1
        fi
        "$build/bench/bench_pods" "$KUBECONFIG" default ready app=big 8 >/dev/null
        passes=$((passes + 1))
        sleep 0.2
    done
}
create_big Deployment nginx:1.27
start_create=$(now)
mark_until_complete
available=$(now)
echo "replicas: $n, controller-manager --kube-api-qps $qps --kube-api-burst $qps"
echo "create -> Available with $n available: $(echo "$available - $start_create" | bc) s ($passes helper passes;" \
    "all $n created after $(echo "${all_there:-$available} - $start_create" | bc) s)"
echo "controller-manager after the create: RSS $(rss "$cm_pid"), CPU $(cpu "$cm_pid") s"
kubectl set image deploy/big c=nginx:1.28 >/dev/null
start=$(now)
mark_until_complete
rolled=$(now)
echo "rolling update (maxSurge 25%) to completion: $(echo "$rolled - $start" | bc) s ($passes helper passes)"
echo "controller-manager after the rollout: RSS $(rss "$cm_pid"), CPU $(cpu "$cm_pid") s; server RSS $(rss "$server_pid")"
# the reference, in another namespace of the same server after the measurement above:
# the same number of pods created directly by 16 client threads, then made Ready by the
# same helper as above, timed to "N Ready", the end state the Deployment's Available
# stands for; the creates alone are timed too (the old reference)
printf "apiVersion: v1\nkind: Namespace\nmetadata: {name: ref}\n" | kubectl create -f - >/dev/null
t0=$(now)
"$build/bench/bench_pods" "$KUBECONFIG" ref create "$n" 16 >"$work/ref.out"
t1=$(now)
"$build/bench/bench_pods" "$KUBECONFIG" ref ready app=ref 8 >"$work/ref-ready.out"
t2=$(now)
create_s=$(echo "$available - $start_create" | bc)
rollout_s=$(echo "$rolled - $start" | bc)
ref_s=$(echo "$t2 - $t0" | bc)
echo "reference, $n pods created directly by 16 client threads: $(echo "$t1 - $t0" | bc) s ($(cat "$work/ref.out"))"
echo "reference, the same pods then made Ready by the helper: $ref_s s in all ($(cat "$work/ref-ready.out"))"
echo "ratios: create / reference (created and Ready) $(echo "scale=2; $create_s / $ref_s" | bc)," \
    "rollout / create $(echo "scale=2; $rollout_s / $create_s" | bc)"
