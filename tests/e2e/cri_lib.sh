# cri_lib.sh - what the end-to-end tests of `ckube agent` on a CRI runtime share
# (test_agent_cri*.sh). Each script
# runs itself again inside network and mount namespaces of its own, where a
# containerd of the test's own (tests/lib/containerd.sh), a `ckube server`
# (lib.sh) and the agent run; outside, it checks that nothing of it is left.
#
# A script sources this with its own arguments, then:
#   if [ "${1:-}" = "--inside" ]; then
#       cri_e2e_inside "$@"      # containerd with the project's images; $ckube set
#       ...                      # (a registry, say) before the server
#       cri_e2e_server           # lib.sh's server; stop_agent, start_agent, create
#       start_agent [FLAGS...]   # or start_node [FLAGS...]: started, node Ready
#       (or the three above at once: cri_e2e_start "$@")
#       ... checks, then the pods deleted ...
#       cri_e2e_finish           # every pod and container gone, the logs if a check
#                                # failed (cri_e2e_report), and lib.sh's finish
#   fi
#   cri_e2e_outside "$@"         # never returns
#
# `skip` exits 77 and `fail` exits 1, each saying why, until lib.sh is sourced (by
# cri_e2e_server), whose `fail` counts a failed check instead. A script may set
# $cri_e2e_cleanup to a command run when it exits inside the namespaces.
cri_e2e_name=$(basename "$0" .sh)
skip() {
    echo "$cri_e2e_name: skipped: $*" >&2
    exit 77
}
fail() {
    echo "$cri_e2e_name: $*" >&2
    exit 1
}
. "$(dirname "$0")/../lib/containerd.sh"
cri_e2e_cleanup=""

# cri_e2e_outside CKUBE: the namespaces, and what must be gone afterwards. Exits.
cri_e2e_outside() {
    command -v kubectl >/dev/null 2>&1 || skip "no kubectl on PATH (a prerequisite, see README.md)"
    cri_require
    cri_tmpdir
    cgroup_root=/ckube-test-$$
    trap 'rm -rf "$cri_dir"' EXIT
    trap 'exit 1' INT TERM
    cri_enter "$0" "$1" "$cri_dir" "$cgroup_root"
    status=$?
    cri_leftovers "$cgroup_root" || status=1
    exit $status
}

# cri_e2e_inside --inside CKUBE DIR CGROUP_ROOT: the namespaces' mounts, and containerd
# with the project's images (their names and ids as $busybox_image, $web_id, ...).
cri_e2e_inside() {
    ckube=$2
    cri_dir=$3
    cgroup_root=$4
    cri_inside_setup "$cri_dir"
    trap 'cri_stop_containerd; eval "$cri_e2e_cleanup"' EXIT
    cri_start_containerd "$cri_dir" "$cri_dir/cni/net.d"
    cri_import_images "$cri_dir"
}

# cri_e2e_server: lib.sh's server (SQLite, --disable-agent, plus $cri_server_flags when
# set), and the agent's functions:
#   start_agent [FLAGS...]  ckube agent n1 on the test's containerd, its own port (no
#                           --pod-cidr: the range is the one the server's nodeipam
#                           gives the Node), cgroups under the test's root
#   stop_agent              stops it (SIGTERM) if it runs (lib.sh's)
#   start_node [FLAGS...]   start_agent, then node n1 registered and Ready (checked)
#   create NAME SPEC [NS]   a pod on n1 from a Python literal of its spec (grace 2 s
#                           unless the spec says otherwise), in namespace NS if given
#   start_proxy [FLAGS...]  `ckube proxy` for n1 (cluster CIDR 10.244.0.0/16, no HTTP
#                           servers), its log appended to $work/proxy.log, $proxy_pid
#   stop_proxy              stops it (SIGTERM) if it runs
#   jp OBJECT JSONPATH      kubectl get's jsonpath output, errors dropped
#   cri_e2e_finish          no pod or container left, then cri_e2e_report
#   cri_e2e_report [LOG]    the logs' tails after a failure, then finish
cri_e2e_server() {
    set -- "$ckube"
    . "$(dirname "$0")/lib.sh"
    proxy_pid=""
    trap 'stop_agent; stop_proxy; cri_stop_containerd; eval "$cri_e2e_cleanup"; cleanup' EXIT
    root="$work/agent-root"
    mkdir -p "$root"
    # shellcheck disable=SC2086 # flags without spaces, none by default
    start_server ${cri_server_flags:-}
    agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
}

