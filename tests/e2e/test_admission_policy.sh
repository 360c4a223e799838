#!/bin/sh
# test_admission_policy.sh - ValidatingAdmissionPolicy with the real kubectl against a
# real `ckube server`: a policy with a ConfigMap as parameters, a variable, a message
# expression and an audit annotation; bindings that deny (kubectl shows Kubernetes'
# words and the 422), warn (kubectl prints the Warning) and audit (the server logs the
# annotation, ckube having no audit log); a binding's missing parameters under
# parameterNotFoundAction Deny; a policy refused when written (an expression that does
# not compile); a policy whose validation asks the `authorizer` whether the request's
# user may list secrets; policies and bindings whose writer may not read their parameters;
# the status controller's type checking (status.typeChecking in Kubernetes' words, checked
# again when the policy changes).
#
# Usage: test_admission_policy.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

start_server --controllers=-* --disable-admission-plugins ServiceAccount -v 2

k create namespace deny >/dev/null 2>&1
k create namespace warn >/dev/null 2>&1
k create namespace audit >/dev/null 2>&1
k label namespace deny mode=deny >/dev/null 2>&1
k label namespace warn mode=warn >/dev/null 2>&1
k label namespace audit mode=audit >/dev/null 2>&1
for ns in deny warn audit; do
    k create configmap limits -n "$ns" --from-literal=maxReplicas=3 >/dev/null 2>&1
done

cat >"$work/policy.yaml" <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  matchConditions:
  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  variables:
  - name: limit
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: "'replicas ' + string(object.spec.replicas) + ' over the limit of ' + string(variables.limit)"
  auditAnnotations:
  - key: replicas
    valueExpression: "string(object.spec.replicas)"
YAML
k apply -f "$work/policy.yaml" >"$work/out" 2>&1
check "the policy is created" grep -q "validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit created" "$work/out"
check "the policy's defaults are set" sh -c \
    '[ "$(kubectl get validatingadmissionpolicy replica-limit -o jsonpath={.spec.failurePolicy}/{.spec.matchConstraints.matchPolicy})" = Fail/Equivalent ]'

for mode in Deny Warn Audit; do
    ns=$(echo "$mode" | tr A-Z a-z)
    cat >"$work/binding-$ns.yaml" <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-$ns
spec:
  policyName: replica-limit
  validationActions: [$mode]
  paramRef:
    name: limits
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels:
        mode: $ns
YAML
    k apply -f "$work/binding-$ns.yaml" >/dev/null 2>&1
done
check "three bindings" sh -c '[ "$(kubectl get validatingadmissionpolicybindings -o name | wc -l)" = 3 ]'
k get validatingadmissionpolicies,validatingadmissionpolicybindings >"$work/out" 2>&1
check "kubectl get shows the policy's and the bindings' columns" sh -c "
    grep -Eq '^NAME +VALIDATIONS +PARAMKIND +AGE' '$work/out' &&
    grep -Eq '^validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit +1 +v1/ConfigMap ' '$work/out' &&
    grep -Eq '^NAME +POLICYNAME +PARAMREF +AGE' '$work/out' &&
    grep -Eq '^validatingadmissionpolicybinding.admissionregistration.k8s.io/replica-limit-deny +replica-limit +\\*/limits ' '$work/out'"

# Deny: refused in Kubernetes' words, with Invalid's 422
k create deployment big -n deny --image=x --replicas=5 >"$work/out" 2>&1
check "a deployment over the limit is refused" grep -qF \
    "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-deny' denied request: replicas 5 over the limit of 3" \
    "$work/out"
check "with the reason's code: Invalid, 422" grep -qE \
    'verb="POST" URI="/apis/apps/v1/namespaces/deny/deployments.*resp="422"' "$work/server.err"
check "nothing was stored" sh -c '! kubectl get deployment big -n deny >/dev/null 2>&1'
k create deployment small -n deny --image=x --replicas=2 >"$work/out" 2>&1
check "a deployment within the limit is created" grep -q "deployment.apps/small created" "$work/out"
k create deployment big -n deny --image=x --replicas=5 --dry-run=client -o json >"$work/big.json" 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["metadata"]["labels"]={"exempt":"yes"}; json.dump(d,open(sys.argv[1],"w"))' "$work/big.json"
k create -f "$work/big.json" >"$work/out" 2>&1
check "a false match condition leaves the request alone" grep -q "deployment.apps/big created" "$work/out"

