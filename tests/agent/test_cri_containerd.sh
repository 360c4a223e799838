#!/bin/sh
# test_cri_containerd.sh - the CRI client against a containerd of the test's own,
# running real pods.
#
# Everything runs inside a network namespace and a mount namespace the test
# creates (tests/lib/containerd.sh, shared with the agent's end-to-end test on CRI) (`unshare --net --mount --propagation private`), so it only touches
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

. "$(dirname "$0")/../lib/containerd.sh"

if [ "${1:-}" = "--inside" ]; then
    # ---- inside the namespaces: $2 the driver, $3 the directory, $4 the cgroup parent ----
    driver=$2
    dir=$3
    cgroup_parent=$4
    cri_inside_setup "$dir"
    trap cri_stop_containerd EXIT
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
    cri_start_containerd "$dir" "$dir/cni/net.d"
    sock=$cri_sock
    cri_import_images "$dir"
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
cri_require
cri_tmpdir
dir=$cri_dir
cgroup_parent=/ckube-test-$$
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM

cri_enter "$0" "$driver" "$dir" "$cgroup_parent"
status=$?
# nothing of the test may be left running: not in its network namespace (containerd,
# shims), not in its cgroups (containers)
cri_leftovers "$cgroup_parent" || status=1
exit $status
