#!/bin/bash
# run.sh - what kubectl's discovery costs on a fresh cache: `kubectl api-resources` with
# an empty --cache-dir against `ckube server`, its wall time and the requests it made,
# for this build and for a reference build given as REF (a build from before aggregated
# discovery, so kubectl falls back to one request per group version):
#
#   bench/discovery/run.sh [RUNS]                 (default 9)
#   REF=OLD_BINARY bench/discovery/run.sh [RUNS]
#   CKUBE=BINARY ...                              (default build-rel/cmd/ckube/ckube)
#
# Each server runs alone (no agent, no DNS, every controller on) on a data directory of
# its own; each run is one `kubectl api-resources` with a new cache directory, timed from
# the fork to its exit. The requests are counted from kubectl's own log at -v=6 (one line
# per request, "GET https://... 200 OK"). The builds alternate run by run so the load of
# the machine falls on both alike; prints each run, then medians and ranges.
set -eu
cd "$(dirname "$0")/../.."
runs=${1:-9}
. bench/lib.sh
ckube=$(bench_ckube)
command -v kubectl >/dev/null || { echo "kubectl is not on PATH" >&2; exit 1; }
work=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

# start NAME BINARY: a server in $work/NAME, its kubeconfig at $work/NAME/kubeconfig
start() {
    local name=$1 bin=$2 dir=$work/$1 port tries=0
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$dir"
    "$bin" server --disable-agent --disable-dns --data-dir "$dir" --listen "127.0.0.1:$port" \
        >"$work/$name.out" 2>"$work/$name.err" &
    pids="$pids $!"
    until [ -f "$dir/kubeconfig" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' \
        --cacert "$dir/pki/ca.crt" "https://127.0.0.1:$port/readyz" 2>/dev/null)" = 200 ]; do
        tries=$((tries + 1))
        [ $tries -lt 600 ] || { echo "$name: no /readyz in a minute; its log:" >&2; tail "$work/$name.err" >&2; exit 1; }
        sleep 0.1
    done
}

# one_run NAME: prints "ms requests resources"
one_run() {
    local name=$1 cache start end
    cache=$(mktemp -d "$work/cache.XXXXXX")
    start=$(date +%s%N)
    kubectl --kubeconfig "$work/$name/kubeconfig" --cache-dir "$cache" -v=6 api-resources \
        >"$work/out" 2>"$work/log"
    end=$(date +%s%N)
    echo "$(((end - start) / 1000000)) $(grep -c ' https://127.0.0.1:[0-9]*/[^ ]* [0-9][0-9][0-9] ' "$work/log")" \
        "$(($(wc -l <"$work/out") - 1))"
    rm -rf "$cache"
}


names="this"
start this "$ckube"
if [ -n "${REF:-}" ]; then
    names="this ref"
    start ref "$REF"
fi
echo "kubectl $(kubectl version --client 2>/dev/null | head -1); $(nproc) CPUs; load (1 min) at start $(cut -d' ' -f1 /proc/loadavg)"
echo "this: $ckube${REF:+; ref: $REF}"
echo "build  run  ms  requests  resources"
for i in $(seq "$runs"); do
    for name in $names; do
        line=$(one_run "$name")
        echo "$line" >>"$work/runs.$name"
        printf "%-5s %4s %5s %8s %10s\n" "$name" "$i" $line
    done
done
for name in $names; do
    echo "$name: median (range) $(cut -d' ' -f1 "$work/runs.$name" | summary) ms," \
        "$(cut -d' ' -f2 "$work/runs.$name" | summary) requests," \
        "$(cut -d' ' -f3 "$work/runs.$name" | summary) resources listed"
done
echo "load (1 min) at the end $(cut -d' ' -f1 /proc/loadavg)"
