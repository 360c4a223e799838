#!/bin/sh
# create_growth.sh - the server's CPU per create as its store grows: one `ckube server`
# (SQLite, plain HTTP, no controllers) and the CronTab custom resource of crd.py, created
# by wrk (create_cr.lua, 2 threads, 16 clients) in RUNS runs of SECONDS each; after each
# run, the creates so far and the server's CPU (user + system, /proc) per create of that
# run. A cost that grows with the objects stored is a store query that reads more than
# its range.
#
#   bench/apiserver/create_growth.sh [CKUBE] [RUNS] [SECONDS]
#
# CKUBE defaults to build-rel/cmd/ckube/ckube (build it first).
set -eu
cd "$(dirname "$0")/../.."
ckube=${1:-build-rel/cmd/ckube/ckube}
runs=${2:-6}
secs=${3:-6}
command -v wrk >/dev/null || { echo "create_growth: wrk is needed (apt install wrk)" >&2; exit 1; }
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --controllers=-* --insecure-plain-http \
    --listen "127.0.0.1:$port" --data-dir "$tmp/data" >"$tmp/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
url="http://127.0.0.1:$port"
until curl -sf "$url/readyz" >/dev/null 2>&1; do sleep 0.1; done
python3 -c 'import json, sys; sys.path.insert(0, "bench/apiserver"); import crd; print(json.dumps(crd.CRONTAB_CRD))' |
    curl -sf -XPOST -H 'Content-Type: application/json' --data-binary @- \
        "$url/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
curl -sf -XPOST -H 'Content-Type: application/json' -d '{"metadata": {"name": "crs"}}' \
    "$url/api/v1/namespaces" >/dev/null
sleep 2 # the definition served
hz=$(getconf CLK_TCK)
total=0
echo "load average at start: $(cut -d' ' -f1 /proc/loadavg)"
for i in $(seq "$runs"); do
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    n=$(wrk -t2 -c16 -d"${secs}s" -s bench/apiserver/create_cr.lua "$url" -- crs |
        awk '/requests in/ {print $1}')
    after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    total=$((total + n))
    echo "run $i: $n creates ($total stored), $(((after - before) * 1000000 / hz / n)) us of server CPU each"
done
echo "load average at end: $(cut -d' ' -f1 /proc/loadavg)"
