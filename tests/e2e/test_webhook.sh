#!/bin/sh
# test_webhook.sh - admission webhooks with the real kubectl against a real `ckube
# server` and a real HTTPS webhook (tests/e2e/webhook_server.py, its certificate made
# here with openssl): a ValidatingWebhookConfiguration that refuses labelled objects
# (Kubernetes' words checked), one that refuses without a message, a
# MutatingWebhookConfiguration whose JSONPatch adds a label (seen on the stored object),
# namespace and object selectors, matchConditions (CEL), reinvocation, a webhook reached through a Service and
# its EndpointSlice, the credentials of the plugins' kubeConfigFile, discovery, failurePolicy
# Ignore and Fail when the webhook is down, and dry runs (sideEffects None is called
# with dryRun: true).
#
# Usage: test_webhook.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_webhook webhook_server.py webhook hook.hooks.svc
hook="https://127.0.0.1:$hook_port"

start_server --controllers=-* --disable-admission-plugins ServiceAccount

# webhook_config KIND NAME HOOKNAME PATH [EXTRA JSON MEMBERS]: a configuration of one webhook
# calling $hook/PATH about configmaps
webhook_config() {
    cat <<EOT
{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "$1", "metadata": {"name": "$2"},
 "webhooks": [{"name": "$3", "clientConfig": {"url": "$hook$4", "caBundle": "$cabundle"},
   "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["configmaps"]}],
   "sideEffects": "None", "admissionReviewVersions": ["v1"]${5:-}}]}
EOT
}

# --- the kinds ---
webhook_config ValidatingWebhookConfiguration deny deny.example.com /deny | k apply -f - >"$work/out" 2>&1
check "a ValidatingWebhookConfiguration is created" grep -q 'validatingwebhookconfiguration.admissionregistration.k8s.io/deny created' "$work/out"
k get validatingwebhookconfigurations >"$work/out" 2>&1
check "kubectl get shows NAME WEBHOOKS AGE" sh -c "head -1 '$work/out' | grep -Eq '^NAME +WEBHOOKS +AGE' && grep -Eq '^deny +1 ' '$work/out'"
check "the v1 defaults are stored" sh -c \
    '[ "$(kubectl get validatingwebhookconfiguration deny -o jsonpath="{.webhooks[0].failurePolicy}/{.webhooks[0].matchPolicy}/{.webhooks[0].timeoutSeconds}/{.webhooks[0].rules[0].scope}")" = "Fail/Equivalent/10/*" ]'
webhook_config ValidatingWebhookConfiguration bad bad /x ', "timeoutSeconds": 31' |
    sed 's|"url": "https:|"url": "http:|' | k apply -f - >"$work/out" 2>&1
check "an invalid configuration: the webhook name" grep -q 'webhooks\[0\].name: Invalid value: "bad": should be a domain with at least three segments separated by dots' "$work/out"
check "an invalid configuration: the URL scheme" grep -q "webhooks\[0\].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme" "$work/out"
check "an invalid configuration: the timeout" grep -q 'webhooks\[0\].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds' "$work/out"

k api-resources --api-group=admissionregistration.k8s.io >"$work/out" 2>&1
check "discovery lists both kinds" sh -c "grep -Eq '^mutatingwebhookconfigurations +admissionregistration.k8s.io/v1 +false +MutatingWebhookConfiguration' '$work/out' &&
    grep -Eq '^validatingwebhookconfigurations +admissionregistration.k8s.io/v1 +false +ValidatingWebhookConfiguration' '$work/out'"

