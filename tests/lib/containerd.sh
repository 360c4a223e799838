# containerd.sh - a containerd of a test's own, inside a network namespace and a
# mount namespace the test creates, so that the test touches only what it made.
# Sourced by tests that run real containers (agent.cri_containerd, the agent's
# end-to-end test on CRI). Functions set `$cri_...` variables; a test defines
# `skip` (exit 77 with a reason) and `fail` (exit 1) before sourcing.
#
# Outside the namespaces:
#   cri_require            skips unless root, the tools (containerd, ctr, runc,
#                          unshare, ip, python3), Debian's CNI plugins in
#                          /usr/lib/cni and a static /bin/busybox are there and
#                          namespaces can be made
#   cri_tmpdir             sets $cri_dir: a new temporary directory with a short
#                          path (a unix socket's path is at most 107 bytes) that
#                          the overlay over /var/lib does not hide
#   cri_enter SCRIPT ARGS  runs `sh SCRIPT --inside ARGS` in new network and
#                          mount namespaces; skips when their mounts cannot be
#                          made (the inside exits 3)
#   cri_bench_main SCRIPT CKUBE ARGS
#                          a benchmark's whole outside part: checks kubectl and
#                          CKUBE, cri_require, cri_tmpdir, runs `sh SCRIPT
#                          --inside CKUBE_ABSOLUTE DIR CGROUP ARGS` through
#                          cri_enter with a cgroup root of its own, then
#                          cri_leftovers; exits with the inside's status
#   cri_leftovers CGROUP   after cri_enter: kills (by PID) and lists on stderr
#                          every process left in the test's network namespace or
#                          under CGROUP (in any hierarchy), removes CGROUP's
#                          directories; returns 1 when anything was left
#
# Inside:
#   cri_inside_setup DIR   a tmpfs over /run (containerd 1.6 puts its shims'
#                          sockets, runc's state and fifos under /run/containerd
#                          whatever its config says), an overlay over /var/lib
#                          with its upper layer in DIR (libcni's cache, host-local's
#                          leases), loopback up; exits 3 when it cannot
#   cri_start_containerd DIR CNI_CONF_DIR
#                          writes DIR/config.toml (root, state, sockets, the opt
#                          plugin's directory under DIR; the CRI plugin's
#                          sandbox_image ckube.local/pause:1, its streaming server
#                          on 127.0.0.1, pods' network namespaces under its state,
#                          CNI from CNI_CONF_DIR and /usr/lib/cni, and
#                          restrict_oom_score_adj: a root without CAP_SYS_RESOURCE
#                          cannot give the pause container -998), starts
#                          containerd and waits for its CRI plugin: $cri_sock,
#                          $cri_pid; skips when containerd or its CRI plugin
#                          cannot start here
#   cri_import_images DIR  builds the project's images (scripts/build-images) into
#                          DIR/images and imports them: sets $busybox_image,
#                          $pause_image, $web_image and their _id and _bytes
#   cri_stop_containerd    kills and deletes the containers containerd still has
#                          (through ctr), stops containerd by PID
cri_scripts=$(cd "$(dirname "$0")/../../scripts" 2>/dev/null && pwd)
cri_pid=""
cri_sock=""

cri_require() {
    [ "$(id -u)" = 0 ] || skip "not root: containers, namespaces and cgroups need root"
    for tool in containerd ctr runc python3 unshare ip mount; do
        command -v "$tool" >/dev/null 2>&1 ||
            skip "no $tool (Debian packages containerd, runc, util-linux, iproute2)"
    done
    for plugin in bridge host-local portmap loopback; do
        [ -x "/usr/lib/cni/$plugin" ] ||
            skip "no /usr/lib/cni/$plugin (Debian package containernetworking-plugins)"
    done
    [ -x /bin/busybox ] || skip "no /bin/busybox (Debian package busybox-static)"
    # a static busybox: the images hold nothing else for it to load
    if [ -r /usr/bin/ldd ] && ldd /bin/busybox 2>&1 | grep -q '=>'; then
        skip "/bin/busybox is dynamically linked (Debian's busybox-static provides a static one)"
    fi
    unshare --net --mount --propagation private true 2>/dev/null ||
        skip "cannot create network and mount namespaces here (unshare --net --mount)"
}

