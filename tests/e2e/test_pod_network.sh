#!/bin/sh
# test_pod_network.sh - the control plane's side of the pod network with the real kubectl
# against a real `ckube server`: the node IPAM controller gives a Node made by hand the
# first /24 of 10.244.0.0/16 as spec.podCIDR and spec.podCIDRs, the next Node the next
# one, a Node that brings its own range keeps it, and the range may not change once set;
# the API server lists itself (--advertise-address) in the kubernetes Service's Endpoints
# and EndpointSlice, port https to its secure port; stopped cleanly it removes itself, so
# restarted with another address it is the only one listed at once (well within the 15 s
# a record of a server that died would live); the Endpoints written by hand for a Service
# without a selector are mirrored into an EndpointSlice (and the slice goes with the
# Service), the kubernetes Service's are not.
#
# Usage: test_pod_network.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --advertise-address 10.0.0.10

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

# --- the kubernetes Service's endpoints ---
endpoints_are() { [ "$(k get endpoints kubernetes -o jsonpath='{.subsets[*].addresses[*].ip} {.subsets[*].ports[0].name}={.subsets[*].ports[0].port}')" = "$1" ]; }
slice_is() { [ "$(k get endpointslice kubernetes -o jsonpath='{.endpoints[*].addresses[0]} {.ports[0].name}={.ports[0].port} {.metadata.labels.kubernetes\.io/service-name} {.addressType}')" = "$1" ]; }
poll "the Endpoints list the server" endpoints_are "10.0.0.10 https=$port"
poll "the EndpointSlice lists the server" slice_is "10.0.0.10 https=$port kubernetes IPv4"
check "the Endpoints are not mirrored" \
    test "$(k get endpoints kubernetes -o jsonpath='{.metadata.labels.endpointslice\.kubernetes\.io/skip-mirror}')" = true
# --- EndpointSlice mirroring ---
k create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {ports: [{name: pg, port: 5432}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, labels: {tier: data}}
subsets:
- addresses: [{ip: 192.0.2.7}]
  notReadyAddresses: [{ip: 192.0.2.8}]
  ports: [{name: pg, port: 5432}]
YAML
mirror_is() { [ "$(k get endpointslices -l kubernetes.io/service-name=ext,endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io -o jsonpath='{.items[*].endpoints[*].addresses[0]} {.items[*].endpoints[*].conditions.ready} {.items[0].ports[0].port} {.items[0].metadata.labels.tier} {.items[0].metadata.ownerReferences[0].kind}')" = "$1" ]; }
poll "hand-written Endpoints are mirrored" mirror_is "192.0.2.7 192.0.2.8 true false 5432 data Endpoints"
check "the kubernetes Service's Endpoints are not mirrored" \
    test -z "$(k get endpointslices -l kubernetes.io/service-name=kubernetes,endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io -o name)"
k delete service ext >/dev/null
no_slices_of() { [ -z "$(k get endpointslices -l "kubernetes.io/service-name=$1" -o name)" ]; }
poll "a mirror goes with its Service" no_slices_of ext

stop_server
start_server --advertise-address 10.0.0.11
poll "the restarted server lists itself" sh -c "kubectl get endpoints kubernetes -o jsonpath='{.subsets[*].addresses[*].ip}' | grep -q 10.0.0.11"
check "the stopped server removed itself" endpoints_are "10.0.0.11 https=$port"

finish
