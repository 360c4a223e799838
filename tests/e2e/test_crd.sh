#!/bin/sh
# test_crd.sh - CustomResourceDefinitions with the real kubectl on a real
# `ckube server`: the CronTab example of Kubernetes' documentation is
# established (NamesAccepted, Established), served at once (plural, short
# name, category "all", discovery, kubectl explain), its objects are
# validated by the schema (422 with the schema's message), pruned of unknown
# fields, defaulted, printed with the additionalPrinterColumns (Kubernetes'
# JSONPath: filters, indexes, quoted keys; a jsonPath not starting with "."
# is refused), written
# through the status subresource, scaled with `kubectl scale` through the
# scale subresource, read through a second version (apiVersion rewritten),
# refused a strategic merge patch (415); a changed definition (a new column,
# a version no longer served) is served at once; a default added to the
# schema shows on objects stored before it (get, list, watch, Table);
# selectableFields are field selectors (list and watch) and checked against
# the schema; a conflicting kind is not accepted;
# patterns are Go regular expressions (prometheus-operator's is taken);
# the definitions survive a restart; on etcd a second server serves them
# too; deleting the definition deletes its objects, then the definition.
#
# Usage: test_crd.sh PATH/TO/ckube [STORE_URL]
# Waits are `kubectl wait` or polls with a deadline; nothing asserts on time.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-*

jp() { kubectl get "$1" -o "jsonpath=$2" 2>/dev/null; } # jp OBJECT JSONPATH
crd=crontabs.stable.example.com

# --- establishing ---
k apply -f "$data/crontab-crd.yaml" >"$work/out" 2>&1
check "the definition is created" grep -q "customresourcedefinition.apiextensions.k8s.io/$crd created" "$work/out"
wait_for "the names are accepted" "crd/$crd" '{.status.conditions[?(@.type=="NamesAccepted")].status}=True'
wait_for "the definition is established" "crd/$crd" '{.status.conditions[?(@.type=="Established")].status}=True'
check "acceptedNames follow spec.names" test "$(jp crd/$crd '{.status.acceptedNames.shortNames[0]}')" = ct
check "storedVersions holds the storage version" test "$(jp crd/$crd '{.status.storedVersions}')" = '["v1"]'
k get crd >"$work/out" 2>&1
check "definition columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +CREATED AT$" &&
    grep -Eq "^crontabs.stable.example.com +[0-9]{4}-[0-9]{2}-[0-9]{2}T" "$1"' - "$work/out"

# --- a bad definition is refused with Kubernetes' messages ---
sed -e 's/name: crontabs.stable.example.com/name: wrong.stable.example.com/' \
    -e 's/storage: false/storage: true/' "$data/crontab-crd.yaml" >"$work/bad-crd.yaml"
k apply -f "$work/bad-crd.yaml" >"$work/out" 2>&1
check "a definition whose name is not plural.group is refused" \
    grep -q 'metadata.name: Invalid value: "wrong.stable.example.com": must be spec.names.plural+"."+spec.group' "$work/out"
check "two storage versions are refused" \
    grep -q "spec.versions: Invalid value.*must have exactly one version marked as storage version" "$work/out"
cat >"$work/nonstructural.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}
EOF
k apply -f "$work/nonstructural.yaml" >"$work/out" 2>&1
check "a schema that is not structural is refused" \
    grep -q 'spec.validation.openAPIV3Schema.properties\[spec\].type: Required value: must not be empty for specified object fields' "$work/out"

# --- custom resources ---
k apply --validate=false -f "$data/crontab.yaml" >"$work/out" 2>&1
check "a custom resource is created" grep -q "crontab.stable.example.com/my-new-cron-object created" "$work/out"
check "unknown fields are pruned" test -z "$(jp crontab/my-new-cron-object '{.spec.someUnknownField}')"
check "defaults are applied" test "$(jp crontab/my-new-cron-object '{.spec.replicas}/{.spec.paused}')" = "1/false"
k apply -f "$data/crontab.yaml" >"$work/out" 2>&1
check "strict field validation refuses the unknown field" \
    grep -q 'strict decoding error: unknown field "spec.someUnknownField"' "$work/out"
