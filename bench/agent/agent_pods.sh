#!/bin/sh
# agent_pods.sh - `ckube agent` running N pods (default 100), each `sleep 3600`, from one
# Deployment: seconds from the Deployment's creation to all N pods Ready, then the
# agent's RSS and CPU use over 10 s of steady state. The reference, in the same run, is
# `ckube fake-nodes` (one simulated node, nothing runs) with the same Deployment on a
# fresh server: what the server, controllers and scheduler take by themselves.
#
#   bench/agent/agent_pods.sh PATH/TO/ckube [N]
#
# Every process it starts is stopped at the end (the agent's containers included).
set -eu
ckube=$1
n=${2:-100}
work=$(mktemp -d)
stop_run() { # run() is a subshell: the pids it starts go to $work/pids
    for p in $(cat "$work/pids" 2>/dev/null); do
        kill "$p" 2>/dev/null || true
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true # a server still draining connections
    done
    rm -f "$work/pids"
    for p in /proc/[0-9]*; do
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CKUBE_BENCH_MARK=$work"; then
            kill -9 "${p#/proc/}" 2>/dev/null || true
        fi
    done
    sleep 1 # the shims write the exit status of their container, then end
}
stop_all() {
    stop_run
    rm -rf "$work"
}
trap stop_all EXIT
export KUBECACHEDIR="$work/kube-cache"

run() { # run agent|fake: prints "seconds rss_kib cpu_percent"
    dir="$work/$1-$i"
    mkdir -p "$dir/root"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$dir/data" \
        --store "sqlite://$dir/state.db" >"$dir/server.log" 2>&1 &
    echo $! >>"$work/pids"
    until [ -f "$dir/data/kubeconfig" ]; do sleep 0.1; done
    export KUBECONFIG="$dir/data/kubeconfig"
    until kubectl get --raw /readyz >/dev/null 2>&1; do sleep 0.1; done
    if [ "$1" = agent ]; then
        "$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$dir/root" \
            --max-pods "$n" >"$dir/node.log" 2>&1 &
    else
        "$ckube" fake-nodes --kubeconfig "$KUBECONFIG" --count 1 --prefix n --pods "$n" \
            >"$dir/node.log" 2>&1 &
    fi
    node_pid=$!
    echo "$node_pid" >>"$work/pids"
    until kubectl get nodes 2>/dev/null | grep -q Ready; do sleep 0.1; done
    start=$(date +%s.%N)
    python3 - "$n" "$work" <<'EOF2' | kubectl create --validate=false -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sleepers"},
  "spec": {"replicas": int(sys.argv[1]), "selector": {"matchLabels": {"app": "s"}},
    "template": {"metadata": {"labels": {"app": "s"}},
      "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "s", "image": "x",
        "command": ["sleep", "3600"],
        "env": [{"name": "CKUBE_BENCH_MARK", "value": sys.argv[2]}]}]}}}}))
EOF2
    until [ "$(kubectl get deploy sleepers -o jsonpath='{.status.readyReplicas}')" = "$n" ]; do
        sleep 0.2
    done
    end=$(date +%s.%N)
    ticks=$(getconf CLK_TCK)
    cpu0=$(awk '{print $14 + $15}' "/proc/$node_pid/stat")
    sleep 10
    cpu1=$(awk '{print $14 + $15}' "/proc/$node_pid/stat")
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$node_pid/status")
    echo "$(echo "$end - $start" | bc) $rss $(echo "scale=1; ($cpu1 - $cpu0) * 100 / $ticks / 10" | bc)"
}
echo "pods=$n"
echo "columns: seconds to all Ready, RSS KiB, CPU % over 10 s"
for i in 1 2 3; do
    echo "reference fake-nodes: $(run fake)"
    echo "ckube agent:          $(run agent)"
    stop_run
done
