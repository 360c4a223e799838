#!/bin/sh
# rss_cycles.sh - the API server's memory with many objects stored, and whether
# it grows over create/delete cycles:
#
#   bench/apiserver/rss_cycles.sh [PODS [CYCLES [CONTROLLERS]]]   (100000 10 '-*')
#
# Builds ckube and bench_pods optimised (build-bench-api, as run.sh), starts
# `ckube server --controllers=CONTROLLERS` on SQLite in a scratch folder (the
# default '-*' measures the API server and its store alone; pass '*' for the
# in-process controllers too), then CYCLES times: creates PODS pods in one
# namespace through the REST client (bench_pods, 16 threads), reads VmRSS,
# deletes them with one deletecollection and waits until none is left, reads
# VmRSS again. Prints one line per step: elapsed seconds, pods stored, RSS.
# CKUBE=BINARY runs that ckube instead of the one built here (to compare builds).
set -eu
cd "$(dirname "$0")/../.."
pods=${1:-100000}
cycles=${2:-10}
controllers=${3:--*}
build=build-bench-api
cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -g -DNDEBUG -Wno-error=format-truncation" \
    -DBUILD_TESTING=OFF >/dev/null
cmake --build $build --target ckube bench_pods -j "$(nproc)" >/dev/null
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
${CKUBE:-$build/cmd/ckube/ckube} server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --controllers="$controllers" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
pki=$work/data/pki
# a user agent of its own: kube-apiserver, and ckube, pretty-print JSON for curl's
kurl() { curl -s -A ckube-rss-cycles --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }
until [ "$(kurl "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ] &&
    [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
export KUBECONFIG=$work/data/kubeconfig
kurl -X POST -H 'Content-Type: application/json' -d '{"metadata":{"name":"rss"}}' \
    "https://127.0.0.1:$port/api/v1/namespaces" >/dev/null
start=$(date +%s.%N)
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$server_pid/status"; }
stored() { # apiserver_storage_objects of pods (0 when the line is absent)
    kurl "https://127.0.0.1:$port/metrics" |
        awk '/^apiserver_storage_objects\{resource="pods"\}/ {n = $2} END {print n + 0}'
}
report() {
    printf '%7.1f s  %-28s pods stored %6s  RSS %7s MiB  load %s\n' \
        "$(echo "$(date +%s.%N) - $start" | bc)" "$1" "$(stored)" "$(rss)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}
echo "machine: $(nproc) CPUs, $(uname -sm), $(date -u +%Y-%m-%dT%H:%MZ); $pods pods, $cycles cycles, --controllers=$controllers"
report "idle after start"
i=1
while [ "$i" -le "$cycles" ]; do
    $build/bench/bench_pods "$KUBECONFIG" rss create "$pods" 16 >/dev/null
    report "cycle $i: created"
    kurl -X DELETE "https://127.0.0.1:$port/api/v1/namespaces/rss/pods" >/dev/null
    until [ "$(stored)" = 0 ]; do sleep 1; done
    report "cycle $i: deleted"
    i=$((i + 1))
done