k get crontabs >"$work/out" 2>&1
check "printer columns" sh -c 'head -1 "$1" | grep -Eq "^NAME +SPEC +REPLICAS +AGE$" &&
    grep -Eq "^my-new-cron-object +\* \* \* \* \*/5 +1 +[0-9]+s$" "$1"' - "$work/out"
check "the short name" sh -c 'kubectl get ct my-new-cron-object >/dev/null 2>&1'
check "the category all" sh -c 'kubectl get all 2>/dev/null | grep -q "crontab.stable.example.com/my-new-cron-object"'
check "kubectl explain reads the schema" sh -c 'kubectl explain crontab.spec 2>/dev/null | grep -q "The schedule, in cron format."'
check "discovery lists the resource and its subresources" sh -c 'kubectl api-resources --api-group=stable.example.com 2>/dev/null | grep -Eq "^crontabs +ct +stable.example.com/v1 +true +CronTab$"'
# every served version carries the storageVersionHash of the storage version, v1
kubectl get --raw /apis/stable.example.com/v1 >"$work/out" 2>&1
kubectl get --raw /apis/stable.example.com/v1beta1 >"$work/out2" 2>&1
check "discovery gives crontabs the storageVersionHash of v1" python3 -c '
import base64, hashlib, json, sys
want = base64.b64encode(hashlib.sha256(b"stable.example.com/v1/CronTab").digest()[:8]).decode()
for f in sys.argv[1:]:
    r = {x["name"]: x for x in json.load(open(f))["resources"]}
    assert r["crontabs"]["storageVersionHash"] == want, (f, r["crontabs"])
    assert all("storageVersionHash" not in x for n, x in r.items() if "/" in n), r' \
    "$work/out" "$work/out2"

cat >"$work/bad.yaml" <<'EOF'
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: too-many
spec:
  cronSpec: "* * * * *"
  replicas: 11
EOF
k apply -f "$work/bad.yaml" >"$work/out" 2>&1
check "an invalid object is refused with the schema's rule" \
    sh -c 'grep -q "The CronTab \"too-many\" is invalid: spec.replicas: Invalid value: 11" "$1" &&
    grep -q "10" "$1"' - "$work/out"
check "nothing was created" sh -c '! kubectl get crontab too-many >/dev/null 2>&1'

# --- status and scale ---
k patch crontab my-new-cron-object --type=merge -p '{"status":{"replicas":7}}' >/dev/null 2>&1
check "the main resource ignores status" test -z "$(jp crontab/my-new-cron-object '{.status.replicas}')"
k patch crontab my-new-cron-object --subresource=status --type=merge \
    -p '{"status":{"replicas":2,"labelSelector":"app=cron"}}' >/dev/null 2>&1
check "the status subresource writes status" test "$(jp crontab/my-new-cron-object '{.status.replicas}')" = 2
check "kubectl scale" sh -c 'kubectl scale crontab my-new-cron-object --replicas=3 >/dev/null 2>&1'
check "scale wrote specReplicasPath" test "$(jp crontab/my-new-cron-object '{.spec.replicas}')" = 3
kurl "$url/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object/scale" >"$work/out"
check "the Scale reads statusReplicasPath and labelSelectorPath" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == "Scale" and s["spec"]["replicas"] == 3, s
assert s["status"] == {"replicas": 2, "selector": "app=cron"}, s' "$work/out"

# --- patches ---
k patch crontab my-new-cron-object --type=strategic -p '{"spec":{"image":"x"}}' >"$work/out" 2>&1
check "strategic merge patch is refused" grep -q "application/strategic-merge-patch+json is not supported" "$work/out"
check "JSON patch" sh -c 'kubectl patch crontab my-new-cron-object --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/image\",\"value\":\"img2\"}]" >/dev/null 2>&1'
check "the JSON patch is stored" test "$(jp crontab/my-new-cron-object '{.spec.image}')" = img2

# --- a second version, conversion None ---
kurl "$url/apis/stable.example.com/v1beta1/namespaces/default/crontabs/my-new-cron-object" >"$work/out"
check "read through v1beta1, apiVersion rewritten" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["apiVersion"] == "stable.example.com/v1beta1" and o["spec"]["image"] == "img2", o' "$work/out"

# --- selectors and paging ---
k label crontab my-new-cron-object tier=batch >/dev/null 2>&1
for i in 1 2 3; do
    printf 'apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: c%s\nspec:\n  cronSpec: "* * * * *"\n' "$i" | k apply -f - >/dev/null 2>&1
