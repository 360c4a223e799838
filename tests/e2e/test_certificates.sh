#!/bin/sh
# test_certificates.sh - CertificateSigningRequests with the real kubectl and
# openssl against a real `ckube server` (its controllers on): a user's key and
# request made with openssl, `kubectl create`, the server setting the
# requestor, `kubectl certificate approve`, the csrsigning controller issuing
# a certificate of the CA that the user then authenticates with (`kubectl
# auth whoami`); `kubectl certificate deny`; a signer's refusal (Failed); the
# admission plugins (system:masters refused, approve and sign need their
# verbs on the signer); and a kubelet's client request approved by
# csrapproving after a SubjectAccessReview.
#
# Usage: test_certificates.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

if ! command -v openssl >/dev/null 2>&1; then
    echo "test_certificates.sh: no openssl on PATH; skipping" >&2
    exit 77
fi

start_server

# request NAME SUBJECT [SIGNER] [USAGES] [EXTRA SPEC LINE]: a new key and CSR
# ($work/NAME.key, .csr) and the CertificateSigningRequest manifest, on stdout
request() {
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$work/$1.key" -subj "$2" -out "$work/$1.csr" 2>/dev/null
    cat <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: $1
spec:
  request: $(base64 -w0 "$work/$1.csr")
  signerName: ${3:-kubernetes.io/kube-apiserver-client}
  usages: [${4:-"client auth"}]
  ${5:-}
EOF
}

# as_user NAME: a kubeconfig ($work/NAME.kc) of the server that authenticates
# with $work/NAME.crt and .key
as_user() {
    cp "$KUBECONFIG" "$work/$1.kc"
    kubectl --kubeconfig "$work/$1.kc" config set-credentials "$1" \
        --client-certificate="$work/$1.crt" --client-key="$work/$1.key" >/dev/null
    kubectl --kubeconfig "$work/$1.kc" config set-context --current --user="$1" >/dev/null
}

# --- a user's client certificate, from request to use ---
{
    request alice "/CN=alice/O=devs" kubernetes.io/kube-apiserver-client '"client auth"' \
        "expirationSeconds: 86400"
    echo "  username: mallory"
} >"$work/alice.yaml"
k create -f "$work/alice.yaml" >"$work/out" 2>&1
check "kubectl create csr" grep -q 'certificatesigningrequest.certificates.k8s.io/alice created' \
    "$work/out"
check "the server sets the requestor, whatever the body said" \
    sh -c '[ "$(kubectl get csr alice -o jsonpath={.spec.username})" = kubernetes-admin ]'
check "and the requestor's groups" sh -c \
    'kubectl get csr alice -o jsonpath={.spec.groups} | grep -q system:masters'
k get csr >"$work/out" 2>&1
check "kubectl get csr: kubectl's columns" grep -Eq \
    '^NAME +AGE +SIGNERNAME +REQUESTOR +REQUESTEDDURATION +CONDITION' "$work/out"
check "pending, 24h asked" grep -Eq \
    '^alice +[0-9]+s +kubernetes.io/kube-apiserver-client +kubernetes-admin +24h +Pending$' \
    "$work/out"
k certificate approve alice >"$work/out" 2>&1
check "kubectl certificate approve" grep -q 'certificatesigningrequest.certificates.k8s.io/alice approved' \
    "$work/out"
wait_for "csrsigning issues the certificate" csr/alice '{.status.certificate}'
k get csr alice -o jsonpath='{.status.certificate}' | base64 -d >"$work/alice.crt"
check "the certificate is the CA's" sh -c "openssl verify -CAfile '$ca' '$work/alice.crt' | grep -q OK"
check "for the request's subject" sh -c \
    "openssl x509 -in '$work/alice.crt' -noout -subject | grep -Eq 'CN ?= ?alice, O ?= ?devs'"
check "a client certificate" sh -c \
    "openssl x509 -in '$work/alice.crt' -noout -text | grep -q 'TLS Web Client Authentication'"
check "valid the day asked, not the year" sh -c \
    "openssl x509 -in '$work/alice.crt' -noout -checkend 86000 >/dev/null &&
     ! openssl x509 -in '$work/alice.crt' -noout -checkend 90000 >/dev/null"
check "kubectl get csr: Approved,Issued" sh -c \
    'kubectl get csr alice | grep -Eq "Approved,Issued$"'
as_user alice
kubectl --kubeconfig "$work/alice.kc" auth whoami >"$work/out" 2>&1
check "the certificate authenticates its user" grep -Eq '^Username +alice$' "$work/out"
check "in its groups" grep -Eq '^Groups +\[devs system:authenticated\]$' "$work/out"
kubectl --kubeconfig "$work/alice.kc" get pods >"$work/out" 2>&1
check "with no more rights than RBAC gives" grep -q 'User "alice" cannot list resource "pods"' \
    "$work/out"

# --- deny ---
request bob "/CN=bob" | k create -f - >/dev/null 2>&1
k certificate deny bob >"$work/out" 2>&1
check "kubectl certificate deny" grep -q 'certificatesigningrequest.certificates.k8s.io/bob denied' \
    "$work/out"
