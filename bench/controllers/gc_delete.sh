#!/bin/sh
# gc_delete.sh - deletion times of the garbage collector and the namespace controller
# (gc_delete.py): a namespace of RS ReplicaSets x PODS pods deleted, beside a client
# deleting the same objects; RS ReplicaSets deleted in background until the last pod is
# gone. The two controllers run in a separate `ckube controller-manager` with its client
# rate limit raised to QPS (at the default 20 QPS the collector deletes 20 pods a second,
# as kube-controller-manager's would).
#
#   bench/controllers/gc_delete.sh [RS] [PODS] [QPS]     (defaults: 100 100 2000)
#
# Builds a RelWithDebInfo tree in build-bench-rs/.
# The server runs on plain HTTP (loopback only): what is measured is the
# controllers' work, and the scripts here talk to it without credentials.
set -eu
rs=${1:-100}
pods=${2:-100}
qps=${3:-2000}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-bench-rs
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target ckube >/dev/null
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
"$ckube" server --disable-agent --disable-dns --insecure-plain-http --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --controllers=-* \
    >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
until [ "$(curl -s "http://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
"$ckube" controller-manager --kubeconfig "$work/data/kubeconfig" \
    --controllers=garbagecollector,namespace --kube-api-qps "$qps" --kube-api-burst "$qps" \
    >"$work/cm.out" 2>"$work/cm.err" &
cm_pid=$!
echo "machine: $(nproc) CPUs, $(uname -sm), $(date -u +%F)"
python3 "$(dirname "$0")/gc_delete.py" "http://127.0.0.1:$port" "$rs" "$pods"
