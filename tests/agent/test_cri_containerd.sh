#!/bin/sh
# test_cri_containerd.sh - the CRI client against a containerd of the test's own.
#
# Starts containerd (Debian's `containerd`, with `runc`) with a generated
# config: root, state, the gRPC and ttrpc sockets, the `opt` plugin's
# directory and the CRI plugin's CNI directories all under a temporary
# directory, no plugin disabled, debug and metrics listeners off. It never
# touches the machine's own containerd or /run/containerd, and it stops its
# containerd by PID. It builds the busybox image with scripts/build-images
# (busybox-static's tree as an OCI image layout tar) and imports it with
# `ctr -n k8s.io images import`; then
# test_cri_containerd (C, through lib/agent/cri.c) calls the CRI. Exits 77
# (skipped), saying why, when a tool is missing or containerd or its CRI
# plugin cannot start here.
#
# Usage: test_cri_containerd.sh PATH/TO/test_cri_containerd
set -u
driver=$1

skip() {
    echo "test_cri_containerd: skipped: $*" >&2
    exit 77
}
for tool in containerd ctr runc python3; do
    command -v "$tool" >/dev/null 2>&1 || skip "no $tool (Debian packages containerd, runc)"
done
busybox=/bin/busybox
[ -x "$busybox" ] || skip "no $busybox (Debian package busybox-static)"
# a static busybox: the image holds nothing else for it to load
if [ -r /usr/bin/ldd ] && ldd "$busybox" 2>&1 | grep -q '=>'; then
    skip "$busybox is dynamically linked (Debian's busybox-static provides a static one)"
fi

# a unix socket's path is at most 107 bytes: a long TMPDIR is passed over for /tmp
tmp=${TMPDIR:-/tmp}
tmp=${tmp%/} # containerd reports clean paths, compared with ours below
[ ${#tmp} -le 60 ] || tmp=/tmp
dir=$(mktemp -d "$tmp/ckube-cri-XXXXXX") || exit 1
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null
        # containerd stops within seconds; then for sure
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

sock="$dir/containerd.sock"
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

# the CRI plugin watches its CNI configuration directory, creating it if need be
[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "$dir/cni/net.d"
  bin_dir = "$dir/cni/bin"
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
if [ $ready -ne 1 ]; then
    tail -n 5 "$dir/containerd.log" >&2
    echo "test_cri_containerd: containerd did not answer within 20 s" >&2
    exit 1
fi
if ! grep -q 'io.containerd.grpc.v1.cri' "$dir/containerd.log" ||
    ctr -a "$sock" plugins ls 2>/dev/null | grep 'io.containerd.grpc.v1 *cri' | grep -qv ' ok'; then
    grep -i 'cri' "$dir/containerd.log" | tail -n 5 >&2
    skip "containerd's CRI plugin did not load here (its log above)"
fi

# The image: busybox-static's tree, built by the project's own script.
if ! python3 "$(dirname "$0")/../../scripts/build-images" "$dir/images" >"$dir/build.log" 2>&1; then
    cat "$dir/build.log" >&2
    echo "test_cri_containerd: scripts/build-images failed" >&2
    exit 1
fi
. "$dir/images/images.env"
image=$busybox_image
image_id=$busybox_id
image_bytes=$busybox_bytes
if ! ctr -a "$sock" -n k8s.io images import "$dir/images/busybox.tar" >"$dir/import.log" 2>&1; then
    cat "$dir/import.log" >&2
    echo "test_cri_containerd: ctr could not import the image" >&2
    exit 1
fi

CKUBE_CRI_ENDPOINT="unix://$sock" CKUBE_CRI_IMAGE="$image" CKUBE_CRI_IMAGE_ID="$image_id" \
    CKUBE_CRI_IMAGE_MIN_SIZE="$image_bytes" CKUBE_CRI_ROOT="$dir/root" "$driver"
status=$?
if [ $status -ne 0 ]; then
    echo "test_cri_containerd: failed; containerd's log ends:" >&2
    tail -n 20 "$dir/containerd.log" >&2
fi
exit $status
