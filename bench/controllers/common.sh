# common.sh - what the controller benches share, sourced with $n and $qps set and
# $server_controllers the server's --controllers: a RelWithDebInfo tree (-O2, no
# sanitizers) in build-bench-rs/ (or $build_dir of type $build_type when set before) with
# ckube and the bench helper, a scratch folder
# cleaned up at exit, `ckube server` on SQLite in it, and a separate
# `ckube controller-manager` whose client rate limit is $qps (none when $qps is empty:
# the server's own controllers then do the work); KUBECONFIG exported,
# $build, $work, $port, $server_pid and $cm_pid set, and kurl (curl as the admin),
# now, rss, cpu (a process's CPU seconds), create_big (the "big" workload),
# start_fake_nodes, big_available and deploy_big.
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${build_dir:-$root/build-bench-rs}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${build_type:-RelWithDebInfo}" -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target ckube bench_pods >/dev/null
ckube=$build/cmd/ckube/ckube
work=$(mktemp -d)
server_pid=""; cm_pid=""
cleanup() {
    [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
    [ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null && wait "$cm_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --controllers="$server_controllers" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
# kurl ARGS...: curl over HTTPS as the admin (the server's generated PKI)
pki=$work/data/pki
kurl() { curl -s --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }
# ready, and the kubeconfig written (the server writes it once it serves)
until [ "$(kurl "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
export KUBECONFIG=$work/data/kubeconfig
if [ -n "$qps" ]; then
    "$ckube" controller-manager --kubeconfig "$KUBECONFIG" --kube-api-qps "$qps" \
        --kube-api-burst "$qps" >"$work/cm.out" 2>"$work/cm.err" &
    cm_pid=$!
fi
now() { date +%s.%N; }
# cpu PID: user + system CPU seconds of a process so far
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat"; }
. "$root/bench/controllers/workload.sh"
# start_fake_nodes NODES: one `ckube fake-nodes` simulating NODES nodes ($fake_pid) with
# room for $n pods over them (fake-nodes' default is 110 a node), once all are Ready
start_fake_nodes() {
    "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" --count "$1" --pods $((($n + $1 - 1) / $1 + 10)) \
        >"$work/fake.out" 2>"$work/fake.err" &
    fake_pid=$!
    until [ "$(kubectl get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" -ge "$1" ]; do
        kill -0 "$fake_pid" 2>/dev/null || { echo "fake-nodes exited:"; tail -5 "$work/fake.err"; exit 1; }
        sleep 0.2
    done
}
# big_available: whether the Deployment "big" has $n available replicas
big_available() {
    kurl "https://127.0.0.1:$port/apis/apps/v1/namespaces/default/deployments/big" | python3 -c '
import json, sys
s = json.load(sys.stdin).get("status", {})
sys.exit(0 if s.get("availableReplicas", 0) == int(sys.argv[1]) else 1)' "$n"
}
# deploy_big: creates the Deployment "big" of $n nginx pods and waits until they are all
# available ($start and $done_at), with `perf record` (PERF_ARGS, default -g) sampling the
# server into $PERF meanwhile when PERF is set
deploy_big() {
    create_big Deployment nginx:1.27
    start=$(now)
    perf_pid=""
    if [ -n "${PERF:-}" ]; then
        perf record ${PERF_ARGS:--g} -o "$PERF" -p "$server_pid" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    until big_available; do
        kill -0 "$server_pid" 2>/dev/null || { echo "the server exited:"; tail -5 "$work/server.err"; exit 1; }
        sleep 0.2
    done
    done_at=$(now)
    [ -n "$perf_pid" ] && kill -INT "$perf_pid" && wait "$perf_pid" || true
}
rss() { ps -o rss= -p "$1" | awk '{printf "%.1f MiB", $1 / 1024}'; }
