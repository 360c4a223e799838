#!/bin/sh
# cri_pod_start.sh - pod start latency of `ckube agent` on containerd's CRI, beside the
# same pods on the process runtime and beside containerd alone (`ctr run`), and the
# agent's RSS with N pods running:
#
#   bench/agent/cri_pod_start.sh PATH/TO/ckube [N]        (default N=100; run as root)
#
# CKUBE_BENCH_AGENT_ARGS: more flags for the agents (e.g. --pod-workers 1, the serial
# baseline); CKUBE_BENCH_RUNTIMES: the agents' runtimes, default "cri process".
#
# Inside a network and a mount namespace of its own (tests/lib/containerd.sh: a
# containerd of its own, the project's images from scripts/build-images, the CNI
# bridge and addresses never touch the machine's network), with a `ckube server`:
#
# 1. the runtime's floor: `ctr -n k8s.io run -d` of ckube.local/busybox:1 `sleep 3600`,
#    timed from the invocation until it returns with the task running, 20 times one
#    after another; and `ctr run --rm IMAGE ID true`;
# 2. `ckube agent --container-runtime cri -v 2`: N pods (busybox, `sleep 3600`, bound to
#    the node, the image present) one after another, each created once the last runs
#    (the latency of one pod without queueing), then all deleted; then N created at
#    once. Latency: the pod's ADDED event to the first event showing its container
#    running, in one watch (cri_pod_start.py). The steps of each pod are read from
#    containerd's log (pick-up, RunPodSandbox, CreateContainer, StartContainer, the
#    status write). With N running: the agent's VmRSS, and its CPU per pod started;
# 3. the same with `--container-runtime process` (`sleep 3600` on the host).
#
# Prints medians, p99 and the ratios. Leaves nothing behind: pods are deleted, what
# containerd still holds is killed and deleted, containerd is stopped by PID, the pods'
# cgroups are under a cgroup root of the run's own, removed at the end, and any process
# left in its network namespace is reported and killed.
set -u
skip() {
    echo "cri_pod_start: skipped: $*" >&2
    exit 77
}
fail() {
    echo "cri_pod_start: $*" >&2
    exit 1
}
. "$(dirname "$0")/../../tests/lib/containerd.sh"
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = "--inside" ]; then
    # ---- inside the namespaces: $2 ckube, $3 containerd's directory, $4 the cgroup root, $5 N
    ckube=$2
    cri_dir=$3
    cgroup_root=$4
    n=$5
    cri_inside_setup "$cri_dir"
    server_pid=""
    agent_pid=""
    stop_agent() {
        [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
        agent_pid=""
    }
    stop_all() {
        stop_agent
        cri_stop_containerd
        [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    }
    trap stop_all EXIT
    cri_start_containerd "$cri_dir" "$cri_dir/cni/net.d"
    cri_import_images "$cri_dir"
    res="$cri_dir/results"
    mkdir -p "$res"
    echo "machine: $(nproc) cores, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1 {print $3}'), $n pods"

    # 1. containerd alone
    python3 "$here/cri_pod_start.py" ctr "$cri_sock" "$busybox_image" "$cgroup_root/ctr" 20 \
        "$res/ctr.json" || fail "ctr run failed"

    # the server
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    data="$cri_dir/server"
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$data" \
        --store "sqlite://$cri_dir/state.db" >"$cri_dir/server.log" 2>&1 &
    server_pid=$!
    i=0
    until [ -f "$data/kubeconfig" ] && KUBECONFIG="$data/kubeconfig" kubectl get --raw /readyz >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 300 ] && fail "the server did not become ready: $(tail -n 5 "$cri_dir/server.log")"
        sleep 0.1
    done
    export KUBECONFIG="$data/kubeconfig"
    url="https://127.0.0.1:$port"

    cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # clock ticks, user + system
    ticks=$(getconf CLK_TCK)
    # run_phase RUNTIME MODE: N pods, their latencies into $res/RUNTIME-MODE.json
    run_phase() {
        c0=$(cpu "$agent_pid")
        python3 "$here/cri_pod_start.py" pods "$url" "$data/pki" "$2" "$n" "$busybox_image" \
            "$1-$2" "$res/$1-$2.json" || {
            tail -n 20 "$cri_dir/agent-$1.log" >&2
            fail "$1 $2: pods did not run"
        }
        c1=$(cpu "$agent_pid")
        echo "  the agent's CPU: $(echo "scale=1; ($c1 - $c0) * 1000 / $ticks / $n" | bc) ms a pod"
        clog=""
        [ "$1" = cri ] && clog="$cri_dir/containerd.log"
        python3 "$here/cri_pod_start.py" steps "$res/$1-$2.json" "$cri_dir/agent-$1.log" $clog
    }
    delete_all() {
        kubectl delete pods --all --timeout=300s >/dev/null || fail "pods not deleted"
        i=0
        until [ -z "$(ctr -a "$cri_sock" -n k8s.io containers ls -q)" ]; do
            i=$((i + 1))
            [ $i -gt 600 ] && fail "containers left in containerd after the pods' deletion"
            sleep 0.1
        done
    }
    rss() {
        sleep 10 # steady: every status written
        st="/proc/$agent_pid/status"
        echo "  the agent with $n pods running: VmRSS $(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "$st") MiB, VmHWM $(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "$st") MiB, $(awk '/^Threads/ {print $2}' "$st") threads"
    }

    # 2. and 3.: the agent on each runtime
    for rt in ${CKUBE_BENCH_RUNTIMES:-cri process}; do
        root="$cri_dir/agent-$rt"
        mkdir -p "$root"
        aport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        "$ckube" agent --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$root" --port "$aport" \
            --container-runtime "$rt" --container-runtime-endpoint "unix://$cri_sock" \
            --cni-conf-dir "$cri_dir/cni/net.d" --pod-cidr 10.246.0.0/16 \
            --cgroup-root "$cgroup_root" --max-pods "$((n + 10))" -v 2 ${CKUBE_BENCH_AGENT_ARGS:-} \
            >"$cri_dir/agent-$rt.out" 2>"$cri_dir/agent-$rt.log" &
        agent_pid=$!
        i=0
        until kubectl get node n1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; do
            i=$((i + 1))
            [ $i -gt 300 ] && fail "node n1 ($rt) not Ready: $(tail -n 5 "$cri_dir/agent-$rt.log")"
            sleep 0.1
        done
        echo "ckube agent --container-runtime $rt:"
        run_phase "$rt" seq
        rss
        delete_all
        run_phase "$rt" all
        rss
        delete_all
        stop_agent
        kubectl delete node n1 >/dev/null 2>&1
    done
    python3 "$here/cri_pod_start.py" summary "$res"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

# ---- outside: the namespaces, and what must be gone afterwards ----
command -v bc >/dev/null 2>&1 || skip "no bc"
cri_bench_main "$0" "${1:-}" "${2:-100}"
