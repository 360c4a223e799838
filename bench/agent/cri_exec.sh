#!/bin/sh
# cri_exec.sh - the round trip of `kubectl exec POD -- true` into a container on
# containerd, beside `ctr task exec` of the same command into the same container (the
# runtime's own floor, no API server, no CRI streaming server) and `kubectl get pod POD`
# (kubectl's own start-up and one request):
#
#   bench/agent/cri_exec.sh PATH/TO/ckube [ROUNDS]        (default 20; run as root)
#
# Inside a network and a mount namespace of its own (tests/lib/containerd.sh: a
# containerd of its own, the project's images from scripts/build-images), with a `ckube
# server` and `ckube agent --container-runtime cri`: one pod (busybox, `sleep 3600`),
# then ROUNDS rounds of the three commands, alternating. Prints the medians, p90 and the
# ratios. Leaves nothing behind, as cri_pod_start.sh.
set -u
skip() {
    echo "cri_exec: skipped: $*" >&2
    exit 77
}
fail() {
    echo "cri_exec: $*" >&2
    exit 1
}
. "$(dirname "$0")/../../tests/lib/containerd.sh"

if [ "${1:-}" = "--inside" ]; then
    # ---- inside the namespaces: $2 ckube, $3 containerd's directory, $4 the cgroup root, $5 rounds
    ckube=$2
    cri_dir=$3
    cgroup_root=$4
    rounds=$5
    cri_inside_setup "$cri_dir"
    server_pid=""
    agent_pid=""
    stop_all() {
        kubectl delete pod box --wait=true --timeout=60s >/dev/null 2>&1
        [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
        cri_stop_containerd
        [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    }
    trap stop_all EXIT
    cri_start_containerd "$cri_dir" "$cri_dir/cni/net.d"
    cri_import_images "$cri_dir"
    echo "machine: $(nproc) cores, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1 {print $3}'), $rounds rounds"
    free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
    port=$(free_port)
    data="$cri_dir/server"
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$data" \
        --store "sqlite://$cri_dir/state.db" >"$cri_dir/server.log" 2>&1 &
    server_pid=$!
    export KUBECONFIG="$data/kubeconfig" KUBECACHEDIR="$cri_dir/kube-cache"
    i=0
    until [ -f "$data/kubeconfig" ] && kubectl get --raw /readyz >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 300 ] && fail "the server did not become ready: $(tail -n 5 "$cri_dir/server.log")"
        sleep 0.1
    done
    root="$cri_dir/agent"
    mkdir -p "$root"
    "$ckube" agent --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$root" --port "$(free_port)" \
        --container-runtime cri --container-runtime-endpoint "unix://$cri_sock" \
        --cni-conf-dir "$cri_dir/cni/net.d" --pod-cidr 10.246.0.0/16 \
        --cgroup-root "$cgroup_root" >"$cri_dir/agent.out" 2>"$cri_dir/agent.log" &
    agent_pid=$!
    kubectl run box --image="$busybox_image" --image-pull-policy=Never \
        --overrides='{"spec":{"nodeName":"n1"}}' --command -- sleep 3600 >/dev/null ||
        fail "the pod was not created"
    kubectl wait pod/box --for=condition=Ready --timeout=120s >/dev/null ||
        fail "the pod did not run: $(tail -n 5 "$cri_dir/agent.log")"
    id=$(kubectl get pod box -o jsonpath='{.status.containerStatuses[0].containerID}')
    id=${id#containerd://}
    [ -n "$id" ] || fail "no container id"
    kubectl exec box -- true || fail "kubectl exec failed"
    ctr -a "$cri_sock" -n k8s.io task exec --exec-id warm "$id" true || fail "ctr task exec failed"

    res="$cri_dir/results"
    mkdir -p "$res"
    : >"$res/get"
    : >"$res/exec"
    : >"$res/ctr"
    secs() { # secs FILE COMMAND...: appends the command's wall seconds to FILE
        out=$1
        shift
        python3 -c '
import subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print("%.4f" % (time.monotonic() - t))' "$@" >>"$out" || fail "$* failed"
    }
    r=0
    while [ $r -lt "$rounds" ]; do
        secs "$res/get" kubectl get pod box
        secs "$res/exec" kubectl exec box -- true
        secs "$res/ctr" ctr -a "$cri_sock" -n k8s.io task exec --exec-id "bench-$r" "$id" true
        r=$((r + 1))
    done
    python3 - "$res" <<'EOF'
import statistics, sys
def load(name):
    return sorted(float(x) for x in open(sys.argv[1] + "/" + name))
def p90(v):
    return v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
get, ex, ctr = load("get"), load("exec"), load("ctr")
for label, v in (("kubectl exec box -- true", ex), ("ctr task exec ID true", ctr),
                 ("kubectl get pod box", get)):
    print("%-26s median %.3f s, p90 %.3f s" % (label, statistics.median(v), p90(v)))
m_ex, m_ctr, m_get = statistics.median(ex), statistics.median(ctr), statistics.median(get)
print("kubectl exec / ctr task exec: %.2fx; kubectl exec - kubectl get: %.3f s "
      "(the exec session beyond kubectl's start-up and one request)" % (m_ex / m_ctr, m_ex - m_get))
EOF
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

# ---- outside: the namespaces, and what must be gone afterwards ----
cri_bench_main "$0" "${1:-}" "${2:-20}"
