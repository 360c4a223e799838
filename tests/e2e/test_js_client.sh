#!/bin/sh
# test_js_client.sh - the official JavaScript client (@kubernetes/client-node,
# installed into build-js/ by scripts/install-js-client) with the kubeconfig
# `ckube server` writes: it lists namespaces over TLS with verification on
# (the client refuses plain HTTP unless told to skip verification), and
# refuses a server whose CA is not the kubeconfig's.
#
# Usage: test_js_client.sh PATH/TO/ckube PATH/TO/build-js
set -u
js=$2
if ! command -v node >/dev/null 2>&1 || [ ! -d "$js/node_modules/@kubernetes/client-node" ]; then
    echo "test_js_client: no node or no @kubernetes/client-node in $js (scripts/install-js-client); skipping" >&2
    exit 77
fi
set -- "$1" # lib.sh reads $2 as the store
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server

cat >"$work/list.mjs" <<'JS'
const k8s = await import(process.argv[2] + "/node_modules/@kubernetes/client-node/dist/index.js");
const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[3]);
if (kc.getCurrentCluster().skipTLSVerify) throw new Error("verification is off");
const core = kc.makeApiClient(k8s.CoreV1Api);
const list = await core.listNamespace();
console.log(list.items.map((ns) => ns.metadata.name).sort().join(" "));
JS
node "$work/list.mjs" "$js" "$KUBECONFIG" >"$work/out" 2>&1
check "JavaScript client lists namespaces over verified TLS" grep -q "default kube-node-lease kube-public kube-system" "$work/out"

# the same kubeconfig with another CA: the client must refuse the server
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=other-ca" -keyout "$work/other.key" -out "$work/other.crt" 2>/dev/null
other=$(base64 -w0 "$work/other.crt")
sed "s|\"certificate-authority-data\": \"[^\"]*\"|\"certificate-authority-data\": \"$other\"|" \
    "$KUBECONFIG" >"$work/wrong-ca"
node "$work/list.mjs" "$js" "$work/wrong-ca" >"$work/out" 2>&1
check "JavaScript client refuses a server its CA did not sign" sh -c "! grep -q kube-system '$work/out'"
finish
