#!/bin/sh
# test_agent_serviceaccount.sh - a pod's ServiceAccount credentials end to end with
# `ckube agent --container-runtime process` acting as its node (system:node:n1): the
# pod's kube-api-access-* volume is written in its directory with `token` (a JWT whose
# claims bind it to the pod: kubernetes.io.pod.name and .uid, the account default),
# `ca.crt` (the server's CA, from kube-root-ca.crt) and `namespace`; the token
# authenticates: a SelfSubjectReview with it answers system:serviceaccount:NS:default;
# the container's environment has KUBERNETES_SERVICE_HOST/PORT(_HTTPS). With
# --sync-frequency 1s a ConfigMap volume follows its ConfigMap's change (and keeps its
# last content when the ConfigMap goes) while the token is not asked again. The node gets
# tokens only bound to its own pods (a pod on another node, another uid, no pod: 403).
# No process is left behind.
#
# Usage: test_agent_serviceaccount.sh PATH/TO/ckube [STORE_URL]
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
root="$work/agent-root"
mkdir -p "$root"
process_pods=1
start_server
"$ckube" certs client --data-dir "$work/data" --cn system:node:n1 --org system:nodes \
    --kubeconfig "$work/n1.kubeconfig" --server "$url" >/dev/null 2>&1
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
"$ckube" agent --container-runtime process --kubeconfig "$work/n1.kubeconfig" --node-name n1 \
    --root-dir "$root" --port "$agent_port" --sync-frequency 1s \
    >>"$work/agent.out" 2>>"$work/agent.err" &
agent_pid=$!

k create namespace team >/dev/null
k create configmap greeting -n team --from-literal=word=hello >/dev/null
python3 - "$work" <<'PY' | k create -n team -f - >/dev/null
import json, sys
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
  "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 1000"],
    "env": [{"name": "CKUBE_E2E_MARK", "value": sys.argv[1]}],
    "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}],
   "volumes": [{"name": "cfg", "configMap": {"name": "greeting"}}]}}))
PY
check "the pod runs" sh -c "kubectl wait pod/client -n team --for=jsonpath='{.status.phase}=Running' --timeout=60s >/dev/null"
uid=$(k get pod client -n team -o jsonpath='{.metadata.uid}')
vol=$(k get pod client -n team -o jsonpath='{.spec.volumes[?(@.projected)].name}')
dir="$root/pods/$uid/volumes/$vol"
check "the volume is $vol, a kube-api-access one" sh -c "echo '$vol' | grep -Eq '^kube-api-access-[a-z0-9]{5}$'"
check "the token file exists ($(tail -n 3 "$work/agent.err"))" test -s "$dir/token"
check "ca.crt is the server's CA" cmp -s "$dir/ca.crt" "$ca"
check "namespace is the pod's" test "$(cat "$dir/namespace" 2>/dev/null)" = team
python3 - "$dir/token" "$uid" >"$work/claims.check" 2>&1 <<'PY'
import base64, json, sys
token = open(sys.argv[1]).read()
payload = token.split(".")[1]
claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
assert claims["sub"] == "system:serviceaccount:team:default", claims
k8s = claims["kubernetes.io"]
assert k8s["namespace"] == "team", k8s
assert k8s["pod"] == {"name": "client", "uid": sys.argv[2]}, k8s
assert k8s["serviceaccount"]["name"] == "default", k8s
assert claims["exp"] - claims["iat"] >= 3600, claims
PY
check "the token is a JWT bound to the pod ($(cat "$work/claims.check"))" [ ! -s "$work/claims.check" ]
# the token authenticates as the pod's account
curl -s --cacert "$ca" -H "Authorization: Bearer $(cat "$dir/token" 2>/dev/null)" \
    -H 'Content-Type: application/json' -X POST \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
    "$url/apis/authentication.k8s.io/v1/selfsubjectreviews" >"$work/review.json"
check "the token is answered as system:serviceaccount:team:default ($(cat "$work/review.json"))" \
    grep -q '"username": *"system:serviceaccount:team:default"' "$work/review.json"
# the node may ask tokens only bound to its own pods (NodeRestriction)
node_token() { # node_token BOUND_OBJECT_REF_JSON: the answer to n1's TokenRequest for team/default
    curl -s --cacert "$ca" --cert "$work/data/pki/system-node-n1.crt" --key "$work/data/pki/system-node-n1.key" \
        -H 'Content-Type: application/json' -X POST \
        -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"boundObjectRef\":$1}}" \
        "$url/api/v1/namespaces/team/serviceaccounts/default/token"
}
node_token "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"client\",\"uid\":\"$uid\"}" >"$work/tr.json"
check "the node gets a token bound to its pod ($(head -c 200 "$work/tr.json"))" grep -q '"token"' "$work/tr.json"
node_token 'null' >"$work/tr.json"
check "a token not bound to a pod is refused the node ($(head -c 300 "$work/tr.json"))" \
    grep -q 'node requested token not bound to a pod' "$work/tr.json"
k run elsewhere -n team --image=busybox --restart=Never --overrides='{"spec":{"nodeName":"n2"}}' >/dev/null
node_token '{"apiVersion":"v1","kind":"Pod","name":"elsewhere"}' >"$work/tr.json"
check "a token bound to another node's pod is refused ($(head -c 300 "$work/tr.json"))" \
    grep -q 'bound to a pod scheduled on a different node' "$work/tr.json"
node_token "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"client\",\"uid\":\"not-$uid\"}" >"$work/tr.json"
check "a token bound to another uid is refused ($(head -c 300 "$work/tr.json"))" \
    grep -q 'does not match the UID in record' "$work/tr.json"

# the volumes are written again every --sync-frequency (1 s here): a ConfigMap's change
# reaches the running pod, while the token stays the one asked for until it is past 80%
# of its life (an hour here), not one new token a resync
token_before=$(cat "$dir/token" 2>/dev/null)
k patch configmap greeting -n team -p '{"data":{"word":"bonjour"}}' >/dev/null
poll "a ConfigMap's change reaches the running pod's volume" \
    sh -c "[ \"\$(cat '$root/pods/$uid/volumes/cfg/word' 2>/dev/null)\" = bonjour ]"
sleep 2
check "the token is kept across resyncs (the token manager's cache)" \
    test "$(cat "$dir/token" 2>/dev/null)" = "$token_before"
k delete configmap greeting -n team >/dev/null
sleep 2
check "a ConfigMap gone keeps what was last written" \
    test "$(cat "$root/pods/$uid/volumes/cfg/word" 2>/dev/null)" = bonjour

# the kubernetes Service's variables, as the kubelet gives its master service's
svc_ip=$(k get service kubernetes -n default -o jsonpath='{.spec.clusterIP}')
pid=$(leftovers | head -n 1)
envs=$( { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null)
check "KUBERNETES_SERVICE_HOST is the kubernetes Service's IP" \
    sh -c "echo '$envs' | grep -qx 'KUBERNETES_SERVICE_HOST=$svc_ip'"
check "KUBERNETES_SERVICE_PORT and _PORT_HTTPS are 443" \
    sh -c "echo '$envs' | grep -qx 'KUBERNETES_SERVICE_PORT=443' && echo '$envs' | grep -qx 'KUBERNETES_SERVICE_PORT_HTTPS=443'"
k delete pod client -n team --wait=false >/dev/null
stop_agent
kill_leftovers
finish