check "kubectl get csr: Denied" sh -c 'kubectl get csr bob | grep -Eq " Denied$"'
k certificate approve bob >"$work/out" 2>&1
check "a denied request is not approved" grep -q 'is already Denied' "$work/out"

# --- validation and the signers' rules ---
request bad "/CN=bad" foo '"client auth", "client auth"' "expirationSeconds: 60" |
    sed 's/^  request: .*/  request: aGVsbG8K/' | k create -f - >"$work/out" 2>&1
check "a request that is no CSR is refused" grep -q \
    'spec.request: Invalid value: .*PEM block type must be CERTIFICATE REQUEST' "$work/out"
check "a signerName that is no domain/path" grep -q \
    "spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and path" "$work/out"
check "duplicate usages" grep -q 'spec.usages\[1\]: Duplicate value: "client auth"' "$work/out"
check "expirationSeconds under 600" grep -q \
    'spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds' \
    "$work/out"
request srv "/CN=srv" kubernetes.io/kube-apiserver-client '"server auth"' | k create -f - >/dev/null 2>&1
k certificate approve srv >/dev/null 2>&1
wait_for "a request the signer refuses gets Failed" csr/srv \
    '{.status.conditions[?(@.type=="Failed")].reason}=SignerValidationFailure'
check "saying why" sh -c \
    'kubectl get csr srv -o jsonpath="{.status.conditions[?(@.type==\"Failed\")].message}" |
     grep -q "invalid usage for client certificate: server auth"'
check "and no certificate" sh -c '[ -z "$(kubectl get csr srv -o jsonpath={.status.certificate})" ]'

# --- admission ---
request root "/CN=root/O=system:masters" | k create -f - >"$work/out" 2>&1
check "CertificateSubjectRestriction refuses system:masters" grep -q \
    'certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed' \
    "$work/out"
# alice may create requests and write approvals and statuses, but not approve or sign
k create clusterrolebinding alice-bootstrap --clusterrole=system:node-bootstrapper --user=alice >/dev/null
k create clusterrole csr-writer --verb=update \
    --resource=certificatesigningrequests/approval,certificatesigningrequests/status >/dev/null
k create clusterrolebinding alice-writer --clusterrole=csr-writer --user=alice >/dev/null
request carol "/CN=carol" >"$work/carol.yaml"
poll "alice may create a request" kubectl --kubeconfig "$work/alice.kc" create -f "$work/carol.yaml"
check "as its requestor" sh -c '[ "$(kubectl get csr carol -o jsonpath={.spec.username})" = alice ]'
kubectl --kubeconfig "$work/alice.kc" certificate approve carol >"$work/out" 2>&1
check "CertificateApproval: approving needs approve on the signer" grep -q \
    'certificatesigningrequests.certificates.k8s.io "carol" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"' \
    "$work/out"
check "and nothing changed" sh -c 'kubectl get csr carol | grep -Eq " Pending$"'
k get csr carol -o json | python3 -c '
import base64, json, sys
c = json.load(sys.stdin)
c["status"]["certificate"] = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
print(json.dumps(c))' "$work/alice.crt" >"$work/carol-status.json"
kubectl --kubeconfig "$work/alice.kc" replace --subresource=status -f "$work/carol-status.json" \
    >"$work/out" 2>&1
check "CertificateSigning: a certificate needs sign on the signer" grep -q \
    'user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client"' \
    "$work/out"
k create clusterrolebinding alice-approver \
    --clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver --user=alice >/dev/null
poll "with Kubernetes' approver role she may" \
    kubectl --kubeconfig "$work/alice.kc" certificate approve carol
wait_for "and carol's certificate is issued" csr/carol '{.status.certificate}'

# --- a kubelet's client certificate: csrapproving after a SubjectAccessReview ---
request node "/O=system:nodes/CN=system:node:n9" kubernetes.io/kube-apiserver-client-kubelet \
    '"digital signature", "client auth"' | k create -f - >/dev/null 2>&1
wait_for "csrapproving approves a node client request of an allowed user" csr/node \
    '{.status.conditions[?(@.type=="Approved")].reason}=AutoApproved'
wait_for "and csrsigning signs it" csr/node '{.status.certificate}'
k get csr node -o jsonpath='{.status.certificate}' | base64 -d >"$work/node.crt"
as_user node
kubectl --kubeconfig "$work/node.kc" auth whoami >"$work/out" 2>&1
check "the node's certificate authenticates it" grep -Eq '^Username +system:node:n9$' "$work/out"
request node2 "/O=system:nodes/CN=system:node:n8" kubernetes.io/kube-apiserver-client-kubelet \
    '"digital signature", "client auth"' >"$work/node2.yaml"
kubectl --kubeconfig "$work/alice.kc" create -f "$work/node2.yaml" >/dev/null 2>&1
sleep 2
check "not one of a user the review refuses" sh -c 'kubectl get csr node2 | grep -Eq " Pending$"'

finish
