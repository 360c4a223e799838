#!/bin/sh
# test_auth.sh - TLS, authentication and RBAC end to end: kubectl with the
# kubeconfig the server writes (verification on, the admin certificate); a
# token user (--token-auth-file) bound to `view` in one namespace lists there
# and gets Kubernetes' exact 403 elsewhere, the policy following RoleBinding
# writes at once; the escalation check; anonymous requests (health readable,
# the rest 403, 401 with --anonymous-auth=false); a garbage token, a client
# certificate of another CA and a client that does not trust the server's CA
# are each refused; the Python client with verification on.
#
# Usage: test_auth.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

printf 'jane-token,jane,1001\nops-token,ops,1002,"ops,audit"\n' >"$work/tokens.csv"
start_server --token-auth-file "$work/tokens.csv"

# --- kubectl with the generated kubeconfig ---
check "kubeconfig server is https" grep -q "\"server\": \"https://127.0.0.1:$port\"" "$KUBECONFIG"
k get namespaces >"$work/out" 2>&1
check "kubectl as the admin over verified TLS" grep -q "^kube-system " "$work/out"
k create namespace team --dry-run=client -o json | k create -f - >/dev/null
k create namespace team2 --dry-run=client -o json | k create -f - >/dev/null
cat >"$work/rb.json" <<EOF
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
 "metadata": {"name": "jane-view", "namespace": "team"},
 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]}
EOF

# --- a token user: nothing before the binding, view in team after ---
jane() { kubectl --request-timeout=20s --token=jane-token --user=nobody "$@"; }
# (--user=nobody: a user entry that does not exist, so only the token is sent)
kubectl config set-credentials nobody >/dev/null
jane -n team get pods >"$work/out" 2>&1
check "jane before the binding: 403" grep -q 'Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "team"' "$work/out"
k create -f "$work/rb.json" >/dev/null
jane -n team get pods >"$work/out" 2>&1
check "jane lists pods in team once bound (policy rebuilt on the write)" grep -q "No resources found in team namespace" "$work/out"
jane -n default get pods >"$work/out" 2>&1
check "jane gets Kubernetes' exact 403 in default" grep -qx 'Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"' "$work/out"
jane get namespaces >"$work/out" 2>&1
check "jane cannot list namespaces (cluster scope)" grep -q 'User "jane" cannot list resource "namespaces" in API group "" at the cluster scope' "$work/out"
jane -n team delete rolebinding jane-view >"$work/out" 2>&1
check "view cannot delete bindings" grep -q 'cannot delete resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "team"' "$work/out"
code=$(curl -s -o "$work/body" -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer jane-token" "$url/api/v1/namespaces/team/pods")
check "jane's token over curl: 200" [ "$code" = 200 ]

# --- escalation: admin in team2 may not bind herself to cluster-admin ---
sed 's/jane-view/jane-admin/; s/"team"/"team2"/; s/"view"/"admin"/' "$work/rb.json" | k create -f - >/dev/null
sed 's/jane-view/jane-root/; s/"team"/"team2"/; s/"view"/"cluster-admin"/' "$work/rb.json" |
    jane create -f - >"$work/out" 2>&1
check "escalation refused" grep -q 'user "jane" (groups=\["system:authenticated"\]) is attempting to grant RBAC permissions not currently held' "$work/out"
sed 's/jane-view/jane-view2/; s/"team"/"team2"/' "$work/rb.json" | jane create -f - >"$work/out" 2>&1
check "binding a role she holds is allowed" grep -q "jane-view2 created" "$work/out"

# --- bad credentials: 401 ---
code=$(curl -s -o "$work/body" -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer garbage" "$url/api/v1/pods")
check "garbage token: 401" [ "$code" = 401 ]
check "garbage token: Unauthorized Status" grep -q '"reason": *"Unauthorized"' "$work/body"  # curl's answers are pretty
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer garbage" "$url/readyz")
check "garbage token on /readyz: 401 too" [ "$code" = 401 ]
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=intruder/O=system:masters" -keyout "$work/other.key" -out "$work/other.crt" 2>/dev/null
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" --cert "$work/other.crt" --key "$work/other.key" "$url/api/v1/pods")
check "client certificate of another CA: 401" [ "$code" = 401 ]
curl -s --cacert "$work/other.crt" "$url/readyz" >/dev/null 2>&1
check "a client that does not trust the server's CA fails to connect" [ $? -eq 60 ]

# --- anonymous ---
check "anonymous /readyz" [ "$(curl -s --cacert "$ca" "$url/readyz")" = ok ]
check "anonymous /version" sh -c "curl -s --cacert '$ca' '$url/version' | grep -q gitVersion"
curl -s --cacert "$ca" "$url/api/v1/pods" >"$work/body"
check "anonymous list: 403 naming system:anonymous" grep -q 'User \\"system:anonymous\\" cannot list resource \\"pods\\" in API group \\"\\" at the cluster scope' "$work/body"
code=$(kurl -o /dev/null -w '%{http_code}' "$url/metrics")
check "the admin reads /metrics" [ "$code" = 200 ]

# --- the Python client with verification on ---
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then
    /usr/bin/python3 - "$KUBECONFIG" >"$work/out" 2>&1 <<'EOF'
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
assert client.Configuration.get_default_copy().verify_ssl
print(sorted(ns.metadata.name for ns in client.CoreV1Api().list_namespace().items))
EOF
    check "Python client over verified TLS" grep -q "'team'" "$work/out"
fi

# --- --anonymous-auth=false ---
stop_server
start_server --token-auth-file "$work/tokens.csv" --anonymous-auth=false
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" "$url/api/v1/pods")
check "--anonymous-auth=false: anonymous list is 401" [ "$code" = 401 ]
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer jane-token" "$url/api/v1/namespaces/team/pods")
check "the binding survives a restart" [ "$code" = 200 ]
check "the bootstrap roles are reused" sh -c "kubectl get clusterrole view -o name | grep -q clusterrole"

# --- a serving certificate of one's own (--tls-cert-file, --tls-private-key-file) ---
stop_server
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=own-serving" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$work/own.key" -out "$work/own.crt" 2>/dev/null
"$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$port" --data-dir "$work/data" --store "$store" \
    --tls-cert-file "$work/own.crt" --tls-private-key-file "$work/own.key" \
    >>"$work/server.out" 2>>"$work/server.err" &
server_pid=$!
i=0
until [ "$(curl -s -m 10 --cacert "$work/own.crt" "$url/readyz" 2>/dev/null)" = ok ] || [ $i -gt 100 ]; do
    sleep 0.1; i=$((i + 1))
done
check "the server presents the certificate given by flag" [ "$(curl -s --cacert "$work/own.crt" "$url/readyz")" = ok ]
check "the generated CA no longer verifies it" sh -c "! curl -s --cacert '$ca' '$url/readyz' >/dev/null 2>&1"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/own.crt" --cert "$work/data/pki/admin.crt" \
    --key "$work/data/pki/admin.key" "$url/api/v1/namespaces")
check "client certificates of the generated CA still authenticate" [ "$code" = 200 ]

finish