# --- a validating webhook ---
k create configmap plain --from-literal=a=b >"$work/out" 2>&1
check "an object the webhook allows is created" grep -q 'configmap/plain created' "$work/out"
check "the webhook was asked with an AdmissionReview v1" python3 -c '
import json, sys
rs = [json.loads(l)["review"] for l in open(sys.argv[1])]
r = [x for x in rs if x["request"].get("name") == "plain"][0]
q = r["request"]
assert r["apiVersion"] == "admission.k8s.io/v1" and r["kind"] == "AdmissionReview", r
assert q["operation"] == "CREATE" and q["namespace"] == "default", q
assert q["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}, q["kind"]
assert q["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}, q["resource"]
assert q["userInfo"]["username"], q["userInfo"]
assert "system:masters" in q["userInfo"].get("groups", []), q["userInfo"]
assert q["object"]["data"] == {"a": "b"} and q["dryRun"] is False and q["oldObject"] is None, q
' "$work/reviews.log"
k create configmap refused --from-literal=a=b -o yaml --dry-run=client | sed 's/^metadata:/metadata:\n  labels:\n    deny: "yes"/' |
    k create -f - >"$work/out" 2>&1
check "the webhook refuses, in Kubernetes' words" grep -q \
    'admission webhook "deny.example.com" denied the request: objects labelled deny=yes are refused (refused)' "$work/out"
check "a refused object is not stored" sh -c '! kubectl get configmap refused >/dev/null 2>&1'
k label configmap plain deny=yes >"$work/out" 2>&1
check "an update that adds the label is refused too" grep -q 'denied the request: objects labelled deny=yes are refused (plain)' "$work/out"
k create configmap odd --from-literal=a=b --dry-run=client -o yaml | k label -f - --local warn=yes -o yaml |
    k create -f - >"$work/out" 2>&1
check "the webhook's warning reaches kubectl" sh -c "grep -q 'configmap/odd created' '$work/out' &&
    grep -q '^Warning: odd looks suspicious' '$work/out'"
k delete validatingwebhookconfiguration deny >/dev/null 2>&1

webhook_config ValidatingWebhookConfiguration silent silent.example.com /silent | k apply -f - >/dev/null 2>&1
k create configmap quiet --from-literal=a=b >"$work/out" 2>&1
check "a refusal without a message" grep -q 'admission webhook "silent.example.com" denied the request without explanation' "$work/out"
k delete validatingwebhookconfiguration silent >/dev/null 2>&1

webhook_config ValidatingWebhookConfiguration coded coded.example.com /coded | k apply -f - >/dev/null 2>&1
k create configmap coded --from-literal=a=b --dry-run=client -o yaml | k create -f - >"$work/out" 2>&1
check "a refusal with the webhook's own code (403)" sh -c "grep -q 'Error from server (Forbidden)' '$work/out' &&
    grep -q 'admission webhook \"coded.example.com\" denied the request: not today' '$work/out'"
k delete validatingwebhookconfiguration coded >/dev/null 2>&1

# --- selectors: a webhook that refuses everything, asked only where its selectors match ---
k create namespace watched >/dev/null 2>&1
k label namespace watched hook=on >/dev/null 2>&1
webhook_config ValidatingWebhookConfiguration by-ns ns.example.com /silent \
    ', "namespaceSelector": {"matchLabels": {"hook": "on"}}' | k apply -f - >/dev/null 2>&1
k create configmap outside --from-literal=a=b >"$work/out" 2>&1
check "namespaceSelector: a namespace without the label is not asked" grep -q 'configmap/outside created' "$work/out"
k create configmap inside -n watched --from-literal=a=b >"$work/out" 2>&1
check "namespaceSelector: a namespace with the label is asked" grep -q 'admission webhook "ns.example.com" denied the request without explanation' "$work/out"
k delete validatingwebhookconfiguration by-ns >/dev/null 2>&1
webhook_config ValidatingWebhookConfiguration by-obj obj.example.com /silent \
    ', "objectSelector": {"matchLabels": {"check": "yes"}}' | k apply -f - >/dev/null 2>&1
k create configmap unchecked --from-literal=a=b >"$work/out" 2>&1
check "objectSelector: an object without the label is not asked" grep -q 'configmap/unchecked created' "$work/out"
k label configmap unchecked check=yes >"$work/out" 2>&1
check "objectSelector: an update that adds the label is asked" grep -q 'admission webhook "obj.example.com" denied the request without explanation' "$work/out"
k delete validatingwebhookconfiguration by-obj >/dev/null 2>&1

# --- matchConditions (CEL): the webhook is asked only when every condition is true ---
webhook_config ValidatingWebhookConfiguration by-cel cel.example.com /silent \
    ', "matchConditions": [{"name": "named-checked", "expression": "object.metadata.name.startsWith(\"checked\")"},
                           {"name": "by-create", "expression": "request.operation == \"CREATE\""}]' |
    k apply -f - >/dev/null 2>&1
k create configmap spared --from-literal=a=b >"$work/out" 2>&1
check "matchConditions: a false condition spares the call" grep -q 'configmap/spared created' "$work/out"
k create configmap checked-1 --from-literal=a=b >"$work/out" 2>&1
check "matchConditions: all true, the webhook is asked" grep -q 'admission webhook "cel.example.com" denied the request without explanation' "$work/out"
k delete validatingwebhookconfiguration by-cel >/dev/null 2>&1
webhook_config ValidatingWebhookConfiguration cel-error cel-error.example.com /silent \
    ', "matchConditions": [{"name": "reads-data", "expression": "object.data.missing == \"x\""}]' |
    k apply -f - >/dev/null 2>&1
k create configmap erring --from-literal=a=b >"$work/out" 2>&1
check "matchConditions: an error under failurePolicy Fail refuses, in Kubernetes' words" grep -qF \
    "configmaps \"erring\" is forbidden: expression 'object.data.missing == \"x\"' resulted in error: no such key: missing" \
    "$work/out"
webhook_config ValidatingWebhookConfiguration cel-error cel-error.example.com /silent \
    ', "failurePolicy": "Ignore", "matchConditions": [{"name": "reads-data", "expression": "object.data.missing == \"x\""}]' |
    k apply -f - >/dev/null 2>&1
k create configmap erring --from-literal=a=b >"$work/out" 2>&1
check "matchConditions: an error under Ignore skips the webhook" grep -q 'configmap/erring created' "$work/out"
k delete validatingwebhookconfiguration cel-error >/dev/null 2>&1
webhook_config ValidatingWebhookConfiguration cel-bad cel-bad.example.com /silent \
    ', "matchConditions": [{"name": "broken", "expression": "object.metadata.name =="}]' |
    k apply -f - >"$work/out" 2>&1
check "matchConditions: an expression that does not compile is refused when written" grep -qF \
    'webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:' \
    "$work/out"

# --- a mutating webhook ---
webhook_config MutatingWebhookConfiguration label label.example.com /label | k apply -f - >/dev/null 2>&1
k create configmap mutated --from-literal=a=b >/dev/null 2>&1
check "the webhook's JSONPatch is applied to the stored object" sh -c \
    '[ "$(kubectl get configmap mutated -o jsonpath={.metadata.labels.mutated})" = yes ]'
k create configmap dry --from-literal=a=b --dry-run=server -o jsonpath='{.metadata.labels.mutated}' >"$work/out" 2>&1
check "a dry run calls a webhook of sideEffects None, which mutates its answer" grep -qx yes "$work/out"
check "the dry run was sent as one (dryRun: true)" python3 -c '
import json, sys
rs = [json.loads(l)["review"]["request"] for l in open(sys.argv[1])]
assert [r["dryRun"] for r in rs if r.get("name") == "dry"] == [True], rs[-1]
' "$work/reviews.log"
check "nothing was stored by the dry run" sh -c '! kubectl get configmap dry >/dev/null 2>&1'
k delete mutatingwebhookconfiguration label >/dev/null 2>&1

# reinvocation: a-count (IfNeeded) runs first; z-label changes the object after it,
# so a-count is called once more (its second call adds count-2)
webhook_config MutatingWebhookConfiguration a-count count.example.com /count ', "reinvocationPolicy": "IfNeeded"' | k apply -f - >/dev/null 2>&1
webhook_config MutatingWebhookConfiguration z-label label.example.com /label | k apply -f - >/dev/null 2>&1
k create configmap again --from-literal=a=b >/dev/null 2>&1
check "an IfNeeded webhook is called again after a later webhook changed the object" sh -c \
    '[ "$(kubectl get configmap again -o jsonpath={.metadata.labels.count-1}/{.metadata.labels.count-2}/{.metadata.labels.mutated})" = yes/yes/yes ]'
k delete mutatingwebhookconfiguration a-count z-label >/dev/null 2>&1

# --- through a Service and its EndpointSlice ---
k create namespace hooks >/dev/null 2>&1
cat <<EOT | k apply -f - >"$work/out" 2>&1
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook", "namespace": "hooks"},
  "spec": {"ports": [{"name": "https", "port": 443, "targetPort": $hook_port}]}},
 {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "hook-1", "namespace": "hooks", "labels": {"kubernetes.io/service-name": "hook"}},
  "addressType": "IPv4", "ports": [{"name": "https", "port": $hook_port, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}]}
