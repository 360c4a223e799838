#!/bin/sh
# test_pod_network.sh - the control plane's side of the pod network with the real kubectl
# against a real `ckube server`: the node IPAM controller gives a Node made by hand the
# first /24 of 10.244.0.0/16 as spec.podCIDR and spec.podCIDRs, the next Node the next
# one, a Node that brings its own range keeps it, and the range may not change once set.
#
# Usage: test_pod_network.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

node() { # node NAME [CIDR]: creates Node NAME, with spec.podCIDR CIDR if given
    if [ $# -gt 1 ]; then
        printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"},"spec":{"podCIDR":"%s"}}' "$1" "$2"
    else
        printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' "$1"
    fi | k create -f - >/dev/null
}
pod_cidr_is() { [ "$(k get node "$1" -o jsonpath='{.spec.podCIDR} {.spec.podCIDRs[*]}')" = "$2 $2" ]; }

# --- node IPAM ---
node mine 10.244.0.0/24
node n1
poll "n1 gets the first free /24" pod_cidr_is n1 10.244.1.0/24
node n2
poll "n2 gets the next /24" pod_cidr_is n2 10.244.2.0/24
check "a node's own range is kept" pod_cidr_is mine 10.244.0.0/24
# change_refused NODE: a patch moving the node's range fails with Kubernetes' words
change_refused() {
    ! k patch node "$1" -p '{"spec":{"podCIDR":"10.244.9.0/24","podCIDRs":["10.244.9.0/24"]}}' \
        >"$work/patch.out" 2>&1 && grep -q 'may not change podCIDR' "$work/patch.out"
}
check "the range may not change once set" change_refused n1

finish