# Warn: let through, kubectl prints the warning
k create deployment big -n warn --image=x --replicas=5 >"$work/out" 2>&1
check "Warn lets the deployment through" grep -q "deployment.apps/big created" "$work/out"
check "kubectl prints the policy's warning" grep -qF \
    "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-warn': replicas 5 over the limit of 3" \
    "$work/out"

# Audit: let through, the audit annotations are logged
k create deployment big -n audit --image=x --replicas=4 >"$work/out" 2>&1
check "Audit lets the deployment through" grep -q "deployment.apps/big created" "$work/out"
check "the validation failure is an audit annotation" grep -qF \
    'validation.policy.admission.k8s.io/validation_failure' "$work/server.err"
check "its value names the policy, the binding and the message" grep -qF \
    '\"message\":\"replicas 4 over the limit of 3\",\"policy\":\"replica-limit\",\"binding\":\"replica-limit-audit\"' \
    "$work/server.err"
check "the policy's auditAnnotations are published under its name" grep -qF \
    'key="replica-limit/replicas" value="4"' "$work/server.err"

# parameters that are missing: parameterNotFoundAction Deny refuses under failurePolicy Fail
k delete configmap limits -n deny >/dev/null 2>&1
k create deployment other -n deny --image=x --replicas=1 >"$work/out" 2>&1
check "missing parameters refuse" grep -qF \
    "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-deny' denied request: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction" \
    "$work/out"

# the authorizer variable: only a user who may list secrets creates configmaps in "authz"
k create namespace authz >/dev/null 2>&1
k label namespace authz authz=on >/dev/null 2>&1
k create role cm-writer -n authz --verb=create,get --resource=configmaps >/dev/null 2>&1
k create rolebinding cm-writers -n authz --role=cm-writer --user=jane --user=bob >/dev/null 2>&1
k create clusterrole secret-lister --verb=list --resource=secrets >/dev/null 2>&1
k create clusterrolebinding secret-listers --clusterrole=secret-lister --user=jane >/dev/null 2>&1
cat >"$work/authz.yaml" <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: secret-listers-only
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
    namespaceSelector:
      matchLabels:
        authz: "on"
  validations:
  - expression: "authorizer.group('').resource('secrets').check('list').allowed()"
    messageExpression: "'user ' + request.userInfo.username + ' may not list secrets'"
  - expression: "authorizer.requestResource.check('get').allowed()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: secret-listers-only
spec:
  policyName: secret-listers-only
  validationActions: [Deny]
YAML
k apply -f "$work/authz.yaml" >/dev/null 2>&1
k create configmap from-jane -n authz --as=jane >"$work/out" 2>&1
check "a user the authorizer allows creates the configmap" grep -q "configmap/from-jane created" "$work/out"
k create configmap from-bob -n authz --as=bob >"$work/out" 2>&1
check "a user the authorizer does not allow is refused" grep -qF \
    "ValidatingAdmissionPolicy 'secret-listers-only' with binding 'secret-listers-only' denied request: user bob may not list secrets" \
    "$work/out"
check "bob's configmap was not stored" sh -c '! kubectl get configmap from-bob -n authz >/dev/null 2>&1'
k create configmap from-nsless -n authz --as=nobody >"$work/out" 2>&1
check "a user without RBAC rights is refused before admission" grep -q "Forbidden\|forbidden" "$work/out"

# who may name parameters: a policy's paramKind needs `get` of all its objects, a
# binding's paramRef `get` of the object it names
k create clusterrole vap-writer --verb=create,get,update \
    --resource=validatingadmissionpolicies.admissionregistration.k8s.io,validatingadmissionpolicybindings.admissionregistration.k8s.io >/dev/null 2>&1
