#!/bin/sh
# test_requestheader.sh - the --requestheader-* flags against a real `ckube server`: a
# front-proxy CA and client certificates made here with openssl; with the proxy's
# certificate X-Remote-User/X-Remote-Group/X-Remote-Extra-* name the user a
# SelfSubjectReview reports; the same headers from the admin's own certificate are
# ignored; a certificate of the proxy CA whose name is not allowed, or the proxy's
# without a username header, is refused (it is no client identity); and
# kube-system/extension-apiserver-authentication and its reader Role are published.
# Without the flags the server makes kubeadm's front-proxy CA and client certificate and
# trusts them with kubeadm's flags.
#
# Usage: test_requestheader.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! command -v openssl >/dev/null 2>&1; then
    echo "$(basename "$0"): no openssl to make the front proxy's certificates; skipping" >&2
    exit 77
fi

# --- the front proxy's CA and two client certificates it signs ---
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "$@" 2>/dev/null; }
ec -x509 -days 1 -subj "/CN=front-proxy-ca" -keyout "$work/fp-ca.key" -out "$work/fp-ca.crt"
for cn in front-proxy-client intruder; do
    ec -subj "/CN=$cn" -keyout "$work/$cn.key" -out "$work/$cn.csr"
    printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n' >"$work/ext"
    openssl x509 -req -in "$work/$cn.csr" -CA "$work/fp-ca.crt" -CAkey "$work/fp-ca.key" \
        -CAcreateserial -days 1 -extfile "$work/ext" -out "$work/$cn.crt" 2>/dev/null
done

start_server --controllers=-* \
    --requestheader-client-ca-file "$work/fp-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra-

review='{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
# whoami CERT ARGS...: POSTs a SelfSubjectReview with CERT's key pair; the body in $work/out,
# the status code printed
whoami() {
    c=$1; shift
    curl -s -o "$work/out" -w '%{http_code}' --cacert "$ca" --cert "$c.crt" --key "$c.key" \
        -H 'Content-Type: application/json' -X POST -d "$review" "$@" \
        "$url/apis/authentication.k8s.io/v1/selfsubjectreviews"
}
userinfo() { python3 -c 'import json, sys; u = json.load(open(sys.argv[1]))["status"]["userInfo"]; print(u["username"], ",".join(u.get("groups", [])), json.dumps(u.get("extra", {}), sort_keys=True))' "$work/out"; }

# --- the front proxy ---
code=$(whoami "$work/front-proxy-client" -H 'X-Remote-User: alice' -H 'X-Remote-Group: devs' \
    -H 'X-Remote-Group: ops' -H 'X-Remote-Extra-Acme.com%2FScopes: read')
check "the proxy's request is answered (got $code)" [ "$code" = 201 ]
check "the proxy's headers name alice in devs and ops, with extra ($(userinfo 2>&1))" \
    [ "$(userinfo)" = 'alice devs,ops,system:authenticated {"acme.com/scopes": ["read"]}' ]
code=$(whoami "$work/front-proxy-client" -H 'X-Remote-User: alice' -H 'Impersonate-User: bob')
check "alice may not impersonate (got $code)" [ "$code" = 403 ]

# --- other clients' headers are ignored ---
admin=$(whoami "$work/data/pki/admin" >/dev/null; userinfo)
code=$(whoami "$work/data/pki/admin" -H 'X-Remote-User: alice' -H 'X-Remote-Group: devs')
check "the admin's certificate with the headers is answered (got $code)" [ "$code" = 201 ]
check "the admin stays the admin ($(userinfo 2>&1))" [ "$(userinfo)" = "$admin" ]
check "the admin is not alice" sh -c "! echo '$admin' | grep -q alice"

# --- refused certificates ---
code=$(whoami "$work/intruder" -H 'X-Remote-User: alice')
check "a proxy-CA certificate whose name is not allowed is refused (got $code)" [ "$code" = 401 ]
code=$(whoami "$work/front-proxy-client")
check "the proxy's certificate without a username header is no identity (got $code)" [ "$code" = 401 ]

# --- the published configuration ---
k get configmap -n kube-system extension-apiserver-authentication -o json >"$work/cm.json" 2>&1
check "the ConfigMap has Kubernetes' keys and values" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["data"]
want = {"requestheader-allowed-names": "[\"front-proxy-client\"]",
        "requestheader-username-headers": "[\"X-Remote-User\"]",
        "requestheader-group-headers": "[\"X-Remote-Group\"]",
        "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
        "requestheader-uid-headers": "[]"}
for k, v in want.items():
    assert d[k] == v, (k, d.get(k))
assert d["requestheader-client-ca-file"] == open(sys.argv[2]).read(), "requestheader CA"
assert d["client-ca-file"] == open(sys.argv[3]).read(), "client CA"
' "$work/cm.json" "$work/fp-ca.crt" "$ca"
check "the reader Role grants get on the ConfigMap" sh -c \
    '[ "$(kubectl auth can-i get configmap/extension-apiserver-authentication -n kube-system --as system:kube-scheduler)" = yes ]'
check "and nothing else in kube-system" sh -c \
    '[ "$(kubectl auth can-i get configmap/other -n kube-system --as system:kube-scheduler)" = no ]'

# --- the default: kubeadm's front proxy in the generated PKI ---
stop_server
start_server --controllers=-*
pki=$work/data/pki
code=$(whoami "$pki/front-proxy-client" -H 'X-Remote-User: carol' -H 'X-Remote-Group: qa')
check "the generated front proxy's request is answered (got $code)" [ "$code" = 201 ]
check "its headers name carol in qa ($(userinfo 2>&1))" \
    [ "$(userinfo)" = 'carol qa,system:authenticated {}' ]
code=$(whoami "$work/front-proxy-client" -H 'X-Remote-User: alice')
check "the earlier proxy CA is no longer trusted (got $code)" [ "$code" = 401 ]
k get configmap -n kube-system extension-apiserver-authentication -o json >"$work/cm.json" 2>&1
check "the ConfigMap has kubeadm's values and the generated CA" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert d["requestheader-allowed-names"] == "[\"front-proxy-client\"]", d
assert d["requestheader-username-headers"] == "[\"X-Remote-User\"]", d
assert d["requestheader-client-ca-file"] == open(sys.argv[2]).read(), "requestheader CA"
' "$work/cm.json" "$pki/front-proxy-ca.crt"

finish
