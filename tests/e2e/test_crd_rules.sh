#!/bin/sh
# test_crd_rules.sh - a CustomResourceDefinition's x-kubernetes-validations
# (CEL) rules with the real kubectl on a real `ckube server`: a rule that
# does not compile, does not type-check against its schema or is not a bool
# is refused with the definition; a custom resource is
# refused or accepted as kube-apiserver 1.32 decides, with its words: a
# cross-field rule with a messageExpression, an immutable field
# (`self == oldSelf`), a transition rule with a reason, a root rule without a
# message (`failed rule: ...`), a transition rule on the status subresource,
# optionalOldSelf on create; an unchanged invalid value passes (ratcheting).
#
# Usage: test_crd_rules.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-*

crd=widgets.rules.example.com

# --- the definition: rules are compiled when it is written ---
sed 's/rule: "self.minReplicas <= self.replicas"/rule: "self.minReplicas <= "/' "$data/widget-rules-crd.yaml" >"$work/bad.yaml"
k apply -f "$work/bad.yaml" >"$work/out" 2>&1
check "a rule that does not compile is refused" grep -q \
    'spec.validation.openAPIV3Schema.properties\[spec\].x-kubernetes-validations\[0\].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <= ", Message:"", MessageExpression:"'"'"'replicas (.*OptionalOldSelf:(\*bool)(nil)}: compilation failed: ERROR: <input>:1:' \
    "$work/out"
check "nothing was created" sh -c "! kubectl get crd $crd >/dev/null 2>&1"
sed 's/rule: "self.minReplicas <= self.replicas"/rule: "self.minReplicas <= self.storageClass"/' "$data/widget-rules-crd.yaml" >"$work/badtype.yaml"
k apply -f "$work/badtype.yaml" >"$work/out" 2>&1
check "a rule that does not type-check against the schema is refused with cel-go's message" grep -qF \
    "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:18: found no matching overload for '_<=_' applied to '(int, string)'" \
    "$work/out"
check "with the rule and a caret under the operator" grep -qxF ' | .................^' "$work/out"
sed 's/rule: "self.metadata.name.startsWith(.w-.)"/rule: "self.metadata.name"/' "$data/widget-rules-crd.yaml" >"$work/notbool.yaml"
k apply -f "$work/notbool.yaml" >"$work/out" 2>&1
check "a rule that is not a bool is refused" grep -qF \
    "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.metadata.name\", " \
    "$work/out"
check "in Kubernetes' words" grep -qF "}: cel expression must evaluate to a bool" "$work/out"
check "still nothing was created" sh -c "! kubectl get crd $crd >/dev/null 2>&1"
k apply -f "$data/widget-rules-crd.yaml" >"$work/out" 2>&1
check "the definition is created" grep -q "customresourcedefinition.apiextensions.k8s.io/$crd created" "$work/out"
wait_for "the definition is established" "crd/$crd" '{.status.conditions[?(@.type=="Established")].status}=True'

widget() { # widget NAME SPEC-JSON: a Widget's manifest
    printf '{"apiVersion":"rules.example.com/v1","kind":"Widget","metadata":{"name":"%s"},"spec":%s}\n' "$1" "$2"
}

# --- create ---
widget w-one '{"replicas":1,"minReplicas":2,"storageClass":"fast","version":1}' | k create -f - >"$work/out" 2>&1
check "a cross-field rule refuses with its messageExpression" grep -qx \
    'The Widget "w-one" is invalid: spec: Invalid value: "object": replicas (1) is below minReplicas (2)' "$work/out"
widget one '{"replicas":1,"storageClass":"fast","version":1}' | k create -f - >"$work/out" 2>&1
check "a root rule without a message says the rule" grep -qx \
    "The Widget \"one\" is invalid: <nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('w-')" "$work/out"
widget w-one '{"replicas":1,"generation":2,"storageClass":"fast","version":1}' | k create -f - >"$work/out" 2>&1
check "optionalOldSelf: the rule runs on create with no old value" grep -qx \
    'The Widget "w-one" is invalid: spec: Invalid value: "object": a new widget starts at generation 1' "$work/out"
widget w-one '{"replicas":3,"storageClass":"fast","version":1}' | k create -f - >"$work/out" 2>&1
check "a valid widget is created (transition rules do not run on create)" grep -q "widget.rules.example.com/w-one created" "$work/out"

# --- update ---
k patch widget w-one --type=merge -p '{"spec":{"storageClass":"slow"}}' >"$work/out" 2>&1
check "an immutable field is refused" grep -qx \
    'The Widget "w-one" is invalid: spec.storageClass: Invalid value: "string": storageClass is immutable' "$work/out"
k patch widget w-one --type=merge -p '{"spec":{"version":0}}' >"$work/out" 2>&1
check "a transition rule with a reason is Forbidden" grep -qx \
    'The Widget "w-one" is invalid: spec.version: Forbidden: version may not go down' "$work/out"
k patch widget w-one --type=merge -p '{"spec":{"version":2,"replicas":4,"generation":5}}' >"$work/out" 2>&1
check "an update the rules allow passes" grep -q "widget.rules.example.com/w-one patched" "$work/out"
check "and is stored" test "$(k get widget w-one -o 'jsonpath={.spec.version}/{.spec.replicas}')" = 2/4
k patch widget w-one --type=merge -p '{"spec":{"replicas":0,"version":3}}' >"$work/out" 2>&1
check "the cross-field rule holds on update" grep -qx \
    'The Widget "w-one" is invalid: spec: Invalid value: "object": replicas (0) is below minReplicas (1)' "$work/out"

# --- the status subresource ---
k patch widget w-one --subresource=status --type=merge -p '{"status":{"phase":"Done"}}' >"$work/out" 2>&1
check "status is written" grep -q "widget.rules.example.com/w-one patched" "$work/out"
k patch widget w-one --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >"$work/out" 2>&1
check "a status transition rule refuses" grep -qx \
    'The Widget "w-one" is invalid: status.phase: Invalid value: "string": a Done widget stays Done' "$work/out"

# --- ratcheting: a value that was already invalid and does not change passes ---
k patch crd "$crd" --type=json -p '[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/-","value":{"rule":"self.replicas < 4","message":"at most 3 replicas"}}]' >/dev/null 2>&1
i=0
until widget w-two '{"replicas":5}' | kubectl create --dry-run=server -f - 2>&1 | grep -q "at most 3 replicas" ||
    [ $i -gt 100 ]; do
    i=$((i + 1))
    sleep 0.2
done
check "the new rule applies to new widgets" test "$i" -le 100
k label widget w-one color=blue >"$work/out" 2>&1
check "an unchanged invalid spec does not block another change" grep -q "widget.rules.example.com/w-one labeled" "$work/out"
k patch widget w-one --type=merge -p '{"spec":{"replicas":6}}' >"$work/out" 2>&1
check "a changed invalid spec is refused" grep -qx \
    'The Widget "w-one" is invalid: spec: Invalid value: "object": at most 3 replicas' "$work/out"

finish
