#!/bin/sh
# test_kubectl_writes.sh - the real kubectl changing objects on a real
# `ckube server`: edit, patch in its three types, label, annotate, apply of
# a changed manifest, scale (with --current-replicas), rollout restart,
# rollout undo, status writes through --subresource=status.
#
# Usage: test_kubectl_writes.sh PATH/TO/ckube [STORE_URL]
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
start_server --controllers=-* # the ReplicaSets below are written as the controller would

jp() { kubectl get "$1" -o "jsonpath=$2"; } # jp OBJECT JSONPATH

# --- apply, then apply a changed manifest (strategic merge patch with $retainKeys) ---
k apply -f "$data/deployment.yaml" >/dev/null 2>&1
k apply -f "$data/deployment-v2.yaml" >"$work/out" 2>&1
check "apply of a changed manifest configures" grep -q "deployment.apps/web configured" "$work/out"
check "applied image" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].image})" = nginx:1.28 ]'
check "applied env" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].env[0].value})" = two ]'
check "strategy switched, rollingUpdate retained away" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.strategy})" = "{\"type\":\"Recreate\"}" ]'
check "generation bumped once" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.generation})" = 2 ]'
k apply -f "$data/deployment-v2.yaml" >"$work/out" 2>&1
check "apply again is unchanged" grep -q "deployment.apps/web unchanged" "$work/out"

# --- label and annotate (merge patches), with a resourceVersion precondition ---
check "label" sh -c 'kubectl label deploy web tier=fe | grep -q "deployment.apps/web labeled"'
check "label is set" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.labels.tier})" = fe ]'
k label deploy web tier=be >"$work/out" 2>&1
check "label without --overwrite refused by kubectl" grep -q "already has a value" "$work/out"
check "label --overwrite" sh -c 'kubectl label deploy web tier=be --overwrite >/dev/null && [ "$(kubectl get deploy web -o jsonpath={.metadata.labels.tier})" = be ]'
check "label removal" sh -c 'kubectl label deploy web tier- >/dev/null && [ -z "$(kubectl get deploy web -o jsonpath={.metadata.labels.tier})" ]'
k label deploy web stale=yes --resource-version=1 >"$work/out" 2>&1
check "label with a stale --resource-version is a Conflict" grep -q "Error from server (Conflict)" "$work/out"
check "annotate" sh -c 'kubectl annotate deploy web note=hello | grep -q "deployment.apps/web annotated"'
check "annotation is set" sh -c '[ "$(kubectl get deploy web -o jsonpath={.metadata.annotations.note})" = hello ]'

# --- patch in each type ---
check "patch --type merge" sh -c 'kubectl patch deploy web --type merge -p "{\"spec\":{\"minReadySeconds\":5}}" | grep -q "deployment.apps/web patched"'
check "merge patch applied" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.minReadySeconds})" = 5 ]'
check "patch --type json" sh -c 'kubectl patch deploy web --type json -p "[{\"op\":\"replace\",\"path\":\"/spec/minReadySeconds\",\"value\":7}]" >/dev/null'
check "json patch applied" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.minReadySeconds})" = 7 ]'
k patch deploy web --type json -p '[{"op":"test","path":"/spec/minReadySeconds","value":1}]' >"$work/out" 2>&1
check "failing json patch test op is refused" grep -q "The request is invalid: testing value /spec/minReadySeconds failed" "$work/out"
check "patch --type strategic (containers merge by name)" sh -c 'kubectl patch deploy web -p "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.29\"}]}}}}" >/dev/null'
check "strategic patch kept the env" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].env[0].name})" = MODE ]'
check "strategic patch set the image" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].image})" = nginx:1.29 ]'
k patch deploy web --type merge -p '{"spec":{"bogus":1}}' >"$work/out" 2>&1
check "patch with an unknown field is refused (kubectl asks for Strict)" grep -q 'unknown field "spec.bogus"' "$work/out"
k patch deploy nope --type merge -p '{}' >"$work/out" 2>&1
check "patch of a missing object is NotFound" grep -q 'deployments.apps "nope" not found' "$work/out"
check "set image" sh -c 'kubectl set image deploy/web web=nginx:1.30 >/dev/null && [ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].image})" = nginx:1.30 ]'

