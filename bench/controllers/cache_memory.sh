#!/bin/sh
# cache_memory.sh - the memory of a default `ckube server` (every controller and the
# scheduler in its process, one shared informer factory, its own node off) holding N
# pods on simulated nodes: a Deployment of N replicas spread over N/100 nodes of one
# `ckube fake-nodes` (at least 10 nodes), and once it is Available, the server's RSS
# (three samples a second apart from 15 s later, past jemalloc's decay of freed pages,
# the median; and the peak), its CPU from the create to Available and its informer
# census. The figure issue 46 sets a target for (100,000 pods on
# 1,000 nodes in at most 400 MiB).
#
#   bench/controllers/cache_memory.sh [N]       (default: 20000)
#
# With PERF=FILE, `perf record -g` (or PERF_ARGS) samples the server from the create to
# Available.
# With PROF=DIR (absolute), the server runs with jemalloc's heap profiler sampling
# every 4 KiB allocated, and its heap is dumped into DIR once the Deployment is
# Available (read it with `jeprof --text --inuse_space BUILD/cmd/ckube/ckube FILE`);
# the jemalloc in use must be built with profiling (Debian's libjemalloc2 is).
# Builds a Release tree (-O3, jemalloc, no sanitizers) in build-rel/.
set -eu
n=${1:-20000}
nodes=$(((n + 99) / 100))
[ "$nodes" -lt 10 ] && nodes=10
qps=""
server_controllers='*'
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$root/build-rel
build_type=Release
if [ -n "${PROF:-}" ]; then
    mkdir -p "$PROF"
    export MALLOC_CONF="prof:true,lg_prof_sample:12,prof_prefix:$PROF/jeprof"
fi
. "$root/bench/controllers/common.sh"
unset MALLOC_CONF
start_fake_nodes "$nodes"
rss_idle=$(rss "$server_pid")
server_cpu0=$(cpu "$server_pid")
deploy_big
server_cpu=$(echo "$(cpu "$server_pid") - $server_cpu0" | bc)
sleep 15 # past jemalloc's dirty page decay (10 s)
samples=""
for _ in 1 2 3; do
    samples="$samples $(ps -o rss= -p "$server_pid")"
    sleep 1
done
median=$(echo "$samples" | tr ' ' '\n' | grep . | sort -n | sed -n 2p)
echo "pods: $n on $nodes simulated nodes, default ckube server, Release (load: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "create -> Available: $(echo "$done_at - $start" | bc) s; server CPU $server_cpu s"
echo "server RSS: with the nodes only $rss_idle; with the pods, median of 3:" \
    "$(echo "$median" | awk '{printf "%.1f MiB", $1 / 1024}') (samples in KiB:$samples);" \
    "peak $(awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$server_pid/status")"
echo "census: $(kurl "https://127.0.0.1:$port/metrics" | grep '^ckube_informer_c.*resource="pods"' | tr '\n' ' ')"
if [ -n "${PROF:-}" ]; then
    gdb -p "$server_pid" -batch -ex 'call (int)mallctl("prof.dump",0,0,0,0)' >/dev/null 2>&1
    echo "heap profile: $(ls -t "$PROF"/jeprof.* | head -1)"
fi
