#!/bin/sh
# test_cni_plugins.sh - the CNI configuration the agent writes (lib/agent/cni.c), run
# through the real plugins (Debian's containernetworking-plugins) for one pod.
#
# cni_write writes the configuration into a temporary directory, as the agent would
# into /etc/cni/net.d; then cni_plugins.py plays containerd's CRI for a pod inside a
# network namespace and a mount namespace of the test's own: the bridge, the iptables
# rules and the pod's namespace live and die in them, and host-local's data
# directory (/var/lib/cni) is a tmpfs there, so nothing is left on the machine. Exits
# 77 (skipped), saying why, without root, a tool or the plugins, or when the
# namespaces cannot be made here.
#
# Usage: test_cni_plugins.sh PATH/TO/cni_write [BIN_DIR]
set -u
writer=$1
bin_dir=${2:-/usr/lib/cni}
here=$(dirname "$0")

skip() {
    echo "test_cni_plugins: skipped: $*" >&2
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, a bridge, iptables rules)"
for tool in unshare nsenter mount ip iptables python3; do
    command -v "$tool" >/dev/null 2>&1 || skip "no $tool"
done
for p in bridge host-local portmap loopback; do
    [ -x "$bin_dir/$p" ] || skip "no $bin_dir/$p (Debian package containernetworking-plugins)"
done
unshare -n -m sh -c 'mount -t tmpfs ckube-cni-test /var/lib' 2>/dev/null ||
    skip "cannot make a network and a mount namespace, with a tmpfs, here"

dir=$(mktemp -d "${TMPDIR:-/tmp}/ckube-cni-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
out=$("$writer" "$dir/net.d" "$bin_dir" 10.77.0.0/24) || exit 1
if [ "$out" != "$dir/net.d/10-ckube.conflist written" ]; then
    echo "FAIL: cni_write: $out"
    exit 1
fi
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -n -m sh -c 'mount -t tmpfs ckube-cni-test /var/lib && exec python3 "$@"' sh \
    "$here/cni_plugins.py" "$dir/net.d/10-ckube.conflist" "$bin_dir" 10.77.0.0/24
