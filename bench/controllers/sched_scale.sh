#!/bin/sh
# sched_scale.sh - the scheduler and the simulated nodes at scale: 100 nodes of
# `ckube fake-nodes`, and N pods (default 10,000) in two phases, each on a fresh server:
#
#   pods:       N bare pods created first (16 client threads: the reference, the API
#               server's create rate), then `ckube scheduler` started: how fast it binds
#               them all and the fake nodes make them Ready;
#   deployment: a Deployment of N replicas from create to all pods Running and Ready,
#               through the Deployment and ReplicaSet controllers (a separate
#               controller-manager, --kube-api-qps 2000), the scheduler and the nodes.
#
# `bench/controllers/bench_sched.c` watches the pods and stamps, on its own clock, when
# each is first seen, first seen bound and first seen Ready. RSS of every process at the
# end. The server runs no controller itself (--controllers=-*), so each component is a
# process of its own and has its own RSS.
#
#   bench/controllers/sched_scale.sh [N] [SCHEDULER_QPS]     (defaults: 10000, 5000)
#
# Builds a RelWithDebInfo tree (-O2, no sanitizers) in build-bench-sched/. Two settings
# for comparing builds in alternation: CKUBE=path/to/ckube runs that binary instead of
# the tree's (the observer still comes from the tree), PHASES="deployment" (any of
# pods, deployment, nodes) runs only those phases.
set -eu
n=${1:-10000}
qps=${2:-5000}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/bench/controllers/workload.sh"
build=$root/build-bench-sched
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target ckube bench_pods bench_sched >/dev/null
ckube=${CKUBE:-$build/cmd/ckube/ckube}
phases=${PHASES:-pods deployment nodes}
wanted() { case " $phases " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
work=$(mktemp -d)
pids=""
stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=""
}
trap 'stop_all; rm -rf "$work"' EXIT
now() { date +%s.%N; }
rss() { ps -o rss= -p "$1" | awk '{printf "%.1f MiB", $1 / 1024}'; }
cpu() { # user + system CPU seconds of a process so far
    awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.1f s", ($12 + $13) / hz}' "/proc/$1/stat"
}

