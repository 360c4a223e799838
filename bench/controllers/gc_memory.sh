#!/bin/sh
# gc_memory.sh - the memory a garbage collector monitor's cache takes: N pods watched by a
# metadata-only informer (what the collector runs), against a full-object informer on the
# same pods (the reference), in one run against a fresh `ckube server` on SQLite.
#
#   bench/controllers/gc_memory.sh [N]       (default: 20000)
#
# Builds a RelWithDebInfo tree (-O2, no sanitizers: the heap is read with mallinfo2) in
# build-bench-rs/.
# The server runs on plain HTTP (loopback only): what is measured is the
# controllers' work, and the scripts here talk to it without credentials.
set -eu
n=${1:-20000}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build-bench-rs
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target ckube bench_gc_memory >/dev/null
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/cmd/ckube/ckube" server --disable-agent --disable-dns --insecure-plain-http --listen "127.0.0.1:$port" \
    --data-dir "$work/data" \
    --controllers=-* >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
until [ "$(curl -s "http://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
echo "machine: $(nproc) CPUs, $(uname -sm), $(date -u +%F)"
"$build/bench/bench_gc_memory" "$work/data/kubeconfig" default "$n" 8
