#!/bin/sh
# cronjob_cpu.sh - CPU of the CronJob controller with N CronJobs on a one-minute
# schedule: `ckube server --controllers=-cronjob,-job` on SQLite and a separate
# `ckube controller-manager --controllers=cronjob`; the CPU seconds (user + system, from
# /proc) the controller-manager spends in a minute, first with no CronJob (the idle
# reference, the same process), then in each of M minutes after N CronJobs
# "* * * * *" exist (each minute creates N Jobs; no Job controller runs them, so the
# Jobs stay active and every CronJob's active list grows by one a minute).
#
#   bench/controllers/cronjob_cpu.sh [N] [M]     (defaults: 1000, 3)
#
# Builds a Release tree (-O2, no sanitizers) in build-bench-release/ (format-truncation
# warnings are not errors: GCC sees possible truncations at -O2 that -O0 does not).
set -eu
n=${1:-1000}
minutes=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-bench-release
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG -Wno-error=format-truncation" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j2 --target ckube >/dev/null 2>&1 ||
    { echo "cronjob_cpu: the build failed: cmake --build $build --target ckube" >&2; exit 1; }
ckube=$build/cmd/ckube/ckube
work=$(mktemp -d)
server_pid=""; cm_pid=""
cleanup() {
    [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null && wait "$cm_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --controllers=-cronjob,-job >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
pki=$work/data/pki
kurl() { curl -s --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }
until [ "$(kurl "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
export KUBECONFIG=$work/data/kubeconfig
"$ckube" controller-manager --kubeconfig "$KUBECONFIG" --controllers=cronjob \
    --leader-elect=false --kube-api-qps 1000 --kube-api-burst 1000 \
    >"$work/cm.out" 2>"$work/cm.err" &
cm_pid=$!
tck=$(getconf CLK_TCK)
# cpu PID: user + system seconds so far
cpu() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
# to_second S: sleeps until S seconds past a minute
to_second() {
    now=$(date +%S | sed 's/^0//')
    sleep $(( (60 + $1 - now) % 60 ))
}
jobs() { kurl "https://127.0.0.1:$port/apis/batch/v1/namespaces/default/jobs" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'; }
sleep 5
c0=$(cpu "$cm_pid"); sleep 60; c1=$(cpu "$cm_pid")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "idle reference, no CronJob: $(echo "$c1 $c0" | awk '{printf "%.2f", $1 - $2}') CPU s in 60 s"
python3 - "$n" >"$work/cronjobs.json" <<'PY'
import json, sys
items = [{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"cj-{i}"},
          "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
              "restartPolicy": "OnFailure",
              "containers": [{"name": "c", "image": "busybox"}]}}}}}}
         for i in range(int(sys.argv[1]))]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
t0=$(date +%s.%N); c0=$(cpu "$cm_pid")
kubectl create -f "$work/cronjobs.json" >/dev/null
t1=$(date +%s.%N); c1=$(cpu "$cm_pid")
echo "$n CronJobs created in $(echo "$t1 - $t0" | bc | cut -c1-5) s; controller CPU meanwhile $(echo "$c1 $c0" | awk '{printf "%.2f", $1 - $2}') s"
# each window: from 30 s past a minute to 30 s past the next, holding one schedule tick
to_second 30
for m in $(seq 1 "$minutes"); do
    c0=$(cpu "$cm_pid"); j0=$(jobs)
    sleep 60
    c1=$(cpu "$cm_pid"); j1=$(jobs)
    echo "minute $m: $(echo "$c1 $c0" | awk '{printf "%.2f", $1 - $2}') CPU s; Jobs $j0 -> $j1; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "RSS: controller-manager $(ps -o rss= -p "$cm_pid" | awk '{printf "%.1f MiB", $1 / 1024}')"
