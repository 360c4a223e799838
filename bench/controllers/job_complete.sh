#!/bin/sh
# job_complete.sh - a Job of N completions with parallelism P: time until it is Complete
# when the bench helper (the stand-in for nodes) ends every pod it finds Succeeded, pass
# after pass, with `ckube server --controllers=-job` and a separate
# `ckube controller-manager` whose client rate limit is raised; then the RSS of both;
# then the reference: N pods created directly by 16 client threads.
#
#   bench/controllers/job_complete.sh [N] [P] [QPS]     (defaults: 10000, 1000, 2000)
#
# Builds a RelWithDebInfo tree (-O2, no sanitizers) in build-bench-rs/, as rs_scale.sh.
set -eu
n=${1:-10000}
p=${2:-1000}
qps=${3:-2000}
server_controllers=-job
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
url=https://127.0.0.1:$port/apis/batch/v1/namespaces/default/jobs/big
field() { kurl "$url" | python3 -c "import json,sys; print(json.load(sys.stdin).get('status',{}).get('$1',0))"; }
complete() {
    kurl "$url" | python3 -c "
import json, sys
conds = json.load(sys.stdin).get('status', {}).get('conditions', [])
print(any(c['type'] == 'Complete' and c['status'] == 'True' for c in conds))"
}
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: batch/v1
kind: Job
metadata: {name: big}
spec:
  completions: $n
  parallelism: $p
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
YAML
start=$(now)
passes=0
until [ "$(complete)" = True ]; do
    "$build/bench/bench_pods" "$KUBECONFIG" default succeed batch.kubernetes.io/job-name=big 8 \
        >/dev/null || true
    passes=$((passes + 1))
    sleep 0.2
done
done_at=$(now)
echo "Job: completions $n, parallelism $p, controller-manager --kube-api-qps $qps --kube-api-burst $qps"
echo "Complete after: $(echo "$done_at - $start" | bc) s ($passes helper passes; succeeded $(field succeeded))"
echo "RSS: server $(rss "$server_pid"), controller-manager $(rss "$cm_pid")"
printf "apiVersion: v1\nkind: Namespace\nmetadata: {name: ref}\n" | kubectl create -f - >/dev/null
t0=$(now)
"$build/bench/bench_pods" "$KUBECONFIG" ref create "$n" 16 >"$work/ref.out"
t1=$(now)
echo "reference, $n pods created directly by 16 client threads: $(echo "$t1 - $t0" | bc) s ($(cat "$work/ref.out"))"
