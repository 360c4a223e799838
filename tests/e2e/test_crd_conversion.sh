#!/bin/sh
# test_crd_conversion.sh - a CustomResourceDefinition converted by a webhook, with the
# real kubectl against a real `ckube server` and a real HTTPS conversion webhook
# (tests/e2e/conversion_webhook.py, its certificate made here with openssl): v1 stores
# spec.cronSpec, v2 serves spec.schedule. kubectl creates in v1 and reads in v2, creates
# in v2 and reads in v1, lists, edits and watches through v2; the webhook is reached by
# url and through a Service and its EndpointSlice; the ConversionReview it received is
# checked; a webhook that refuses, and one that is down, are a 500 in Kubernetes' words;
# the definition is still deleted, with its objects, while its webhook is down.
#
# Usage: test_crd_conversion.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_webhook conversion_webhook.py convert convert.hooks.svc

start_server --controllers=-* --disable-admission-plugins ServiceAccount

# crd CLIENTCONFIG: the definition, its webhook at CLIENTCONFIG (JSON)
crd() {
    cat <<EOT
{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "crontabs.stable.example.com"},
 "spec": {"group": "stable.example.com", "scope": "Namespaced",
  "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
  "versions": [
   {"name": "v1", "served": true, "storage": true,
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
      "properties": {"cronSpec": {"type": "string"}}}}}}},
   {"name": "v2", "served": true, "storage": false,
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
      "properties": {"schedule": {"type": "string"}}}}}}}],
  "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
   "clientConfig": $1}}}}
EOT
}

crd '{"url": "https://127.0.0.1:'"$hook_port"'/convert", "caBundle": "'"$cabundle"'"}' |
    k apply -f - >"$work/out" 2>&1
check "a definition with a conversion webhook is created" grep -q 'customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created' "$work/out"
wait_for "the definition is established" crd/crontabs.stable.example.com '{.status.conditions[?(@.type=="Established")].status}=True'
i=0
until k get crontabs.v2.stable.example.com >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done

# --- create in v1, read in v2 ---
cat <<EOT | k apply -f - >"$work/out" 2>&1
{"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "first"},
 "spec": {"cronSpec": "* * * * */5"}}
EOT
check "kubectl creates in v1" grep -q 'crontab.stable.example.com/first created' "$work/out"
check "v2 shows the field the webhook renamed" sh -c \
    '[ "$(kubectl get crontabs.v2.stable.example.com first -o jsonpath="{.apiVersion} {.spec.schedule}|{.spec.cronSpec}")" = "stable.example.com/v2 * * * * */5|" ]'
check "the webhook's label is kept (labels and annotations are the webhook's)" sh -c \
    '[ "$(kubectl get crontabs.v2.stable.example.com first -o jsonpath={.metadata.labels.converted-to})" = v2 ]'
check "the webhook got a ConversionReview v1 for v2 with the stored object" python3 -c '
import json, sys
rs = [json.loads(l)["review"] for l in open(sys.argv[1])]
r = [x for x in rs if x["request"]["desiredAPIVersion"] == "stable.example.com/v2"][-1]
assert r["apiVersion"] == "apiextensions.k8s.io/v1" and r["kind"] == "ConversionReview", r
q = r["request"]
assert q["uid"] and len(q["objects"]) == 1, q
o = q["objects"][0]
assert o["apiVersion"] == "stable.example.com/v1" and o["spec"] == {"cronSpec": "* * * * */5"}, o
assert o["metadata"]["name"] == "first" and o["metadata"]["uid"], o
' "$work/reviews.log"
check "v1 reads the stored object as it is" sh -c \
    '[ "$(kubectl get crontabs.v1.stable.example.com first -o jsonpath="{.spec.cronSpec}|{.metadata.labels.converted-to}")" = "* * * * */5|" ]'

# --- create in v2, read in v1 ---
cat <<EOT | k apply -f - >"$work/out" 2>&1
{"apiVersion": "stable.example.com/v2", "kind": "CronTab", "metadata": {"name": "second"},
 "spec": {"schedule": "0 0 * * *"}}
EOT
check "kubectl creates in v2" grep -q 'crontab.stable.example.com/second created' "$work/out"
check "stored in v1: v1 reads spec.cronSpec" sh -c \
    '[ "$(kubectl get crontabs.v1.stable.example.com second -o jsonpath="{.apiVersion} {.spec.cronSpec}")" = "stable.example.com/v1 0 0 * * *" ]'