k create clusterrolebinding vap-writers --clusterrole=vap-writer --user=carol --user=jane >/dev/null 2>&1
k create rolebinding jane-reads-deny -n deny --clusterrole=view --user=jane >/dev/null 2>&1
sed -e 's/name: replica-limit$/name: carols/' "$work/policy.yaml" >"$work/carols.yaml"
k apply -f "$work/carols.yaml" --as=carol >"$work/out" 2>&1
check "a paramKind the writer may not read is refused (422)" grep -qF \
    'The ValidatingAdmissionPolicy "carols" is invalid: spec.paramKind: Forbidden: user &{carol  [system:authenticated] map[]} must have "get" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)' \
    "$work/out"
sed -e 's/name: replica-limit-deny/name: carols-binding/' "$work/binding-deny.yaml" >"$work/carols-binding.yaml"
k apply -f "$work/carols-binding.yaml" --as=carol >"$work/out" 2>&1
check "a paramRef the writer may not read is refused" grep -qF \
    'spec.paramRef: Forbidden: user &{carol  [system:authenticated] map[]} does not have "get" permission on the object referenced by paramRef' \
    "$work/out"
# jane reads configmaps in "deny" only: a paramRef without a namespace asks about the
# cluster scope, one in "deny" about that namespace
sed -e 's/name: replica-limit-deny/name: janes-binding/' "$work/binding-deny.yaml" >"$work/janes-binding.yaml"
k apply -f "$work/janes-binding.yaml" --as=jane >"$work/out" 2>&1
check "a paramRef without a namespace needs the cluster scope" grep -qF \
    'spec.paramRef: Forbidden: user &{jane  [system:authenticated] map[]} does not have' "$work/out"
sed -i -e 's/^    name: limits$/    name: limits\n    namespace: deny/' "$work/janes-binding.yaml"
k apply -f "$work/janes-binding.yaml" --as=jane >"$work/out" 2>&1
check "a writer who may read the parameter object binds it" grep -q \
    "validatingadmissionpolicybinding.admissionregistration.k8s.io/janes-binding created" "$work/out"

# a policy whose expression does not compile is refused when written
sed -e 's/name: replica-limit/name: broken/' -e 's/object.spec.replicas <= variables.limit/object.spec.replicas <=/' \
    "$work/policy.yaml" >"$work/broken.yaml"
k apply -f "$work/broken.yaml" >"$work/out" 2>&1
check "an expression that does not compile is refused" grep -qF \
    'spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: ERROR: <input>:1:' \
    "$work/out"

# the status controller type-checks every policy against the kinds it matches
wait_for "a policy's generation is observed" validatingadmissionpolicy/replica-limit '{.status.observedGeneration}=1'
check "a well-typed policy has no warnings" sh -c \
    '[ "$(kubectl get validatingadmissionpolicy replica-limit -o jsonpath={.status.typeChecking})" = "{}" ]'
cat >"$work/mistyped.yaml" <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: mistyped
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas + 'x'"
  - expression: "object.spec.nosuchfield"
YAML
k apply -f "$work/mistyped.yaml" >/dev/null 2>&1
wait_for "a mistyped policy is observed" validatingadmissionpolicy/mistyped '{.status.observedGeneration}=1'
k get validatingadmissionpolicy mistyped -o jsonpath='{.status.typeChecking}' >"$work/out" 2>&1
check "the warning names the field" grep -qF '"fieldRef":"spec.validations[0].expression"' "$work/out"
k get validatingadmissionpolicy mistyped \
    -o jsonpath='{.status.typeChecking.expressionWarnings[*].warning}' >"$work/out" 2>&1
check "the warning has Kubernetes' words" grep -qF \
    "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(int, string)'" \
    "$work/out"
check "an undefined field is a warning" grep -qF "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'nosuchfield'" "$work/out"
k patch validatingadmissionpolicy mistyped --type=json \
    -p '[{"op":"remove","path":"/spec/validations/1"},{"op":"replace","path":"/spec/validations/0/expression","value":"object.spec.replicas > 0"}]' \
    >/dev/null 2>&1
wait_for "a changed policy is checked again" validatingadmissionpolicy/mistyped '{.status.observedGeneration}=2'
check "the fixed policy has no warnings" sh -c \
    '[ "$(kubectl get validatingadmissionpolicy mistyped -o jsonpath={.status.typeChecking})" = "{}" ]'

stop_server
finish