agent_flags() {
    [ -f "$work/resolv.conf" ] ||
        printf '# the node resolver file of the test\nnameserver 192.0.2.53\nsearch example.test\noptions timeout:1\n' >"$work/resolv.conf"
    echo --kubeconfig "$KUBECONFIG" --node-name n1 --root-dir "$root" --port "$agent_port" \
        --cni-conf-dir "$cri_dir/cni/net.d" --cgroup-root "$cgroup_root" \
        --cluster-dns 10.96.0.10 --cluster-domain cluster.local --resolv-conf "$work/resolv.conf"
}

start_agent() {
    # shellcheck disable=SC2046 # the flags are words without spaces
    "$ckube" agent $(agent_flags) --container-runtime-endpoint "unix://$cri_sock" "$@" \
        >>"$work/agent.out" 2>>"$work/agent.err" &
    agent_pid=$!
}

# start_node [FLAGS...]: start_agent, then waits until node n1 is registered and Ready.
start_node() {
    start_agent "$@"
    poll "node n1 registered" k get node n1
    wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'
}

create() {
    python3 - "$1" "$2" "${3:-}" <<'EOF' | k create -f - >/dev/null
import json, sys
spec = eval(sys.argv[2])
spec.setdefault("nodeName", "n1")
spec.setdefault("terminationGracePeriodSeconds", 2)
meta = {"name": sys.argv[1]}
if sys.argv[3]:
    meta["namespace"] = sys.argv[3]
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}))
EOF
}

start_proxy() {
    "$ckube" proxy --kubeconfig "$KUBECONFIG" --hostname-override n1 \
        --cluster-cidr 10.244.0.0/16 --healthz-bind-address "" --metrics-bind-address "" "$@" \
        >>"$work/proxy.log" 2>&1 &
    proxy_pid=$!
}

stop_proxy() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
    proxy_pid=""
}

jp() { k get "$1" -o jsonpath="$2" 2>/dev/null; }

# cri_e2e_start --inside CKUBE DIR CGROUP_ROOT: cri_e2e_inside, cri_e2e_server and
# start_node, for a script that needs nothing else before the server or the agent.
cri_e2e_start() {
    cri_e2e_inside "$@"
    cri_e2e_server
    start_node
}

# cri_e2e_report [LOG]: after a failure, the tails of the agent's and containerd's logs
# (and of LOG); then lib.sh's finish.
cri_e2e_report() {
    if [ "$failures" -ne 0 ]; then
        echo "--- agent log ---"
        tail -n 40 "$work/agent.err"
        echo "--- containerd log ---"
        tail -n 20 "$cri_dir/containerd.log"
        echo "--- the streams (exec, attach; what was relayed, at --v=2) ---"
        grep -h -i -E 'attach|exec|stream' "$cri_dir/containerd.log" "$work/agent.err" \
            "$work/server.err" 2>/dev/null | tail -n 30
        if [ -n "${1:-}" ]; then
            echo "--- $(basename "$1") ---"
            tail -n 10 "$1"
        fi
    fi
    finish
}

# cri_e2e_finish: once the script deleted its pods, checks that none and no container is
# left, then cri_e2e_report.
cri_e2e_finish() {
    poll "every pod deleted" sh -c "[ -z \"\$(kubectl get pods -o name)\" ]"
    poll "no container left in containerd" sh -c \
        "[ -z \"\$(ctr -a $cri_sock -n k8s.io containers ls -q)\" ]"
    cri_e2e_report
}