EOT
webhook_config MutatingWebhookConfiguration svc svc.example.com /label |
    python3 -c 'import json,sys; c=json.load(sys.stdin); cc=c["webhooks"][0]["clientConfig"]; del cc["url"]; cc["service"]={"namespace":"hooks","name":"hook","path":"/label"}; print(json.dumps(c))' |
    k apply -f - >/dev/null 2>&1
k create configmap via-service --from-literal=a=b >"$work/out" 2>&1
check "a webhook reached through its service (TLS name hook.hooks.svc)" sh -c \
    '[ "$(kubectl get configmap via-service -o jsonpath={.metadata.labels.mutated})" = yes ]'
k delete mutatingwebhookconfiguration svc >/dev/null 2>&1

# --- the credentials of the plugins' kubeConfigFile ---
# ValidatingAdmissionWebhook's kubeconfig: its user named after the webhook's host:port,
# else a "*." suffix (without the port when it is 443), else "*"; MutatingAdmissionWebhook
# has none, so its calls carry no credentials
stop_server
mkdir -p "$work/admission"
printf 'svc-token\n' >"$work/admission/svc.token"
cat >"$work/admission/webhooks.kubeconfig" <<EOT
apiVersion: v1
kind: Config
users:
- name: "127.0.0.1:$hook_port"
  user: {token: exact-token}