# --- edit (strategic merge patch of what the editor changed) ---
cat >"$work/editor.sh" <<'EDITOR'
#!/bin/sh
sed -i 's/value: two/value: three/' "$1"
EDITOR
chmod +x "$work/editor.sh"
KUBE_EDITOR="$work/editor.sh" kubectl edit deploy web >"$work/out" 2>&1
check "edit saves" grep -q "deployment.apps/web edited" "$work/out"
check "edit applied" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].env[0].value})" = three ]'

# --- scale (merge patch of /scale; PUT of the Scale with --current-replicas) ---
check "scale" sh -c 'kubectl scale deploy web --replicas=5 | grep -q "deployment.apps/web scaled"'
check "scaled" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 5 ]'
check "scale --current-replicas that holds" sh -c 'kubectl scale deploy web --current-replicas=5 --replicas=2 >/dev/null && [ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 2 ]'
k scale deploy web --current-replicas=9 --replicas=1 >"$work/out" 2>&1
check "scale --current-replicas that fails" grep -q "Expected replicas to be 9, was 2" "$work/out"
check "replicas unchanged after the failed scale" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.replicas})" = 2 ]'

# --- rollout restart (template annotation) ---
check "rollout restart" sh -c 'kubectl rollout restart deploy/web | grep -q "deployment.apps/web restarted"'
check "restartedAt annotation" sh -c 'kubectl get deploy web -o jsonpath="{.spec.template.metadata.annotations}" | grep -q restartedAt'

# --- rollout undo: kubectl finds the previous ReplicaSet of the Deployment and
# JSON-patches its template back (no controller runs here, so the two
# ReplicaSets of revisions 1 and 2 are written as the controller would) ---
uid=$(kubectl get deploy web -o jsonpath={.metadata.uid})
k annotate deploy web deployment.kubernetes.io/revision=2 --overwrite >/dev/null
for rev in 1 2; do
    image=$([ $rev = 1 ] && echo nginx:1.20 || echo nginx:1.30)
    cat >"$work/rs.yaml" <<RS
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-rev$rev
  annotations: {deployment.kubernetes.io/revision: "$rev"}
  labels: {app: web, pod-template-hash: h$rev}
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: web, uid: $uid, controller: true, blockOwnerDeletion: true}
spec:
  replicas: 0
  selector: {matchLabels: {app: web, pod-template-hash: h$rev}}
  template:
    metadata: {labels: {app: web, pod-template-hash: h$rev}}
    spec:
      containers: [{name: web, image: $image}]
RS
    k create -f "$work/rs.yaml" >/dev/null
done
k rollout undo deploy/web >"$work/out" 2>&1
check "rollout undo" grep -q "deployment.apps/web rolled back" "$work/out"
check "undo restored revision 1's template" sh -c '[ "$(kubectl get deploy web -o jsonpath={.spec.template.spec.containers[0].image})" = nginx:1.20 ]'
check "undo dropped the hash label from the template" sh -c '[ -z "$(kubectl get deploy web -o jsonpath={.spec.template.metadata.labels.pod-template-hash})" ]'

# --- status through the subresource ---
# no controllers: the pod's account, which the ServiceAccount admission requires, by hand
k create serviceaccount default >/dev/null 2>&1
k create -f "$data/pod.yaml" >/dev/null 2>&1
check "patch --subresource=status" sh -c 'kubectl patch pod web-1 --subresource=status --type merge -p "{\"status\":{\"phase\":\"Running\"},\"spec\":{\"activeDeadlineSeconds\":3}}" >/dev/null'
check "status written" sh -c '[ "$(kubectl get pod web-1 -o jsonpath={.status.phase})" = Running ]'
check "spec untouched by the status write" sh -c '[ -z "$(kubectl get pod web-1 -o jsonpath={.spec.activeDeadlineSeconds})" ]'
check "get --subresource=status" sh -c 'kubectl get pod web-1 --subresource=status -o jsonpath={.status.phase} | grep -qx Running'
check "get --subresource=scale" sh -c 'kubectl get deploy web --subresource=scale -o jsonpath={.spec.replicas} | grep -qx 2'

finish
