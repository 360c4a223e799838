#!/bin/sh
# test_crd_gateway_api.sh - a published CustomResourceDefinition full of CEL rules, the
# Gateway API's HTTPRoute (v1.2.1, standard channel: 74 x-kubernetes-validations rules
# per version; tests/data/gateway-api/, provenance in tests/data/README.md), with the
# real kubectl on a real `ckube server`: the definition is accepted and established, a
# route as the Gateway API's documentation writes one is created, and routes that break
# its rules are refused with the rule's message at its field, as kube-apiserver 1.32
# refuses them: a path that is not absolute and one with '//' (rules on a match's path,
# a regular expression among them), two references to one parent without sectionName
# (`self.all` over `self.all`, `__namespace__` escaping), a backend timeout longer than
# the request's (`duration()` comparison), two RequestHeaderModifier filters, and a filter
# whose type does not match its member; an update that breaks a rule is refused too.
#
# Usage: test_crd_gateway_api.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-*

crd=httproutes.gateway.networking.k8s.io
k apply --server-side -f "$here/../data/gateway-api/httproutes.yaml" >"$work/out" 2>&1
check "the HTTPRoute definition is accepted ($(cat "$work/out"))" grep -q "$crd serverside-applied" "$work/out"
wait_for "the definition is established" "crd/$crd" '{.status.conditions[?(@.type=="Established")].status}=True'

# route NAME RULE [PARENTS]: an HTTPRoute's manifest (JSON): its parentRefs PARENTS (else
# the Gateway gw), one rule RULE
one_parent='[{"name": "gw"}]'
route() {
    parents=${3:-$one_parent}
    printf '{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "%s"}, "spec": {"parentRefs": %s, "hostnames": ["example.com"],
        "rules": [%s]}}\n' "$1" "$parents" "$2"
}
# refused NAME RULE PARENTS WANT: the route is refused, kubectl saying exactly WANT
refused() {
    route "$1" "$2" "${3:-}" | k create -f - >"$work/out" 2>&1
    check "$1 is refused as kube-apiserver refuses it ($(cat "$work/out"))" grep -qxF "$4" "$work/out"
}
match='{"path": {"type": "PathPrefix", "value": "/api"}, "headers": [{"name": "x-env", "value": "canary"}]}'
backends='[{"name": "api", "port": 8080, "weight": 90}, {"name": "api-canary", "port": 8080, "weight": 10}]'

route good "{\"matches\": [$match], \"filters\": [{\"type\": \"RequestHeaderModifier\",
    \"requestHeaderModifier\": {\"add\": [{\"name\": \"x-a\", \"value\": \"b\"}]}}],
    \"timeouts\": {\"request\": \"10s\", \"backendRequest\": \"2s\"}, \"backendRefs\": $backends}" |
    k create -f - >"$work/out" 2>&1
check "a route as the documentation writes one is created ($(cat "$work/out"))" \
    grep -qx 'httproute.gateway.networking.k8s.io/good created' "$work/out"

refused relative '{"matches": [{"path": {"type": "PathPrefix", "value": "api"}}]}' "" \
    "The HTTPRoute \"relative\" is invalid: spec.rules[0].matches[0].path: Invalid value: \"object\": value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"
refused double-slash '{"matches": [{"path": {"type": "Exact", "value": "/a//b"}}]}' "" \
    "The HTTPRoute \"double-slash\" is invalid: spec.rules[0].matches[0].path: Invalid value: \"object\": must not contain '//' when type one of ['Exact', 'PathPrefix']"
refused same-parent "{\"backendRefs\": $backends}" '[{"name": "gw", "sectionName": "http"}, {"name": "gw"}]' \
    'The HTTPRoute "same-parent" is invalid: spec.parentRefs: Invalid value: "array": sectionName must be specified when parentRefs includes 2 or more references to the same parent'
refused slow-backend '{"timeouts": {"request": "10s", "backendRequest": "1m"}}' "" \
    'The HTTPRoute "slow-backend" is invalid: spec.rules[0].timeouts: Invalid value: "object": backendRequest timeout cannot be longer than request timeout'
refused two-modifiers '{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "a", "value": "1"}]}},
    {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "b", "value": "2"}]}}]}' "" \
    'The HTTPRoute "two-modifiers" is invalid: spec.rules[0].filters: Invalid value: "array": RequestHeaderModifier filter cannot be repeated'

route mismatch '{"filters": [{"type": "RequestRedirect", "requestHeaderModifier": {"add": [{"name": "x-a", "value": "b"}]}}]}' |
    k create -f - >"$work/out" 2>&1
check "a filter whose member does not match its type: both rules' messages ($(cat "$work/out"))" sh -c "
    grep -qxF '* spec.rules[0].filters[0]: Invalid value: \"object\": filter.requestHeaderModifier must be nil if the filter.type is not RequestHeaderModifier' '$work/out' &&
    grep -qxF '* spec.rules[0].filters[0]: Invalid value: \"object\": filter.requestRedirect must be specified for RequestRedirect filter.type' '$work/out'"

k patch httproute good --type=json -p '[{"op": "replace", "path": "/spec/rules/0/matches/0/path/value", "value": "/a/../b"}]' >"$work/out" 2>&1
check "an update that breaks a rule is refused ($(cat "$work/out"))" grep -qF \
    "spec.rules[0].matches[0].path: Invalid value: \"object\": must not contain '/../' when type one of ['Exact', 'PathPrefix']" "$work/out"
check "the stored route is unchanged" sh -c \
    "[ \"\$(kubectl get httproute good -o jsonpath='{.spec.rules[0].matches[0].path.value}')\" = /api ]"
finish