- name: "*.svc"
  user: {tokenFile: svc.token}
- name: "*"
  user: {token: star-token}
EOT
# admission_config PLUGIN KUBECONFIG: an AdmissionConfiguration giving PLUGIN that kubeConfigFile
admission_config() {
    cat <<EOT
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: $1
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: "$2"
EOT
}
admission_config ValidatingAdmissionWebhook "$work/admission/webhooks.kubeconfig" >"$work/admission/config.yaml"
start_server --controllers=-* --disable-admission-plugins ServiceAccount \
    --admission-control-config-file "$work/admission/config.yaml"
webhook_config ValidatingWebhookConfiguration auth-url url.example.com /deny | k apply -f - >/dev/null 2>&1
webhook_config ValidatingWebhookConfiguration auth-svc svc.example.com /deny |
    python3 -c 'import json,sys; c=json.load(sys.stdin); cc=c["webhooks"][0]["clientConfig"]; del cc["url"]; cc["service"]={"namespace":"hooks","name":"hook","path":"/deny"}; print(json.dumps(c))' |
    k apply -f - >/dev/null 2>&1
webhook_config MutatingWebhookConfiguration auth-mutating mutating.example.com /label | k apply -f - >/dev/null 2>&1
k create configmap with-credentials --from-literal=a=b >"$work/out" 2>&1
check "the webhooks present their kubeconfig users' tokens" python3 -c '
import json, sys
seen = {}
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["review"]["request"].get("name") == "with-credentials":
        seen.setdefault(e["path"].split("?")[0], []).append(e["authorization"])
assert sorted(seen["/deny"]) == ["Bearer exact-token", "Bearer svc-token"], seen
assert seen["/label"] == [None], seen
' "$work/reviews.log"
k delete validatingwebhookconfiguration auth-url auth-svc >/dev/null 2>&1
k delete mutatingwebhookconfiguration auth-mutating >/dev/null 2>&1
admission_config MutatingAdmissionWebhook webhooks.kubeconfig >"$work/admission/relative.yaml"
timeout 30 "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$(free_port)" --data-dir "$work/data2" \
    --store "sqlite://$work/data2.db" --admission-control-config-file "$work/admission/relative.yaml" \
    >"$work/refused.out" 2>&1
check "a relative kubeConfigFile stops the start" grep -qF \
    'couldn'"'"'t init admission plugin "MutatingAdmissionWebhook": kubeConfigFile: Invalid value: "webhooks.kubeconfig": must be an absolute file path' \
    "$work/refused.out"

# --- the webhook is down ---
stop_hook
webhook_config ValidatingWebhookConfiguration down-ignore ignore.example.com /deny ', "failurePolicy": "Ignore"' | k apply -f - >/dev/null 2>&1
k create configmap while-down --from-literal=a=b >"$work/out" 2>&1
check "failurePolicy Ignore: the request passes while the webhook is down" grep -q 'configmap/while-down created' "$work/out"
# (this one asks about every request of every resource)
webhook_config ValidatingWebhookConfiguration down-fail fail.example.com /deny |
    python3 -c 'import json,sys; c=json.load(sys.stdin); c["webhooks"][0]["rules"]=[{"operations":["*"],"apiGroups":["*"],"apiVersions":["*"],"resources":["*/*"]}]; print(json.dumps(c))' |
    k apply -f - >/dev/null 2>&1
k create configmap refused-down --from-literal=a=b >"$work/out" 2>&1
check "failurePolicy Fail: a 500 in Kubernetes' words" grep -q \
    "Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:$hook_port/deny?timeout=10s\"" "$work/out"
check "nothing stored when the call failed" sh -c '! kubectl get configmap refused-down >/dev/null 2>&1'
k label namespace watched more=yes >"$work/out" 2>&1
check "failurePolicy Fail on every resource: a namespace update is refused too" grep -q 'failed calling webhook "fail.example.com"' "$work/out"
k delete validatingwebhookconfiguration down-fail >"$work/out" 2>&1
check "the configurations themselves never pass webhooks (a broken one can be removed)" grep -q 'validatingwebhookconfiguration.admissionregistration.k8s.io "down-fail" deleted' "$work/out"
k label namespace watched more=yes >"$work/out" 2>&1
check "once it is removed, writes pass again" grep -q 'namespace/watched labeled' "$work/out"

finish
