#!/bin/sh
# test_auth_nodes.sh - component identities end to end: `ckube certs client`
# makes client certificates and kubeconfigs signed by the cluster CA; a node
# (system:node:NAME in system:nodes) creates and changes only its own Node,
# deletes and updates the status of only the pods bound to it and creates only
# mirror pods, with the NodeRestriction messages; the scheduler
# (system:kube-scheduler) binds and deletes pods but may not delete
# namespaces or write roles, with RBAC's 403; kube-proxy (system:kube-proxy)
# reads nodes and not pods.
#
# Usage: test_auth_nodes.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# jgrep PATTERN FILE: grep in the JSON of FILE written compactly (curl gets indented JSON)
jgrep() { /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' "$2" | grep -q "$1"; }

start_server
"$ckube" certs client --data-dir "$work/data" --cn system:node:n1 --org system:nodes \
    --kubeconfig "$work/n1.kubeconfig" --server "$url" >"$work/out" 2>&1
check "ckube certs client writes the pair and the kubeconfig" \
    sh -c "grep -q 'pki/system-node-n1.crt' '$work/out' && [ -f '$work/data/pki/system-node-n1.key' ] && [ -f '$work/n1.kubeconfig' ]"
check "the node certificate: CN and O" sh -c "openssl x509 -in '$work/data/pki/system-node-n1.crt' -noout -subject | grep -q 'CN *= *system:node:n1, O *= *system:nodes'"
check "its key is 0600" [ "$(stat -c %a "$work/data/pki/system-node-n1.key")" = 600 ]
"$ckube" certs client --data-dir "$work/data" >"$work/out" 2>&1
check "ckube certs client without --cn: usage error" [ $? -eq 2 ]
"$ckube" certs client --data-dir "$work/data" --cn system:kube-scheduler --file scheduler \
    --kubeconfig "$work/sched.kubeconfig" --server "$url" >/dev/null 2>&1
node() { kubectl --request-timeout=20s --kubeconfig "$work/n1.kubeconfig" "$@"; }
sched() { kubectl --request-timeout=20s --kubeconfig "$work/sched.kubeconfig" "$@"; }
node_json() { printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' "$1"; }
pod_json() { # pod_json NAME NODE [ANNOTATIONS]
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"default"%s},"spec":{"nodeName":"%s","containers":[{"name":"c","image":"i"}]}}' \
        "$1" "${3:+,\"annotations\":$3}" "$2"
}


node_json n1 | node create -f - >"$work/out" 2>&1
check "the node registers its own Node" grep -q "node/n1 created" "$work/out"
node_json n2 | node create -f - >"$work/out" 2>&1
check "... not another's" grep -q 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"' "$work/out"
node_json n2 | k create -f - >/dev/null
node label node n1 zone=a >"$work/out" 2>&1
check "the node changes its own Node" grep -q "node/n1 labeled" "$work/out"
node label node n2 zone=a >"$work/out" 2>&1
check "... not another's (NodeRestriction's 403)" grep -q 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"' "$work/out"
node delete node n2 --wait=false >"$work/out" 2>&1
check "deleting a Node is not in system:node (RBAC's 403)" grep -q 'User "system:node:n1" cannot delete resource "nodes" in API group "" at the cluster scope' "$work/out"
node get nodes >"$work/out" 2>&1
check "the node reads Nodes" grep -q "^n2 " "$work/out"

pod_json p1 n1 | k create -f - >/dev/null
pod_json p2 n2 | k create -f - >/dev/null
node -n default delete pod p2 --wait=false >"$work/out" 2>&1
check "the node may not delete another node's pod" grep -q 'pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself' "$work/out"
node -n default delete pod p1 --wait=false >"$work/out" 2>&1
check "the node deletes a pod bound to it" grep -q 'pod "p1" deleted' "$work/out"
pod_json p3 n1 | k create -f - >/dev/null
status_patch() { # status_patch POD: PATCH its status as the node (as a kubelet does, no GET)
    kurl --cert "$work/data/pki/system-node-n1.crt" --key "$work/data/pki/system-node-n1.key" \
        -X PATCH -H 'Content-Type: application/merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/$1/status" -d '{"status":{"phase":"Running"}}'
}
status_patch p3 >"$work/out"
check "the node updates its pod's status" jgrep '"phase":"Running"' "$work/out"
status_patch p2 >"$work/out"
check "... not another node's pod's" grep -q 'node \\"n1\\" can only update pod status for pods with spec.nodeName set to itself' "$work/out"
node -n default label pod p3 x=y >"$work/out" 2>&1
check "the node may not change a pod's metadata (system:node has no patch on pods)" grep -q 'User "system:node:n1" cannot patch resource "pods"' "$work/out"
pod_json p4 n1 | node create -f - >"$work/out" 2>&1
check "the node creates only mirror pods" grep -q 'pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods' "$work/out"
pod_json m1 n1 '{"kubernetes.io/config.mirror":"x"}' | node create -f - >"$work/out" 2>&1
check "the node creates a mirror pod bound to itself" grep -q "pod/m1 created" "$work/out"
pod_json m2 n2 '{"kubernetes.io/config.mirror":"x"}' | node create -f - >"$work/out" 2>&1
check "... not one bound to another node" grep -q 'node "n1" can only create pods with spec.nodeName set to itself' "$work/out"

