#!/bin/sh
# test_cri_containerd.sh - the CRI client against a containerd of the test's own,
# running real pods.
#
# Everything runs inside a network namespace and a mount namespace the test
# creates (`unshare --net --mount --propagation private`), so it only touches
# what it made:
#
# - the network: containerd, its shims, the CNI bridge "ckt0" (10.244.7.0/24,
#   host-local and portmap from /usr/lib/cni, configured by a conflist the
#   test writes) and the iptables rules portmap adds all live in that network
#   namespace, whose only other interface is its own loopback;
# - the files: containerd's root, state, sockets, the `opt` plugin's
#   directory, the CNI configuration and host-local's leases are under a
#   temporary directory; the network namespaces of pods are bind-mounted
#   under containerd's state (netns_mounts_under_state_dir); in the private
#   mount namespace a tmpfs covers /run (containerd 1.6 puts its shims'
#   sockets, runc's state and ctr's fifos under /run/containerd whatever the
#   config says) and an overlay whose upper layer is in the temporary
#   directory covers /var/lib (libcni caches its results in /var/lib/cni);
# - the cgroups: pods get the cgroup parent /ckube-test-<pid>; what is left
#   of it in each cgroup hierarchy is removed at the end.
#
# After the driver ran, the containers containerd still has are removed and
# containerd is stopped by PID; then no process may be left in the test's
# network namespace or cgroups (any is killed, by PID, and fails the test).
#
# The images are built by scripts/build-images (busybox-static's tree as OCI
# image layouts: ckube.local/busybox:1, ckube.local/pause:1 as containerd's
# sandbox_image, ckube.local/web:1 whose entrypoint serves HTTP on 8080) and
# imported with `ctr -n k8s.io images import`; test_cri_containerd (C,
# through lib/agent/cri.c) then drives the CRI. Exits 77 (skipped), saying
# why, when a tool or a permission is missing, or when containerd or its CRI
# plugin cannot start here.
#
# Usage: test_cri_containerd.sh PATH/TO/test_cri_containerd
set -u

skip() {
    echo "test_cri_containerd: skipped: $*" >&2
    exit 77
}
fail() {
    echo "test_cri_containerd: $*" >&2
    exit 1
}

# The PIDs of the processes whose network namespace is $1 (a /proc/PID/ns/net link).
in_netns() {
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
    done
}

