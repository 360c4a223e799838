#!/bin/sh
# exec_throughput.sh - `kubectl exec` through `ckube server` and `ckube agent`: the
# seconds of `kubectl exec POD -- true` beside `kubectl get pod POD` (the same kubectl
# start-up and one request: the reference for the session's own cost), and the rate of
# `kubectl exec POD -- head -c SIZE /dev/zero | wc -c` beside the same pipe run locally.
# Five rounds of each, alternating; medians.
#
#   bench/agent/exec_throughput.sh PATH/TO/ckube [MiB]
#
# Every process it starts is stopped at the end.
set -eu
ckube=$1
mib=${2:-256}
work=$(mktemp -d)
pids=""
stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in /proc/[0-9]*; do
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "CKUBE_BENCH_MARK=$work"; then
            kill -9 "${p#/proc/}" 2>/dev/null || true
        fi
    done
    sleep 1
    rm -rf "$work"
}
trap stop_all EXIT
export KUBECACHEDIR="$work/kube-cache"
export KUBECONFIG="$work/data/kubeconfig"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" --store "sqlite://$work/db" \
    >"$work/server.log" 2>&1 &
pids="$!"
i=0
until [ -f "$KUBECONFIG" ] && kubectl get ns default >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "server did not start" >&2; exit 1; }; sleep 0.2
done
mkdir -p "$work/root"
"$ckube" agent --container-runtime process --kubeconfig "$KUBECONFIG" --node-name bench --root-dir "$work/root" \
    --port "$agent_port" --client-ca-file "$work/data/pki/ca.crt" >"$work/agent.log" 2>&1 &
pids="$pids $!"
until kubectl get node bench >/dev/null 2>&1; do sleep 0.2; done
python3 - "$work" <<'EOF2' | kubectl create -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box"},
  "spec": {"containers": [{"name": "c", "image": "none", "command": ["sleep", "3600"],
    "env": [{"name": "CKUBE_BENCH_MARK", "value": sys.argv[1]}]}]}}))
EOF2
kubectl wait pod/box --for=jsonpath='{.status.phase}'=Running --timeout=60s >/dev/null

secs() { # secs COMMAND...: wall seconds of the command
    python3 -c '
import subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print("%.4f" % (time.monotonic() - t))' "$@"
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
: >"$work/get"; : >"$work/exec"; : >"$work/local"; : >"$work/remote"
for round in 1 2 3 4 5; do
    secs kubectl get pod box >>"$work/get"
    secs kubectl exec box -- true >>"$work/exec"
    secs sh -c "head -c ${mib}M /dev/zero | wc -c" >>"$work/local"
    secs sh -c "kubectl exec box -- head -c ${mib}M /dev/zero | wc -c" >>"$work/remote"
done
get=$(median <"$work/get"); ex=$(median <"$work/exec")
loc=$(median <"$work/local"); rem=$(median <"$work/remote")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kubectl get pod (reference): ${get} s; kubectl exec -- true: ${ex} s"
python3 -c "import sys; l, r, m = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print('%d MiB: local pipe %.2f s (%.0f MiB/s); through kubectl exec %.2f s (%.0f MiB/s), %.1fx the local time' % (m, l, m / l, r, m / r, r / l))" "$loc" "$rem" "$mib"