check "and back in v2" sh -c \
    '[ "$(kubectl get crontabs.v2.stable.example.com second -o jsonpath={.spec.schedule})" = "0 0 * * *" ]'

# --- lists, edits and watches through v2 ---
lines=$(wc -l <"$work/reviews.log")
k get crontabs.v2.stable.example.com -o jsonpath='{range .items[*]}{.metadata.name}={.spec.schedule};{end}' >"$work/out" 2>&1
check "a list through v2 converts every object" grep -qx 'first=\* \* \* \* \*/5;second=0 0 \* \* \*;' "$work/out"
check "in one review" python3 -c '
import json, sys
rs = [json.loads(l)["review"] for l in open(sys.argv[1])][int(sys.argv[2]):]
assert len(rs) == 1 and len(rs[0]["request"]["objects"]) == 2, rs
' "$work/reviews.log" "$lines"
k patch crontabs.v2.stable.example.com first --type=merge -p '{"spec":{"schedule":"1 1 * * *"}}' >"$work/out" 2>&1
check "a patch through v2" grep -q 'crontab.stable.example.com/first patched' "$work/out"
check "is stored in v1" sh -c \
    '[ "$(kubectl get crontabs.v1.stable.example.com first -o jsonpath={.spec.cronSpec})" = "1 1 * * *" ]'
k get crontabs.v2.stable.example.com --watch -o jsonpath='{.metadata.name}={.spec.schedule};' >"$work/watch" 2>&1 &
watch_pid=$!
i=0
until grep -q 'second=' "$work/watch" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done
k patch crontabs.v1.stable.example.com second --type=merge -p '{"spec":{"cronSpec":"2 2 * * *"}}' >/dev/null 2>&1
i=0
until grep -q 'second=2 2' "$work/watch" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done
kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null; watch_pid=""
check "a watch through v2 gets the events converted" grep -q 'second=2 2 \* \* \*;' "$work/watch"

# --- through a Service and its EndpointSlice ---
k create namespace hooks >/dev/null 2>&1
cat <<EOT | k apply -f - >/dev/null 2>&1
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "convert", "namespace": "hooks"},
  "spec": {"ports": [{"name": "https", "port": 443, "targetPort": $hook_port}]}},
 {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "convert-1", "namespace": "hooks", "labels": {"kubernetes.io/service-name": "convert"}},
  "addressType": "IPv4", "ports": [{"name": "https", "port": $hook_port, "protocol": "TCP"}],
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}]}
EOT
crd '{"service": {"namespace": "hooks", "name": "convert", "path": "/by-service"}, "caBundle": "'"$cabundle"'"}' |
    k apply -f - >"$work/out" 2>&1
check "the definition now names a service" grep -q 'crontabs.stable.example.com configured' "$work/out"
i=0
until grep -q '"/by-service' "$work/reviews.log" 2>/dev/null; do
    k get crontabs.v2.stable.example.com second >/dev/null 2>&1
    i=$((i + 1)); [ $i -gt 100 ] && break
    sleep 0.1
done
check "the webhook is reached through its service (TLS name convert.hooks.svc)" sh -c \
    "grep -q '\"/by-service' '$work/reviews.log' &&
     [ \"\$(kubectl get crontabs.v2.stable.example.com second -o jsonpath={.spec.schedule})\" = '2 2 * * *' ]"

# --- failures ---
cat <<EOT | k apply -f - >/dev/null 2>&1
{"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "odd"},
 "spec": {"cronSpec": "fail"}}
EOT
k get crontabs.v2.stable.example.com odd >"$work/out" 2>&1
check "a webhook's Failure is a 500 in Kubernetes' words" grep -q \
    'conversion webhook for stable.example.com/v1, Kind=CronTab failed: cannot convert odd' "$work/out"
k delete crontabs.v1.stable.example.com odd >/dev/null 2>&1
stop_hook
k get crontabs.v2.stable.example.com first >"$work/out" 2>&1
check "a webhook that is down: the read fails with a 500" grep -q \
    'Error from server (InternalError).*conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "https://convert.hooks.svc:' "$work/out"
k get crontabs.v1.stable.example.com first -o jsonpath={.spec.cronSpec} >"$work/out" 2>&1
check "the storage version is still read without the webhook" grep -qx '1 1 \* \* \*' "$work/out"
k delete crd crontabs.stable.example.com --timeout=60s >"$work/out" 2>&1
check "the definition is deleted with its objects while its webhook is down" sh -c \
    "grep -q 'customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted' '$work/out' &&
     ! kubectl get crd crontabs.stable.example.com >/dev/null 2>&1"

finish