# The PIDs of the processes in the cgroup $1 (its directories in every hierarchy).
in_cgroup() {
    for h in /sys/fs/cgroup/*/; do
        [ -d "$h${1#/}" ] && find "$h${1#/}" -name cgroup.procs -exec cat {} + 2>/dev/null
    done | sort -u
}

if [ "${1:-}" = "--inside" ]; then
    # ---- inside the namespaces: $2 the driver, $3 the directory, $4 the cgroup parent ----
    driver=$2
    dir=$3
    cgroup_parent=$4
    readlink /proc/self/ns/net >"$dir/netns"
    mount -t tmpfs -o mode=0755 ckube-test-run /run || exit 3
    mkdir -p "$dir/varlib/upper" "$dir/varlib/work"
    mount -t overlay ckube-test-varlib \
        -o "lowerdir=/var/lib,upperdir=$dir/varlib/upper,workdir=$dir/varlib/work" /var/lib ||
        exit 3
    ip link set lo up || exit 3

    sock="$dir/containerd.sock"
    pid=""
    cleanup() {
        if [ -n "$pid" ]; then
            # what a failed run left: containers (sandboxes too) killed and deleted
            for id in $(ctr -a "$sock" -n k8s.io containers ls -q 2>/dev/null); do
                ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1
                ctr -a "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1
                ctr -a "$sock" -n k8s.io containers delete "$id" >/dev/null 2>&1
            done
            kill "$pid" 2>/dev/null
            i=0
            while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
                sleep 0.1
                i=$((i + 1))
            done
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    }
    trap cleanup EXIT
    trap 'exit 1' INT TERM

    mkdir -p "$dir/cni/net.d" "$dir/logs" "$dir/host"
    # the pod network: a bridge of the test's network namespace, its leases in $dir
    python3 - "$dir" <<'EOF' || exit 1
import json, sys
d = sys.argv[1]
conf = {
    "cniVersion": "0.4.0",
    "name": "ckube-test",
    "plugins": [
        {
            "type": "bridge",
            "bridge": "ckt0",
            "isGateway": True,
            "ipMasq": False,
            "hairpinMode": True,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": "10.244.7.0/24"}]],
                "routes": [{"dst": "0.0.0.0/0"}],
                "dataDir": d + "/cni/ipam",
            },
        },
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ],
}
with open(d + "/cni/net.d/10-ckube-test.conflist", "w") as f:
    json.dump(conf, f, indent=2)
EOF
    cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = []

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "ckube.local/pause:1"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  # the pause container's oom_score_adj is -998, which a root without
  # CAP_SYS_RESOURCE (as in some sandboxed machines) cannot set: never below
  # containerd's own
  restrict_oom_score_adj = true

[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "$dir/cni/net.d"
  bin_dir = "/usr/lib/cni"
  max_conf_num = 1
EOF

    containerd --config "$dir/config.toml" >"$dir/containerd.log" 2>&1 &
    pid=$!
    ready=0
    i=0
    while [ $i -lt 200 ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null
            pid=""
            tail -n 5 "$dir/containerd.log" >&2
            skip "containerd could not start here (its log above)"
        fi
        if [ -S "$sock" ] && ctr -a "$sock" version >/dev/null 2>&1; then
            ready=1
            break
        fi
        sleep 0.1
        i=$((i + 1))
    done
    [ $ready -eq 1 ] || {
        tail -n 5 "$dir/containerd.log" >&2
        fail "containerd did not answer within 20 s"
    }
    if ! grep -q 'io.containerd.grpc.v1.cri' "$dir/containerd.log" ||
        ctr -a "$sock" plugins ls 2>/dev/null | grep 'io.containerd.grpc.v1 *cri' | grep -qv ' ok'; then
        grep -i 'cri' "$dir/containerd.log" | tail -n 5 >&2
        skip "containerd's CRI plugin did not load here (its log above)"
    fi

    # The images: busybox-static's tree, built by the project's own script.
    if ! python3 "$(dirname "$0")/../../scripts/build-images" "$dir/images" >"$dir/build.log" 2>&1; then
        cat "$dir/build.log" >&2
        fail "scripts/build-images failed"
    fi
    . "$dir/images/images.env"
    for name in busybox pause web; do
        ctr -a "$sock" -n k8s.io images import "$dir/images/$name.tar" >"$dir/import.log" 2>&1 || {
            cat "$dir/import.log" >&2
            fail "ctr could not import the $name image"
        }
    done
    echo "what the containers' hostPath mount shows" >"$dir/host/file"

    CKUBE_CRI_ENDPOINT="unix://$sock" CKUBE_CRI_IMAGE="$busybox_image" \
        CKUBE_CRI_IMAGE_ID="$busybox_id" CKUBE_CRI_IMAGE_MIN_SIZE="$busybox_bytes" \
        CKUBE_CRI_ROOT="$dir/root" CKUBE_CRI_WEB_IMAGE="$web_image" \
        CKUBE_CRI_CGROUP_PARENT="$cgroup_parent" CKUBE_CRI_LOG_DIR="$dir/logs" \
        CKUBE_CRI_HOST_DIR="$dir/host" CKUBE_CRI_SUBNET="10.244.7." "$driver"
    status=$?
    if [ $status -ne 0 ]; then
        echo "test_cri_containerd: failed; containerd's log ends:" >&2
        tail -n 20 "$dir/containerd.log" >&2
    fi
    exit $status
fi

# ---- outside: checks, the namespaces, and what must be gone afterwards ----
driver=$1
[ "$(id -u)" = 0 ] || skip "not root: containers, namespaces and cgroups need root"
for tool in containerd ctr runc python3 unshare ip mount; do
    command -v "$tool" >/dev/null 2>&1 || skip "no $tool (Debian packages containerd, runc, util-linux, iproute2)"
done
for plugin in bridge host-local portmap loopback; do
    [ -x "/usr/lib/cni/$plugin" ] ||
        skip "no /usr/lib/cni/$plugin (Debian package containernetworking-plugins)"
done
busybox=/bin/busybox
[ -x "$busybox" ] || skip "no $busybox (Debian package busybox-static)"
# a static busybox: the image holds nothing else for it to load
if [ -r /usr/bin/ldd ] && ldd "$busybox" 2>&1 | grep -q '=>'; then
    skip "$busybox is dynamically linked (Debian's busybox-static provides a static one)"
fi
unshare --net --mount --propagation private true 2>/dev/null ||
    skip "cannot create network and mount namespaces here (unshare --net --mount)"

# a unix socket's path is at most 107 bytes: a long TMPDIR is passed over for /tmp;
# the overlay over /var/lib must not hide the directory itself
tmp=${TMPDIR:-/tmp}
tmp=${tmp%/} # containerd reports clean paths, compared with ours
case "$tmp" in /var/lib | /var/lib/*) tmp=/tmp ;; esac
[ ${#tmp} -le 60 ] || tmp=/tmp
dir=$(mktemp -d "$tmp/ckube-cri-XXXXXX") || exit 1
cgroup_parent=/ckube-test-$$
cleanup_outside() {
    rm -rf "$dir"
}
trap cleanup_outside EXIT
trap 'exit 1' INT TERM

unshare --net --mount --propagation private sh "$0" --inside "$driver" "$dir" "$cgroup_parent"
status=$?
[ $status -eq 3 ] && skip "could not set up the namespaces' mounts and loopback"

# nothing of the test may be left running: not in its network namespace (containerd,
# shims), not in its cgroups (containers)
left=""
if [ -s "$dir/netns" ]; then
    left=$(in_netns "$(cat "$dir/netns")")
fi
left="$left $(in_cgroup "$cgroup_parent")"
left=$(echo $left)
if [ -n "$left" ]; then
    echo "test_cri_containerd: processes left behind, killed:" >&2
    for p in $left; do
        ps -o pid=,args= -p "$p" >&2
        kill -9 "$p" 2>/dev/null
    done
    status=1
    sleep 1
fi
# the cgroups runc made under the parent, in every hierarchy
for h in /sys/fs/cgroup/*/; do
    if [ -d "$h${cgroup_parent#/}" ]; then
        find "$h${cgroup_parent#/}" -depth -type d -exec rmdir {} + 2>/dev/null
        if [ -d "$h${cgroup_parent#/}" ]; then
            echo "test_cri_containerd: cannot remove $h${cgroup_parent#/}" >&2
            status=1
        fi
    fi
done
exit $status
