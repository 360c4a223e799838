#!/bin/sh
# test_auth_tokens.sh - ServiceAccount tokens, impersonation and the reviews end
# to end: the serviceaccount controller's `default` accounts; TokenRequest
# (serviceaccounts/NAME/token) issuing a token that authenticates until it
# expires, is refused for another audience and once its account is deleted and
# made again; an expired and a not-yet-expired token minted with the server's
# key; an expired client certificate of the right CA; impersonation with
# kubectl --as (allowed for the admin, Kubernetes' 403 for others, allowed once
# granted the impersonate verb); SelfSubjectReview, TokenReview,
# SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview and
# SelfSubjectRulesReview over
# JSON and with the Python client. kubectl's create token, auth whoami and
# auth can-i send protobuf bodies: while the server answers those 415 the
# kubectl checks are skipped with a visible reason.
#
# Usage: test_auth_tokens.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# jgrep PATTERN FILE: grep in the JSON of FILE written compactly (curl gets indented JSON)
jgrep() { /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' "$2" | grep -q "$1"; }

printf 'jane-token,jane,1001\nops-token,ops,1002,"ops"\n' >"$work/tokens.csv"
start_server --token-auth-file "$work/tokens.csv"
kubectl config set-credentials nobody >/dev/null
jane() { kubectl --request-timeout=20s --token=jane-token --user=nobody "$@"; }
post() { # post PATH JSON [CURL ARGS...]: POST as the admin, the answer on stdout
    p=$1; d=$2; shift 2
    kurl -X POST -H 'Content-Type: application/json' "$url$p" -d "$d" "$@"
}
field() { /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if isinstance(v,list) else v.get(k)
print(json.dumps(v) if not isinstance(v,str) else v)' "$1"; }
code_of() { curl -s -o "$work/body" -w '%{http_code}' --cacert "$ca" "$@"; }

# --- the serviceaccount controller ---
wait_sa() { i=0; until k -n "$1" get sa default >/dev/null 2>&1 || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done; }
wait_sa default
wait_sa kube-system
has_default_sa() { k -n "$1" get sa default >/dev/null 2>&1; }
check "default ServiceAccount in default" has_default_sa default
check "default ServiceAccount in kube-system" has_default_sa kube-system
k create namespace team --dry-run=client -o json | k create -f - >/dev/null
wait_sa team
check "default ServiceAccount in a new namespace" has_default_sa team
old_uid=$(k -n team get sa default -o jsonpath='{.metadata.uid}')
k -n team delete sa default >/dev/null
i=0
while [ "$(k -n team get sa default -o jsonpath='{.metadata.uid}' 2>/dev/null)" = "$old_uid" ] ||
    ! k -n team get sa default >/dev/null 2>&1; do
    [ $i -gt 100 ] && break; sleep 0.1; i=$((i + 1))
done
new_uid=$(k -n team get sa default -o jsonpath='{.metadata.uid}' 2>/dev/null)
check "a deleted default ServiceAccount is made again" [ -n "$new_uid" ] && [ "$new_uid" != "$old_uid" ]

# --- TokenRequest ---
printf '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bot","namespace":"team"}}' | k create -f - >/dev/null
post /api/v1/namespaces/team/serviceaccounts/bot/token '{"spec":{"expirationSeconds":600}}' >"$work/tr"
token=$(field status.token <"$work/tr")
check "TokenRequest answers a TokenRequest" [ "$(field kind <"$work/tr")" = TokenRequest ]
check "TokenRequest defaults the audience to the API server's" \
    [ "$(field spec.audiences.0 <"$work/tr")" = https://kubernetes.default.svc.cluster.local ]
check "TokenRequest sets the expiration timestamp" jgrep '"expirationTimestamp":"20' "$work/tr"
payload=$(printf '%s' "$token" | cut -d. -f2 | tr '_-' '/+')
while [ $(( ${#payload} % 4 )) -ne 0 ]; do payload="$payload="; done
printf '%s' "$payload" | base64 -d >"$work/claims" 2>/dev/null
check "the token has exp, aud and the kubernetes.io claims" \
    sh -c "grep -q '\"exp\":' '$work/claims' && grep -q '\"aud\":\[\"https://kubernetes.default.svc.cluster.local\"\]' '$work/claims' && grep -q '\"kubernetes.io\":{\"namespace\":\"team\",\"serviceaccount\":{\"name\":\"bot\"' '$work/claims'"
post /api/v1/namespaces/team/serviceaccounts/bot/token '{"spec":{"expirationSeconds":60}}' >"$work/out"
check "TokenRequest under 10 minutes: Kubernetes' 422" grep -q 'spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes' "$work/out"
code=$(kurl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces/team/serviceaccounts/nosuch/token" -d '{}')
check "TokenRequest for a missing account: 404" [ "$code" = 404 ]

code=$(code_of -H "Authorization: Bearer $token" "$url/api/v1/namespaces/team/pods")
check "the bot's token authenticates (403: bot has no rights yet)" [ "$code" = 403 ]
check "... as system:serviceaccount:team:bot" grep -q 'User \\"system:serviceaccount:team:bot\\" cannot list resource \\"pods\\"' "$work/body"
k create -f - >/dev/null <<EOF
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
 "metadata": {"name": "bot-view", "namespace": "team"},
 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
 "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}
EOF
code=$(code_of -H "Authorization: Bearer $token" "$url/api/v1/namespaces/team/pods")
check "the bot's token lists pods once bound to view" [ "$code" = 200 ]

post /api/v1/namespaces/team/serviceaccounts/bot/token '{"spec":{"audiences":["vault"]}}' >"$work/tr2"
other=$(field status.token <"$work/tr2")
code=$(code_of -H "Authorization: Bearer $other" "$url/api/v1/namespaces/team/pods")
check "a token for another audience: 401" [ "$code" = 401 ]
code=$(code_of -H "Authorization: Bearer garbage.garbage.garbage" "$url/api/v1/namespaces/team/pods")
check "a garbage token: 401" [ "$code" = 401 ]

# an expired token and a live one, minted with the server's key (RS256)
sa_uid=$(k -n team get sa bot -o jsonpath='{.metadata.uid}')
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
mint() { # mint EXP IAT: a token for team/bot signed with the server's key
    h=$(printf '{"alg":"RS256"}' | b64url)
    c=$(printf '{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":%s,"iat":%s,"nbf":%s,"iss":"https://kubernetes.default.svc.cluster.local","kubernetes.io":{"namespace":"team","serviceaccount":{"name":"bot","uid":"%s"}},"sub":"system:serviceaccount:team:bot"}' "$1" "$2" "$2" "$sa_uid" | b64url)
    s=$(printf '%s.%s' "$h" "$c" | openssl dgst -sha256 -sign "$work/data/pki/sa.key" -binary | b64url)
    printf '%s.%s.%s' "$h" "$c" "$s"
}
now=$(date +%s)
code=$(code_of -H "Authorization: Bearer $(mint $((now + 600)) "$now")" "$url/api/v1/namespaces/team/pods")
check "a token minted with the key, not expired: 200" [ "$code" = 200 ]
code=$(code_of -H "Authorization: Bearer $(mint $((now - 120)) $((now - 900)))" "$url/api/v1/namespaces/team/pods")
check "the same token expired (past the minute of leeway): 401" [ "$code" = 401 ]

# the account deleted and made again under the same name: its old tokens no longer work
k -n team delete sa bot >/dev/null
code=$(code_of -H "Authorization: Bearer $token" "$url/api/v1/namespaces/team/pods")
check "a deleted account's token: 401" [ "$code" = 401 ]
printf '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bot","namespace":"team"}}' | k create -f - >/dev/null
code=$(code_of -H "Authorization: Bearer $token" "$url/api/v1/namespaces/team/pods")
check "a token of an account since made again (uid mismatch): 401" [ "$code" = 401 ]

# --- an expired client certificate of the right CA ---
cat >"$work/ca.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = p
copy_extensions = none
[p]
commonName = supplied
organizationName = optional
EOF
: >"$work/index.txt"; echo 01 >"$work/serial"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=old-admin/O=system:masters" \
    -keyout "$work/old.key" -out "$work/old.csr" 2>/dev/null
# valid from just after the CA's start (backdated 5 minutes) until two minutes ago
ca_start=$(date -u -d "$(openssl x509 -in "$ca" -noout -startdate | cut -d= -f2)" +%s)
stamp() { date -u -d "@$1" +%Y%m%d%H%M%SZ; }
openssl ca -batch -config "$work/ca.cnf" -cert "$ca" -keyfile "$work/data/pki/ca.key" \
    -startdate "$(stamp $((ca_start + 10)))" -enddate "$(stamp $(($(date +%s) - 120)))" \
    -in "$work/old.csr" -out "$work/old.crt" >/dev/null 2>&1
check "made a certificate of the server's CA, valid until two minutes ago" \
    sh -c "openssl verify -CAfile '$ca' -attime $((ca_start + 30)) '$work/old.crt' >/dev/null"
code=$(code_of --cert "$work/old.crt" --key "$work/old.key" "$url/api/v1/namespaces")
check "an expired client certificate of the right CA: 401" [ "$code" = 401 ]

# --- impersonation ---
k --as=jane -n team get pods >"$work/out" 2>&1
check "kubectl --as=jane: the admin acts as jane (jane's 403)" grep -q 'User "jane" cannot list resource "pods" in API group "" in the namespace "team"' "$work/out"
k --as=system:serviceaccount:team:default -n team get pods >"$work/out" 2>&1
check "kubectl --as a service account" grep -q 'User "system:serviceaccount:team:default" cannot list' "$work/out"
jane --as=bob -n team get pods >"$work/out" 2>&1
check "jane may not impersonate: Kubernetes' 403" grep -q 'Error from server (Forbidden): users "bob" is forbidden: User "jane" cannot impersonate resource "users" in API group "" at the cluster scope' "$work/out"
jane --as=bob --as-group=devs -n team get pods >"$work/out" 2>&1
check "jane may not impersonate groups either" grep -q 'cannot impersonate resource "users"' "$work/out"
code=$(code_of -H "Authorization: Bearer jane-token" -H "Impersonate-Group: devs" "$url/api/v1/namespaces/team/pods")
check "a group without a user: 500 as Kubernetes answers" [ "$code" = 500 ] && grep -q 'without impersonating a user' "$work/body"
k create -f - >/dev/null <<EOF
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
 "metadata": {"name": "impersonate-bob"},
 "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}]}
EOF
k create -f - >/dev/null <<EOF
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
 "metadata": {"name": "jane-impersonates-bob"},
 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob"},
 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]}
EOF
jane --as=bob -n team get pods >"$work/out" 2>&1
check "jane granted impersonate on bob acts as bob" grep -q 'User "bob" cannot list resource "pods"' "$work/out"
jane --as=carol -n team get pods >"$work/out" 2>&1
check "... and only bob" grep -q 'users "carol" is forbidden: User "jane" cannot impersonate' "$work/out"

# --- the reviews over JSON ---
post /apis/authentication.k8s.io/v1/selfsubjectreviews '{}' -H 'Impersonate-User: jane' -H 'Impersonate-Group: devs' -H 'Impersonate-Extra-Reason: audit' >"$work/out"
self_review_of_jane() {
    jgrep '"username":"jane"' "$work/out" && jgrep '"groups":\["devs","system:authenticated"\]' "$work/out" &&
        jgrep '"reason":\["audit"\]' "$work/out"
}
check "SelfSubjectReview of an impersonated user" self_review_of_jane
post /apis/authentication.k8s.io/v1/selfsubjectreviews '{}' >"$work/out"
check "SelfSubjectReview of the admin" jgrep '"username":"kubernetes-admin","groups":\["system:masters","system:authenticated"\]' "$work/out"
post /apis/authentication.k8s.io/v1/tokenreviews '{"spec":{"token":"ops-token"}}' >"$work/out"
token_review_of_ops() { jgrep '"authenticated":true' "$work/out" && jgrep '"username":"ops"' "$work/out"; }
check "TokenReview of a static token" token_review_of_ops
post /apis/authentication.k8s.io/v1/tokenreviews '{"spec":{"token":"nope"}}' >"$work/out"
check "TokenReview of a bad token: not authenticated" sh -c "! grep -q '\"authenticated\":true' '$work/out' && grep -q '\"error\"' '$work/out'"
post /apis/authorization.k8s.io/v1/subjectaccessreviews '{"spec":{"user":"jane","resourceAttributes":{"verb":"impersonate","resource":"users","name":"bob"}}}' >"$work/out"
check "SubjectAccessReview: jane may impersonate bob" jgrep '"status":{"allowed":true' "$work/out"
post /apis/authorization.k8s.io/v1/subjectaccessreviews '{"spec":{"user":"jane","resourceAttributes":{"verb":"list","resource":"pods","namespace":"default"}}}' >"$work/out"
check "SubjectAccessReview: jane may not list pods in default" jgrep '"status":{"allowed":false' "$work/out"
post /apis/authorization.k8s.io/v1/subjectaccessreviews '{"spec":{}}' >"$work/out"
check "SubjectAccessReview without attributes or user: Kubernetes' 422" grep -q 'spec.user: Invalid value: \\"\\": at least one of user or group must be specified' "$work/out"
post /apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews '{"spec":{"user":"system:serviceaccount:team:bot","resourceAttributes":{"namespace":"team","verb":"list","resource":"pods"}}}' >"$work/out"
check "LocalSubjectAccessReview: the bot may list pods in team (view)" jgrep '"status":{"allowed":true' "$work/out"
post /apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews '{"spec":{"user":"jane","resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}}' >"$work/out"
check "LocalSubjectAccessReview in another namespace: Kubernetes' 400" grep -q 'spec.resourceAttributes.namespace must match namespace: team' "$work/out"
curl -s --cacert "$ca" -H "Authorization: Bearer jane-token" -X POST -H 'Content-Type: application/json' \
    "$url/apis/authorization.k8s.io/v1/selfsubjectrulesreviews" -d '{"spec":{"namespace":"team"}}' >"$work/out"
check "SelfSubjectRulesReview lists jane's impersonate rule" jgrep '"verbs":\["impersonate"\],"apiGroups":\[""\],"resources":\["users"\],"resourceNames":\["bob"\]' "$work/out"
code=$(kurl -o /dev/null -w '%{http_code}' "$url/apis/authorization.k8s.io/v1/subjectaccessreviews")
check "a review cannot be listed: 405" [ "$code" = 405 ]
kurl "$url/apis/authorization.k8s.io/v1" >"$work/out"
check "discovery lists only create for the reviews" jgrep '"name":"subjectaccessreviews","singularName":"subjectaccessreview","namespaced":false,"kind":"SubjectAccessReview","verbs":\["create"\]' "$work/out"

# --- the Python client (JSON bodies) ---
if /usr/bin/python3 -c 'import kubernetes' 2>/dev/null; then
    /usr/bin/python3 - "$KUBECONFIG" >"$work/out" 2>&1 <<'EOF'
import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
authz = client.AuthorizationV1Api()
r = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
    spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
        verb="delete", resource="nodes"))))
print("ssar", r.status.allowed)
t = client.CoreV1Api().create_namespaced_service_account_token("default", "team",
    client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["x"],
                                                                       expiration_seconds=3600)))
print("token", len(t.status.token.split(".")), t.spec.audiences)
EOF
    check "Python client: SelfSubjectAccessReview" grep -q "ssar True" "$work/out"
    check "Python client: TokenRequest" grep -q "token 3 \['x'\]" "$work/out"
else
    echo "SKIP: the Python client checks: no kubernetes module for /usr/bin/python3"
fi

# --- kubectl's own commands (protobuf bodies) ---
k -n team create token default >"$work/out" 2>&1
check "kubectl create token" sh -c "[ \$(tr -cd . <'$work/out' | wc -c) -eq 2 ]"
k auth whoami >"$work/out" 2>&1
check "kubectl auth whoami" grep -q "kubernetes-admin" "$work/out"
jane auth can-i list pods -n team >"$work/out" 2>&1
check "kubectl auth can-i (no)" grep -qx "no" "$work/out"
jane auth can-i --list -n team >"$work/out" 2>&1
check "kubectl auth can-i --list" grep -q "selfsubjectaccessreviews.authorization.k8s.io" "$work/out"

finish