done
check "label selector" test "$(kubectl get ct -l tier=batch -o name 2>/dev/null)" = crontab.stable.example.com/my-new-cron-object
check "field selector" test "$(kubectl get ct --field-selector metadata.name=c2 -o name 2>/dev/null)" = crontab.stable.example.com/c2
check "paging" test "$(kubectl get ct --chunk-size=1 -o name 2>/dev/null | wc -l)" = 4

# --- selectableFields: more field selectors ---
kubectl get ct --field-selector spec.image=img2 >"$work/out" 2>&1
check "a field that is not selectable is refused" grep -q 'field label not supported: spec.image' "$work/out"
k patch crd "$crd" --type=json -p '[{"op":"add","path":"/spec/versions/0/selectableFields","value":[{"jsonPath":".spec.image"},{"jsonPath":".spec.replicas"}]}]' >/dev/null 2>&1
i=0
until [ "$(kubectl get ct --field-selector spec.image=img2 -o name 2>/dev/null)" = crontab.stable.example.com/my-new-cron-object ] || [ $i -gt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "selectableFields are field selectors" test "$(kubectl get ct --field-selector spec.image=img2 -o name 2>/dev/null)" = crontab.stable.example.com/my-new-cron-object
check "an integer field, and an absent field is empty" test "$(kubectl get ct --field-selector 'spec.replicas=1,spec.image=' -o name 2>/dev/null | sort | tr '\n' ' ')" = "crontab.stable.example.com/c1 crontab.stable.example.com/c2 crontab.stable.example.com/c3 "
kurl "$url/apis/stable.example.com/v1/namespaces/default/crontabs?watch=true&timeoutSeconds=1&fieldSelector=spec.image%3Dimg2" >"$work/out"
check "a watch selects by them too" python3 -c '
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [e["object"]["metadata"]["name"] for e in evs] == ["my-new-cron-object"], evs' "$work/out"
k patch crd "$crd" --type=json -p '[{"op":"add","path":"/spec/versions/0/selectableFields/-","value":{"jsonPath":".spec.nope"}}]' >"$work/out" 2>&1
check "a selectable field the schema does not have is refused" \
    grep -q 'spec.versions\[0\].selectableFields\[2\].jsonPath: Invalid value: ".spec.nope": is an invalid path' "$work/out"

# --- printer columns with Kubernetes' JSONPath ---
cat >"$work/gadgets.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
    additionalPrinterColumns:
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: First, type: string, jsonPath: '.spec.items[0].name'}
    - {name: Last, type: integer, jsonPath: '.spec.items[-1].size'}
    - {name: Tier, type: string, jsonPath: ".metadata.labels['tier']"}
EOF
k apply -f "$work/gadgets.yaml" >/dev/null 2>&1
wait_for "a definition with JSONPath columns is established" "crd/gadgets.stable.example.com" '{.status.conditions[?(@.type=="Established")].status}=True'
cat >"$work/gadget.yaml" <<'EOF'
apiVersion: stable.example.com/v1
kind: Gadget
metadata: {name: g1, labels: {tier: front}}
spec: {items: [{name: first, size: 1}, {name: second, size: 2}]}
status: {conditions: [{type: Synced, status: "False"}, {type: Ready, status: "True"}]}
EOF
k apply -f "$work/gadget.yaml" >/dev/null 2>&1
k get gadgets >"$work/out" 2>&1
check "JSONPath printer columns (filter, index, negative index, quoted key)" sh -c 'head -1 "$1" | grep -Eq "^NAME +READY +FIRST +LAST +TIER$" &&
    grep -Eq "^g1 +True +first +2 +front$" "$1"' - "$work/out"
sed -e "s|jsonPath: '.spec.items\[0\].name'|jsonPath: 'spec.items[0].name'|" "$work/gadgets.yaml" >"$work/bad-gadgets.yaml"
k apply -f "$work/bad-gadgets.yaml" >"$work/out" 2>&1
check "a jsonPath not starting with . is refused" \
    grep -q 'spec.versions\[0\].additionalPrinterColumns\[1\].jsonPath: Invalid value: "spec.items\[0\].name": must be a simple json path starting with .' "$work/out"
