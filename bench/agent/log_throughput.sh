#!/bin/sh
# log_throughput.sh - `kubectl logs` of a container's CRI log through the API server and
# `ckube agent` (pods/log proxied to the agent's log reader), in lines per second, beside
# `cat` of the same files (the reference, in the same run). The container writes LINES
# lines (`seq`, default 200000) and ends; its log is then read three ways, each ROUNDS
# times (default 3): `cat` of the files, `kubectl logs`, and `kubectl logs -f` (which
# ends at the container's exit). Run twice: with the default rotation (10Mi, one file)
# and with --container-log-max-size 256Ki --container-log-max-files 100 (the reader goes
# through every rotated file). Prints the median of each.
#
#   bench/agent/log_throughput.sh PATH/TO/ckube [LINES] [ROUNDS]
#
# Every process it starts is stopped at the end (the agent's containers included).
set -eu
ckube=$1
lines=${2:-200000}
rounds=${3:-3}
work=$(mktemp -d)
stop_all() {
    for p in $(cat "$work/pids" 2>/dev/null); do
        kill "$p" 2>/dev/null || true
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    for p in /proc/[0-9]*; do
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CKUBE_BENCH_MARK=$work"; then
            kill -9 "${p#/proc/}" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
}
trap stop_all EXIT
export KUBECACHEDIR="$work/kube-cache"
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
seconds() { # seconds COMMAND...: wall time of the command, output discarded
    s=$(date +%s.%N)
    "$@" >/dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --store "sqlite://$work/state.db" >"$work/server.log" 2>&1 &
echo $! >>"$work/pids"
until [ -f "$work/data/kubeconfig" ]; do sleep 0.1; done
export KUBECONFIG="$work/data/kubeconfig"
until kubectl get --raw /readyz >/dev/null 2>&1; do sleep 0.1; done

measure() { # measure NAME AGENT-FLAGS...: one agent, one writer pod, the three readers
    name=$1
    shift
    mkdir -p "$work/$name"
    aport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])')
    "$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name "$name" --root-dir "$work/$name" \
        --port "$aport" "$@" >"$work/$name.log" 2>&1 &
    agent=$!
    echo "$agent" >>"$work/pids"
    until kubectl get node "$name" 2>/dev/null | grep -q Ready; do sleep 0.1; done
    python3 - "$name" "$lines" "$work" <<'EOF2' | kubectl create --validate=false -f - >/dev/null
import json, sys
name, lines, mark = sys.argv[1], sys.argv[2], sys.argv[3]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
  "spec": {"nodeName": name, "restartPolicy": "Never",
           "containers": [{"name": "c", "image": "busybox", "command": ["seq", "1", lines],
                           "env": [{"name": "CKUBE_BENCH_MARK", "value": mark}]}]}}))
EOF2
    kubectl wait "pod/$name" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
    uid=$(kubectl get pod "$name" -o jsonpath='{.metadata.uid}')
    dir="$work/$name/pods/$uid/containers/c"
    files=$(ls "$dir" | grep -c '^0\.log')
    got=$(kubectl logs "$name" | wc -l)
    [ "$got" -eq "$lines" ] || echo "warning: kubectl logs gave $got lines of $lines"
    for r in $(seq 1 "$rounds"); do
        seconds sh -c "cat '$dir'/0.log*" >>"$work/$name.cat"
        seconds kubectl logs "$name" >>"$work/$name.logs"
        seconds kubectl logs -f "$name" >>"$work/$name.follow"
    done
    for how in cat logs follow; do
        t=$(median <"$work/$name.$how")
        printf '%-10s %-6s files=%-3s median %.3f s  %10.0f lines/s\n' "$name" "$how" "$files" \
            "$t" "$(echo "$lines / $t" | bc -l)"
    done
    kubectl delete pod "$name" --wait=false >/dev/null
}

echo "lines=$lines rounds=$rounds load: $(cut -d' ' -f1-3 /proc/loadavg)"
measure one-file
measure rotated --container-log-max-size 256Ki --container-log-max-files 100
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
