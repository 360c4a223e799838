#!/bin/sh
# test_openapi_v2_proto.sh - /openapi/v2 in protobuf through a real server:
# kubectl explain --output=plaintext-openapiv2 (kubectl reads /openapi/v2 in
# gnostic's protobuf for it: types, descriptions, and the kind from the
# x-kubernetes-group-version-kind extension's YAML), both Accept spellings, the ETag shared with the JSON
# answer and its 304, and the 406 for an Accept the handler does not answer.
# Usage: test_openapi_v2_proto.sh CKUBE
. "$(dirname "$0")/lib.sh"
pb=application/com.github.proto-openapi.spec.v2.v1.0+protobuf
pb_at=application/com.github.proto-openapi.spec.v2@v1.0+protobuf
start_server

headers() { kurl -o /dev/null -D - "$@" | tr -d '\r'; }

# explain PATH TEXT...: kubectl explain's v2 output has every TEXT, from a protobuf answer
explain() {
    what=$1; shift
    k explain "$what" --output=plaintext-openapiv2 -v=7 >"$work/explain.out" 2>&1 || return 1
    grep -q "Accept: $pb_at" "$work/explain.out" || return 1
    # one GET of /openapi/v2, answered 200 (no fallback to JSON after a 406)
    [ "$(grep -c 'GET .*/openapi/v2' "$work/explain.out")" = 1 ] || return 1
    sed -n '/GET .*\/openapi\/v2/,$p' "$work/explain.out" | grep -m1 'Response Status' |
        grep -q '200 OK' || return 1
    for text in "$@"; do
        grep -qF -- "$text" "$work/explain.out" || { echo "no '$text' in:"; grep -v round_trippers "$work/explain.out" | head -20; return 1; }
    done
}
check "kubectl explain pods.spec.containers from protobuf" \
    explain pods.spec.containers "KIND:     Pod" "VERSION:  v1" "RESOURCE: containers <[]Object>" \
    "A container of a pod." "imagePullPolicy	<string>"
check "kubectl explain deployments from protobuf" \
    explain deployments "KIND:     Deployment" "VERSION:  apps/v1" "spec	<Object>"
h=$(headers -H "Accept: $pb_at" "$url/openapi/v2")
check "the @ spelling answers protobuf" sh -c "printf '%s' \"\$1\" | grep -q '^Content-Type: $pb\$'" _ "$h"
h2=$(headers -H "Accept: $pb" "$url/openapi/v2")
check "the . spelling answers protobuf" sh -c "printf '%s' \"\$1\" | grep -q '^Content-Type: $pb\$'" _ "$h2"
etag=$(printf '%s' "$h" | sed -n 's/^Etag: //Ip')
json_etag=$(headers -H "Accept: application/json" "$url/openapi/v2" | sed -n 's/^Etag: //Ip')
check "protobuf has the ETag of the JSON (kube-openapi's cache)" [ -n "$etag" ] && [ "$etag" = "$json_etag" ]
code=$(kurl -o /dev/null -w '%{http_code}' -H "Accept: $pb" -H "If-None-Match: $etag" "$url/openapi/v2")
check "If-None-Match is a 304 for protobuf (got $code)" [ "$code" = 304 ]
code=$(kurl -o /dev/null -w '%{http_code}' -H "Accept: application/vnd.kubernetes.protobuf" "$url/openapi/v2")
check "another Accept is a 406 (got $code)" [ "$code" = 406 ]
# kube-openapi sorts the Accept entries as goautoneg does: by q, then the most specific
ctype() { headers -H "Accept: $1" "$url/openapi/v2" | sed -n 's/^Content-Type: //Ip'; }
check "a higher q wins over the order" [ "$(ctype "application/json;q=0.5, $pb")" = "$pb" ]
check "a concrete type wins over */* at the same q" [ "$(ctype "*/*, $pb_at")" = "$pb" ]
check "the header's order for equal entries" [ "$(ctype "application/json, $pb")" = application/json ]
check "/openapi/v3 has no protobuf here: JSON" \
    [ "$(headers -H "Accept: $pb, */*;q=0.1" "$url/openapi/v3" | sed -n 's/^Content-Type: //Ip')" = application/json ]
size=$(kurl -H "Accept: $pb" "$url/openapi/v2" | wc -c)
check "a protobuf body (got $size bytes)" [ "$size" -gt 10000 ]
finish
