# common.sh - what the controller benches share, sourced with $n and $qps set and
# $server_controllers the server's --controllers: a RelWithDebInfo tree (-O2, no
# sanitizers) in build-bench-rs/ (or $build_dir of type $build_type when set before) with
# ckube and the bench helper, a scratch folder
# cleaned up at exit, `ckube server` on SQLite in it, and a separate
# `ckube controller-manager` whose client rate limit is $qps (none when $qps is empty:
# the server's own controllers then do the work); KUBECONFIG exported,
# $build, $work, $port, $server_pid and $cm_pid set, and kurl (curl as the admin),
# now, rss, cpu (a process's CPU seconds) and create_big (the "big" workload).
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
rss() { ps -o rss= -p "$1" | awk '{printf "%.1f MiB", $1 / 1024}'; }