cri_tmpdir() {
    tmp=${TMPDIR:-/tmp}
    tmp=${tmp%/} # containerd reports clean paths
    case "$tmp" in /var/lib | /var/lib/*) tmp=/tmp ;; esac
    [ ${#tmp} -le 60 ] || tmp=/tmp
    cri_dir=$(mktemp -d "$tmp/ckube-cri-XXXXXX") || exit 1
}

cri_enter() {
    script=$1
    shift
    unshare --net --mount --propagation private sh "$script" --inside "$@"
    cri_status=$?
    [ $cri_status -eq 3 ] && skip "could not set up the namespaces' mounts and loopback"
    return $cri_status
}

cri_bench_main() {
    script=$1
    command -v kubectl >/dev/null 2>&1 || skip "no kubectl on PATH"
    [ -x "${2:-}" ] || fail "usage: $script PATH/TO/ckube [ARG]"
    ckube=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
    shift 2
    cri_require
    cri_tmpdir
    cgroup_root=/ckube-bench-$$
    trap 'rm -rf "$cri_dir"' EXIT
    trap 'exit 1' INT TERM
    cri_enter "$script" "$ckube" "$cri_dir" "$cgroup_root" "$@"
    status=$?
    cri_leftovers "$cgroup_root" || status=1
    exit $status
}

# The PIDs of the processes whose network namespace is $1 (a /proc/PID/ns/net link).
cri_in_netns() {
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
    done
}

# The PIDs of the processes in the cgroup $1 (its directories in every hierarchy).
cri_in_cgroup() {
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
        [ -d "$h${1#/}" ] && find "$h${1#/}" -name cgroup.procs -exec cat {} + 2>/dev/null
    done | sort -u
}

cri_leftovers() {
    left=""
    [ -s "$cri_dir/netns" ] && left=$(cri_in_netns "$(cat "$cri_dir/netns")")
    left=$(echo $left $(cri_in_cgroup "$1"))
    result=0
    if [ -n "$left" ]; then
        echo "$(basename "$0"): processes left behind, killed:" >&2
        for p in $left; do
            ps -o pid=,args= -p "$p" >&2
            kill -9 "$p" 2>/dev/null
        done
        result=1
        sleep 1
    fi
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
        if [ -d "$h${1#/}" ]; then
            find "$h${1#/}" -depth -type d -exec rmdir {} + 2>/dev/null
            if [ -d "$h${1#/}" ]; then
                echo "$(basename "$0"): cannot remove $h${1#/}" >&2
                result=1
            fi
        fi
    done
    return $result
}

cri_inside_setup() {
    readlink /proc/self/ns/net >"$1/netns"
    mount -t tmpfs -o mode=0755 ckube-test-run /run || exit 3
    mkdir -p "$1/varlib/upper" "$1/varlib/work"
    mount -t overlay ckube-test-varlib \
        -o "lowerdir=/var/lib,upperdir=$1/varlib/upper,workdir=$1/varlib/work" /var/lib ||
        exit 3
    ip link set lo up || exit 3
}

cri_start_containerd() {
    d=$1
    cri_sock="$d/containerd.sock"
    mkdir -p "$2"
    cat >"$d/config.toml" <<EOF
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = []

[grpc]
  address = "$cri_sock"

[ttrpc]
  address = "$cri_sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "ckube.local/pause:1"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true

[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "$2"
  bin_dir = "/usr/lib/cni"
  max_conf_num = 1
EOF
    containerd --config "$d/config.toml" >"$d/containerd.log" 2>&1 &
    cri_pid=$!
    i=0
    until [ -S "$cri_sock" ] && ctr -a "$cri_sock" version >/dev/null 2>&1; do
        if ! kill -0 "$cri_pid" 2>/dev/null; then
            wait "$cri_pid" 2>/dev/null
            cri_pid=""
            tail -n 5 "$d/containerd.log" >&2
            skip "containerd could not start here (its log above)"
        fi
        i=$((i + 1))
        if [ $i -gt 200 ]; then
            tail -n 5 "$d/containerd.log" >&2
            fail "containerd did not answer within 20 s"
        fi
        sleep 0.1
    done
    if ! grep -q 'io.containerd.grpc.v1.cri' "$d/containerd.log" ||
        ctr -a "$cri_sock" plugins ls 2>/dev/null | grep 'io.containerd.grpc.v1 *cri' |
        grep -qv ' ok'; then
        grep -i 'cri' "$d/containerd.log" | tail -n 5 >&2
        skip "containerd's CRI plugin did not load here (its log above)"
    fi
}

cri_import_images() {
    if ! python3 "$cri_scripts/build-images" "$1/images" >"$1/build.log" 2>&1; then
        cat "$1/build.log" >&2
        fail "scripts/build-images failed"
    fi
    . "$1/images/images.env"
    for name in busybox pause web; do
        ctr -a "$cri_sock" -n k8s.io images import "$1/images/$name.tar" >"$1/import.log" 2>&1 || {
            cat "$1/import.log" >&2
            fail "ctr could not import the $name image"
        }
    done
}

cri_stop_containerd() {
    [ -n "$cri_pid" ] || return 0
    for id in $(ctr -a "$cri_sock" -n k8s.io containers ls -q 2>/dev/null); do
        ctr -a "$cri_sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1
        ctr -a "$cri_sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1
        ctr -a "$cri_sock" -n k8s.io containers delete "$id" >/dev/null 2>&1
    done
    kill "$cri_pid" 2>/dev/null
    i=0
    while kill -0 "$cri_pid" 2>/dev/null && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -9 "$cri_pid" 2>/dev/null
    wait "$cri_pid" 2>/dev/null
    cri_pid=""
}