# --- the scheduler's identity: bootstrap system:kube-scheduler ---
pod_json s1 "" | sed 's/"nodeName":"",//' | k create -f - >/dev/null
kurl -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces/default/pods/s1/binding" \
    --cert "$work/data/pki/scheduler.crt" --key "$work/data/pki/scheduler.key" \
    -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"s1"},"target":{"kind":"Node","name":"n1"}}' >"$work/out"
check "the scheduler binds a pod" jgrep '"status":"Success"' "$work/out"
check "... which is then bound" [ "$(k -n default get pod s1 -o jsonpath='{.spec.nodeName}')" = n1 ]
sched -n default delete pod s1 --wait=false >"$work/out" 2>&1
check "the scheduler may delete pods (preemption), as in Kubernetes" grep -q 'pod "s1" deleted' "$work/out"
sched delete namespace default --wait=false >"$work/out" 2>&1
check "the scheduler may not delete namespaces" grep -q 'User "system:kube-scheduler" cannot delete resource "namespaces"' "$work/out"
sched -n default create -f - >"$work/out" 2>&1 <<EOF
{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"x"},"rules":[]}
EOF
check "the scheduler may not write roles" grep -q 'User "system:kube-scheduler" cannot create resource "roles"' "$work/out"

# --- kube-proxy's identity: bootstrap system:node-proxier ---
"$ckube" certs client --data-dir "$work/data" --cn system:kube-proxy --file proxy \
    --kubeconfig "$work/proxy.kubeconfig" --server "$url" >/dev/null 2>&1
kubectl --request-timeout=20s --kubeconfig "$work/proxy.kubeconfig" get nodes >"$work/out" 2>&1
check "the proxy lists nodes (system:node-proxier)" grep -q "^n1 " "$work/out"
kubectl --request-timeout=20s --kubeconfig "$work/proxy.kubeconfig" -n default get pods >"$work/out" 2>&1
check "... but not pods" grep -q 'User "system:kube-proxy" cannot list resource "pods"' "$work/out"


# --- ckube fake-nodes with its own identity (system:ckube:fake-nodes) ---
"$ckube" certs client --data-dir "$work/data" --cn system:ckube:fake-nodes --file fake-nodes \
    --kubeconfig "$work/fake.kubeconfig" --server "$url" >/dev/null 2>&1
"$ckube" fake-nodes --kubeconfig "$work/fake.kubeconfig" --count 2 --prefix fk- \
    >"$work/fake.out" 2>&1 &
fake_pid=$!
i=0 # kubectl wait needs the object to exist
until kubectl get node fk-1 >/dev/null 2>&1 || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
wait_for "fake-nodes registers its nodes with its own identity" node/fk-1 \
    '{.status.conditions[?(@.type=="Ready")].status}=True'
check "its nodes renew their leases" sh -c "kubectl get lease fk-0 -n kube-node-lease -o jsonpath='{.spec.holderIdentity}' | grep -qx fk-0"
kubectl --kubeconfig "$work/fake.kubeconfig" create deployment nope --image=x >"$work/out" 2>&1
check "... and may not create a Deployment" grep -q 'User "system:ckube:fake-nodes" cannot create resource "deployments"' "$work/out"
kubectl --kubeconfig "$work/fake.kubeconfig" delete namespace default --wait=false >"$work/out" 2>&1
check "... nor delete a namespace" grep -q 'cannot delete resource "namespaces"' "$work/out"
kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null

finish
