#!/bin/sh
# test_cri_containerd.sh - the CRI client against a containerd of the test's own.
#
# Starts containerd (Debian's `containerd`, with `runc`) with a generated
# config: root, state, the gRPC and ttrpc sockets, the `opt` plugin's
# directory and the CRI plugin's CNI directories all under a temporary
# directory, no plugin disabled, debug and metrics listeners off. It never
# touches the machine's own containerd or /run/containerd, and it stops its
# containerd by PID. It builds a tiny OCI image from busybox-static's
# /bin/busybox (an OCI image layout tar: a gzipped layer, its config, a
# manifest and an index, written with tar, gzip and python3's json and
# hashlib) and imports it with `ctr -n k8s.io images import`; then
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
for tool in containerd ctr runc tar gzip python3; do
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

# The image: /bin/busybox as its one file, busybox as its entrypoint.
image=ckube.test/busybox:1
mkdir -p "$dir/rootfs/bin"
cp "$busybox" "$dir/rootfs/bin/busybox"
tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$dir/rootfs" -cf "$dir/layer.tar" bin
gzip -n <"$dir/layer.tar" >"$dir/layer.tar.gz"
python3 - "$dir" "$image" <<'EOF' || exit 1
import hashlib, json, os, platform, sys

d, image = sys.argv[1], sys.argv[2]
layout = os.path.join(d, "layout")
blobs = os.path.join(layout, "blobs", "sha256")
os.makedirs(blobs)

def blob(data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)

arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
with open(os.path.join(d, "layer.tar"), "rb") as f:
    diff_id = "sha256:" + hashlib.sha256(f.read()).hexdigest()
with open(os.path.join(d, "layer.tar.gz"), "rb") as f:
    layer, layer_size = blob(f.read())
config, config_size = blob(json.dumps({
    "architecture": arch, "os": "linux",
    "config": {"Entrypoint": ["/bin/busybox"], "Cmd": ["sleep", "3600"]},
    "rootfs": {"type": "layers", "diff_ids": [diff_id]},
}).encode())
manifest, manifest_size = blob(json.dumps({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": config, "size": config_size},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": layer, "size": layer_size}],
}).encode())
with open(os.path.join(layout, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": manifest, "size": manifest_size,
        "platform": {"architecture": arch, "os": "linux"},
        "annotations": {"io.containerd.image.name": image,
                        "org.opencontainers.image.ref.name": image.rsplit(":", 1)[1]},
    }]}, f)
with open(os.path.join(layout, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
with open(os.path.join(d, "image.env"), "w") as f:
    f.write("image_id=%s\nimage_bytes=%d\n" % (config, layer_size + config_size))
EOF
. "$dir/image.env"
tar -C "$dir/layout" -cf "$dir/image.tar" oci-layout index.json blobs
if ! ctr -a "$sock" -n k8s.io images import "$dir/image.tar" >"$dir/import.log" 2>&1; then
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
