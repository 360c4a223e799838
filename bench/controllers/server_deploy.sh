#!/bin/sh
# server_deploy.sh - a Deployment of N replicas on a default `ckube server` (every
# controller and the scheduler in its process, sharing one informer factory, with no
# client-side rate limit) and M simulated nodes (`ckube fake-nodes`, which run the
# pods bound to them and report them Ready): time from create until the Deployment is
# Available with N available pods, and the server's RSS, CPU seconds and informer census
# at that point, beside the fake nodes' CPU. The figure issue 46 sets a target for
# (10,000 replicas on 100 nodes, at most 10 s).
#
#   bench/controllers/server_deploy.sh [N] [NODES]       (defaults: 10000, 100)
#
# With PERF=FILE, `perf record -g` (or PERF_ARGS, e.g. "--call-graph dwarf -F 499") samples the server from the create to Available into
# FILE (read it with `perf report -i FILE --no-children`).
# Builds a RelWithDebInfo tree (-O2, no sanitizers) in build-bench-rs/, shared with
# rs_scale.sh and deploy_scale.sh.
set -eu
n=${1:-10000}
nodes=${2:-100}
qps=""
server_controllers='*'
. "$(cd "$(dirname "$0")" && pwd)/common.sh"
start_fake_nodes "$nodes"
server_cpu0=$(cpu "$server_pid")
fake_cpu0=$(cpu "$fake_pid")
deploy_big
echo "replicas: $n on $nodes simulated nodes, default ckube server (load: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "create -> Available with $n available: $(echo "$done_at - $start" | bc) s"
echo "server: RSS $(rss "$server_pid"), CPU $(echo "$(cpu "$server_pid") - $server_cpu0" | bc) s;" \
    "fake-nodes CPU $(echo "$(cpu "$fake_pid") - $fake_cpu0" | bc) s"
echo "census: $(kurl "https://127.0.0.1:$port/metrics" | grep '^ckube_informer_c.*resource="pods"' | tr '\n' ' ')"
