#!/bin/sh
# test_agent_bootstrap.sh - TLS bootstrapping of `ckube agent` against a real `ckube
# server --enable-bootstrap-token-auth`, as kubeadm sets a node up to join: a bootstrap
# token Secret in kube-system and the bindings kubeadm makes (system:bootstrappers may
# create requests and have node client requests approved); the agent started with
# --bootstrap-kubeconfig (the token) and a --kubeconfig that does not exist yet asks for
# its client certificate, csrapproving approves it after a SubjectAccessReview and
# csrsigning signs it, the agent writes its kubeconfig and registers its Node as
# system:node:NAME. Also: the token authenticates as system:bootstrap:ID, a wrong or
# expired token does not, and a started agent with a usable kubeconfig asks nothing.
#
# Usage: test_agent_bootstrap.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
start_server --enable-bootstrap-token-auth
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')

# the bootstrap token and what kubeadm binds to its group
k create secret generic bootstrap-token-abcdef -n kube-system --type bootstrap.kubernetes.io/token \
    --from-literal=token-id=abcdef --from-literal=token-secret=0123456789abcdef \
    --from-literal=usage-bootstrap-authentication=true \
    --from-literal=auth-extra-groups=system:bootstrappers:ckube:default-node-token >/dev/null
k create secret generic bootstrap-token-expird -n kube-system --type bootstrap.kubernetes.io/token \
    --from-literal=token-id=expird --from-literal=token-secret=0123456789abcdef \
    --from-literal=usage-bootstrap-authentication=true \
    --from-literal=expiration=2020-01-01T00:00:00Z >/dev/null
k create clusterrolebinding kubeadm:kubelet-bootstrap --clusterrole=system:node-bootstrapper \
    --group=system:bootstrappers >/dev/null
k create clusterrolebinding kubeadm:node-autoapprove-bootstrap \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient \
    --group=system:bootstrappers >/dev/null
k create clusterrolebinding kubeadm:node-autoapprove-certificate-rotation \
    --clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient \
    --group=system:nodes >/dev/null

# bootstrap_kubeconfig TOKEN FILE: the server and CA of the admin's kubeconfig, the token
bootstrap_kubeconfig() {
    server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    kubectl config --kubeconfig "$2" set-cluster c --server "$server" \
        --certificate-authority "$ca" --embed-certs=true >/dev/null
    kubectl config --kubeconfig "$2" set-credentials u --token "$1" >/dev/null
    kubectl config --kubeconfig "$2" set-context c --cluster c --user u >/dev/null
    kubectl config --kubeconfig "$2" use-context c >/dev/null
}
bootstrap_kubeconfig abcdef.0123456789abcdef "$work/bootstrap.kc"
bootstrap_kubeconfig abcdef.0123456789abcdee "$work/wrong.kc"
bootstrap_kubeconfig expird.0123456789abcdef "$work/expired.kc"

kubectl --kubeconfig "$work/bootstrap.kc" auth whoami >"$work/out" 2>&1
check "a bootstrap token authenticates as system:bootstrap:ID" grep -Eq \
    '^Username +system:bootstrap:abcdef$' "$work/out"
check "in system:bootstrappers and its extra groups" grep -Eq \
    '^Groups +\[system:bootstrappers system:bootstrappers:ckube:default-node-token system:authenticated\]$' \
    "$work/out"
kubectl --kubeconfig "$work/wrong.kc" auth whoami >"$work/out" 2>&1
check "a wrong secret does not" grep -q 'Unauthorized' "$work/out"
kubectl --kubeconfig "$work/expired.kc" auth whoami >"$work/out" 2>&1
check "nor an expired token" grep -q 'Unauthorized' "$work/out"

# the agent bootstraps its credentials
"$ckube" agent --container-runtime process --bootstrap-kubeconfig "$work/bootstrap.kc" \
    --kubeconfig "$work/agent.kc" --node-name n1 --root-dir "$root" --port "$agent_port" \
    --client-ca-file "$ca" >>"$work/agent.out" 2>>"$work/agent.err" &
agent_pid=$!
poll "the agent registers its node with the certificate it was given" kubectl get node n1
check "its request, made as the bootstrap user" sh -c \
    'kubectl get csr -o jsonpath="{.items[*].spec.username}" | grep -qx system:bootstrap:abcdef'
check "was approved by csrapproving" sh -c \
    'kubectl get csr -o jsonpath="{.items[0].status.conditions[?(@.type==\"Approved\")].reason}" |
     grep -qx AutoApproved'
check "the kubeconfig it wrote" test -s "$work/agent.kc"
kubectl --kubeconfig "$work/agent.kc" auth whoami >"$work/out" 2>&1
check "authenticates as the node" grep -Eq '^Username +system:node:n1$' "$work/out"
check "in system:nodes" grep -Eq '^Groups +\[system:nodes system:authenticated\]$' "$work/out"
check "the key never left the node's directory unprotected" sh -c \
    "[ \"\$(stat -c %a '$root/pki/kubelet-client-current.pem')\" = 600 ]"
wait_for "node n1 Ready" node/n1 '{.status.conditions[?(@.type=="Ready")].status}=True'

# started again, it keeps its kubeconfig and asks for nothing
stop_agent
before=$(kubectl get csr -o name | wc -l)
"$ckube" agent --container-runtime process --bootstrap-kubeconfig "$work/bootstrap.kc" \
    --kubeconfig "$work/agent.kc" --node-name n1 --root-dir "$root" --port "$agent_port" \
    --client-ca-file "$ca" >>"$work/agent.out" 2>>"$work/agent.err" &
agent_pid=$!
sleep 3
check "a restarted agent runs on its kubeconfig" sh -c \
    "grep -c 'No usable kubeconfig' '$work/agent.err' | grep -qx 1 && kill -0 $agent_pid"
check "without a new request" sh -c "[ \"\$(kubectl get csr -o name | wc -l)\" = $before ]"
stop_agent

finish