start_server() { # start_server DIR: a fresh server on SQLite with no in-process controller
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$1" --controllers=-* \
        >"$1.out" 2>"$1.err" &
    server_pid=$!
    pids="$server_pid"
    pki=$1/pki
    until [ "$(curl -s --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
        "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] && [ -f "$1/kubeconfig" ]; do
        sleep 0.1
    done
    export KUBECONFIG=$1/kubeconfig
}
start_nodes() {
    "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" --count 100 --cpu 32 --memory 256Gi \
        --pods 110 >"$work/fake.out" 2>"$work/fake.err" &
    fake_pid=$!
    pids="$pids $fake_pid"
    until [ "$(kubectl get nodes -l type=fake -o name | wc -l)" -eq 100 ]; do sleep 0.2; done
}
start_scheduler() {
    "$ckube" scheduler --kubeconfig "$KUBECONFIG" --kube-api-qps "$qps" \
        --kube-api-burst "$qps" >"$work/sched.out" 2>"$work/sched.err" &
    sched_pid=$!
    pids="$pids $sched_pid"
}
stop_scheduler() { # stops it; its log line at exit says its mean scheduling cycle
    kill "$sched_pid"; wait "$sched_pid" 2>/dev/null || true
    cycle=$(sed -n 's/.*meanCycleMicroseconds="\([0-9.]*\)".*/\1 us/p' "$work/sched.err")
}

requests() { # the server's requests so far, by verb, resource and subresource (its /metrics)
    kubectl get --raw /metrics | python3 -c '
import re, sys, collections
counts = collections.Counter()
for line in sys.stdin:
    if line.startswith("apiserver_request_total{"):
        labels = dict(re.findall(r"(\w+)=\"([^\"]*)\"", line))
        key = labels.get("verb", "") + " " + labels.get("resource", "")
        if labels.get("subresource"):
            key += "/" + labels["subresource"]
        counts[key] += int(float(line.rsplit(" ", 1)[1]))
print("  requests: " + ", ".join("%s %d" % kv for kv in counts.most_common() if kv[1] >= 10))'
}

echo "machine: $(nproc) CPUs, $(uname -sm), $(date -u +%F), load $(cut -d' ' -f1-3 /proc/loadavg)"
if wanted pods; then
    echo "--- phase pods: $n pods created first, then the scheduler started (--kube-api-qps $qps)"
    start_server "$work/a"
    start_nodes
    t0=$(now)
    "$build/bench/bench_pods" "$KUBECONFIG" default create "$n" 16 >"$work/ref.out"
    t1=$(now)
    echo "reference: $n pods created by 16 client threads: $(echo "$t1 - $t0" | bc) s ($(cat "$work/ref.out"))"
    "$build/bench/bench_sched" "$KUBECONFIG" default "$n" 300 >"$work/obs.out" &
    obs=$!
    start_scheduler
    wait "$obs" || true
    sed 's/^/  /' "$work/obs.out"
    echo "  RSS: server $(rss "$server_pid"), scheduler $(rss "$sched_pid"), fake-nodes $(rss "$fake_pid")"
    echo "  CPU: server $(cpu "$server_pid"), scheduler $(cpu "$sched_pid"), fake-nodes $(cpu "$fake_pid")"
    stop_scheduler
    echo "  scheduler mean cycle (filter, score, assume; binding is asynchronous): $cycle"
    stop_all
fi

if wanted deployment; then
    echo "--- phase deployment: a Deployment of $n replicas, controller-manager --kube-api-qps 2000"
    start_server "$work/b"
    start_nodes
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" --controllers='*,-scheduler' \
        --kube-api-qps 2000 --kube-api-burst 2000 >"$work/cm.out" 2>"$work/cm.err" &
    cm_pid=$!
    pids="$pids $cm_pid"
    start_scheduler
    "$build/bench/bench_sched" "$KUBECONFIG" default "$n" 600 >"$work/obs.out" &
    obs=$!
    create_big Deployment nginx "{requests: {cpu: 100m, memory: 64Mi}}"
    wait "$obs" || true
    sed 's/^/  /' "$work/obs.out"
    echo "  RSS: server $(rss "$server_pid"), controller-manager $(rss "$cm_pid"), scheduler $(rss "$sched_pid"), fake-nodes $(rss "$fake_pid")"
    echo "  CPU: server $(cpu "$server_pid"), controller-manager $(cpu "$cm_pid"), scheduler $(cpu "$sched_pid"), fake-nodes $(cpu "$fake_pid")"
    requests
    stop_scheduler
    echo "  scheduler mean cycle: $cycle"
    stop_all
fi

if wanted nodes; then
    echo "--- phase nodes: one fake-nodes process with 1000 nodes"
    start_server "$work/c"
    t0=$(now)
    "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" --count 1000 >"$work/fake1k.out" 2>"$work/fake1k.err" &
    fake_pid=$!
    pids="$pids $fake_pid"
    until [ "$(kubectl get leases -n kube-node-lease -o name | wc -l)" -eq 1000 ]; do sleep 0.5; done
    t1=$(now)
    echo "  1000 nodes and leases registered in $(echo "$t1 - $t0" | bc) s"
    sleep 25
    fresh=$(kubectl get leases -n kube-node-lease -o json | python3 -c '
import json, sys, datetime
now = datetime.datetime.now(datetime.timezone.utc)
items = json.load(sys.stdin)["items"]
print(sum(1 for l in items if (now - datetime.datetime.strptime(l["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)).total_seconds() < 15))')
    echo "  leases renewed within the last 15 s, 25 s later: $fresh of 1000"
    echo "  RSS: server $(rss "$server_pid"), fake-nodes $(rss "$fake_pid")"
fi