k delete crd gadgets.stable.example.com >/dev/null 2>&1

# --- a conflicting kind in the same group is not accepted ---
sed -e 's/crontabs/crontabs2/g' -e 's/singular: crontab/singular: crontab2/' -e 's/- ct$/- ct2/' \
    "$data/crontab-crd.yaml" >"$work/conflict.yaml"
k apply -f "$work/conflict.yaml" >/dev/null 2>&1
wait_for "a kind in use is a KindConflict" "crd/crontabs2.stable.example.com" \
    '{.status.conditions[?(@.type=="NamesAccepted")].reason}=KindConflict'
check "and it is not established" test "$(jp crd/crontabs2.stable.example.com '{.status.conditions[?(@.type=="Established")].status}')" = False
k delete crd crontabs2.stable.example.com >/dev/null 2>&1

# --- a changed definition is served at once: a new column, a version no longer served ---
k patch crd "$crd" --type=json -p '[{"op":"add","path":"/spec/versions/0/additionalPrinterColumns/-","value":{"name":"Image","type":"string","jsonPath":".spec.image"}},{"op":"replace","path":"/spec/versions/1/served","value":false}]' >/dev/null 2>&1
i=0
until kubectl get crontab my-new-cron-object 2>/dev/null | head -1 | grep -Eq "^NAME +SPEC +REPLICAS +AGE +IMAGE$" || [ $i -gt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "a printer column added to the definition" sh -c 'kubectl get crontab my-new-cron-object 2>/dev/null | grep -Eq "^my-new-cron-object +.* img2$"'
i=0
while [ "$(kurl -o /dev/null -w '%{http_code}' "$url/apis/stable.example.com/v1beta1")" != 404 ] && [ $i -lt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "a version no longer served is gone" test "$(kurl -o /dev/null -w '%{http_code}' "$url/apis/stable.example.com/v1beta1/crontabs")" = 404
check "the served version still is" test "$(kurl -o /dev/null -w '%{http_code}' "$url/apis/stable.example.com/v1/crontabs")" = 200

# --- defaults on read: a default added later shows on objects stored before ---
k patch crd "$crd" --type=json -p '[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/timeZone","value":{"type":"string","default":"Etc/UTC"}},{"op":"add","path":"/spec/versions/0/selectableFields/-","value":{"jsonPath":".spec.timeZone"}}]' >/dev/null 2>&1
i=0
until [ "$(jp crontab/my-new-cron-object '{.spec.timeZone}')" = Etc/UTC ] || [ $i -gt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "get applies a default added after the object was stored" test "$(jp crontab/my-new-cron-object '{.spec.timeZone}')" = Etc/UTC
check "list applies it" test "$(kubectl get ct -o 'jsonpath={range .items[*]}{.spec.timeZone},{end}' 2>/dev/null)" = "Etc/UTC,Etc/UTC,Etc/UTC,Etc/UTC,"
check "a field selector sees it" test "$(kubectl get ct --field-selector spec.timeZone=Etc/UTC -o name 2>/dev/null | wc -l)" = 4
kurl "$url/apis/stable.example.com/v1/namespaces/default/crontabs?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dc1" >"$work/out"
check "watch applies it" python3 -c '
import json, sys
ev = json.loads(open(sys.argv[1]).readline())
assert ev["type"] == "ADDED" and ev["object"]["spec"]["timeZone"] == "Etc/UTC", ev' "$work/out"
kurl -H 'Accept: application/json;as=Table;v=v1;g=meta.k8s.io' \
    "$url/apis/stable.example.com/v1/namespaces/default/crontabs?includeObject=Object" >"$work/out"
check "a Table's objects have it" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
assert all(r["object"]["spec"]["timeZone"] == "Etc/UTC" for r in t["rows"]), t' "$work/out"

# --- restart ---
stop_server
start_server --controllers=-*
check "the definition survives a restart" sh -c 'kubectl get crontab my-new-cron-object >/dev/null 2>&1'

# --- a second server on the same etcd ---
case "$store" in
etcd://*)
    b_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$work/b/pki"
    chmod 700 "$work/b" "$work/b/pki"
    cp -p "$work/data/pki/ca.crt" "$work/data/pki/ca.key" "$work/data/pki/sa.key" "$work/b/pki/"
    "$ckube" server --disable-agent --disable-dns --listen "127.0.0.1:$b_port" --data-dir "$work/b" --store "$store" \
        --controllers=-* >>"$work/b.out" 2>>"$work/b.err" &
    b_pid=$!
    trap 'kill "$b_pid" 2>/dev/null; wait "$b_pid" 2>/dev/null; cleanup' EXIT
    i=0
    until [ "$(kurl -m 10 "https://127.0.0.1:$b_port/readyz" 2>/dev/null)" = ok ] || [ $i -gt 100 ]; do
        i=$((i + 1))
        sleep 0.1
    done
    check "a second server serves the custom resources" sh -c \
        "kubectl --server https://127.0.0.1:$b_port get crontab my-new-cron-object >/dev/null 2>&1"
    ;;
esac

# --- patterns are Go regular expressions (prometheus-operator's) ---
cat >"$work/prom-crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheuses.monitoring.example.com
spec:
  group: monitoring.example.com
  scope: Namespaced
  names: {plural: prometheuses, singular: prometheus, kind: Prometheus}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              serviceName: {type: string, pattern: '^[0-9a-zA-Z-.]+$'}
              weekday: {type: string, pattern: '^((?i)sun|mon|tues|wednes|thurs|fri|satur)day$'}
EOF
k apply -f "$work/prom-crd.yaml" >"$work/out" 2>&1
check "a definition with prometheus-operator's pattern is created" \
    grep -q "prometheuses.monitoring.example.com created" "$work/out"
wait_for "and established" crd/prometheuses.monitoring.example.com '{.status.conditions[?(@.type=="Established")].status}=True'
printf 'apiVersion: monitoring.example.com/v1\nkind: Prometheus\nmetadata: {name: k8s}\nspec: {serviceName: prometheus-operated.monitoring, weekday: Monday}\n' >"$work/prom.yaml"
k apply -f "$work/prom.yaml" >"$work/out" 2>&1
check "a value matching the patterns is stored" grep -q "prometheus.monitoring.example.com/k8s created" "$work/out"
sed -e 's/name: k8s/name: bad/' -e 's/prometheus-operated.monitoring/a_b/' "$work/prom.yaml" >"$work/prom-bad.yaml"
k apply -f "$work/prom-bad.yaml" >"$work/out" 2>&1
check "a value not matching is refused with kube-openapi's message" \
    grep -qF "spec.serviceName in body should match '^[0-9a-zA-Z-.]+\$'" "$work/out"
sed -e "s/pattern: '^\[0-9a-zA-Z-.\]+\$'/pattern: 'a(b'/" -e 's/prometheuses/badpatterns/g' \
    -e 's/kind: Prometheus/kind: BadPattern/' -e 's/singular: prometheus/singular: badpattern/' \
    "$work/prom-crd.yaml" >"$work/bad-pattern.yaml"
k apply -f "$work/bad-pattern.yaml" >"$work/out" 2>&1
check "a pattern Go refuses is refused with Go's message" \
    grep -qF "must be a valid regular expression, but isn't: error parsing regexp: missing closing ): \`a(b\`" "$work/out"
k delete crd prometheuses.monitoring.example.com >/dev/null 2>&1

# --- deleting the definition deletes its objects ---
k create ns other >/dev/null 2>&1
k -n other apply -f "$data/crontab.yaml" --validate=false >/dev/null 2>&1
check "a custom resource in another namespace" sh -c 'kubectl -n other get crontab my-new-cron-object >/dev/null 2>&1'
k delete crd "$crd" --wait=true --timeout=60s >"$work/out" 2>&1
check "the definition is deleted" grep -q "\"$crd\" deleted" "$work/out"
i=0
while kubectl get crd "$crd" >/dev/null 2>&1 && [ $i -lt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "the definition is gone" sh -c "! kubectl get crd $crd >/dev/null 2>&1"
check "its resources are no longer served" sh -c '! kubectl get --raw /apis/stable.example.com/v1/crontabs >/dev/null 2>&1'
k apply -f "$data/crontab-crd.yaml" >/dev/null 2>&1
wait_for "re-created, it is established again" "crd/$crd" '{.status.conditions[?(@.type=="Established")].status}=True'
check "and its old objects are gone" test "$(kurl "$url/apis/stable.example.com/v1/crontabs" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" = 0

finish
